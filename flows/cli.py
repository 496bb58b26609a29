"""`toolscale`: the command line. Each command runs a Prefect flow.

Exit status: 0 on success, 2 on bad usage or input (with a one-line reason), 1 on a failure
inside the run.
"""

from __future__ import annotations

import re
import json
import math
import os
import sys
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from toolscale.domains import DomainError, available_domains, builtin_domain, load_domain
from toolscale.pipeline.workers import keeping_workers

from .interrupts import stopping_cleanly
from .lanes import computes_in_lanes, start_workers
from .runners import RunnerError, parse_runner, thread_count
from .settings import DEBUG_VARIABLE, configure_prefect, debug_mode
from .terminal import showing_progress

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="Synthesize verifiable tool-use environments and tasks, quality-gated.")
console = Console(stderr=True)
SEED_RANGE = {"min": -2**63, "max": 2**63 - 1}  # the dataset stores a run's seed as an int64 (pipeline/exporters/hf.py)
LLM_HELP = {
    "base_url": "An OpenAI-compatible endpoint, e.g. http://localhost:8000/v1 (vllm serve); the API key comes "
                "from TOOLSCALE_LLM_API_KEY or OPENAI_API_KEY.",
    "model": "The model to ask, as the endpoint names it.",
    "config": "A YAML/JSON file of further llm settings: max_in_flight, max_retries, timeout_s, temperature, "
              "cache_dir, prices, synthesis sizes (see pipeline/llm/config.py).",
    "reference_model": "LLM gates: a reference agent (this model) tries every gated task; a task it cannot solve "
                       "in --reference-trials tries, or solves without tools, is rejected.",
    "reference_base_url": "The reference agent's OpenAI-compatible endpoint (default: --llm-base-url).",
    "reference_trials": "k: the reference agent's tries per task (pass^k goes into each task's meta).",
    "reference_judge": "An LLM judge (the reference agent's endpoint) must also pass each solved try of a task "
                       "with nl_assertions.",
}


def _fail_usage(message: str) -> None:
    # soft_wrap: a one-line error stays one line whatever the terminal width; escape: ".[train]", a list
    console.print(f"[red]error:[/red] {escape(message)}", soft_wrap=True)
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


def _check_out(out: Path, domains: Iterable[str] = ()) -> None:
    """Exit 2 unless `out` is a folder this process can write in (made here when missing) whose insides
    it can trust: no symlink, FIFO or device where toolscale reads, writes or deletes (pipeline/outdir.py)."""
    if out.exists() and not out.is_dir():
        _fail_usage(f"--out {out} is a file, not a folder")
    try:
        out.mkdir(parents=True, exist_ok=True)
        tempfile.NamedTemporaryFile(dir=out).close()
    except OSError as exc:
        _fail_usage(f"--out {out} cannot be written: {exc.strerror or exc}")
    _check_insides(out, domains)


def _check_insides(out: Path, domains: Iterable[str] = ()) -> None:
    from toolscale.pipeline.outdir import OutputFolderError, check_output_folder

    try:
        check_output_folder(out, domains)
    except (OutputFolderError, OSError) as exc:
        _fail_usage(f"--out {out}: {exc}")


def _check_scale(scale: float, offline: Iterable[str] = (), folders: dict[str, str] | None = None) -> None:
    """Exit 2 when `scale` is not finite, or when the offline populator would make more rows at that scale
    than a table or a database may hold in one of the `offline` domains (built in, or read from `folders`).
    (An LLM designs its own tables.)"""
    if not math.isfinite(scale):
        _fail_usage(f"--scale must be a finite number, got {scale}")
    folders = folders or {}
    for name in offline if scale > 1 else ():  # a spec loads only if it fits at scale 1, so it fits below
        spec = (load_domain(folders[name]) if name in folders else builtin_domain(name)).spec
        problem = spec.size_problem(scale)
        if problem is not None:
            _fail_usage(f"--scale {scale:g}: {name}: {problem[1]}")


def _domain_folders(paths: list[Path] | None) -> dict[str, str]:
    """{domain name: absolute folder} for `--domain-dir`s; exits 2 naming a folder that does not load or
    whose name is taken."""
    folders: dict[str, str] = {}
    for path in paths or []:
        try:
            name = load_domain(path).name
        except DomainError as exc:
            _fail_usage(f"--domain-dir {path}: {str(exc).splitlines()[0]}")
        if name in available_domains() or name in folders:
            _fail_usage(f"--domain-dir {path}: domain {name!r} is already {'built in' if name in available_domains() else 'given'}")
        folders[name] = str(Path(path).resolve())
    return folders


