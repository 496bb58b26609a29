"""Accepted tasks from a `toolscale generate` output folder, turned into rows for training and eval.

`OUT/<domain>/` holds domain.yaml, tools.py, policy.md (the domain), db.sqlite (its initial state)
and tasks.jsonl (accepted tasks). Each task's gold actions are replayed once on the loaded database
(quality/'s replay) and a task whose replay does not end in its recorded `final_state_hash` is left
out with a reason: the reward compares against that hash, so it must hold on this database.
"""

from __future__ import annotations

import json
import random
import threading
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from toolscale.domains import Domain, DomainError, Environment, Task, load_domain
from toolscale.domains.splits import SPLITS, assign_splits
from toolscale.quality.gates import replay_task

from .rewards import SUPPORTED_BASIS
from .toolbox import ExpertConfig, RolloutSpec, SamplingConfig, sample_spec, system_prompt, tool_schemas


class DataError(ValueError):
    """An output folder that cannot be trained or evaluated on; the message says which file and why."""


@dataclass
class DomainData:
    """One domain of an output folder: the loaded domain, its initial database, its usable tasks."""

    domain: Domain
    env: Environment
    tasks: list[Task]
    skipped: Counter[str] = field(default_factory=Counter)
    database: Path | None = None
    _reading: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def open_env(self) -> Environment:
        """A new, independent copy of the initial database (one per worker thread)."""
        if self.database is None:
            with self._reading:  # worker threads share `env`'s connection only to read it, one at a time
                rows = self.env.dump()
            return Environment.from_rows(self.domain, rows)
        return Environment.from_sqlite(self.domain, self.database)


def _read_tasks(path: Path) -> list[Task]:
    tasks = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            tasks.append(Task.model_validate_json(line))
        except ValidationError as exc:
            raise DataError(f"{path}:{number}: not a task: {exc.errors()[0]['msg']}") from None
    return tasks


def select_tasks(tasks: list[Task], limit: int | None, seed: int | None = None) -> list[Task]:
    """Up to `limit` tasks, taken round-robin over intents so every intent is represented: in file
    order, or in a shuffle of each intent's tasks by `seed` (another sample of the same size)."""
    if limit is None or limit >= len(tasks):
        return list(tasks)
    by_intent: dict[str, list[Task]] = defaultdict(list)
    for task in tasks:
        by_intent[task.meta.intent].append(task)
    if seed is not None:
        for intent, queue in by_intent.items():
            random.Random(f"toolscale-sample:{seed}:{intent}").shuffle(queue)
    chosen: list[Task] = []
    queues = list(by_intent.values())
    depth = 0
    while len(chosen) < limit:
        for queue in queues:
            if depth < len(queue) and len(chosen) < limit:
                chosen.append(queue[depth])
        depth += 1
    order = {task.id: i for i, task in enumerate(tasks)}
    return sorted(chosen, key=lambda t: order[t.id])


def _keep_usable(data: DomainData, candidates: list[Task], max_tasks: int | None, seed: int | None = None) -> None:
    """Add to `data.tasks` the candidates the reward can score on this database, counting the rest."""
    for task in candidates:
        unsupported = set(task.evaluation_criteria.reward_basis) - SUPPORTED_BASIS
        if unsupported:
            data.skipped[f"reward_basis {sorted(unsupported)} cannot be scored offline"] += 1
        elif task.meta.final_state_hash is None:
            data.skipped["no final_state_hash"] += 1
        elif replay_task(data.env, task).state_hash != task.meta.final_state_hash:
            data.skipped["gold replay does not reach final_state_hash on the database"] += 1
        else:
            data.tasks.append(task)
    data.tasks = select_tasks(data.tasks, max_tasks, seed)


def _run_seed(root: Path) -> int:
    """The seed the output folder was generated with (it draws the splits), from its report."""
    try:
        return int(json.loads((root / "report.json").read_text(encoding="utf-8")).get("seed", 0))
    except (OSError, ValueError, AttributeError):
        raise DataError(f"{root / 'report.json'}: missing or unreadable; the split of a task needs the run's seed "
                        "(use split: all to read every task)") from None


def load_output(path: str | Path, domains: list[str] | None = None, intents: list[str] | None = None,
                max_tasks_per_domain: int | None = None, split: str = "all", task_ids: list[str] | None = None,
                seed: int | None = None) -> dict[str, DomainData]:
    """Load the named domains (default: every folder with a tasks.jsonl) of an output folder.

    `split` keeps the tasks of one split ("train" or "test", as the published dataset and τ²
    packages assign them) or "all"; `task_ids` keeps only those tasks (DataError naming any that is
    not there); `seed` draws the `max_tasks_per_domain` sample."""
    if split not in (*SPLITS, "all"):
        raise DataError(f"split {split!r}: choose from {', '.join(SPLITS)}, all")
    root = Path(path)
    if not root.is_dir():
        raise DataError(f"{root}: no such output folder (run `toolscale generate --out {root}` first)")
    found = sorted(p.parent.name for p in root.glob("*/tasks.jsonl"))
    names = domains or found
    missing = [n for n in names if n not in found]
    if missing or not names:
        raise DataError(f"{root}: no tasks.jsonl for {', '.join(missing) or 'any domain'}; found: {found or 'none'}")
    seed_of_run = _run_seed(root) if split != "all" else 0
    wanted = set(task_ids or ())
    seen: set[str] = set()
    loaded = {}
    for name in names:
        folder = root / name
        try:
            domain = load_domain(folder)
        except DomainError as exc:
            raise DataError(str(exc).splitlines()[0]) from None
        if not (folder / "db.sqlite").exists():
            raise DataError(f"{folder / 'db.sqlite'}: missing")
        data = DomainData(domain, Environment.from_sqlite(domain, folder / "db.sqlite"), [],
                          database=folder / "db.sqlite")
        tasks = _read_tasks(folder / "tasks.jsonl")
        splits = assign_splits({name: [t.id for t in tasks]}, seed_of_run) if split != "all" else {}
        seen |= {t.id for t in tasks}
        candidates = [t for t in tasks if (not intents or t.meta.intent in intents)
                      and (split == "all" or splits[t.id] == split) and (not wanted or t.id in wanted)]
        _keep_usable(data, candidates, max_tasks_per_domain, seed)
        loaded[name] = data
    missing = sorted(wanted - seen)
    if missing:
        raise DataError(f"{root}: no task {', '.join(missing[:5])}{' ...' if len(missing) > 5 else ''} "
                        f"in {', '.join(names)}")
    return loaded


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
            candidates[row["domain"]].append(task_from_row(row))
    for name, data in sorted(loaded.items()):
        _keep_usable(data, candidates[name], max_tasks_per_domain)
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


__all__ = ["DataError", "DomainData", "Row", "build_rows", "load_dataset", "load_output", "select_tasks"]
