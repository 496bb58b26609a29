"""Gold replays in a second interpreter with another hash seed, for the determinism gate.

A tool whose outputs depend on the process (set order under hash randomization, memory
addresses, anything the interpreter picks at start-up) replays the same twice in one process and
differently in the next one, which is where τ²-bench and the trainer replay it. So the gate also
compares against a replay in a child interpreter, left to work while the in-process gates run.

A child serves one gate run at a time and is kept for the next one: its start-up (imports, ~1 s of
CPU) was most of a domain's cost when every gate run started its own. It ends when its parent's
end closes its stdin, or is killed when it fails or runs past the time limit.

    python -m toolscale.quality.elsewhere   (the child: reads a request file's path per line, writes a
                                             JSON line per task, then one that ends the request)
"""

from __future__ import annotations

import atexit
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import IO, Any

from toolscale.domains import Environment, Task, load_domain_text

TIMEOUT_S = 600


def other_hash_seed() -> str:
    """A hash seed that differs from this process's (random unless PYTHONHASHSEED fixes it)."""
    return "1" if os.environ.get("PYTHONHASHSEED") == "0" else "0"


class _Child:
    """A child interpreter replaying one request at a time."""

    def __init__(self) -> None:
        self._stderr = tempfile.TemporaryFile(mode="w+", encoding="utf-8")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "toolscale.quality.elsewhere"], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=self._stderr, text=True, encoding="utf-8",
            env={**os.environ, "PYTHONHASHSEED": other_hash_seed()})

    def send(self, request: Path) -> bool:
        try:
            assert self.process.stdin is not None
            self.process.stdin.write(f"{request}\n")
            self.process.stdin.flush()
            return True
        except OSError:  # it died while idle
            self.kill()
            return False

    def receive(self, timeout: float) -> list[Any] | str:
        """The replays of the request sent (a line per task, read as they come), or why there are
        none (the child is then killed)."""
        stdout = self.process.stdout
        assert stdout is not None
        overdue = threading.Event()

        def stop() -> None:  # a child past its time is killed, which ends its output
            overdue.set()
            self.process.kill()

        timer = threading.Timer(timeout, stop)
        timer.start()
        results: list[Any] = []
        reply: dict[str, Any] = {}
        try:
            for line in stdout:
                if line.startswith("["):
                    results.append(json.loads(line))
                else:
                    reply = json.loads(line)
                    break
        finally:
            timer.cancel()
        if reply.get("done"):
            return results
        if overdue.is_set():
            self.kill()
            return f"the replay in a second interpreter ran past {timeout:.0f} s"
        error = reply.get("error") or self._last_words()
        self.kill()
        return f"the replay in a second interpreter failed: {error}"[:300]

    def _last_words(self) -> str:
        """The last line it wrote to stderr before it ended."""
        self.process.wait()
        self._stderr.seek(0)
        return (self._stderr.read().strip().splitlines() or ["no message"])[-1]

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        self.close()

    def close(self) -> None:
        """End it the way its parent's exit would: its stdin closes, it finishes and leaves."""
        for stream in (self.process.stdin, self.process.stdout):
            if stream is not None:
                stream.close()
        self._stderr.close()


class _Children:
    """The idle children of this process, one per gate run that runs at the same time (threads)."""

    def __init__(self) -> None:
        self._idle: list[_Child] = []
        self._lock = threading.Lock()
        atexit.register(self.close)

    def take(self) -> _Child:
        with self._lock:
            while self._idle:
                child = self._idle.pop()
                if child.process.poll() is None:
                    return child
                child.kill()
        return _Child()

    def give_back(self, child: _Child) -> None:
        with self._lock:
            self._idle.append(child)

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for child in idle:
            child.close()
        deadline = time.monotonic() + 2
        for child in idle:
            try:
                child.process.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                child.process.kill()


_children = _Children()


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
        self._child = _children.take()
        if not self._child.send(folder / "request.json"):
            self._child = _Child()
            self._child.send(folder / "request.json")
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
            results = self._child.receive(TIMEOUT_S)
        finally:
            self._folder.cleanup()
        if not isinstance(results, str):
            _children.give_back(self._child)
        return results


def _replay_all(request: dict[str, Any], replies: IO[str]) -> None:
    """Replay each task's gold on a fresh fork; write a line per task: [outputs, final state hash]."""
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
                replies.write(json.dumps([outputs, fork.state_hash()]) + "\n")


def _serve(requests: IO[str], replies: IO[str]) -> None:
    for line in requests:
        try:
            _replay_all(json.loads(Path(line.strip()).read_text("utf-8")), replies)
            reply: dict[str, Any] = {"done": True}
        except Exception as exc:  # noqa: BLE001 - the parent rejects the tasks with this reason
            reply = {"error": f"{type(exc).__name__}: {exc}"}
        replies.write(json.dumps(reply) + "\n")
        replies.flush()


if __name__ == "__main__":
    # replies go to a private copy of stdout, so nothing else printed here can garble them
    replies = os.fdopen(os.dup(sys.stdout.fileno()), "w", encoding="utf-8")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    _serve(sys.stdin, replies)
