"""`toolscale`: the command line. Each command runs a Prefect flow.

Exit status: 0 on success, 2 on bad usage or input (with a one-line reason), 1 on a failure
inside the run.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import typer
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from toolscale.domains import DomainError, available_domains

from . import progress
from .settings import configure_prefect, is_startup_failure, reset_ephemeral_database

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="Synthesize verifiable tool-use environments and tasks, quality-gated.")
console = Console(stderr=True)
STAGES = ("design", "populate", "tasks", "harden", "gate", "export")


def _fail_usage(message: str) -> None:
    console.print(f"[red]error:[/red] {message}")
    raise typer.Exit(2)


def _domain_list(value: str | None) -> list[str]:
    known = available_domains()
    if value is None:
        return known
    names = [n.strip() for n in value.split(",") if n.strip()]
    unknown = [n for n in names if n not in known]
    if unknown or not names:
        _fail_usage(f"unknown domain(s) {', '.join(unknown) or '(none given)'}; choose from {', '.join(known)}")
    return names


def _run_flow(fn, *args):
    """Run a flow; if Prefect's ephemeral server failed to start, reset its database and retry once."""
    try:
        return fn(*args)
    except Exception as exc:
        if not is_startup_failure(exc):
            raise
        console.print("[yellow]Prefect's local server did not start; resetting its database and retrying[/yellow]")
        reset_ephemeral_database()
        return fn(*args)


def _summary(report: dict) -> Table:
    table = Table(title=f"toolscale: {report['totals']['accepted']:,} accepted tasks")
    for column in ("domain", "tools", "rows", "candidates", "accepted", "rejected", "seconds"):
        table.add_column(column, justify="left" if column == "domain" else "right")
    for name, funnel in report["domains"].items():
        table.add_row(name, str(funnel["tools"]), f"{funnel['rows']:,}", f"{funnel['candidates']:,}",
                      f"{funnel['accepted']:,}", f"{sum(funnel['rejected'].values()):,}",
                      f"{sum(funnel['timings_s'].values()):.1f}")
    t = report["totals"]
    table.add_row("total", str(t["tools"]), f"{t['rows']:,}", f"{t['candidates']:,}", f"{t['accepted']:,}",
                  f"{sum(t['rejected'].values()):,}", f"{report['timings_s']['flow']:.1f}", style="bold")
    return table


@app.command()
def generate(
    domains: str | None = typer.Option(None, help="Comma-separated domains (default: all built-in)."),
    seed: int = typer.Option(0, help="Seed: the same seed gives byte-identical tasks."),
    out: Path = typer.Option(Path("output"), help="Output directory."),
    backend: str = typer.Option("offline", help="Synthesizer backend: offline."),
    scale: float = typer.Option(1.0, min=0.01, help="Multiply rows and tasks per domain."),
) -> None:
    """Generate databases, tools and quality-gated tasks for the domains."""
    if backend != "offline":
        _fail_usage(f"unknown backend {backend!r}; available: offline")
    names = _domain_list(domains)
    configure_prefect()
    from .generate import RunConfig, generate as generate_flow  # imports Prefect: after configure_prefect

    config = RunConfig(domains=names, seed=seed, out=out, backend=backend, scale=scale)
    started = time.perf_counter()
    with Progress(TextColumn("{task.description:<12}"), BarColumn(), TextColumn("{task.fields[stage]}"),
                  TimeElapsedColumn(), console=console, transient=False) as bar:
        rows = {n: bar.add_task(n, total=len(STAGES), stage="waiting") for n in names}

        def on_progress(domain: str, stage: str, info: dict) -> None:
            done = STAGES.index(stage) if stage in STAGES else len(STAGES)
            label = {"done": f"{info.get('accepted', 0):,} accepted", "failed": "[red]failed[/red]"}.get(stage, stage)
            bar.update(rows[domain], completed=done, stage=label)

        progress.subscribe(on_progress)
        try:
            report = _run_flow(generate_flow, config)
        except DomainError as exc:
            _fail_usage(str(exc).splitlines()[0])
        finally:
            progress.unsubscribe(on_progress)
    console.print(_summary(report))
    console.print(f"wrote {out}/ in {time.perf_counter() - started:.1f}s")
    for name, reason in report["failed"].items():
        console.print(f"[red]{name} failed:[/red] {reason.splitlines()[0]}")
    if report["failed"]:
        raise typer.Exit(1)


@app.command("list-domains")
def list_domains() -> None:
    """List the built-in domains."""
    for name in available_domains():
        typer.echo(name)


def main() -> None:
    app()


if __name__ == "__main__":
    sys.exit(main())
