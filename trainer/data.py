"""Training rows: the accepted tasks (from an output folder, agents/tasks.py, or a toolscale Hugging
Face dataset), each with its seeded tool subset, expert prices and preference vector.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from toolscale.agents.tasks import DataError, DomainData, keep_usable
from toolscale.agents.toolbox import ExpertConfig, RolloutSpec, SamplingConfig, sample_spec, system_prompt, tool_schemas
from toolscale.domains import DomainError, Task
from toolscale.domains.splits import SPLITS


def load_dataset(source: str, split: str = "train", domains: list[str] | None = None,
                 intents: list[str] | None = None, max_tasks_per_domain: int | None = None) -> dict[str, DomainData]:
    """Load a toolscale Hugging Face dataset (a local OUT/hf folder or a Hub repo id): the `domains`
    config rebuilds each environment, the `tasks` config's `split` gives the tasks."""
    import datasets

    from toolscale.pipeline.rows import environment_from_row, task_from_row

    datasets.disable_progress_bars()
    try:
        domain_rows = datasets.load_dataset(source, "domains", split="train")
        task_rows = datasets.load_dataset(source, "tasks", split="+".join(SPLITS) if split == "all" else split)
    except (FileNotFoundError, ValueError) as exc:  # DatasetNotFoundError is a FileNotFoundError
        raise DataError(f"{source}: not a toolscale dataset with a {split!r} split of tasks: "
                        f"{str(exc).splitlines()[0]}") from None
    found = sorted(row["domain"] for row in domain_rows)
    missing = [n for n in domains or [] if n not in found]
    if missing:
        raise DataError(f"{source}: no domain {', '.join(missing)}; found: {found}")
    loaded: dict[str, DomainData] = {}
    for row in domain_rows:
        if not domains or row["domain"] in domains:
            try:
                env = environment_from_row(row)
            except DomainError as exc:
                raise DataError(f"{source}: domain {row['domain']}: {str(exc).splitlines()[0]}") from None
            loaded[row["domain"]] = DomainData(env.domain, env, [])
    candidates: dict[str, list[Task]] = defaultdict(list)
    for row in task_rows:
        if row["domain"] in loaded and (not intents or row["intent"] in intents):
            try:
                candidates[row["domain"]].append(task_from_row(row))
            except (ValueError, KeyError, TypeError, RecursionError) as exc:  # pydantic's ValidationError is a ValueError
                raise DataError(f"{source}: task {row.get('id')}: not a toolscale task row: "
                                f"{(str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]}") from None
    for name, data in sorted(loaded.items()):
        keep_usable(data, candidates[name], max_tasks_per_domain)
    return dict(sorted(loaded.items()))


@dataclass(frozen=True)
class Row:
    """One prompt of the training set: a task, its sampled offer, and what the policy is shown."""

    index: int
    task: Task
    spec: RolloutSpec
    system: str
    tools: list[dict[str, Any]]


def build_rows(data: dict[str, DomainData], experts: list[ExpertConfig], sampling: SamplingConfig,
               policy_max_chars: int | None = None, show_preferences: bool = True) -> list[Row]:
    """A row per task, domains in name order, each with its seeded tool subset, prices and preferences."""
    by_alias = {e.alias: e for e in experts}
    rows = []
    for name in sorted(data):
        item = data[name]
        for task in item.tasks:
            spec = sample_spec(task, item.domain, experts, sampling)
            rows.append(Row(index=len(rows), task=task, spec=spec,
                            system=system_prompt(item.domain, spec, policy_max_chars, show_preferences),
                            tools=tool_schemas(item.domain, spec, by_alias)))
    return rows


__all__ = ["Row", "build_rows", "load_dataset"]
