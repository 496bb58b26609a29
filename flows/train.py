"""The `train` flow: GRPO on accepted tasks, as one Prefect task (trainer/train.py does the work),
and what `toolscale train` prints around it. Import after settings.configure_prefect().

Prefect wraps single-process runs (the CPU smoke run, one GPU). Multi-GPU and multi-node runs start
the training script itself under `accelerate launch` (README, "Training"), one process per GPU;
a flow per process would only add noise to the UI.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from prefect import flow, task
from prefect.cache_policies import NO_CACHE
from rich.console import Console
from rich.table import Table

from toolscale.trainer.config import ConfigError, TrainConfig, check, grpo_setting, load_config, require_train_extra
from toolscale.agents.tasks import DataError


@task(name="grpo", cache_policy=NO_CACHE)
def grpo_stage(config: TrainConfig) -> dict[str, Any]:
    from toolscale.trainer.train import main  # imports torch and TRL: only when a run starts

    return main(config)


@flow(name="train")
def train(config: TrainConfig) -> dict[str, Any]:
    """Train with `config`; returns the run summary (also written to OUTPUT_DIR/summary.json)."""
    return grpo_stage(config)


def _plan(config: Any, problems: list[str]) -> Table:
    """The settings that decide whether a run fits its machines, for `train --dry-run`."""
    g = lambda key: grpo_setting(config, key)  # noqa: E731
    per_step = g("steps_per_generation") or g("gradient_accumulation_steps") or 1
    batch = g("per_device_train_batch_size") * per_step * config.launch.num_processes
    table = Table(title="toolscale train: plan", show_header=False)
    rows = [
        ("model", config.model.name_or_path or f"tiny (built locally, hidden {config.model.tiny.hidden_size})"),
        ("processes", f"{config.launch.num_processes} on {config.launch.num_machines} machine(s)"),
        ("rollouts per generation", f"{batch} = {batch // max(g('num_generations'), 1)} tasks x "
                                    f"{g('num_generations')} generations"),
        ("generation", f"vLLM {g('vllm_mode')} (gpu memory {g('vllm_gpu_memory_utilization')}, tp "
                       f"{g('vllm_tensor_parallel_size')}, max length {g('vllm_max_model_length')})"
                       if g("use_vllm") else "transformers generate"),
        ("precision", "bf16" if g("bf16") else "float32"),
        ("completion tokens", str(g("max_completion_length"))),
        ("turns", str(config.rollout.max_turns)),
        ("experts", ", ".join(e.alias for e in config.experts) or "none"),
        ("user", f"simulated by {config.user.model} at {config.user.base_url}" if config.user
         else "none: solo, the instruction opens each episode"),
        ("reward", f"{config.reward.normalize_over}-normalized, groups with std < {config.reward.min_group_std} "
                   f"dropped, advantages clipped to +-{config.reward.advantage_clip}"),
        ("data", f"{config.data.dataset} ({config.data.split})" if config.data.dataset else str(config.data.path)),
        ("problems", "; ".join(problems) or "none"),
    ]
    for key, value in rows:
        table.add_row(key, value)
    return table


def run_train(config_path: Path, overrides: list[str], dry_run: bool, console: Console,
              fail: Callable[[str], None], run_flow: Callable[..., Any]) -> None:
    try:
        config = load_config(config_path, overrides)
        require_train_extra()
    except ConfigError as exc:
        fail(str(exc))
    if dry_run:
        problems = check(config)
        console.print(_plan(config, problems))
        if problems:
            fail(f"{config_path}: {problems[0]}")
        console.print(f"{config_path}: coherent")
        return
    if config.data.dataset is None and not Path(config.data.path).is_dir():  # say so before Prefect and torch start
        fail(f"{config.data.path}: no such output folder (run `toolscale generate --out {config.data.path}` first)")
    try:
        summary = run_flow(train, config)
    except (ConfigError, DataError) as exc:
        fail(str(exc))
    table = Table(title=f"toolscale train: {summary['global_steps']} steps")
    for column in ("step", "seconds", "loss", "tool calls/rollout", "outcome", "kept groups"):
        table.add_column(column, justify="right")
    def at(key: str, step: int) -> float:
        values = summary[key]
        return values[step] if step < len(values) and values[step] is not None else float("nan")

    for i, seconds in enumerate(summary["seconds_per_step"]):
        table.add_row(str(i + 1), f"{seconds:.1f}", f"{at('loss', i):.4f}", f"{at('tool_calls_per_rollout', i):.2f}",
                      f"{at('outcome', i):.2f}", f"{at('kept_groups', i):.2f}")
    console.print(table)
    console.print(f"wrote {config.output_dir}/ (final/, metrics.jsonl, summary.json) in {summary['seconds']}s")
