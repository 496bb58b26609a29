"""The funnel report: candidates, rejections by gate and acceptances, per domain and per intent."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from toolscale.domains.tasks import Rejection, Task


def _funnel(accepted: Sequence[Task], rejected: Sequence[Rejection]) -> dict[str, Any]:
    return {"candidates": len(accepted) + len(rejected),
            "accepted": len(accepted),
            "rejected": dict(sorted(Counter(r.gate for r in rejected).items()))}


def domain_funnel(accepted: Sequence[Task], rejected: Sequence[Rejection]) -> dict[str, Any]:
    """The funnel of one domain, split by intent, with the difficulty mix and the top reasons."""
    intents = sorted({t.meta.intent for t in accepted} | {r.task.meta.intent for r in rejected})
    reasons = Counter(f"{r.gate}: {r.reason}" for r in rejected)
    return {
        **_funnel(accepted, rejected),
        "difficulty": dict(sorted(Counter(t.meta.difficulty for t in accepted).items())),
        "intents": {name: _funnel([t for t in accepted if t.meta.intent == name],
                                  [r for r in rejected if r.task.meta.intent == name]) for name in intents},
        "top_rejection_reasons": [{"reason": reason, "count": n} for reason, n in reasons.most_common(10)],
    }


def totals(domains: dict[str, dict[str, Any]]) -> dict[str, Any]:
    rejected: Counter[str] = Counter()
    difficulty: Counter[str] = Counter()
    for funnel in domains.values():
        rejected.update(funnel["rejected"])
        difficulty.update(funnel.get("difficulty", {}))
    return {"domains": len(domains),
            "candidates": sum(f["candidates"] for f in domains.values()),
            "accepted": sum(f["accepted"] for f in domains.values()),
            "rejected": dict(sorted(rejected.items())),
            "difficulty": dict(sorted(difficulty.items())),
            "tools": sum(f.get("tools", 0) for f in domains.values()),
            "rows": sum(f.get("rows", 0) for f in domains.values())}
