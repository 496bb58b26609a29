"""The harden stage's validator: an LLM's harder variant of a task becomes a Task only if it replays.

The variant is built exactly as a new task is (tasks.build_task: every gold call replayed on a fork,
what to communicate read from the real outputs), and must also be a real change: not the task it was
given, and a composition must add calls. It keeps the base task's intent and lineage of steps.
"""

from __future__ import annotations

from typing import Any

from toolscale.domains import Domain, Environment
from toolscale.domains.spec import DomainSpec
from toolscale.domains.tasks import Lineage, Task
from toolscale.quality.difficulty import task_difficulty

from ..instantiate import naive_actions, write_calls
from ..operators import Operator
from .answers import HardenAnswer, IntentProposal
from .dialogue import Invalid, Problem
from .tasks import Screen, build_task, screened, unbuilt_task


def shown_task(task: Task, domain: Domain) -> dict[str, Any]:
    """What the prompt shows of a verified task: the user's side, the gold calls and their outputs, and
    for a task that tests a rule its `naive` calls (those after the gold's lookups)."""
    ins = task.user_scenario.instructions
    actions = task.evaluation_criteria.actions
    shown = {"reason_for_call": ins.reason_for_call, "known_info": ins.known_info or "",
             "unknown_info": ins.unknown_info or "", "task_instructions": ins.task_instructions,
             "actions": [{"name": a.name, "arguments": a.arguments} for a in actions],
             "outputs": task.meta.expected_outputs, "communicate": task.evaluation_criteria.communicate_info,
             "nl_assertions": task.evaluation_criteria.nl_assertions}
    if task.meta.naive_actions:
        lookups = len(naive_actions(domain, actions, []))
        shown["naive"] = [{"name": a.name, "arguments": a.arguments} for a in task.meta.naive_actions[lookups:]]
    return shown


def anchor_record(task: Task, spec: DomainSpec, rows: dict[str, list[dict[str, Any]]],
                  table: str) -> tuple[str, Any] | None:
    """(table, key) of the stored record the task is about, to slice the database around: the first
    key of `table` the gold calls' arguments, then their outputs, name; else the first key of any
    other table they name (a task about a new vaccination names the pet); None if they name none.
    Only keys of the initial rows count: a record the gold creates is in no slice."""
    keys = {t.name: (t.primary_key.name, {r[t.primary_key.name] for r in rows.get(t.name, [])})
            for t in spec.creation_order()}
    records = [a.arguments for a in task.evaluation_criteria.actions]
    records += [r for o in task.meta.expected_outputs for r in (o if isinstance(o, list) else [o]) if isinstance(r, dict)]
    for name in [table, *(t for t in keys if t != table)]:
        pk, stored = keys[name]
        for record in records:
            if record.get(pk) in stored:
                return name, record[pk]
    return None


def _same_task(a: Task, b: Task) -> bool:
    return (a.user_scenario.instructions == b.user_scenario.instructions
            and a.gold_calls() == b.gold_calls())


def build_hardened(domain: Domain, env: Environment, base: Task, intent: IntentProposal, tools: list[str],
                   answer: HardenAnswer, lineage: Lineage, screen: Screen | None = None) -> Task:
    """The replayed harder variant of `base`, or Invalid saying why it is not one (screened as the
    variant it becomes: its kind follows what its gold does, not the base intent's)."""
    task = build_task(domain, env, intent, tools, answer.task, f"{base.id}.hard", lineage)
    calls = len(task.evaluation_criteria.actions)
    if _same_task(task, base):
        raise Invalid([Problem("unchanged", "the task is the one given: apply at least one of the steps", "task")])
    if Operator.COMPOSITION in answer.steps and calls <= len(base.evaluation_criteria.actions):
        raise Invalid([Problem("not_composed", f"a composition adds a second request, but the gold has {calls} "
                                               f"actions, as many as the original's or fewer", "steps")])
    variant = _as_variant(domain, base, task, answer.steps)
    screened(variant, env, screen)
    return variant


def _as_variant(domain: Domain, base: Task, task: Task, steps: list[str]) -> Task:
    hardening = [*base.meta.hardening, *dict.fromkeys(steps)]
    actions = task.evaluation_criteria.actions
    writes = write_calls(domain, actions)
    meta = task.meta.model_copy(update={"intent": base.meta.intent, "hardening": hardening, "hardened_from": base.id,
                                        "kind": "write" if writes else base.meta.kind,
                                        "difficulty": task_difficulty(domain, task.user_scenario, actions)})
    return task.model_copy(update={"description": base.description, "meta": meta})


def unbuilt_variant(domain: Domain, base: Task, intent: IntentProposal, answer: HardenAnswer | None,
                    lineage: Lineage) -> Task:
    """The variant as the model last wrote it (unreplayed), kept with its rejection; the base itself
    when no answer parsed."""
    if answer is None:
        return base.model_copy(update={"id": f"{base.id}.hard"})
    task = unbuilt_task(domain, intent, f"{base.id}.hard", lineage, answer.task)
    return _as_variant(domain, base, task, answer.steps)
