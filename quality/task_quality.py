"""How learnable the accepted tasks are, for the report: answers a grader can check, the variety of
the user's text, personas, and what each hardening operator yields."""

from __future__ import annotations

import statistics
from collections import Counter, defaultdict
from collections.abc import Sequence
from typing import Any

from toolscale.domains.answers import answer_form, weakness
from toolscale.domains.tasks import Rejection, Task

from .wording import skeleton


def _answers(tasks: Sequence[Task]) -> dict[str, Any]:
    values = checkable = 0
    for task in tasks:
        communicate = task.evaluation_criteria.communicate_info
        text = task.user_scenario.text()
        values += len(communicate)
        checkable += sum(answer_form(v) == v and weakness(v, text, communicate, task.meta.expected_outputs) is None
                         for v in communicate)
    judged = Counter(kind for t in tasks for kind in t.meta.judged_answers)
    return {"values": values, "checkable": checkable, "share": round(checkable / values, 4) if values else 1.0,
            "judged": dict(sorted(judged.items())), "tasks_with_judged": sum(bool(t.meta.judged_answers) for t in tasks)}


def _skeletons(tasks: Sequence[Task]) -> dict[str, Any]:
    """Distinct sentence skeletons per intent, over base (unhardened) tasks."""
    by_intent: dict[str, set[str]] = defaultdict(set)
    sizes: Counter[str] = Counter()
    for task in tasks:
        if not task.meta.hardening:
            by_intent[task.meta.intent].add(skeleton(task))
            sizes[task.meta.intent] += 1
    counts = {intent: len(s) for intent, s in sorted(by_intent.items())}
    base = sum(sizes.values())
    below_two = sum(sizes[i] for i, n in counts.items() if n < 2)
    return {"per_intent": counts, "median": statistics.median(counts.values()) if counts else 0,
            "base_tasks": base, "base_tasks_below_2": below_two}


def _operators(accepted: Sequence[Task], rejected: Sequence[Rejection]) -> dict[str, Any]:
    """Per operator: variants accepted and rejected, and the gold length its accepted variants have."""
    made: dict[str, dict[str, Any]] = defaultdict(lambda: {"accepted": 0, "rejected": 0, "actions": []})
    for task in accepted:
        for op in task.meta.hardening:
            made[op]["accepted"] += 1
            made[op]["actions"].append(len(task.evaluation_criteria.actions))
    for rejection in rejected:
        for op in rejection.task.meta.hardening[-1:]:  # the operator that made this variant
            made[op]["rejected"] += 1
    return {op: {"accepted": m["accepted"], "rejected": m["rejected"],
                 "yield": round(m["accepted"] / (m["accepted"] + m["rejected"]), 3),
                 "mean_actions": round(statistics.fmean(m["actions"]), 2) if m["actions"] else 0.0}
            for op, m in sorted(made.items())}


def task_quality(accepted: Sequence[Task], rejected: Sequence[Rejection]) -> dict[str, Any]:
    personas = sum(bool(t.user_scenario.persona) for t in accepted)
    return {"tasks": len(accepted), "answers": _answers(accepted), "skeletons": _skeletons(accepted),
            "personas": personas, "operators": _operators(accepted, rejected)}


def combined(qualities: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The run's figures from each domain's."""
    values = sum(q["answers"]["values"] for q in qualities)
    checkable = sum(q["answers"]["checkable"] for q in qualities)
    judged: Counter[str] = Counter()
    operators: dict[str, Counter[str]] = defaultdict(Counter)
    for q in qualities:
        judged.update(q["answers"]["judged"])
        for op, m in q["operators"].items():
            operators[op].update({"accepted": m["accepted"], "rejected": m["rejected"]})
    per_intent = [n for q in qualities for n in q["skeletons"]["per_intent"].values()]
    tasks = sum(q["tasks"] for q in qualities)
    base = sum(q["skeletons"]["base_tasks"] for q in qualities)
    return {"answers": {"values": values, "checkable": checkable,
                        "share": round(checkable / values, 4) if values else 1.0, "judged": dict(sorted(judged.items()))},
            "skeletons_median": statistics.median(per_intent) if per_intent else 0,
            "base_tasks_below_2_share": round(sum(q["skeletons"]["base_tasks_below_2"] for q in qualities) / base, 4)
            if base else 0.0,
            "persona_share": round(sum(q["personas"] for q in qualities) / tasks, 4) if tasks else 0.0,
            "operators": {op: {**c, "yield": round(c["accepted"] / (c["accepted"] + c["rejected"]), 3)}
                          for op, c in sorted(operators.items())}}
