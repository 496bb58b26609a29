"""Requests, tokens, cost and outcomes per stage, for the run report.

Tokens come from the server's `usage`; a server that sends none is estimated at four characters
a token and the figure is flagged. Cost counts only requests actually answered in this run
(cache hits are free), at the configured price of the model per million tokens. A ledger can tell
a watcher of every change (live progress: answers of planned, requests, tokens, cost so far).
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .config import Price


def estimate_tokens(text: str) -> int:
    return max(1, (len(text) + 3) // 4)


@dataclass
class StageUsage:
    requests: int = 0
    cache_hits: int = 0
    retries: int = 0
    failed_requests: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    tokens_estimated: bool = False
    repair_rounds: int = 0
    stage_retries: int = 0  # the stage started again after it failed (a flow's retry), with new seeds
    accepted: int = 0
    rejected: Counter = field(default_factory=Counter)
    planned: int = 0  # live progress only (not reported): items asked together, and those finished
    finished: int = 0

    def cost(self, price: Price | None) -> float:
        if price is None:
            return 0.0
        return (self.prompt_tokens * price.input + self.completion_tokens * price.output) / 1e6

    def progress(self, price: Price | None) -> dict[str, Any]:
        return {"planned": self.planned, "finished": self.finished, "requests": self.requests,
                "tokens": self.prompt_tokens + self.completion_tokens, "cost_usd": round(self.cost(price), 6)}

    def as_dict(self, price: Price | None) -> dict[str, Any]:
        cost = self.cost(price)
        return {"requests": self.requests, "cache_hits": self.cache_hits, "retries": self.retries,
                "failed_requests": self.failed_requests, "prompt_tokens": self.prompt_tokens,
                "completion_tokens": self.completion_tokens, "tokens_estimated": self.tokens_estimated,
                "cost_usd": round(cost, 6), "repair_rounds": self.repair_rounds,
                "stage_retries": self.stage_retries, "accepted": self.accepted,
                "rejected": dict(sorted(self.rejected.items()))}


Watcher = Callable[[str, dict[str, Any]], None]


class Usage:
    """One domain's ledger; the client and the stages write to it from any thread. `watcher(stage,
    progress)` hears of every change, outside the lock."""

    def __init__(self, model: str, price: Price | None, watcher: Watcher | None = None) -> None:
        self.model = model
        self.price = price
        self.watcher = watcher
        self._stages: dict[str, StageUsage] = {}
        self._lock = threading.Lock()

    def _changed(self, stage: str) -> None:
        if self.watcher is not None:
            with self._lock:
                progress = self._stages[stage].progress(self.price)
            self.watcher(stage, progress)

    def _stage(self, stage: str) -> StageUsage:
        if stage not in self._stages:
            self._stages[stage] = StageUsage()
        return self._stages[stage]

    def answered(self, stage: str, prompt_tokens: int, completion_tokens: int, estimated: bool) -> None:
        with self._lock:
            s = self._stage(stage)
            s.requests += 1
            s.prompt_tokens += prompt_tokens
            s.completion_tokens += completion_tokens
            s.tokens_estimated |= estimated
        self._changed(stage)

    def plan(self, stage: str, n: int) -> None:
        """`n` more items are being asked for together (for live progress)."""
        if not n:
            return
        with self._lock:
            self._stage(stage).planned += n
        self._changed(stage)

    def finish(self, stage: str) -> None:
        """One planned item is settled, accepted or not."""
        with self._lock:
            self._stage(stage).finished += 1
        self._changed(stage)

    def count(self, stage: str, what: str, n: int = 1) -> None:
        """Add to one counter: cache_hits, retries (of a request), failed_requests, repair_rounds,
        stage_retries or accepted."""
        with self._lock:
            s = self._stage(stage)
            setattr(s, what, getattr(s, what) + n)
            if what in ("retries", "failed_requests"):
                s.requests += n  # a retried or finally failed attempt was still sent
        self._changed(stage)

    def rejected(self, stage: str, category: str, n: int = 1) -> None:
        with self._lock:
            self._stage(stage).rejected[category] += n

    def report(self) -> dict[str, Any]:
        with self._lock:
            stages = {name: s.as_dict(self.price) for name, s in self._stages.items()}
        return {"model": self.model, "priced": self.price is not None, "stages": stages,
                "totals": sum_stages(stages.values())}


def sum_stages(stages: Any) -> dict[str, Any]:
    """The sum of several stage (or total) dicts as `StageUsage.as_dict` makes them."""
    total: dict[str, Any] = {}
    rejected: Counter = Counter()
    for entry in stages:
        for key, value in entry.items():
            if key == "rejected":
                rejected.update(value)
            elif key == "tokens_estimated":
                total[key] = total.get(key, False) or value
            else:
                total[key] = round(total.get(key, 0) + value, 6)
    total["rejected"] = dict(sorted(rejected.items()))
    return total


def merge_reports(reports: list[dict[str, Any]]) -> dict[str, Any]:
    """Totals over several domains' `Usage.report()`s, per stage and overall."""
    stages: dict[str, list[dict[str, Any]]] = {}
    for report in reports:
        for name, entry in report["stages"].items():
            stages.setdefault(name, []).append(entry)
    merged = {name: sum_stages(entries) for name, entries in stages.items()}
    models = sorted({r["model"] for r in reports})
    return {"model": models[0] if len(models) == 1 else models,
            "priced": all(r["priced"] for r in reports), "stages": merged,
            "totals": sum_stages(merged.values())}
