"""Offline task synthesis: bind an intent's template to real rows, replay the gold, write the Task.

Gold action arguments may refer to earlier outputs (`out[2].payee_id`), so actions are
rendered one at a time while they replay on a fork; `communicate_info` is rendered from the
real outputs afterwards. A candidate whose gold fails here is kept as a rejection with the
reason, never dropped silently.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections import defaultdict
from collections.abc import Iterable, Iterator
from typing import Any

from toolscale.domains import Domain, Environment
from toolscale.domains.answers import with_checkable_answers
from toolscale.domains.spec import Intent, TaskTemplate
from toolscale.domains.tasks import (Action, Description, EvaluationCriteria, Lineage, Rejection,
                                     StructuredUserInstructions, Task, TaskMeta, UserScenario)
from toolscale.quality.difficulty import task_difficulty

from . import phrasing
from .populate import Rows
from .templating import (TemplateError, date_helpers, derive_seed, evaluate, faker_helper, random_helpers, render_text, render_value,
                         seeded_faker)

BIND_ATTEMPTS = 40


class RowIndex:
    """Rows by equality on any set of columns, built lazily; `rows('accounts', customer_id=...)`."""

    def __init__(self, rows: Rows) -> None:
        self._rows = rows
        self._indexes: dict[tuple[str, tuple[str, ...]], dict[tuple[Any, ...], list[dict[str, Any]]]] = {}

    def __call__(self, table: str, **equal: Any) -> list[dict[str, Any]]:
        if table not in self._rows:
            raise TemplateError(f"rows(): unknown table {table!r}")
        if not equal:
            return self._rows[table]
        columns = tuple(sorted(equal))
        index = self._indexes.get((table, columns))
        if index is None:
            index = defaultdict(list)
            for row in self._rows[table]:
                index[tuple(row.get(c) for c in columns)].append(row)
            self._indexes[(table, columns)] = index
        return index.get(tuple(equal[c] for c in columns), [])


def write_calls(domain: Domain, actions: Iterable[Action]) -> int:
    """How many of the gold's calls go to write tools (a name the toolkit lacks, as in an unreplayed
    LLM answer, is not one)."""
    specs = domain.toolkit.specs
    return sum(a.name in specs and specs[a.name].kind == "write" for a in actions)


def template_digest(template: TaskTemplate) -> str:
    blob = json.dumps(template.model_dump(mode="json"), sort_keys=True)
    return hashlib.blake2b(blob.encode(), digest_size=8).hexdigest()


def _row_key(table: str, row: dict[str, Any]) -> tuple[str, str]:
    return table, json.dumps(row, sort_keys=True, default=str)


class _Binder:
    """Draws one consistent set of rows (and derived values) for a template."""

    def __init__(self, domain: Domain, index: RowIndex, rng: random.Random, faker: Any) -> None:
        self.index, self.rng = index, rng
        self.base = {"rows": index, "fake": faker_helper(faker), **date_helpers(domain.spec.clock),
                     **random_helpers(rng)}

    def bind(self, template: TaskTemplate) -> dict[str, Any] | None:
        context = dict(self.base)
        used: set[tuple[str, Any]] = set()
        for name, binding in template.bind.items():
            equal = {col: evaluate(expr, context) for col, expr in binding.match.items()}
            pool = self.index(binding.table, **equal)
            if not pool:
                return None
            start = self.rng.randrange(len(pool))
            chosen = None
            for i in range(len(pool)):
                row = pool[(start + i) % len(pool)]
                if used and _row_key(binding.table, row) in used:  # no key to build while nothing is taken
                    continue
                if binding.where is None or evaluate(binding.where, {**context, "row": row}):
                    chosen = row
                    used.add(_row_key(binding.table, row))
                    break
            if chosen is None:
                return None
            context[name] = chosen
        for name, expr in template.let.items():
            context[name] = evaluate(expr, context)
        return context


def _candidates(domain: Domain, intent: Intent, rows: Rows, index: RowIndex, seed: int) -> Iterator[dict[str, Any] | str]:
    """Distinct bound contexts for the template; a string instead says why binding failed."""
    template = intent.template
    rng = random.Random(derive_seed(seed, domain.name, intent.name))
    with seeded_faker(["en_GB", "de_DE", "fr_FR", "es_ES", "it_IT", "nl_NL"],
                      derive_seed(seed, domain.name, intent.name, "faker")) as faker:
        binder = _Binder(domain, index, rng, faker)
        seen: set[str] = set()
        for _ in range(template.count):
            for _attempt in range(BIND_ATTEMPTS):
                try:
                    context = binder.bind(template)
                except TemplateError as exc:
                    yield f"rows could not be bound: {exc}"
                    break
                if context is None:
                    continue
                key = json.dumps({k: context[k] for k in [*template.bind, *template.let]}, sort_keys=True, default=str)
                if key not in seen:
                    seen.add(key)
                    yield context
                    break


def instantiate(domain: Domain, env: Environment, rows: Rows, intent: Intent, seed: int,
                index: RowIndex | None = None) -> tuple[list[Task], list[Rejection]]:
    """Candidates for one intent: tasks whose gold replayed cleanly, and rejections with reasons."""
    template = intent.template
    if template is None:
        return [], []
    index = index or RowIndex(rows)
    digest = template_digest(template)
    tasks: list[Task] = []
    rejected: list[Rejection] = []
    lineage = Lineage(backend="offline", seed=seed, prompt_digest=digest)
    for k, context in enumerate(_candidates(domain, intent, rows, index, seed)):
        task_id = f"{domain.name}.{intent.name}.{k:03d}"
        if isinstance(context, str):
            task, failure = _unbuilt(domain, intent, task_id, lineage), context
        else:
            task, failure = _build(domain, env, intent, context, task_id, lineage)
        if failure is None:
            tasks.append(task)
        else:
            rejected.append(Rejection(task=task, gate="synthesis", reason=failure))
    return tasks, rejected


def _render_scenario(domain: Domain, template: TaskTemplate, context: dict[str, Any], seed: int) -> UserScenario:
    """The user's side: the rendered text, its framing drawn anew and a persona true to the user's row."""
    rng = random.Random(seed)
    text = {field: render_text(getattr(template, field), context)
            for field in ("reason_for_call", "known_info", "unknown_info", "task_instructions")}
    who = phrasing.persona(rng, phrasing.user_row(context, text["known_info"]), domain.spec.clock.date())
    return UserScenario(persona=who.text, instructions=StructuredUserInstructions(
        domain=domain.name,
        reason_for_call=phrasing.reason_for_call(text["reason_for_call"], rng, who.style),
        known_info=text["known_info"],
        unknown_info=text["unknown_info"] or None,
        task_instructions=phrasing.task_instructions(text["task_instructions"], rng, who.style)))


def _unbuilt(domain: Domain, intent: Intent, task_id: str, lineage: Lineage) -> Task:
    """The shell of a candidate that failed before it had a text: kept so the rejection has an id."""
    return Task(id=task_id, description=Description(purpose=intent.description),
                user_scenario=UserScenario(instructions=StructuredUserInstructions(
                    domain=domain.name, reason_for_call="", task_instructions="")),
                evaluation_criteria=EvaluationCriteria(),
                meta=TaskMeta(intent=intent.name, kind=intent.kind, difficulty="easy", lineage=lineage))


def naive_actions(domain: Domain, gold: list[Action], literal: list[tuple[str, dict[str, Any]]]) -> list[Action]:
    """What an agent that does exactly what the user asks would call: the gold's lookups (its calls
    before the first write a user wants), then `literal`, the calls the request asks for (both
    backends build a task's meta.naive_actions here)."""
    specs = domain.toolkit.specs
    first_write = next((i for i, a in enumerate(gold) if specs[a.name].changes_what_users_want), len(gold))
    return [Action(action_id=str(i), name=name, arguments=arguments)
            for i, (name, arguments) in enumerate([*((a.name, a.arguments) for a in gold[:first_write]), *literal])]


def _naive(domain: Domain, gold: list[Action], template: TaskTemplate, context: dict[str, Any]) -> list[Action]:
    """The template's `naive` calls after the gold's lookups; they may use what the gold's calls returned (`out`)."""
    if not template.naive:
        return []
    return naive_actions(domain, gold, [(step.name, render_value(step.arguments, context)) for step in template.naive])


def _build(domain: Domain, env: Environment, intent: Intent, context: dict[str, Any], task_id: str,
           lineage: Lineage) -> tuple[Task, str | None]:
    """One candidate task, and why it failed (None when its gold replayed cleanly)."""
    template = intent.template
    failure = None
    try:
        scenario = _render_scenario(domain, template, context, derive_seed(lineage.seed, task_id))
        nl_assertions = [render_text(n, context) for n in template.nl_assertions]
    except TemplateError as exc:
        return _unbuilt(domain, intent, task_id, lineage), f"instructions could not be rendered: {exc}"
    actions: list[Action] = []
    outputs: list[Any] = []
    final_hash = None
    with env.fork() as fork:
        for i, step in enumerate(template.actions):
            try:
                arguments = render_value(step.arguments, {**context, "out": outputs})
            except TemplateError as exc:
                failure = f"action {i} ({step.name}): arguments could not be rendered: {exc}"
                break
            actions.append(Action(action_id=str(i), name=step.name, arguments=arguments))
            result = fork.call(step.name, arguments)
            if not result.ok:
                failure = f"action {i} ({step.name}) failed: {result.error_type}: {result.error}"
                break
            outputs.append(result.output)
        if failure is None:
            final_hash = fork.state_hash()
    communicate: list[str] = []
    naive: list[Action] = []
    if failure is None:
        try:
            communicate = [render_text(c, {**context, "out": outputs}) for c in template.communicate]
            naive = _naive(domain, actions, template, {**context, "out": outputs})
        except TemplateError as exc:
            failure = f"communicate_info or the naive calls could not be rendered: {exc}"
    meta = TaskMeta(intent=intent.name, kind=intent.kind, difficulty=task_difficulty(domain, scenario, actions),
                    lineage=lineage, expected_outputs=outputs, final_state_hash=final_hash,
                    tests_rule=intent.tests_rule, naive_actions=naive)
    task = Task(id=task_id, description=Description(purpose=intent.description),
                user_scenario=scenario,
                evaluation_criteria=EvaluationCriteria(actions=actions, communicate_info=communicate,
                                                       nl_assertions=nl_assertions),
                meta=meta)
    return with_checkable_answers(task), failure
