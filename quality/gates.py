"""The quality gates: each a small named check that passes a task or fails it with a reason.

Gates fail closed: a gold action that errors, or a replay that does not reach the recorded
outputs and state, rejects the task. Every verdict is kept in the task's meta; the first
failing gate's reason goes with the rejection.
"""

from __future__ import annotations

from functools import cached_property
from typing import Any, Protocol

from toolscale.domains import Environment, Task
from toolscale.domains.dates import resolve
from toolscale.domains.tasks import GateVerdict

from toolscale.domains.matching import leaves, normalize_text, value_key

from .elsewhere import OtherInterpreter, Replay, replay_task


class GateContext:
    """What gates share for one task: the environment, its text, and the gold replay (made once:
    in the second interpreter when the run has one, so the gate stage replays each task once)."""

    def __init__(self, env: Environment, task: Task, elsewhere: OtherInterpreter | None = None) -> None:
        self.env = env
        self.task = task
        self.elsewhere = elsewhere
        self.elsewhere_failure: str | None = None  # why the second interpreter gave no replay
        self._first: Replay | None = None
        self._first_returned: dict[Any, int] | None = None
        instructions = task.user_scenario.instructions
        self.text = normalize_text(" ".join(filter(None, [instructions.reason_for_call, instructions.known_info,
                                                          instructions.task_instructions])))

    @property
    def first_replay(self) -> Replay:
        if self._first is None:
            other = self.elsewhere.result(self.task) if self.elsewhere is not None else None
            if isinstance(other, Replay):
                self._first = other
            else:
                self.elsewhere_failure = other
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
    """A per-task check."""

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
    """The gate's replay on a fresh fork gives synthesis's outputs and state. The run's gate
    replay is made in a second interpreter with another hash seed (`second_interpreter`), so
    this also catches tools whose outputs depend on the process."""

    name = "determinism"
    second_interpreter = True  # run_gates replays the gold there (quality/elsewhere.py)

    def check(self, ctx: GateContext) -> GateVerdict:
        replayed, meta = ctx.first_replay, ctx.task.meta
        if meta.final_state_hash is None:
            return failed("no state was recorded at synthesis")
        if ctx.elsewhere_failure is not None:
            return failed(ctx.elsewhere_failure)
        where = "in a second interpreter" if ctx.elsewhere is not None else "on two replays"
        return _same(meta.expected_outputs, meta.final_state_hash, replayed.outputs, replayed.state_hash, where)


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
