"""The `generate` flow: one subflow per domain, run concurrently, its stages as Prefect tasks.

Stages are coarse (one Prefect task per stage and domain): Prefect costs 15-25 ms per task run
here, so per-record tasks would cost more than the work. Each stage's artifact goes to the stage
store in the run directory under a key computed before anything runs (flows/stages.py), so:
- a run resumes from the first stage whose artifact is missing, stale or damaged (a file not the one
  recorded when it was written, said in one line), and a stage that failed left nothing behind to trust;
- a run of some domains keeps the earlier report's other finished domains (of the same settings),
  so publishing after it still holds them all;
- a run with nothing to recompute does not start Prefect at all: it rebuilds the report from the
  stored artifacts and says so (`stages.computed` is 0 in report.json);
- `refresh` recomputes every stage of the requested domains.
Domains run on the configured task runner (flows/runners.py); a domain's subflow and stages run
on one worker. With the default threads runner and the offline backend, the stages themselves
compute in worker processes (flows/lanes.py), started by the run's plan (flows/plan.py) before
Prefect is imported.
"""

# No `from __future__ import annotations` here: a process or Dask worker gets the flows pickled by
# value, and Prefect validates their parameters from the annotations, which must be real types.
import json
import logging
import time
from collections.abc import Callable
from contextlib import nullcontext
from pathlib import Path
from typing import Any

import prefect.runtime as prefect_runtime
from prefect import flow, get_run_logger, tags, task
from prefect.cache_policies import NO_CACHE
from prefect.exceptions import MissingContextError
from prefect.states import Cancelled, Completed, State

from toolscale.pipeline.export import atomic_write
from toolscale.pipeline.llm import merge_reports
from toolscale.quality.difficulty import tau2_reference
from toolscale.quality.report import markdown, totals

from . import interrupts, llm_progress, local_server, progress
from .lanes import StageLanes
from .plan import Planned, RunConfig, domain_work, plan_run
from .runners import task_runner
from .stages import STAGE_NAMES, STAGES, DomainWork, compute_stage
from .store import StageStore, read_json

STAGE_RETRIES = 2  # for stages that call the synthesizer, when the backend calls out


def domain_entry(work: DomainWork) -> dict[str, Any]:
    """A domain's part of the report, from its stored artifacts: the funnel and each stage's time."""
    entry = read_json(work.artifact("export") / "funnel.json")
    entry["timings_s"] = {s.name: work.store.meta(s.name, work.keys[s.name])["seconds"] for s in STAGES}
    usage = [read_json(p) for s in STAGES if (p := work.artifact(s.name) / "llm.json").is_file()]
    if usage:  # the llm backend's requests, tokens and cost, per LLM stage
        entry["llm"] = merge_reports(usage)
    return entry


@task(name="stage", task_run_name="{stage}-{domain}", cache_policy=NO_CACHE)
def run_stage(stage: str, domain: str, work: DomainWork) -> float:
    """Compute one stage and publish its artifact (or wait for the lane computing it); returns the
    seconds it took."""
    logger = _run_logger()
    if _lanes is not None and _lanes.computes(domain, stage):
        seconds = _lanes.seconds(domain, stage)
    else:
        synthesizes = STAGES[STAGE_NAMES.index(stage)].synthesizer
        with llm_progress.watching(domain, stage, work.synth, logger) if synthesizes else nullcontext():
            seconds = compute_stage(work, stage)
    logger.info(f"{stage} of {domain}: computed in {seconds:.1f} s")
    return seconds


def _cancelled_if_stopped(subflows: bool = False) -> Callable[[], None]:
    """Mark the current flow run Cancelled if a signal stops the process (flows/interrupts.py), so a
    Prefect UI does not show it running for ever, and with `subflows` each of its subflows not yet
    ended too (one the signal caught as it started has not registered its own). Both are needed: the
    subflows are found through their parent task runs, which the server records from events, a
    moment late. Returns the function that takes that back."""
    run_id = prefect_runtime.flow_run.id

    def cancel(reason: str) -> None:
        from prefect import get_client
        from prefect.client.schemas.filters import (FlowRunFilter, FlowRunFilterParentFlowRunId,
                                                    FlowRunFilterState, FlowRunFilterStateType)
        from prefect.client.schemas.objects import StateType

        stopped = Cancelled(message=f"stopped by {reason}")
        with get_client(sync_client=True) as client:
            client.set_flow_run_state(run_id, stopped, force=True)
            if subflows:
                unended = FlowRunFilter(parent_flow_run_id=FlowRunFilterParentFlowRunId(any_=[run_id]),
                                        state=FlowRunFilterState(type=FlowRunFilterStateType(
                                            any_=[StateType.SCHEDULED, StateType.PENDING, StateType.RUNNING])))
                for run in client.read_flow_runs(flow_run_filter=unended):
                    client.set_flow_run_state(run.id, stopped, force=True)

    return interrupts.when_stopped(cancel)