def _run_flow(fn, *args, start_server: bool = True):
    """Run a flow, starting Prefect's local server first with a line that says so (`start_server`:
    unless `fn` starts it only when needed)."""
    from .local_server import ensure_started, flow_settings

    if start_server:
        ensure_started(_say)
    with flow_settings():
        return fn(*args)


def _say(message: str) -> None:
    console.print(f"[yellow]{escape(message)}[/yellow]", soft_wrap=True)


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
    seed: int = typer.Option(0, **SEED_RANGE, help="Seed: the same seed gives byte-identical tasks."),
    out: Path = typer.Option(Path("output"), help="Output directory."),
    backend: str | None = typer.Option(None, help="Synthesizer backend: offline, or llm (the default "
                                       "when --llm-base-url is given)."),
    scale: float = typer.Option(1.0, min=0.01, help="Multiply rows and tasks per domain."),
    refresh: bool = typer.Option(False, "--refresh", help="Recompute every stage instead of reusing stored ones."),
    runner: str = typer.Option("threads", help="Where domains run: threads[:N], processes[:N], dask[:N], "
                               "dask://HOST:PORT, ray[:N], ray://HOST:PORT."),
    llm_base_url: str | None = typer.Option(None, help=LLM_HELP["base_url"]),
    model: str | None = typer.Option(None, help=LLM_HELP["model"]),
    llm_config: Path | None = typer.Option(None, help=LLM_HELP["config"]),
    reference_model: str | None = typer.Option(None, help=LLM_HELP["reference_model"]),
    reference_base_url: str | None = typer.Option(None, help=LLM_HELP["reference_base_url"]),
    reference_trials: int = typer.Option(3, min=1, help=LLM_HELP["reference_trials"]),
    reference_judge: bool = typer.Option(False, "--reference-judge", help=LLM_HELP["reference_judge"]),
    domain_dir: list[Path] | None = typer.Option(None, "--domain-dir", help="A hand-written domain folder "
                                                 "(domain.yaml, tools.py, policy.md), built like a built-in "
                                                 "domain; repeatable. Without --domains only these are built."),
) -> None:
    """Generate databases, tools and quality-gated tasks for the domains (resuming an interrupted run)."""
    backend, llm = _backend(backend, llm_base_url, model, llm_config)
    reference = _reference(reference_model, reference_base_url, llm_base_url, reference_trials, reference_judge)
    folders = _domain_folders(domain_dir)
    if folders and backend != "offline":
        _fail_usage("--domain-dir builds a hand-written domain with the offline backend (an LLM designs its own)")
    names = _domain_list(domains) if domains or not folders else []
    names += [name for name in folders if name not in names]
    _check_runner(runner)
    _check_scale(scale, names if backend == "offline" else [], folders)
    _check_out(out, names)
    configure_prefect()
    with keeping_workers():  # those the stages did not take publish the run (pipeline/workers.py)
        if computes_in_lanes(backend, reference, runner):
            start_workers(thread_count(runner, len(names)))  # they start while the run is planned
        from .plan import RunConfig

        _execute(RunConfig(domains=names, domain_dirs=folders, seed=seed, out=out, backend=backend, llm=llm,
                           scale=scale, refresh=refresh, runner=runner, reference=reference))


def _reference(model: str | None, base_url: str | None, llm_base_url: str | None, trials: int, judge: bool):
    """The reference agent's config, or None; exits 2 when it is half given."""
    if model is None:
        if base_url is not None or trials != 3 or judge:
            _fail_usage("--reference-base-url, --reference-trials and --reference-judge need --reference-model")
        return None
    if (base_url or llm_base_url) is None:
        _fail_usage("--reference-model needs --reference-base-url (or --llm-base-url)")
    from toolscale.agents.endpoints import EndpointConfig
    from toolscale.pipeline.llm.config import api_key_variable
    from toolscale.quality.reference import ReferenceConfig

    # the reference agent reads its key from the variable the LLM backend reads
    agent = EndpointConfig(base_url=base_url or llm_base_url, model=model, api_key_env=api_key_variable())
    return ReferenceConfig(agent=agent, trials=trials, judge=agent if judge else None)


