"""Every accepted task's gold actions through both runtimes, compared.

One side is toolscale's Environment (SQLite through the record API). The other is the exported
τ²-bench packages in OUT/tau2, run in a child Python that cannot import toolscale, SQLAlchemy, PyYAML
or docstring_parser, through τ²-bench's entry points (`get_environment`, `get_tasks`, `use_tool`).
Each task's outputs (or error messages), its final state digest and, for every `every`-th task
(replayed on a fresh `get_environment()` rather than a fork), τ²-bench's database hash must agree.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from toolscale.domains import Environment, Task, load_domain, replay

CHILD = r'''
import importlib.abc, importlib.util, json, sys
from pathlib import Path

BLOCKED = {"toolscale", "sqlalchemy", "yaml", "docstring_parser", "faker", "prefect", "datasets", "duckdb"}


class Blocked(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ImportError(f"{name} must not be needed by an exported package")
        return None


sys.meta_path.insert(0, Blocked())
folder, results_path, every = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
with open(results_path, "w", encoding="utf-8") as sink:
    name = f"exported_{folder.name}"
    spec = importlib.util.spec_from_file_location(name, folder / "__init__.py", submodule_search_locations=[str(folder)])
    package = importlib.util.module_from_spec(spec)
    sys.modules[name] = package
    spec.loader.exec_module(package)
    base = package.get_environment().tools
    for i, task in enumerate(package.get_tasks(None)):
        fresh = i % every == 0
        tools = package.get_environment().tools if fresh else base.fork()
        results = []
        for action in task["evaluation_criteria"]["actions"]:
            try:
                results.append({"output": tools.use_tool(action["name"], **action["arguments"])})
            except Exception as exc:
                results.append({"error": str(exc)})
                break
        record = {"id": task["id"], "results": results, "state_hash": tools.state_hash()}
        if fresh:
            record["db_hash"] = tools.get_db_hash()
        sink.write(json.dumps(record) + "\n")
'''


def tau2_db_hash(domain, rows: dict[str, list[dict[str, Any]]]) -> str:
    """τ²-bench's hash of a database holding `rows`: sha256 of {table: {id: row}} dumped with sorted keys."""
    data = {t.name: {str(r[t.primary_key.name]): r for r in rows[t.name]} for t in domain.spec.tables}
    return hashlib.sha256(json.dumps(data, sort_keys=True, default=str).encode()).hexdigest()


def replay_package(package: Path, results_path: Path, every: int) -> list[dict[str, Any]]:
    """The child's records for one package (it runs in `python -I`, toolscale blocked)."""
    proc = subprocess.run([sys.executable, "-I", "-c", CHILD, str(package), str(results_path), str(every)],
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, f"{package.name}: {proc.stderr[-4000:]}"
    return [json.loads(line) for line in results_path.read_text(encoding="utf-8").splitlines()]


def compare_runtimes(out: Path, scratch: Path, every: int = 25) -> dict[str, int]:
    """Replay every accepted task of every domain in `out` both ways; assert they agree.

    The packages replay in child processes (one per domain, as many at once as there are CPUs)
    while this process replays the same tasks on toolscale's Environment. Returns {domain: tasks compared}.
    """
    names = sorted(p.name for p in (out / "tau2").iterdir() if (p / "__init__.py").exists())
    pool = ThreadPoolExecutor(max_workers=os.cpu_count() or 2)
    children = {name: pool.submit(replay_package, out / "tau2" / name, scratch / f"{name}.jsonl", every)
                for name in names}
    ours: dict[str, dict[str, dict[str, Any]]] = {}
    for name in names:
        domain = load_domain(out / name)
        tasks = [Task.model_validate_json(line) for line in (out / name / "tasks.jsonl").read_text().splitlines()]
        ours[name] = {}
        with Environment.from_sqlite(domain, out / name / "db.sqlite") as env:
            for i, task in enumerate(tasks):
                with env.fork() as fork:
                    results = [{"output": r.output} if r.ok else {"error": r.error}
                               for r in replay(fork, task.gold_calls())]
                    ours[name][task.id] = {"results": results, "state_hash": fork.state_hash(),
                                           "final_state_hash": task.meta.final_state_hash}
                    if i % every == 0:  # the child hashes τ²-bench's database for the same tasks
                        ours[name][task.id]["db_hash"] = tau2_db_hash(domain, fork.dump())
    compared: dict[str, int] = {}
    for name, child in children.items():
        theirs = child.result()
        assert [t["id"] for t in theirs] == list(ours[name]), f"{name}: not the same tasks"
        for record in theirs:
            mine = ours[name][record["id"]]
            assert json.dumps(record["results"]) == json.dumps(mine["results"]), record["id"]
            assert record["state_hash"] == mine["state_hash"] == mine["final_state_hash"], record["id"]
            assert record.get("db_hash") == mine.get("db_hash"), record["id"]
        compared[name] = len(theirs)
    pool.shutdown()
    return compared
