"""`LLMSynthesizer`: the Synthesizer protocol (design / populate / tasks) through an LLM.

design(name) runs three LLM stages: the schema, rules and policy; the tools; the intents. Each
answer is parsed into the same pydantic types and passes the same loader and compiler as a
domain folder, with repair rounds (dialogue.py). populate(domain, seed) fills the tables in
batches (rows.py). tasks(domain, env, rows, seed) writes, for each intent, candidates from a
sampled anchor row, a tool subset and a database slice, and keeps those whose gold replays
(tasks.py); every other candidate becomes a Rejection with its reason. harden(...) has the model
rewrite a share of the tasks harder, each variant replayed the same way (harden.py).

Each stage is synchronous for its caller and runs its requests concurrently on the shared
client's event loop. Seeds go into every request, and the response cache makes a rerun with
the same seed send nothing. A stage called again on the same instance (a flow's retry after it
failed) is a new attempt: its seeds change with the attempt number, so it asks afresh instead of
replaying the cached conversation that failed, and the ledger counts it as a stage retry.
"""

from __future__ import annotations

import asyncio
import random
from collections import Counter
from typing import Any

from toolscale.domains import BUILTIN_DOMAINS, Domain, Environment
from toolscale.domains.tasks import Lineage, Rejection, Task

from ..populate import PopulateError, Rows
from ..templating import TemplateError, date_helpers, derive_seed, evaluate
from . import prompts, requests
from .answers import (DesignAnswer, HardenAnswer, IntentProposal, IntentsAnswer, RowsAnswer, TaskAnswer,
                      ToolsAnswer)
from .client import LLMClient, LLMRequestError, shared_client
from .config import LLMConfig, SynthesisOptions
from .design import build_design, build_intents, build_tools, subset_of_tools, with_intents
from .dialogue import Outcome, solicit
from .examples import builtin, intent_proposal
from .harden import anchor_record, build_hardened, shown_task, unbuilt_variant
from .rows import TableFill, batch_seed, choices, fixed_rows, plan
from .slices import db_slice
from .tasks import Screen, build_task, unbuilt_task
from .usage import Usage, Watcher


class LLMStageError(RuntimeError):
    """A stage that a domain cannot do without (design, tools, intents) got no valid answer."""


def request_seed(*parts: object) -> int:
    return derive_seed(*parts) % (2 ** 31)


def attempt_seed(seed: int, attempt: int) -> int:
    """A request's seed in a stage's `attempt`-th retry; the first attempt (0) keeps `seed`, so a
    first run stays byte-identical with the cache it wrote."""
    return seed if attempt == 0 else request_seed(seed, "attempt", attempt)


def anchor_pool(domain: Domain, intent: IntentProposal, rows: Rows) -> list[dict[str, Any]]:
    """The rows of the intent's anchor table that meet its premise (all of them when it has none);
    a row the premise cannot be evaluated on (a null compared with a number) does not meet it."""
    pool = rows.get(intent.anchor_table, [])
    if intent.premise is None:
        return pool
    helpers = date_helpers(domain.spec.clock)

    def meets(row: dict[str, Any]) -> bool:
        try:
            return bool(evaluate(intent.premise, {**helpers, "row": row}))
        except TemplateError:
            return False
    return [row for row in pool if meets(row)]


