"""Live progress of an LLM stage: items answered of planned, requests, tokens and cost so far.

The synthesizer's ledger tells of every change, on the LLM client's event-loop thread. Each change
goes at once to the CLI's progress listeners (the terminal's bar). The Prefect run hears of it at most
every PUBLISH_EVERY_S seconds, from a thread of its own (Prefect's sync client must not run inside an
event loop): one log line and a progress artifact per stage and domain, which a Prefect UI shows.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from . import progress

PUBLISH_EVERY_S = 5.0


def describe(snapshot: dict[str, Any]) -> str:
    """'task 7/12 · 31 requests · 48.2k tokens · $0.21' (the fraction once items are planned)."""
    parts = [snapshot["stage"] + (f" {snapshot['finished']}/{snapshot['planned']}" if snapshot["planned"] else "")]
    parts.append(f"{snapshot['requests']} requests")
    parts.append(f"{snapshot['tokens'] / 1000:.1f}k tokens")
    if snapshot["cost_usd"]:
        parts.append(f"${snapshot['cost_usd']:.2f}")
    return " · ".join(parts)


@contextmanager
def watching(domain: str, stage: str, synth: Any, logger: Any) -> Iterator[None]:
    """While the body computes `stage` of `domain`, report the synthesizer's LLM progress (a
    synthesizer that calls no model has no `watch`, and this does nothing)."""
    if not hasattr(synth, "watch"):
        yield
        return
    latest: dict[str, Any] = {}
    changed = threading.Event()
    stop = threading.Event()

    def heard(llm_stage: str, snapshot: dict[str, Any]) -> None:
        latest.update(snapshot, stage=llm_stage)
        changed.set()
        progress.emit(domain, stage, llm=dict(latest))

    def create() -> Any:  # in the stage's own thread, whose run context links the artifact to it
        from prefect.artifacts import create_progress_artifact

        key = re.sub(r"[^a-z0-9-]+", "-", f"llm-{stage}-{domain}".lower())
        return create_progress_artifact(0.0, key=key, description=f"{domain} {stage}: waiting for answers")

    def publish() -> None:
        changed.clear()
        snapshot = dict(latest)
        line = f"{domain} {stage}: {describe(snapshot)}"
        logger.info(line)
        if artifact is not None:
            from prefect.artifacts import update_progress_artifact

            share = 100.0 * snapshot["finished"] / snapshot["planned"] if snapshot["planned"] else 0.0
            update_progress_artifact(artifact, share, description=line)

    artifact = _quietly(create)

    def ticker() -> None:
        while not stop.wait(PUBLISH_EVERY_S):
            if changed.is_set():
                _quietly(publish)
        if latest:
            _quietly(publish)

    thread = threading.Thread(target=ticker, name=f"toolscale-progress-{domain}", daemon=True)
    synth.watch(heard)
    thread.start()
    try:
        yield
    finally:
        synth.watch(None)
        stop.set()
        thread.join(timeout=10)


def _quietly(action: Callable[[], Any]) -> Any:
    """`action()`, or None if it raised: progress is for people, and a Prefect API that cannot take
    it must not fail the stage."""
    try:
        return action()
    except Exception:  # noqa: BLE001 - any client or server error
        return None