def _backend(backend: str | None, base_url: str | None, model: str | None, config_file: Path | None):
    """(backend, LLMConfig or None) from the command line; exits 2 with the reason when they do not fit."""
    backend = backend or ("llm" if base_url else "offline")
    if backend not in ("offline", "llm"):
        _fail_usage(f"unknown backend {backend!r}; available: offline, llm")
    if backend == "offline":
        if base_url or model or config_file:
            _fail_usage("--llm-base-url, --model and --llm-config are for --backend llm")
        return backend, None
    if not base_url or not model:
        _fail_usage("the llm backend needs --llm-base-url URL and --model NAME")
    from toolscale.pipeline.llm import LLMConfigError, build_config

    try:
        return backend, build_config(base_url, model, config_file)
    except LLMConfigError as exc:
        _fail_usage(str(exc))


def _check_runner(runner: str) -> None:
    try:
        parse_runner(runner)
    except RunnerError as exc:
        _fail_usage(str(exc))


def _execute(config) -> None:
    """Run the generation for `config` with live progress, print the summary, exit 1 if a domain failed."""
    from .plan import plan_run

    names, out = config.domains, config.out
    started = time.perf_counter()
    with showing_progress(console, names):
        try:
            with plan_run(config) as planned:  # its stages compute from now, while Prefect is imported
                from .generate import run_generation  # imports Prefect: after configure_prefect

                # the flow starts Prefect's server itself (not for a run with nothing to do), and
                # while it starts, this process imports what the run's end uses
                prefetch = _import_the_runs_end if planned.lanes is not None else lambda: None
                report = _run_flow(run_generation, config, planned, prefetch, start_server=False)
        except (DomainError, RunnerError) as exc:
            _fail_usage(str(exc).splitlines()[0])
    console.print(_summary(report))
    console.print(f"wrote {out}/ in {time.perf_counter() - started:.1f}s")
    stages = report["stages"]
    if not stages["computed"] and not report["failed"]:
        console.print(f"nothing to recompute: all {stages['reused']} stage artifacts in {out}/.toolscale/stages "
                      "are current (--refresh recomputes them)")
    elif stages["reused"]:
        console.print(f"resumed: reused {stages['reused']} stage artifacts, computed {stages['computed']}")
    for name, reason in report["failed"].items():
        console.print(f"[red]{name} failed:[/red] {escape(reason.splitlines()[0])}", soft_wrap=True)
    if report["domains"]:
        _publish(out, refresh=config.refresh)
    if report["failed"]:
        raise typer.Exit(1)


def _import_the_runs_end() -> None:
    """Import what the run's end uses, the report's plots (matplotlib) and the exporters (`datasets`),
    while the stages compute in their lanes: imported after them, ~1.7 s of a core passed with the
    other one idle (a bank+weather run at 0.3 on a running server: 7 paired runs, 0.92 of the time).
    Imported once Prefect's local server is launched, not before: they would delay its start by as much."""
    from toolscale.pipeline.publication import exporters
    from toolscale.quality.report import plotting

    exporters()
    plotting()


def _publish(out: Path, refresh: bool = False) -> None:
    """The publish flow: OUT/hf (the dataset) and OUT/tau2 (τ²-bench packages) from the finished
    domains; reused as they are when nothing they are made from changed (unless `refresh`)."""
    from toolscale.pipeline.rows import PublishError

    from .publish import publish, reuse_publication

    started = time.perf_counter()
    try:
        summary = None if refresh else reuse_publication(out)
        if summary is None:
            summary = _run_flow(publish, out)
    except PublishError as exc:
        console.print(f"[red]publish failed:[/red] {escape(str(exc).splitlines()[0])}", soft_wrap=True)
        raise typer.Exit(1)
    tasks = summary["tasks"]
    what = ("are current: nothing they are made from changed" if summary.get("reused")
            else f"published in {time.perf_counter() - started:.1f}s")
    console.print(f"{out}/hf ({tasks['train']:,} train and {tasks['test']:,} test tasks) and {out}/tau2/ "
                  f"({len(summary['tau2'])} τ²-bench packages) {what}", soft_wrap=True)


