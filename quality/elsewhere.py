"""Gold replays, and the gate stage's made in a second interpreter with another hash seed.

A tool whose outputs depend on the process (set order under hash randomization, memory
addresses, anything the interpreter picks at start-up) replays the same twice in one process and
differently in the next one, which is where τ²-bench and the trainer replay it. So the gate
stage replays each task's gold in a child interpreter, which works ahead while the gates check
the tasks before; the gates read that replay, and the determinism gate compares it with
synthesis's (one replay per task at the gate stage, not one here and one there).

A child serves one gate run at a time and is kept for the next one: its start-up (imports, ~1 s of
CPU) was most of a domain's cost when every gate run started its own. Its replies are read one at a
time as the gates ask for them: read all at once, the child would stop at a full pipe. It ends when
its parent's end closes its stdin, or is killed when it fails or runs past the time limit.

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
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from toolscale.domains import Environment, Task, ToolResult, load_domain_text

TIMEOUT_S = 600


@dataclass(frozen=True)
class Replay:
    """One gold replay on a fresh fork: the results and the state it ended in."""

    results: list[ToolResult]
    state_hash: str
    step_hashes: list[str]  # the state before each action, then the final state

    @property
    def outputs(self) -> list[Any]:
        return [r.output for r in self.results]

    def first_error(self, task: Task) -> str | None:
        for i, result in enumerate(self.results):
            if not result.ok:
                return f"action {i} ({result.name}) failed: {result.error_type}: {result.error}"
        if len(self.results) != len(task.evaluation_criteria.actions):
            return "replay stopped early"
        return None

    def to_json(self) -> list[Any]:
        return [[[r.name, r.output, r.error, r.error_type] for r in self.results], self.step_hashes, self.state_hash]

    @classmethod
    def from_json(cls, data: list[Any]) -> Replay:
        results, steps, state = data
        return cls([ToolResult.model_construct(name=name, output=output, error=error, error_type=error_type)
                    for name, output, error, error_type in results], state, steps)


def replay_task(env: Environment, task: Task) -> Replay:
    """Replay the gold on a fresh fork, noting the state before every action."""
    return replay_calls(env, task.gold_calls())


def replay_calls(env: Environment, calls: list[tuple[str, dict[str, Any]]]) -> Replay:
    with env.fork() as fork:
        results, hashes = [], [fork.state_hash()]
        for name, arguments in calls:
            results.append(fork.call(name, arguments))
            hashes.append(fork.state_hash())
            if not results[-1].ok:
                break
        return Replay(results, fork.state_hash(), hashes)


def other_hash_seed() -> str:
    """A hash seed that differs from this process's (random unless PYTHONHASHSEED fixes it)."""
    return "1" if os.environ.get("PYTHONHASHSEED") == "0" else "0"


class ReplayFailed(Exception):
    """The child gave no replay: it failed, died or ran past its time (it is then killed)."""


class _Child:
    """A child interpreter replaying one request at a time."""

    def __init__(self) -> None:
        self._stderr = tempfile.TemporaryFile(mode="w+", encoding="utf-8")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "toolscale.quality.elsewhere"], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=self._stderr, text=True, encoding="utf-8",
            env={**os.environ, "PYTHONHASHSEED": other_hash_seed()})
        self._timer: threading.Timer | None = None
        self._overdue = threading.Event()
        self._timeout = 0.0

    def send(self, request: Path, timeout: float = TIMEOUT_S) -> bool:
        """Ask for the replays of `request`, to be read with next_replay() within `timeout` seconds."""
        try:
            assert self.process.stdin is not None
            self.process.stdin.write(f"{request}\n")
            self.process.stdin.flush()
        except OSError:  # it died while idle
            self.kill()
            return False
        self._timeout, self._overdue = timeout, threading.Event()
        self._timer = threading.Timer(timeout, self._stop)
        self._timer.daemon = True
        self._timer.start()
        return True

    def _stop(self) -> None:  # a child past its time is killed, which ends its output
        self._overdue.set()
        self.process.kill()

    def next_replay(self) -> list[Any] | None:
        """The next task's replay of the request sent, as the child writes it (it works ahead while
        the parent gates the tasks before), or None once it said it is done. ReplayFailed if it
        failed, died or ran past its time."""
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if line.startswith("["):
            return json.loads(line)
        if self._timer is not None:
            self._timer.cancel()
        try:
            reply = json.loads(line) if line.strip() else {}
        except ValueError:
            reply = {}
        if reply.get("done"):
            return None
        if self._overdue.is_set():
            self.kill()
            raise ReplayFailed(f"the replay in a second interpreter ran past {self._timeout:.0f} s")
        error = reply.get("error") or self._last_words()
        self.kill()
        raise ReplayFailed(f"the replay in a second interpreter failed: {error}"[:300])

    def _last_words(self) -> str:
        """The last line it wrote to stderr before it ended."""
        self.process.wait()
        self._stderr.seek(0)
        return (self._stderr.read().strip().splitlines() or ["no message"])[-1]

    def kill(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
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
    """The gold replays of `tasks` in a child interpreter: `result(task)` is its Replay, or a
    reason the child gave none. The child replays in task order while the caller gates
    the tasks: a result is read when it is asked for, so the caller waits only for a child that
    fell behind. `finish()` reads what was not asked for and hands the child to the next run."""

    def __init__(self, env: Environment, tasks: list[Task]) -> None:
        self._index = {id(task): i for i, task in enumerate(tasks)}
        self._expected = len(tasks)  # replays the child sends (a task listed twice is replayed twice)
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
        self._results: list[Any] = []
        self._failure: str | None = None
        self._done = False
        if not tasks:
            self._read()

    def result(self, task: Task) -> Replay | str:
        index = self._index[id(task)]
        while len(self._results) <= index and self._failure is None:
            self._read()
        if len(self._results) == self._expected and not self._done and self._failure is None:
            self._read()  # the child's word that it is done: it goes back to serve the next run
        if self._failure is not None:
            return self._failure
        return Replay.from_json(self._results[index])

    def finish(self) -> None:
        while not self._done and self._failure is None:
            self._read()

    def _read(self) -> None:
        """Read the child's next line: a task's replay or, after the last one, its word that it is
        done, which hands the child back for the next run."""
        try:
            replay = self._child.next_replay()
        except ReplayFailed as exc:
            self._fail(str(exc))
            return
        if (replay is None) == (len(self._results) < self._expected):  # done early, or a replay too many
            self._fail("the replay in a second interpreter did not give one replay per task")
            self._child.kill()
        elif replay is None:
            self._done = True
            self._folder.cleanup()
            _children.give_back(self._child)
        else:
            self._results.append(replay)

    def _fail(self, reason: str) -> None:
        self._failure = reason
        self._folder.cleanup()


def _replay_all(request: dict[str, Any], replies: IO[str]) -> None:
    """Replay each task's gold on a fresh fork, as replay_task does; write a line per task (Replay.to_json)."""
    domain = load_domain_text(request["domain.yaml"], request["tools.py"], request["policy.md"], "replay")
    with Environment.from_sqlite(domain, request["database"]) as env:
        for calls in request["tasks"]:
            replies.write(json.dumps(replay_calls(env, calls).to_json()) + "\n")


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
