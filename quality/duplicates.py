"""The duplicates gate: no two accepted tasks of a domain say or do the same thing."""

from __future__ import annotations

import json
import re
from collections import Counter, defaultdict
from fractions import Fraction

from toolscale.domains.tasks import GateVerdict, Task

from .soundness import twin_key

NEAR_DUPLICATE = Fraction(9, 10)


def _words(task: Task) -> str:
    i = task.user_scenario.instructions
    text = " ".join(filter(None, [i.reason_for_call, i.known_info, i.task_instructions]))
    return " ".join(re.findall(r"[\w.@-]+", text.lower()))


def _shingles(text: str, n: int = 3) -> set[tuple[str, ...]]:
    words = text.split()
    return {tuple(words[i:i + n]) for i in range(max(len(words) - n + 1, 1))}


def _gold(task: Task) -> str:
    return json.dumps([[a.name, a.arguments] for a in task.evaluation_criteria.actions], sort_keys=True)


def _prefix(shingles: set[tuple[str, ...]], rank: dict[tuple[str, ...], int]) -> list[tuple[str, ...]]:
    """The rarest shingles, so many that two sets with Jaccard >= NEAR_DUPLICATE must share one of
    them (the prefix filter of all-pairs similarity joins): size - ceil(t * size) + 1."""
    t = NEAR_DUPLICATE
    size = len(shingles)
    keep = size - -(-t.numerator * size // t.denominator) + 1
    return sorted(shingles, key=rank.__getitem__)[:keep]


class DuplicateGate:
    """Keeps the first of tasks with the same instructions, the same gold calls, or instructions
    whose word 3-shingles overlap by 90% or more (compared within an intent), and of a composition
    A+B and its order-swapped twin B+A for the same user."""

    name = "duplicates"

    def check_all(self, tasks: list[Task]) -> tuple[list[Task], list[tuple[Task, GateVerdict]]]:
        kept: list[Task] = []
        dropped: list[tuple[Task, GateVerdict]] = []
        by_text: dict[str, str] = {}
        by_gold: dict[str, str] = {}
        by_pair: dict[object, str] = {}
        texts = [_words(task) for task in tasks]
        shingles = [_shingles(text) for text in texts]
        frequency = Counter(s for task_shingles in shingles for s in task_shingles)
        rank = {s: i for i, s in enumerate(sorted(frequency, key=lambda s: (frequency[s], s)))}
        kept_shingles: list[tuple[str, set]] = []  # (task id, shingles) of each kept task, in order
        by_intent_prefix: dict[tuple[str, tuple[str, ...]], list[int]] = defaultdict(list)
        for task, text, task_shingles in zip(tasks, texts, shingles):
            gold = _gold(task)
            prefix = _prefix(task_shingles, rank)
            reason = None
            if text in by_text:
                reason = f"same instructions as {by_text[text]}"
            elif gold in by_gold:
                reason = f"same gold actions as {by_gold[gold]}"
            elif (pair := twin_key(task)) is not None and pair in by_pair:
                reason = f"the same two requests of the same user as {by_pair[pair]} (A+B and B+A are twins)"
            else:
                candidates = sorted({k for s in prefix for k in by_intent_prefix[task.meta.intent, s]})
                for other_id, other in (kept_shingles[k] for k in candidates):
                    overlap = len(task_shingles & other) / len(task_shingles | other)
                    if overlap >= NEAR_DUPLICATE:
                        reason = f"near-duplicate of {other_id} ({overlap:.0%} of word 3-shingles shared)"
                        break
            if reason:
                dropped.append((task, GateVerdict(passed=False, reason=reason)))
                continue
            kept.append(task)
            by_text[text], by_gold[gold] = task.id, task.id
            if (pair := twin_key(task)) is not None:
                by_pair[pair] = task.id
            for s in prefix:
                by_intent_prefix[task.meta.intent, s].append(len(kept_shingles))
            kept_shingles.append((task.id, task_shingles))
        return kept, dropped