@app.command("regenerate-domain")
def regenerate_domain(
    name: str = typer.Argument(..., help="The domain to rebuild."),
    seed: int | None = typer.Option(None, **SEED_RANGE,
                                    help="Seed for this domain (default: the one it was built with)."),
    out: Path = typer.Option(Path("output"), help="An existing output directory."),
    backend: str | None = typer.Option(None, help="Switch the backend: offline or llm (default: as built)."),
    llm_base_url: str | None = typer.Option(None, help=LLM_HELP["base_url"]),
    model: str | None = typer.Option(None, help=LLM_HELP["model"]),
    llm_config: Path | None = typer.Option(None, help=LLM_HELP["config"]),
) -> None:
    """Rebuild one domain in an existing output with its settings; the other domains stay as they are."""
    switch = backend is not None or llm_base_url is not None
    if switch:
        backend, llm = _backend(backend, llm_base_url, model, llm_config)
    if name not in _designed_domains(out):  # a domain new-domain designed into `out` is rebuilt like a built-in
        _domain_list(name)
    if not (out / "report.json").is_file():
        _fail_usage(f"{out}/report.json not found: run `toolscale generate --out {out}` first")
    _check_insides(out, [name])
    configure_prefect()
    from pydantic import ValidationError

    from .generate import settings_of
    from .plan import RunConfig

    settings = settings_of(out, name)
    if seed is not None:
        settings["seed"] = seed
    if switch:
        settings.update(backend=backend, llm=llm)
    try:
        config = RunConfig(**settings, domains=[name], out=out, refresh=True, merge=True)
    except ValidationError as exc:
        _fail_usage(f"{out}/report.json: settings this version cannot use: {exc.errors()[0]['msg']}")
    _execute(config)


def _designed_domains(out: Path) -> set[str]:
    """The domains of `out`'s report that are not built in (designed by new-domain)."""
    try:
        report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return set()
    return {n for n in [*report.get("domains", {}), *report.get("failed", {})] if n not in available_domains()}


@app.command("new-domain")
def new_domain(
    brief: str = typer.Argument(..., help='A one-line description, e.g. "pet grooming salon".'),
    out: Path = typer.Option(Path("output"), help="Output directory (the domain is added to its report)."),
    name: str | None = typer.Option(None, help="The domain's name (default: the brief in snake_case)."),
    seed: int = typer.Option(0, **SEED_RANGE, help="Seed: the same seed and cache give the same domain and tasks."),
    scale: float = typer.Option(1.0, min=0.01, help="Multiply rows and tasks."),
    llm_base_url: str | None = typer.Option(None, help=LLM_HELP["base_url"]),
    model: str | None = typer.Option(None, help=LLM_HELP["model"]),
    llm_config: Path | None = typer.Option(None, help=LLM_HELP["config"]),
) -> None:
    """Design a domain that is not built in from a one-line brief (LLM only), then build its tasks."""
    if not llm_base_url or not model:
        _fail_usage("new-domain designs with an LLM: give --llm-base-url URL and --model NAME")
    _, llm = _backend("llm", llm_base_url, model, llm_config)
    _check_scale(scale)
    _check_out(out, [name] if name else [])
    configure_prefect()
    from .new_domain import BriefError, new_domain_config

    try:
        config = new_domain_config(brief, llm, out=out, seed=seed, scale=scale, name=name)
    except BriefError as exc:
        _fail_usage(str(exc))
    _execute(config)


@app.command()
def push(
    repo: str = typer.Option(..., help="The dataset repo on the Hub, ORG/NAME."),
    private: bool = typer.Option(False, "--private", help="Create the repo private."),
    dry_run: bool = typer.Option(False, "--dry-run", help="List what would be sent and where; send nothing."),
    out: Path = typer.Option(Path("output"), help="Output directory of a finished run."),
) -> None:
    """Publish OUT/hf and the τ² packages of OUT/tau2 to the Hugging Face Hub (HF_ENDPOINT; the token from
    HF_TOKEN or `hf auth login`)."""
    if not re.fullmatch(r"[A-Za-z0-9][\w.-]*/[A-Za-z0-9][\w.-]*", repo):
        _fail_usage(f"--repo must be ORG/NAME, got {repo!r}")
    folder = out / "hf"
    if not (folder / "README.md").is_file():
        _fail_usage(f"{folder}/README.md not found: run `toolscale generate --out {out}` first")
    _check_insides(out)
    configure_prefect()
    from .publish import hub_endpoint, hub_token, push as push_flow, upload_plan

    from toolscale.pipeline.secret_scan import SecretFound, check_no_secrets

    plan = upload_plan(out)
    try:  # a dry run too: it says what a push would do
        check_no_secrets([path for _, path, _ in plan])
    except SecretFound as exc:
        console.print(f"[red]push refused:[/red] {escape(str(exc))}", soft_wrap=True)
        raise typer.Exit(1)
    target = f"{hub_endpoint()}/datasets/{repo} ({'private' if private else 'public'})"
    if dry_run:
        for name, _, size in plan:
            typer.echo(f"{size:>12,}  {name}")
        typer.echo(f"dry run: would create {target} and upload {len(plan)} files "
                   f"({sum(size for _, _, size in plan):,} bytes) in one commit")
        return
    if not hub_token():
        _fail_usage("no Hugging Face token: set HF_TOKEN or run `hf auth login`")
    try:
        result = _run_flow(push_flow, out, repo, private)
    except Exception as exc:  # the Hub's refusal or a network failure: one line, exit 1
        console.print(f"[red]push failed:[/red] {str(exc).splitlines()[0]}")
        raise typer.Exit(1)
    console.print(f"pushed {len(plan)} files to {result['repo_url']} ({result['commit_url']})")


