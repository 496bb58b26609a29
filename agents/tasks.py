"""The tasks an agent is tried on: the accepted tasks of a `toolscale generate` output folder.

`OUT/<domain>/` holds domain.yaml, tools.py, policy.md (the domain), db.sqlite (its initial state)
and tasks.jsonl (accepted tasks). Each task's gold actions are replayed once on the loaded database
and a task whose replay does not end in its recorded `final_state_hash` is left out with a reason:
the outcome score compares against that hash, so it must hold on this database.
"""

from __future__ import annotations

import json
import random
import threading
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import ValidationError

from toolscale.domains import Domain, DomainError, Environment, Task, load_domain, replay
from toolscale.domains.splits import SPLITS, assign_splits

from .scoring import SUPPORTED_BASIS


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


def keep_usable(data: DomainData, candidates: list[Task], max_tasks: int | None, seed: int | None = None) -> None:
    """Add to `data.tasks` the candidates the reward can score on this database, counting the rest."""
    for task in candidates:
        unsupported = set(task.evaluation_criteria.reward_basis) - SUPPORTED_BASIS
        if unsupported:
            data.skipped[f"reward_basis {sorted(unsupported)} cannot be scored offline"] += 1
        elif task.meta.final_state_hash is None:
            data.skipped["no final_state_hash"] += 1
        elif not _reaches_its_state(data.env, task):
            data.skipped["gold replay does not reach final_state_hash on the database"] += 1
        else:
            data.tasks.append(task)
    data.tasks = select_tasks(data.tasks, max_tasks, seed)


def _reaches_its_state(env: Environment, task: Task) -> bool:
    with env.fork() as fork:
        replay(fork, task.gold_calls())
        return fork.state_hash() == task.meta.final_state_hash


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
        keep_usable(data, candidates, max_tasks_per_domain, seed)
        loaded[name] = data
    missing = sorted(wanted - seen)
    if missing:
        raise DataError(f"{root}: no task {', '.join(missing[:5])}{' ...' if len(missing) > 5 else ''} "
                        f"in {', '.join(names)}")
    return loaded


__all__ = ["DataError", "DomainData", "keep_usable", "load_output", "select_tasks"]
