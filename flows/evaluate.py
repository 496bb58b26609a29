"""The `eval` flow: an OpenAI-compatible agent over accepted tasks, one Prefect task per domain,
and what `toolscale eval` prints around it. Import after settings.configure_prefect().

Writes the report (config, pass^k summary, every trial) to the configured file atomically.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml
from prefect import flow, task
from prefect.cache_policies import NO_CACHE
from pydantic import ValidationError
from rich.console import Console
from rich.table import Table

from toolscale.pipeline.export import atomic_write
from toolscale.agents.endpoints import EndpointConfig
from toolscale.agents.evaluate import EvalConfig, TrialResult, evaluate_tasks, summarize_trials
from toolscale.agents.tasks import DataError, DomainData, load_output
from toolscale.agents.toolbox import ExpertConfig


@task(name="evaluate-domain", cache_policy=NO_CACHE, task_run_name="evaluate-{name}")
def evaluate_domain(name: str, data: dict[str, DomainData], config: EvalConfig) -> list[TrialResult]:
    return evaluate_tasks(data, data[name].tasks, config)


@flow(name="evaluate")
def evaluate(config: EvalConfig) -> dict[str, Any]:
    """Run every trial, write `config.out`, return {config, summary, trials}."""
    data = load_output(config.tasks, config.domains, max_tasks_per_domain=config.per_domain, split=config.split,
                       task_ids=config.task_ids, seed=config.seed)
    results: list[TrialResult] = []
    for name in sorted(data):
        results.extend(evaluate_domain(name, data, config))
    report = {"config": config.model_dump(mode="json"), "summary": summarize_trials(results, config.trials),
              "trials": [r.record() for r in results]}
    atomic_write(config.out, json.dumps(report, indent=2) + "\n")
    return report


def _experts(path: Path | None, fail: Callable[[str], None]) -> list[Any]:
    if path is None:
        return []
    try:
        items = yaml.safe_load(path.read_text(encoding="utf-8")) or []
        return [ExpertConfig.model_validate(item) for item in items]
    except (OSError, yaml.YAMLError, ValidationError, TypeError) as exc:
        fail(f"{path}: not a list of experts: {str(exc).splitlines()[0]}")
    return []


def run_eval(options: dict[str, Any], console: Console, fail: Callable[[str], None],
             run_flow: Callable[..., Any]) -> None:
    o = options
    agent = dict(base_url=o["base_url"], model=o["model"], api_key_env=o["api_key_env"], price_in=o["price_in"],
                 price_out=o["price_out"])
    user = dict(base_url=o["user_base_url"] or o["base_url"], model=o["user_model"] or o["model"],
                api_key_env=o["api_key_env"] if not o["user_base_url"] else None)
    domains = [d.strip() for d in o["domains"].split(",") if d.strip()] if o["domains"] else None
    try:
        task_ids = [t.strip() for t in o["task_ids"].split(",") if t.strip()] if o["task_ids"] else None
        config = EvalConfig(tasks=o["tasks"], domains=domains, per_domain=o["per_domain"], split=o["split"],
                            task_ids=task_ids, seed=o["seed"], trials=o["trials"],
                            mode=o["mode"], agent=EndpointConfig(**agent),
                            user=EndpointConfig(**user) if o["mode"] == "user" else None,
                            experts=_experts(o["experts"], fail), max_turns=o["max_turns"],
                            concurrency=o["concurrency"], out=o["out"])
    except ValidationError as exc:
        err = exc.errors()[0]
        fail(f"{'.'.join(map(str, err['loc'])) or 'eval'}: {err['msg']}")
    if not Path(config.tasks).is_dir():  # say so before Prefect starts
        fail(f"{config.tasks}: no such output folder (run `toolscale generate --out {config.tasks}` first)")
    try:
        report = run_flow(evaluate, config)
    except DataError as exc:
        fail(str(exc))
    summary = report["summary"]
    table = Table(title=f"toolscale eval: {config.agent.model}, {config.mode} mode, k={config.trials}")
    table.add_column("domain")
    ks = [f"pass^{k}" for k in range(1, config.trials + 1)]
    for column in ("tasks", *ks, "cost $", "turns", "errors"):
        table.add_column(column, justify="right")
    for name, line in summary.items():
        table.add_row(name, str(int(line["tasks"])), *(f"{line[k]:.3f}" for k in ks), f"{line['cost']:.5f}",
                      f"{line['turns']:.1f}", str(int(line["errors"])), style="bold" if name == "all" else None)
    console.print(table)
    console.print(f"wrote {config.out}")
    errors = [t["error"] for t in report["trials"] if t["error"]]
    if errors and len(errors) == len(report["trials"]):
        console.print(f"[red]every trial failed:[/red] {errors[0].splitlines()[0]}")
        raise SystemExit(1)
