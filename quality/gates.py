"""The quality gates: each a small named check that passes a task or fails it with a reason.

Gates fail closed: a gold action that errors, or a replay that does not reach the recorded
outputs and state, rejects the task. Every verdict is kept in the task's meta; the first
failing gate's reason goes with the rejection.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from toolscale.domains import Environment, Task, ToolResult, replay
from toolscale.domains.tasks import GateVerdict, Rejection


@dataclass(frozen=True)
class Replay:
    """One gold replay on a fresh fork: the results and the state it ended in."""

    results: list[ToolResult]
    state_hash: str

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


def replay_task(env: Environment, task: Task) -> Replay:
    with env.fork() as fork:
        results = replay(fork, task.gold_calls())
        return Replay(results, fork.state_hash())


class GateContext:
    """What gates share for one task: the environment and the first gold replay (made once)."""

    def __init__(self, env: Environment, task: Task) -> None:
        self.env = env
        self.task = task
        self._first: Replay | None = None

    @property
    def first_replay(self) -> Replay:
        if self._first is None:
            self._first = replay_task(self.env, self.task)
        return self._first


class Gate(Protocol):
    name: str

    def check(self, ctx: GateContext) -> GateVerdict: ...


def _pass() -> GateVerdict:
    return GateVerdict(passed=True)


def _fail(reason: str) -> GateVerdict:
    return GateVerdict(passed=False, reason=reason)


class ReplayGate:
    """Every gold action runs without error on a fresh fork (fail closed)."""

    name = "replay"

    def check(self, ctx: GateContext) -> GateVerdict:
        if not ctx.task.evaluation_criteria.actions:
            return _fail("the task has no gold actions")
        error = ctx.first_replay.first_error(ctx.task)
        return _fail(error) if error else _pass()


class DeterminismGate:
    """Two replays on fresh forks give the same outputs and state, and match what was recorded."""

    name = "determinism"

    def check(self, ctx: GateContext) -> GateVerdict:
        first = ctx.first_replay
        second = replay_task(ctx.env, ctx.task)
        if first.outputs != second.outputs:
            step = next(i for i, (a, b) in enumerate(zip(first.outputs, second.outputs)) if a != b)
            return _fail(f"action {step} returned different outputs on two replays")
        if first.state_hash != second.state_hash:
            return _fail("two replays ended in different states")
        meta = ctx.task.meta
        if meta.expected_outputs and meta.expected_outputs != first.outputs:
            return _fail("replay outputs differ from the outputs recorded at synthesis")
        if meta.final_state_hash and meta.final_state_hash != first.state_hash:
            return _fail("replay ends in a different state than recorded at synthesis")
        return _pass()


DEFAULT_GATES: tuple[Gate, ...] = (ReplayGate(), DeterminismGate())


def run_gates(tasks: Iterable[Task], env: Environment,
              gates: Sequence[Gate] = DEFAULT_GATES) -> tuple[list[Task], list[Rejection]]:
    """Send each task through the gates in order; stop at the first that fails."""
    accepted: list[Task] = []
    rejected: list[Rejection] = []
    for task in tasks:
        ctx = GateContext(env, task)
        verdicts: dict[str, GateVerdict] = {}
        failed = None
        for gate in gates:
            verdict = gate.check(ctx)
            verdicts[gate.name] = verdict
            if not verdict.passed:
                failed = gate.name
                break
        checked = task.model_copy(update={"meta": task.meta.model_copy(update={"gates": verdicts})})
        if failed is None:
            accepted.append(checked)
        else:
            rejected.append(Rejection(task=checked, gate=failed, reason=verdicts[failed].reason))
    return accepted, rejected
