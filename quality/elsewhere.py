"""Gold replays in a second interpreter with another hash seed, for the determinism gate.

A tool whose outputs depend on the process (set order under hash randomization, memory
addresses, anything the interpreter picks at start-up) replays the same twice in one process and
differently in the next one, which is where τ²-bench and the trainer replay it. So the gate also
compares against a replay in a child interpreter, started once per gate run and left to work
while the in-process gates run.

    python -m toolscale.quality.elsewhere REQUEST.json   (the child; prints one JSON line per task)
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from toolscale.domains import Environment, Task, load_domain_text

TIMEOUT_S = 600


def other_hash_seed() -> str:
    """A hash seed that differs from this process's (random unless PYTHONHASHSEED fixes it)."""
    return "1" if os.environ.get("PYTHONHASHSEED") == "0" else "0"


class OtherInterpreter:
    """The gold replays of `tasks` in a child interpreter: `result(task)` is (outputs, final state
    hash), or a reason the child gave none."""

    def __init__(self, env: Environment, tasks: list[Task]) -> None:
        self._index = {id(task): i for i, task in enumerate(tasks)}
        self._folder = tempfile.TemporaryDirectory(prefix="toolscale-elsewhere-")
        folder = Path(self._folder.name)
        env.save(folder / "db.sqlite")
        domain = env.domain
        request = {"domain.yaml": domain.sources["domain.yaml"], "tools.py": domain.sources["tools.py"],
                   "policy.md": domain.policy, "database": str(folder / "db.sqlite"),
                   "tasks": [[[name, args] for name, args in task.gold_calls()] for task in tasks]}
        (folder / "request.json").write_text(json.dumps(request), encoding="utf-8")
        self._process = subprocess.Popen(
            [sys.executable, "-m", "toolscale.quality.elsewhere", str(folder / "request.json")],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env={**os.environ, "PYTHONHASHSEED": other_hash_seed()})
        self._results: list[Any] | str | None = None

    def result(self, task: Task) -> tuple[list[Any], str] | str:
        if self._results is None:
            self._results = self._collect()
        if isinstance(self._results, str):
            return self._results
        outputs, state = self._results[self._index[id(task)]]
        return outputs, state

    def _collect(self) -> list[Any] | str:
        try:
            out, err = self._process.communicate(timeout=TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.communicate()
            return f"the replay in a second interpreter ran past {TIMEOUT_S} s"
        finally:
            self._folder.cleanup()
        if self._process.returncode != 0:
            last = (err.strip().splitlines() or ["no message"])[-1]
            return f"the replay in a second interpreter failed: {last}"[:300]
        return [json.loads(line) for line in out.splitlines()]


def _replay_all(request: dict[str, Any]) -> None:
    domain = load_domain_text(request["domain.yaml"], request["tools.py"], request["policy.md"], "replay")
    with Environment.from_sqlite(domain, request["database"]) as env:
        for calls in request["tasks"]:
            with env.fork() as fork:
                outputs = []
                for name, arguments in calls:
                    result = fork.call(name, arguments)
                    outputs.append(result.output)
                    if not result.ok:
                        break
                print(json.dumps([outputs, fork.state_hash()]))


if __name__ == "__main__":
    _replay_all(json.loads(Path(sys.argv[1]).read_text(encoding="utf-8")))