def _run_logger() -> logging.Logger | logging.LoggerAdapter:
    """The Prefect run's logger (its lines reach a server's UI); a plain one when a stage is computed
    outside a run (tests call the task's function directly)."""
    try:
        return get_run_logger()
    except MissingContextError:
        return logging.getLogger("toolscale.flows")


@task(name="stage", task_run_name="{stage}-{domain}", cache_policy=NO_CACHE)
def reuse_stage(stage: str, domain: str, key: str) -> State:
    """A stage whose stored artifact is current: shown as Cached in a Prefect UI."""
    return Completed(name="Cached", message=f"{stage} of {domain}: reused the stored artifact {key[:12]}")


@flow(name="build-domain", flow_run_name="build-{name}")
def build_domain(name: str, config: RunConfig, todo: list[str]) -> dict[str, Any]:
    """The stages `todo` of one domain (those the plan found not current); returns its report entry
    and what it computed."""
    work = domain_work(name, config)
    in_lane = _lanes is not None and any(_lanes.computes(name, stage) for stage in todo)
    if not in_lane:  # a lane cleans its domain and says what it computes as it starts
        work.store.clean(keep=work.keys)  # temporary folders of killed runs, artifacts of other settings
    calls_out = config.backend != "offline"
    asks_agent = config.reference is not None
    forget_run = _cancelled_if_stopped()
    try:
        for stage in STAGES:
            if not in_lane:
                progress.emit(name, stage.name, reused=stage.name not in todo)
            if stage.name not in todo:
                reuse_stage(stage.name, name, work.keys[stage.name])
                continue
            retries = STAGE_RETRIES if (stage.synthesizer and calls_out) or (stage.agent and asks_agent) else 0
            run_stage.with_options(retries=retries, retry_delay_seconds=[2, 10])(stage.name, name, work)
    except Exception:
        spent = work.synth.take_report() if hasattr(work.synth, "take_report") else None
        if spent:
            work.store.record_failed_usage(spent)
        raise
    finally:
        forget_run()
        work.close()
    return {"entry": domain_entry(work), "computed": todo}


@task(name="domain", task_run_name="domain-{name}", cache_policy=NO_CACHE)
def run_domain(name: str, config: RunConfig, todo: list[str]) -> dict[str, Any]:
    """A domain's subflow as a task, so the task runner can run domains side by side; tagged with
    its domain (it inherits the run's seed and backend tags)."""
    with tags(f"domain:{name}"):
        return build_domain(name, config, todo)


@flow(name="generate")
def generate(config: RunConfig, plan: dict[str, list[str]]) -> dict[str, Any]:
    """Build the domains that have stages to compute (`plan`), on the configured task runner."""
    start = time.perf_counter()
    forget_run = _cancelled_if_stopped(subflows=True)
    futures = {name: run_domain.submit(name, config, plan[name]) for name in config.domains if plan[name]}
    results: dict[str, dict[str, Any]] = {}
    failed: dict[str, str] = {}
    for name, future in futures.items():
        try:  # one broken domain must not cost the others their work
            results[name] = future.result()
        except Exception as exc:
            failed[name] = f"{type(exc).__name__}: {exc}"
            _run_logger().error(f"{name} failed", exc_info=exc)  # the traceback, for a Prefect UI and --debug
            progress.emit(name, "failed", reason=failed[name])
    forget_run()  # not in a `finally`: a stop unwinds this thread, and its run must still be marked Cancelled
    return finish_run(config, results, failed, start, in_flow=True)


def finish_run(config: RunConfig, results: dict[str, dict[str, Any]], failed: dict[str, str], start: float,
               in_flow: bool = False) -> dict[str, Any]:
    """Write OUT/report.json and report.md for the requested domains (merged into the existing
    report with `merge`); domains not in `results` or `failed` were reused whole."""
    domains: dict[str, dict[str, Any]] = {}
    computed = reused = 0
    for name in config.domains:
        if name in failed:
            continue
        if name in results:
            domains[name], done = results[name]["entry"], results[name]["computed"]
        else:
            domains[name], done = domain_entry(domain_work(name, config)), []
        computed, reused = computed + len(done), reused + len(STAGES) - len(done)
        progress.emit(name, "done", accepted=domains[name]["accepted"], reused=not done)
    report = {"backend": config.backend, "seed": config.seed, "scale": config.scale, "settings": config.settings()}
    if config.merge and (config.out / "report.json").exists():
        report, domains, failed = _merged(read_json(config.out / "report.json"), domains, failed)
    else:
        domains.update(_finished_before(config))
    report.update(totals=totals(domains), reasoning_reference=tau2_reference(), domains=domains, failed=failed,
                  stages={"computed": computed, "reused": reused},
                  timings_s={"flow": round(time.perf_counter() - start, 3)})
    spent = [d["llm"] for d in domains.values() if "llm" in d]
    spent += [u for n in failed if (u := StageStore(config.out, n).failed_usage())]
    if spent:  # failed domains' requests cost too
        report["llm"] = merge_reports(spent)
    atomic_write(config.out / "report.json", json.dumps(report, indent=2) + "\n")
    text = markdown(report, config.out)
    atomic_write(config.out / "report.md", text)
    if in_flow:
        from .artifacts import publish_report_artifacts

        publish_report_artifacts(report, text)
    return report


