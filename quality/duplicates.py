"""The duplicates gate: no two accepted tasks of a domain say or do the same thing."""

from __future__ import annotations

import json
import re
from collections import defaultdict

from toolscale.domains.tasks import GateVerdict, Task

NEAR_DUPLICATE = 0.9


def _words(task: Task) -> str:
    i = task.user_scenario.instructions
    text = " ".join(filter(None, [i.reason_for_call, i.known_info, i.task_instructions]))
    return " ".join(re.findall(r"[\w.@-]+", text.lower()))


def _shingles(text: str, n: int = 3) -> set[tuple[str, ...]]:
    words = text.split()
    return {tuple(words[i:i + n]) for i in range(max(len(words) - n + 1, 1))}


def _gold(task: Task) -> str:
    return json.dumps([[a.name, a.arguments] for a in task.evaluation_criteria.actions], sort_keys=True)


class DuplicateGate:
    """Keeps the first of tasks with the same instructions, the same gold calls, or instructions
    whose word 3-shingles overlap by 90% or more (compared within an intent)."""

    name = "duplicates"

    def check_all(self, tasks: list[Task]) -> tuple[list[Task], list[tuple[Task, GateVerdict]]]:
        kept: list[Task] = []
        dropped: list[tuple[Task, GateVerdict]] = []
        by_text: dict[str, str] = {}
        by_gold: dict[str, str] = {}
        by_intent: dict[str, list[tuple[str, set]]] = defaultdict(list)
        for task in tasks:
            text, gold = _words(task), _gold(task)
            shingles = _shingles(text)
            reason = None
            if text in by_text:
                reason = f"same instructions as {by_text[text]}"
            elif gold in by_gold:
                reason = f"same gold actions as {by_gold[gold]}"
            else:
                for other_id, other in by_intent[task.meta.intent]:
                    overlap = len(shingles & other) / len(shingles | other)
                    if overlap >= NEAR_DUPLICATE:
                        reason = f"near-duplicate of {other_id} ({overlap:.0%} of word 3-shingles shared)"
                        break
            if reason:
                dropped.append((task, GateVerdict(passed=False, reason=reason)))
                continue
            kept.append(task)
            by_text[text], by_gold[gold] = task.id, task.id
            by_intent[task.meta.intent].append((task.id, shingles))
        return kept, dropped
