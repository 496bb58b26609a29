"""The `generate` flow: one subflow per domain, its stages as Prefect tasks, then the report.

Stages are coarse (one Prefect task per stage and domain): Prefect costs 15-25 ms per task run
here, so per-record tasks would cost more than the work.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, Literal

from prefect import flow, task
from prefect.cache_policies import NO_CACHE
from pydantic import BaseModel, ConfigDict, Field

from toolscale.domains import Domain, Environment
from toolscale.domains.tasks import Rejection, Task
from toolscale.pipeline.export import atomic_write, write_domain_files, write_jsonl
from toolscale.pipeline.populate import Rows
from toolscale.pipeline.synthesizer import OfflineSynthesizer, Synthesizer
from toolscale.quality.gates import run_gates
from toolscale.quality.report import domain_funnel, markdown, totals

from . import progress
from .artifacts import publish_report_artifacts


class RunConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    domains: list[str] = Field(min_length=1)
    seed: int = 0
    out: Path = Path("output")
    backend: Literal["offline"] = "offline"
    scale: float = Field(1.0, gt=0)


def synthesizer_for(config: RunConfig) -> Synthesizer:
    return OfflineSynthesizer(scale=config.scale)


@task(name="design", cache_policy=NO_CACHE)
def design_stage(synth: Synthesizer, name: str) -> Domain:
    return synth.design(name)


@task(name="populate", cache_policy=NO_CACHE)
def populate_stage(synth: Synthesizer, domain: Domain, seed: int) -> tuple[Rows, Environment]:
    rows = synth.populate(domain, seed)
    return rows, Environment.from_rows(domain, rows)


@task(name="tasks", cache_policy=NO_CACHE)
def tasks_stage(synth: Synthesizer, domain: Domain, env: Environment, rows: Rows,
                seed: int) -> tuple[list[Task], list[Rejection]]:
    return synth.tasks(domain, env, rows, seed)


@task(name="harden", cache_policy=NO_CACHE)
def harden_stage(synth: Synthesizer, domain: Domain, env: Environment, candidates: list[Task],
                 seed: int) -> tuple[list[Task], list[Rejection]]:
    return synth.harden(domain, env, candidates, seed)


@task(name="gate", cache_policy=NO_CACHE)
def gate_stage(candidates: list[Task], env: Environment) -> tuple[list[Task], list[Rejection]]:
    return run_gates(candidates, env)


@task(name="export", cache_policy=NO_CACHE)
def export_stage(out: Path, domain: Domain, env: Environment, accepted: list[Task],
                 rejected: list[Rejection]) -> None:
    write_domain_files(out, domain, env)
    write_jsonl(out / "rejected.jsonl", rejected)
    write_jsonl(out / "tasks.jsonl", accepted)  # last: its presence marks a finished domain


@flow(name="build-domain", flow_run_name="build-{name}")
def build_domain(name: str, config: RunConfig) -> dict[str, Any]:
    """Every stage for one domain; returns its funnel for the report."""
    synth = synthesizer_for(config)
    timings: dict[str, float] = {}

    def timed(stage: str, fn, *args):
        progress.emit(name, stage)
        start = time.perf_counter()
        result = fn(*args)
        timings[stage] = round(time.perf_counter() - start, 3)
        return result

    domain = timed("design", design_stage, synth, name)
    rows, env = timed("populate", populate_stage, synth, domain, config.seed)
    candidates, synthesis_rejections = timed("tasks", tasks_stage, synth, domain, env, rows, config.seed)
    candidates, harden_rejections = timed("harden", harden_stage, synth, domain, env, candidates, config.seed)
    accepted, gate_rejections = timed("gate", gate_stage, candidates, env)
    rejected = synthesis_rejections + harden_rejections + gate_rejections
    timed("export", export_stage, config.out / name, domain, env, accepted, rejected)
    env.close()
    funnel = domain_funnel(accepted, rejected, tools=list(domain.toolkit.specs))
    funnel.update(tools=len(domain.toolkit.specs), rows=sum(len(r) for r in rows.values()), timings_s=timings)
    progress.emit(name, "done", accepted=len(accepted), rejected=len(rejected))
    return funnel


@flow(name="generate")
def generate(config: RunConfig) -> dict[str, Any]:
    """Build every requested domain and write OUT/report.json."""
    start = time.perf_counter()
    config.out.mkdir(parents=True, exist_ok=True)
    domains: dict[str, dict[str, Any]] = {}
    failed: dict[str, str] = {}
    for name in config.domains:
        try:  # one broken domain must not cost the others their work
            domains[name] = build_domain(name, config)
        except Exception as exc:
            failed[name] = f"{type(exc).__name__}: {exc}"
            progress.emit(name, "failed", reason=failed[name])
    report = {"backend": config.backend, "seed": config.seed, "scale": config.scale,
              "totals": totals(domains), "domains": domains, "failed": failed,
              "timings_s": {"flow": round(time.perf_counter() - start, 3)}}
    atomic_write(config.out / "report.json", json.dumps(report, indent=2) + "\n")
    text = markdown(report, config.out)
    atomic_write(config.out / "report.md", text)
    publish_report_artifacts(report, text)
    return report