@app.command()
def train(
    config: Path = typer.Option(..., "--config", help="A training config, e.g. trainer/configs/cpu-smoke.yaml."),
    overrides: list[str] = typer.Option([], "--set", help="Override a setting: KEY=VALUE, e.g. grpo.max_steps=3."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Check the configuration (no GPU needed); train nothing."),
) -> None:
    """Train a tool-calling policy with GRPO on accepted tasks (TRL; vLLM rollouts on GPUs)."""
    configure_prefect()
    from .train import run_train  # imports Prefect: after configure_prefect

    run_train(config, overrides, dry_run, console, _fail_usage, _run_flow)


@app.command("eval")
def eval_(
    base_url: str = typer.Option(..., help="The agent: an OpenAI-compatible endpoint, e.g. http://localhost:8000/v1."),
    model: str = typer.Option(..., help="The agent's model name, as the endpoint names it."),
    tasks: Path = typer.Option(Path("output"), help="A `toolscale generate` output folder."),
    domains: str | None = typer.Option(None, help="Comma-separated domains (default: all in the folder)."),
    per_domain: int | None = typer.Option(None, min=1, help="At most this many tasks per domain."),
    split: str = typer.Option("test", help="train, test (the held-out tasks) or all."),
    task_ids: str | None = typer.Option(None, help="Comma-separated task ids: only these tasks."),
    seed: int | None = typer.Option(None, help="Draws the --per-domain sample (default: each intent's first tasks)."),
    trials: int = typer.Option(1, min=1, help="k: trials per task (pass^1..pass^k are reported)."),
    mode: str = typer.Option("solo", help="solo (instruction as first user message) or user (LLM user simulator)."),
    user_base_url: str | None = typer.Option(None, help="User simulator endpoint (default: the agent's)."),
    user_model: str | None = typer.Option(None, help="User simulator model (default: the agent's)."),
    api_key_env: str | None = typer.Option(None, help="Environment variable holding the agent's API key."),
    price_in: float = typer.Option(0.0, help="Agent $ per million prompt tokens."),
    price_out: float = typer.Option(0.0, help="Agent $ per million completion tokens."),
    experts: Path | None = typer.Option(None, help="YAML list of expert endpoints offered as call_expert."),
    max_turns: int = typer.Option(30, min=1, help="Agent turns before a trial is cut off."),
    concurrency: int = typer.Option(4, min=1, help="Trials run at once."),
    out: Path = typer.Option(Path("eval.json"), help="Where the report (summary and every trial) is written."),
) -> None:
    """Evaluate an OpenAI-compatible agent on accepted tasks: pass^k per domain, cost, turns."""
    configure_prefect()
    from .evaluate import run_eval  # imports Prefect: after configure_prefect

    run_eval(dict(base_url=base_url, model=model, tasks=tasks, domains=domains, per_domain=per_domain, split=split,
                  task_ids=task_ids, seed=seed,
                  trials=trials, mode=mode, user_base_url=user_base_url, user_model=user_model,
                  api_key_env=api_key_env, price_in=price_in, price_out=price_out, experts=experts,
                  max_turns=max_turns, concurrency=concurrency, out=out), console, _fail_usage, _run_flow)


@app.command("list-domains")
def list_domains() -> None:
    """List the built-in domains."""
    for name in available_domains():
        typer.echo(name)


@app.callback()
def _options(debug: bool = typer.Option(False, "--debug", help="Show Prefect's log and the traceback of every "
                                        f"failure (also {DEBUG_VARIABLE}=1).")) -> None:
    if debug:
        os.environ[DEBUG_VARIABLE] = "1"


def main() -> None:
    """The `toolscale` command: SIGTERM or Ctrl-C stops it within seconds (flows/interrupts.py), and a
    failure nothing foresaw is one line unless in debug mode."""
    with stopping_cleanly(_say):
        try:
            app()
        except Exception as exc:  # click has handled usage errors and exits (SystemExit is no Exception)
            if debug_mode():
                raise
            console.print(f"[red]error:[/red] {escape(f'{type(exc).__name__}: {exc}'.splitlines()[0])} "
                          "(toolscale --debug shows the traceback)", soft_wrap=True)
            sys.exit(1)


if __name__ == "__main__":
    sys.exit(main())
