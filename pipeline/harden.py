"""Hardening: harder variants of synthesized tasks (pipeline/operators.py drafts them), each
re-verified from scratch: its gold replayed on a fresh fork, its answers reshaped against its new
text; a variant that no longer replays is a recorded rejection and its base stays.
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Callable

from toolscale.domains import Domain, Environment
from toolscale.domains.answers import with_checkable_answers
from toolscale.domains.tasks import Rejection, Task
from toolscale.quality.difficulty import task_difficulty
from toolscale.quality.soundness import distractor_defect, stale_arguments, twin_key

from .operators import (Draft, Operator, calls_of, change_of_mind, compose, conditional, distractor, indirect_dates,
                        partial, preference)
from .templating import derive_seed


def _verify(domain: Domain, env: Environment, draft: Draft, task_id: str) -> tuple[Task | None, Rejection | None]:
    variant, check = draft
    variant = variant.model_copy(update={"id": task_id})
    changed = False  # by a write the user came for: an identity check's bookkeeping row does not count
    with env.fork() as fork:
        results = []
        for name, arguments in variant.gold_calls():
            before = fork.state_hash()
            results.append(fork.call(name, arguments))
            changed = changed or (domain.toolkit.specs[name].changes_what_users_want and fork.state_hash() != before)
        state = fork.state_hash()
    failure = next((f"action {i} ({r.name}) failed: {r.error_type}: {r.error}" for i, r in enumerate(results)
                    if not r.ok), None)
    outputs = [r.output for r in results]
    failure = failure or check(outputs)
    if failure is None:  # every value read after the writes that change it (the gold's state is not stale)
        failure = next(iter(stale_arguments(env, variant.model_copy(update={"meta": variant.meta.model_copy(
            update={"expected_outputs": outputs})}))), None)
    if failure is None and Operator.DISTRACTOR.value in variant.meta.hardening:
        failure = distractor_defect(env, variant.model_copy(update={"meta": variant.meta.model_copy(
            update={"expected_outputs": outputs, "final_state_hash": state})}))
    actions = variant.evaluation_criteria.actions
    meta = variant.meta.model_copy(update={
        "expected_outputs": outputs, "final_state_hash": None if failure else state,
        "kind": "write" if changed else "read",  # what the gold does (as WordingGate reads it), whatever the bases said
        "difficulty": task_difficulty(domain, variant.user_scenario, actions)})
    variant = with_checkable_answers(variant.model_copy(update={"meta": meta}))
    if failure:
        return None, Rejection(task=variant, gate="synthesis", reason=f"hardened variant: {failure}")
    return variant, None


def harden(domain: Domain, env: Environment, tasks: list[Task], seed: int,
           share: float = 0.6) -> tuple[list[Task], list[Rejection]]:
    """The candidates with harder variants mixed in, and the variants that failed to replay.

    About `share` × len(tasks) variants are drafted. A composition joins two tasks and keeps
    both; the other operators rewrite one task, and a variant that verifies replaces its base
    (the two would be near-duplicates).
    """
    rng = random.Random(derive_seed(seed, domain.name, "harden"))
    # preference applies to few tasks (picks out of a listing by price or time): its share comes on top
    budget = {Operator.COMPOSITION: 0.3, Operator.CONDITIONAL: 0.25, Operator.CHANGE_OF_MIND: 0.05,
              Operator.INDIRECT: 0.15, Operator.DISTRACTOR: 0.15, Operator.PREFERENCE: 0.1, Operator.PARTIAL: 0.15}
    quota = {op: int(len(tasks) * share * w) for op, w in budget.items()}
    drafts: list[tuple[str, Draft, str | None]] = []  # (operator, draft, id of the base it replaces)
    # a task built to test a policy rule keeps its own request: its literal version (meta.naive_actions) is
    # what an operator would rewrite, so it would no longer be the request the rule test replays
    hardenable = [t for t in tasks if t.meta.tests_rule is None]
    by_user: dict[tuple[str, str], list[Task]] = defaultdict(list)
    for task in hardenable:
        by_user[calls_of(task)[0]].append(task)
    groups = [g for g in by_user.values() if len({t.meta.intent for t in g}) > 1]
    paired: set[object] = set()  # a user's two intents once: A+B and its twin B+A are one task
    for _ in range(quota[Operator.COMPOSITION] * 3):
        if not groups or len(drafts) >= quota[Operator.COMPOSITION]:
            break
        a, b = rng.sample(rng.choice(groups), 2)
        if a.meta.intent != b.meta.intent and (draft := compose(a, b, rng)) and twin_key(draft[0]) not in paired:
            paired.add(twin_key(draft[0]))
            drafts.append((Operator.COMPOSITION, draft, None))
    taken: set[str] = set()
    for op, make in ((Operator.CONDITIONAL, conditional), (Operator.CHANGE_OF_MIND, change_of_mind)):
        for _ in range(quota[op] * 8):  # few pairs share the record the amount is on: sample more
            if not groups or sum(o == op for o, _, _ in drafts) >= quota[op]:
                break
            a, b = rng.sample(rng.choice(groups), 2)
            if a.meta.intent != b.meta.intent and a.id not in taken and b.id not in taken \
                    and (draft := make(a, b, domain, env, rng)):
                base = a if draft[0].evaluation_criteria.actions[-1] == a.evaluation_criteria.actions[-1] else b
                drafts.append((op, draft, base.id))  # its gold is the taken branch's: it replaces that base
                taken.add(base.id)
    singles: list[tuple[str, Callable[[Task], Draft | None]]] = [
        (Operator.INDIRECT, lambda t: indirect_dates(t, domain.spec.clock.date())),
        (Operator.DISTRACTOR, lambda t: distractor(t, env, rng)),
        (Operator.PREFERENCE, lambda t: preference(t, env)),
        (Operator.PARTIAL, partial)]
    for op, make in singles:
        pool = [t for t in hardenable if t.id not in taken]
        rng.shuffle(pool)
        made = 0
        for task in pool:
            if made >= quota[op]:
                break
            if (draft := make(task)) is not None:
                drafts.append((op, draft, task.id))
                taken.add(task.id)
                made += 1
    variants: list[Task] = []
    replaced: set[str] = set()
    rejected: list[Rejection] = []
    counters: dict[str, int] = defaultdict(int)
    for op, draft, base in drafts:
        task, rejection = _verify(domain, env, draft, f"{domain.name}.{op}.{counters[op]:03d}")
        counters[op] += 1
        if task is None:
            rejected.append(rejection)
            continue
        if base is not None:
            replaced.add(base)
            task = task.model_copy(update={"meta": task.meta.model_copy(update={"hardened_from": base})})
        variants.append(task)
    return [t for t in tasks if t.id not in replaced] + variants, rejected