def _finished_before(config: RunConfig) -> dict[str, dict[str, Any]]:
    """The earlier report's entries of the other finished domains in OUT, when it was made with this
    run's settings: a run of some domains must not drop the rest from report.json, and so from hf/
    and tau2/. Finished domains it cannot keep are said in one line."""
    finished = sorted(p.parent.name for p in config.out.glob("*/tasks.jsonl") if p.parent.name not in config.domains)
    if not finished:
        return {}
    try:
        old = read_json(config.out / "report.json")
    except (OSError, ValueError):
        old = {}
    entries = old.get("domains") if isinstance(old, dict) and old.get("settings") == config.settings() else None
    kept = {name: entries[name] for name in finished if isinstance(entries, dict) and name in entries}
    if lost := [name for name in finished if name not in kept]:
        progress.emit(", ".join(lost), "notice", message="left out of report.json, hf/ and tau2/: not in an earlier "
                      "report with these settings (generate them with these settings, or use another --out)")
    return kept


def _merged(old: dict[str, Any], domains: dict[str, dict[str, Any]],
            failed: dict[str, str]) -> tuple[dict[str, Any], dict[str, Any], dict[str, str]]:
    """The old report's settings, its domains with these replaced (in their place) or added."""
    merged = {**old.get("domains", {}), **domains}
    for name in failed:
        merged.pop(name, None)
    still_failed = {n: why for n, why in old.get("failed", {}).items() if n not in domains}
    head = {k: old[k] for k in ("backend", "seed", "scale", "settings") if k in old}
    return head, merged, {**still_failed, **failed}


def run_generation(config: RunConfig, planned: Planned | None = None,
                   while_prefect_starts: Callable[[], None] = lambda: None) -> dict[str, Any]:
    """Run `planned` (`config`'s plan: made here when not given); start Prefect only if some stage
    must be computed, running `while_prefect_starts` meanwhile (or at once, when it need not start)."""
    if planned is None:
        with plan_run(config) as planned:
            return run_generation(config, planned, while_prefect_starts)
    plan = planned.todo
    if not any(plan.values()):
        while_prefect_starts()
        for name in config.domains:
            for stage in STAGES:
                progress.emit(name, stage.name, reused=True)
        return finish_run(config, {}, {}, planned.started)
    domains = sum(1 for todo in plan.values() if todo)
    runner = task_runner(config.runner, domains=domains, io_bound=config.backend != "offline")
    global _lanes
    _lanes = planned.lanes
    try:
        local_server.ensure_started(lambda message: progress.emit("prefect", "notice", message=message),
                                    while_prefect_starts)
        # a Prefect UI filters runs by their tags
        with local_server.flow_settings(), tags(f"seed:{config.seed}", f"backend:{config.backend}"):
            return generate.with_options(task_runner=runner, flow_run_name=run_name(config))(config, plan)
    finally:
        _lanes = None


_lanes: StageLanes | None = None  # the run's worker processes, when its stages compute in lanes




def run_name(config: RunConfig) -> str:
    """generate-<seed>-<domains>: what a Prefect UI lists the run as (random names otherwise)."""
    domains = "+".join(config.domains) if len(config.domains) <= 3 else f"{len(config.domains)}-domains"
    return f"generate-{config.seed}-{domains}"


def settings_of(out: Path, domain: str) -> dict[str, Any]:
    """The settings `out` was generated with, and the seed `domain` was built with there (for
    regenerate-domain). FileNotFoundError when `out` has no report.json."""
    report = read_json(out / "report.json")
    settings = dict(report.get("settings") or {k: report[k] for k in ("backend", "seed", "scale") if k in report})
    settings["seed"] = report.get("domains", {}).get(domain, {}).get("seed", settings.get("seed", 0))
    return settings


__all__ = ["RunConfig", "generate", "run_generation", "settings_of"]