class LLMSynthesizer:
    """The LLM backend. One instance per domain run: `usage` is that domain's ledger."""

    name = "llm"

    def __init__(self, config: LLMConfig, seed: int = 0, scale: float = 1.0, client: LLMClient | None = None,
                 screen: Screen | None = None) -> None:
        self.config = config
        self.screen = screen  # the quality gates a task must pass, checked while the model can still repair it
        self.seed = seed
        self.scale = scale
        self._client = client
        self.usage = Usage(config.model, config.price(config.model))
        self._watcher: Watcher | None = None
        self._intents: dict[str, list[IntentProposal]] = {}
        self._failures: Counter = Counter()  # (stage, domain) -> attempts that raised
        self._attempt = 0  # of the stage running now

    def _run(self, stage: str, domain: str, coro: Any) -> Any:
        """Run one attempt of `stage` for `domain`. After an attempt that raised, the next is a retry:
        new seeds (a cache replay would fail the same way) and a stage_retries count. After one that
        returned, a call again (a flow retrying for another reason) replays the same requests."""
        self._attempt = self._failures[stage, domain]
        if self._attempt:
            self.usage.count(stage, "stage_retries")
        try:
            return self.client.run(coro)
        except Exception:
            self._failures[stage, domain] += 1
            raise

    @property
    def client(self) -> LLMClient:
        """The given client, else the process's shared one for this endpoint (made on first use, so
        a run that reuses every stored stage starts no client)."""
        if self._client is None:
            self._client = shared_client(self.config)
        return self._client

    @property
    def options(self) -> SynthesisOptions:
        return self.config.synthesis

    def report(self) -> dict[str, Any]:
        """Requests, tokens, cost and outcomes per stage, for the run report."""
        return self.usage.report()

    def take_report(self) -> dict[str, Any] | None:
        """The usage since the last call (None if there was none), and a fresh ledger: the flow
        stores each stage's usage with the stage's artifact."""
        report = self.usage.report()
        self.usage = Usage(self.config.model, self.config.price(self.config.model), self._watcher)
        return report if report["stages"] else None

    def watch(self, watcher: Watcher | None) -> None:
        """Tell `watcher(stage, progress)` of every request, answer and finished item from now on
        (None: stop)."""
        self._watcher = self.usage.watcher = watcher

    async def _together(self, stage: str, coros: list[Any]) -> list[Any]:
        """Run the coroutines side by side, each one an item of `stage`'s live progress."""
        async def counted(coro: Any) -> Any:
            try:
                return await coro
            finally:
                self.usage.finish(stage)

        self.usage.plan(stage, len(coros))
        return await asyncio.gather(*(counted(c) for c in coros))

    def brief(self, name: str) -> str:
        if name in self.config.briefs:
            return self.config.briefs[name]
        if name in BUILTIN_DOMAINS:
            return builtin(name).spec.description.strip()
        return name.replace("_", " ")

    async def _ask(self, stage: str, messages, answer_type, build, seed: int, first=None) -> Outcome:
        return await solicit(self.client, self.usage, stage, messages, answer_type, build,
                             rounds=self.options.repair_rounds, seed=attempt_seed(seed, self._attempt), first=first)

    # design ----------------------------------------------------------------------------------
    def design(self, name: str) -> Domain:
        return self._run("design", name, self._design(name))

    async def _design(self, name: str) -> Domain:
        seed = request_seed(self.seed, name, "design")
        out = await self._ask("design", requests.design(name, self.brief(name)), DesignAnswer,
                              lambda answer, final: build_design(name, answer, self.seed), seed)
        if not out.ok:
            raise LLMStageError(f"{name}: no valid design: {out.reason}")
        spec, policy, rows = out.value
        out = await self._ask("tools", requests.tools(spec, policy), ToolsAnswer,
                              lambda answer, final: build_tools(spec, policy, answer, rows),
                              request_seed(self.seed, name, "tools"))
        if not out.ok:
            raise LLMStageError(f"{name}: no valid tools: {out.reason}")
        intents = await self._propose_intents(out.value)
        self._intents[name] = intents
        return with_intents(out.value, intents)

    async def _propose_intents(self, domain: Domain) -> list[IntentProposal]:
        """Intents for a domain whose spec has none yet."""
        count = self.options.intents
        out = await self._ask("intents", requests.intents(domain, count), IntentsAnswer,
                              lambda answer, final: build_intents(domain, answer, count, final),
                              request_seed(self.seed, domain.name, "intents"))
        if not out.ok:
            raise LLMStageError(f"{domain.name}: no valid intents: {out.reason}")
        return out.value

    async def _intents_of(self, domain: Domain) -> list[IntentProposal]:
        """This domain's intents with their anchors and tools: remembered from design, read from the
        spec (a stored design, a domain folder), or, for a spec whose intents lack them, asked again."""
        if domain.name not in self._intents:
            proposals = [intent_proposal(i) for i in domain.spec.intents]
            if all(proposals):
                self._intents[domain.name] = proposals
            else:
                bare = Domain(domain.spec.model_copy(update={"intents": []}), domain.policy, domain.toolkit)
                self._intents[domain.name] = await self._propose_intents(bare)
        names = [i.name for i in domain.spec.intents]
        return sorted((i for i in self._intents[domain.name] if i.name in names), key=lambda i: names.index(i.name))

    # populate --------------------------------------------------------------------------------
    def populate(self, domain: Domain, seed: int) -> Rows:
        return self._run("populate", domain.name, self._populate(domain, seed))

    async def _first(self, stage: str, messages, answer_type, seed: int):
        try:
            return await self.client.complete(messages, stage=stage, usage=self.usage,
                                              schema=(answer_type.__name__, answer_type.model_json_schema()),
                                              seed=attempt_seed(seed, self._attempt))
        except LLMRequestError as exc:
            return exc

    async def _populate(self, domain: Domain, seed: int) -> Rows:
        spec = domain.spec
        problem = spec.size_problem(self.options.populate_scale * self.scale)
        if problem is not None:  # before any request: the offline path's ceilings hold here too
            raise PopulateError(f"{spec.name}: {problem[1]}")
        rng = random.Random(derive_seed(seed, spec.name, "populate"))
        rows: Rows = {}
        for table in spec.creation_order():
            fixed, dangling = fixed_rows(spec, table, rows)
            if dangling:
                self.usage.rejected("populate", "fixed_row_dangling", dangling)
            fill = TableFill(spec, table, {**rows, table.name: fixed})
            batches = plan(spec, table, rows, self.options.rows_per_request, self.options.parents_per_request,
                           self.options.populate_scale * self.scale, rng)
            offered = choices(spec, table, rows, rng)
            asks = [(b, requests.populate(spec, b, offered, rows), batch_seed(seed, spec.name, table.name, b.index))
                    for b in batches]
            firsts = await self._together("populate", [self._first("populate", m, RowsAnswer, s) for _, m, s in asks])
            for (batch, messages, batch_seed_), first in zip(asks, firsts):  # checked in order: keys are stable
                out = await self._ask("populate", messages, RowsAnswer,
                                      lambda answer, final, b=batch: fill.check(answer, b, final), batch_seed_, first)
                if out.ok:
                    fill.accept(out.value)
            if fill.dropped:
                self.usage.rejected("populate", "row_dropped", fill.dropped)
            rows[table.name] = fill.accepted
        return rows

    # harden ----------------------------------------------------------------------------------
    def harden(self, domain: Domain, env: Environment, tasks: list[Task],
               seed: int) -> tuple[list[Task], list[Rejection]]:
        """The tasks with a seeded `harden_share` of them rewritten harder by the model (composition,
        conditions, indirect references, distractors). A variant that replays replaces its base (the
        two would be near-duplicates); one that does not is a rejection, and its base stays."""
        return self._run("harden", domain.name, self._harden(domain, env, tasks, seed))

    async def _harden(self, domain: Domain, env: Environment, tasks: list[Task],
                      seed: int) -> tuple[list[Task], list[Rejection]]:
        intents = {i.name: i for i in await self._intents_of(domain)}
        rng = random.Random(derive_seed(seed, domain.name, "llm-harden"))
        pool = [t for t in tasks if t.meta.intent in intents]
        chosen = {t.id for t in rng.sample(pool, round(len(pool) * self.options.harden_share))}
        lineage = Lineage(backend="llm", model=self.config.model, seed=seed, prompt_digest=prompts.digest("harden"))
        rows = env.dump() if chosen else {}
        bases = [t for t in tasks if t.id in chosen]
        asks = [self._variant(domain, env, rows, lineage, seed, t, intents[t.meta.intent]) for t in bases]
        outcomes = await self._together("harden", asks)
        variants = {base.id: v for base, v in zip(bases, outcomes) if isinstance(v, Task)}
        rejected = [v for v in outcomes if isinstance(v, Rejection)]
        return [t for t in tasks if t.id not in variants] + list(variants.values()), rejected

    async def _variant(self, domain: Domain, env: Environment, rows: Rows, lineage: Lineage, seed: int,
                       base: Task, intent: IntentProposal) -> Task | Rejection:
        rng = random.Random(derive_seed(seed, domain.name, "llm-harden", base.id))
        needed = list(dict.fromkeys([*intent.tools, *(a.name for a in base.evaluation_criteria.actions)]))
        tools = subset_of_tools(domain, needed, self.options.distractor_tools, rng)
        anchor = anchor_record(base, domain.spec, rows, intent.anchor_table)
        # a task that names no stored record (seldom): the model works from the task's outputs
        part = db_slice(domain.spec, rows, *anchor, rng, self.options.slice_rows) if anchor else {}
        request = request_seed(seed, domain.name, "harden", base.id)
        messages = requests.harden(domain, shown_task(base, domain), tools, part, base.id, request)
        out = await self._ask("harden", messages, HardenAnswer, lambda answer, final: build_hardened(
            domain, env, base, intent, tools, answer, lineage, self.screen), request)
        if out.ok:
            return out.value
        variant = unbuilt_variant(domain, base, intent, out.last_answer, lineage)
        return Rejection(task=variant, gate="synthesis", reason=f"hardened variant: {out.reason}")

    # tasks -----------------------------------------------------------------------------------
    def tasks(self, domain: Domain, env: Environment, rows: Rows, seed: int) -> tuple[list[Task], list[Rejection]]:
        return self._run("task", domain.name, self._tasks(domain, env, rows, seed))

    async def _tasks(self, domain: Domain, env: Environment, rows: Rows,
                     seed: int) -> tuple[list[Task], list[Rejection]]:
        lineage = Lineage(backend="llm", model=self.config.model, seed=seed, prompt_digest=prompts.digest("task"))
        per_intent = max(1, round(self.options.tasks_per_intent * self.scale))
        jobs = []
        rejected: list[Rejection] = []
        for intent in await self._intents_of(domain):
            pool = anchor_pool(domain, intent, rows)
            if not pool:
                task = unbuilt_task(domain, intent, f"{domain.name}.{intent.name}.000", lineage, None)
                meets = f" that meets the premise {intent.premise!r}" if intent.premise else ""
                reason = f"llm no_rows: table {intent.anchor_table!r} has no row{meets} to anchor a task"
                rejected.append(Rejection(task=task, gate="synthesis", reason=reason))
                self.usage.rejected("task", "no_rows")
                continue
            order = random.Random(derive_seed(seed, domain.name, intent.name)).sample(pool, len(pool))
            for k in range(min(per_intent, len(pool))):
                # candidate k tries rows k, k + n, k + 2n... of one shuffle: no two candidates share a row
                anchors = order[k::per_intent][:self.options.anchor_attempts]
                jobs.append((intent, k, anchors))
        outcomes = await self._together("task", [self._task(domain, env, rows, lineage, seed, *job) for job in jobs])
        tasks = []
        for outcome in outcomes:
            if isinstance(outcome, Rejection):
                rejected.append(outcome)
            else:
                tasks.append(outcome)
        return tasks, rejected

    async def _task(self, domain: Domain, env: Environment, rows: Rows, lineage: Lineage, seed: int,
                    intent: IntentProposal, k: int, anchors: list[dict[str, Any]]) -> Task | Rejection:
        """One candidate: a task about the first of `anchors` the model finds a task for (it may
        decline a record that does not fit the intent), or the rejection of the last try."""
        task_id = f"{domain.name}.{intent.name}.{k:03d}"
        pk = domain.spec.table(intent.anchor_table).primary_key.name
        for attempt, row in enumerate(anchors):
            rng = random.Random(derive_seed(seed, domain.name, intent.name, k, attempt))
            anchor = (intent.anchor_table, row[pk])
            tools = subset_of_tools(domain, intent.tools, self.options.distractor_tools, rng)
            part = db_slice(domain.spec, rows, anchor[0], anchor[1], rng, self.options.slice_rows)
            task_seed = request_seed(seed, domain.name, intent.name, k, attempt)
            messages = requests.task(domain, intent, tools, part, anchor, k, task_seed)
            out = await self._ask("task", messages, TaskAnswer, lambda answer, final, tools=tools: build_task(
                domain, env, intent, tools, answer, task_id, lineage, self.screen), task_seed)
            if out.ok:
                return out.value
            if out.category != "declined":
                break
        tried = f" ({attempt + 1} records tried)" if attempt else ""
        return Rejection(task=unbuilt_task(domain, intent, task_id, lineage, out.last_answer), gate="synthesis",
                         reason=out.reason.replace(":", tried + ":", 1) if tried else out.reason)
