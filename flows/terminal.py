"""What a generate run shows while it runs: a bar per domain on a terminal, plain lines otherwise.

On a terminal each domain's row shows its stage, and during an LLM stage the live count (answers of
planned, requests, tokens, cost so far). Written to a file or a pipe, a run prints one line per
stage a domain starts and at most one LLM progress line per domain every LINE_EVERY_S seconds, so
a log shows where a run is without waiting for its end.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from . import progress
from .llm_progress import describe
from .stages import STAGE_NAMES

LINE_EVERY_S = 10.0


@contextmanager
def showing_progress(console: Console, domains: list[str]) -> Iterator[None]:
    """Show the progress events of `domains` on `console` while the body runs."""
    with Progress(TextColumn("{task.description:<12}"), BarColumn(), TextColumn("{task.fields[stage]}"),
                  TimeElapsedColumn(), console=console, transient=False, disable=not console.is_terminal) as bar:
        rows = {n: bar.add_task(n, total=len(STAGE_NAMES), stage="waiting") for n in domains}
        said: dict[str, tuple[str, float]] = {}  # domain -> the last plain line's stage, and when

        def line(domain: str, stage: str, text: str, live: bool) -> None:
            last, when = said.get(domain, ("", 0.0))
            if live and stage == last and time.monotonic() - when < LINE_EVERY_S:
                return
            said[domain] = (stage, time.monotonic())
            console.print(f"{escape(domain)}: {escape(text)}", soft_wrap=True, highlight=False)

        def on_progress(domain: str, stage: str, info: dict) -> None:
            if stage == "notice":  # e.g. a damaged stage artifact that is recomputed, Prefect starting
                console.print(f"[yellow]{escape(domain)}:[/yellow] {escape(info['message'])}", soft_wrap=True)
                return
            done = STAGE_NAMES.index(stage) if stage in STAGE_NAMES else len(STAGE_NAMES)
            label = {"done": f"{info.get('accepted', 0):,} accepted", "failed": "failed"}.get(stage, stage)
            label += " (reused)" if info.get("reused") else ""
            if "llm" in info:
                label = f"{stage}: llm {describe(info['llm'])}"
            if domain in rows:
                bar.update(rows[domain], completed=done, stage=f"[red]{label}[/red]" if stage == "failed" else label)
            if not console.is_terminal and (stage in ("done", "failed") or not info.get("reused")):
                line(domain, stage, label, live="llm" in info)

        progress.subscribe(on_progress)
        try:
            yield
        finally:
            progress.unsubscribe(on_progress)
