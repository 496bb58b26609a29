"""The quality gates: each a small named check that passes a task or fails it with a reason.

Gates fail closed: a gold action that errors, or a replay that does not reach the recorded
outputs and state, rejects the task. Every verdict is kept in the task's meta; the first
failing gate's reason goes with the rejection.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any, Protocol

from toolscale.domains import Environment, Task, ToolResult
from toolscale.domains.dates import resolve
from toolscale.domains.tasks import GateVerdict

from toolscale.domains.matching import leaves, normalize_text, value_key

from .elsewhere import OtherInterpreter


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


def replay_task(env: Environment, task: Task) -> Replay:
    """Replay the gold on a fresh fork, noting the state before every action."""
    with env.fork() as fork:
        results, hashes = [], [fork.state_hash()]
        for name, arguments in task.gold_calls():
            results.append(fork.call(name, arguments))
            hashes.append(fork.state_hash())
            if not results[-1].ok:
                break
        return Replay(results, fork.state_hash(), hashes)


class GateContext:
    """What gates share for one task: the environment, its text, and the gold replay (made once)."""

    def __init__(self, env: Environment, task: Task) -> None:
        self.env = env
        self.task = task
        self._first: Replay | None = None
        self._first_returned: dict[Any, int] | None = None
        instructions = task.user_scenario.instructions
        self.text = normalize_text(" ".join(filter(None, [instructions.reason_for_call, instructions.known_info,
                                                          instructions.task_instructions])))

    @property
    def first_replay(self) -> Replay:
        if self._first is None:
            self._first = replay_task(self.env, self.task)
        return self._first

    @cached_property
    def told_dates(self) -> set[str]:
        """The dates the user's text gives, relative ones resolved against the domain's clock."""
        return resolve(self.text, self.env.domain.spec.clock.date())

    @property
    def initial_hash(self) -> str:
        return self.env.state_hash()

    def returned_before(self, action: int, value: Any) -> bool:
        """Did a gold output before `action` return `value` (compared normalized)?"""
        if self._first_returned is None:
            self._first_returned = {}
            for i, output in enumerate(self.first_replay.outputs):
                for leaf in leaves(output):
                    self._first_returned.setdefault(value_key(leaf), i)
        return self._first_returned.get(value_key(value), action) < action


class Gate(Protocol):
    """A per-task check; one may also have `prepare(env, tasks)`, called once before the first
    check with every task the run will check (to start work that runs alongside), and `finish()`,
    called once after the last."""

    name: str

    def check(self, ctx: GateContext) -> GateVerdict: ...


def passed() -> GateVerdict:
    return GateVerdict(passed=True)


def failed(reason: str) -> GateVerdict:
    return GateVerdict(passed=False, reason=reason)


class ReplayGate:
    """Every gold action runs without error on a fresh fork (fail closed)."""

    name = "replay"

    def check(self, ctx: GateContext) -> GateVerdict:
        if not ctx.task.evaluation_criteria.actions:
            return failed("the task has no gold actions")
        error = ctx.first_replay.first_error(ctx.task)
        return failed(error) if error else passed()


class DeterminismGate:
    """Replays on fresh forks give the same outputs and state: synthesis's, the gate's, and (once
    `prepare` has started it) one in a second interpreter with another hash seed."""

    name = "determinism"

    def __init__(self) -> None:
        self._elsewhere: OtherInterpreter | None = None

    def prepare(self, env: Environment, tasks: list[Task]) -> None:
        self._elsewhere = OtherInterpreter(env, tasks)

    def finish(self) -> None:
        if self._elsewhere is not None:
            self._elsewhere.finish()

    def check(self, ctx: GateContext) -> GateVerdict:
        replayed, meta = ctx.first_replay, ctx.task.meta
        if meta.final_state_hash is None:
            return failed("no state was recorded at synthesis")
        verdict = _same(meta.expected_outputs, meta.final_state_hash, replayed.outputs, replayed.state_hash,
                        "on two replays")
        if verdict.passed and self._elsewhere is not None:
            other = self._elsewhere.result(ctx.task)
            if isinstance(other, str):
                return failed(other)
            verdict = _same(meta.expected_outputs, meta.final_state_hash, *other, "in a second interpreter")
        return verdict


def _same(outputs: list[Any], state: str, other_outputs: list[Any], other_state: str, where: str) -> GateVerdict:
    if outputs != other_outputs:
        step = next((i for i, (a, b) in enumerate(zip(outputs, other_outputs)) if a != b),
                    min(len(outputs), len(other_outputs)))
        return failed(f"action {step} returned different outputs {where}")
    if state != other_state:
        return failed(f"the state differs {where}")
    return passed()


class BatchGate(Protocol):
    """A gate that needs the whole set (e.g. duplicates): returns (kept, rejected)."""

    name: str

    def check_all(self, tasks: list[Task]) -> tuple[list[Task], list[tuple[Task, GateVerdict]]]: ...
