"""The LLM gates: verdicts from a reference agent's attempts at each task.

A task is kept when the reference agent solved it in at least `min_solved` of its k tries with the
tools (it is solvable as written), and failed the try without tools (it needs them: a task whose
answer is guessable from the instruction alone teaches nothing about tool use). Running the agent
is quality/reference.py's job (through the evaluation harness, agents/evaluate.py); this module only turns
per-task outcomes into verdicts and the pass^k record kept in each task's meta.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from toolscale.agents.scoring import pass_hat
from toolscale.domains.tasks import GateVerdict, ReferenceSolve, Rejection, Task

AGENT_GATES = ("solvable", "needs_tools")  # the verdicts apply_reference gives, in order


@dataclass(frozen=True)
class Attempts:
    """One task's outcomes: each try with the tools, and the try without (None: not run)."""

    with_tools: Sequence[bool]
    without_tools: bool | None = None


def reference_record(model: str, attempts: Attempts) -> ReferenceSolve:
    trials, solved = len(attempts.with_tools), sum(attempts.with_tools)
    return ReferenceSolve(model=model, trials=trials, solved=solved,
                          pass_hat={f"pass^{k}": round(pass_hat(solved, trials, k), 6) for k in range(1, trials + 1)},
                          solved_without_tools=attempts.without_tools)


def solvable(record: ReferenceSolve, min_solved: int = 1) -> GateVerdict:
    if record.solved >= min_solved:
        return GateVerdict(passed=True)
    return GateVerdict(passed=False, reason=f"the reference agent ({record.model}) solved it in {record.solved} of "
                                            f"{record.trials} tries (needs {min_solved})")


def needs_tools(record: ReferenceSolve) -> GateVerdict:
    if record.solved_without_tools:
        return GateVerdict(passed=False, reason=f"the reference agent ({record.model}) solved it without any tool")
    return GateVerdict(passed=True)


def apply_reference(tasks: list[Task], attempts: Mapping[str, Attempts], model: str,
                    min_solved: int = 1) -> tuple[list[Task], list[Rejection]]:
    """Each task with its reference record and the two verdicts; a task failing one is rejected
    with that gate's reason. Every task must have attempts (KeyError otherwise: nothing is guessed)."""
    accepted, rejected = [], []
    for task in tasks:
        record = reference_record(model, attempts[task.id])
        verdicts = dict(zip(AGENT_GATES, (solvable(record, min_solved), needs_tools(record))))
        checked = task.model_copy(update={"meta": task.meta.model_copy(
            update={"reference": record, "gates": {**task.meta.gates, **verdicts}})})
        failing = next((name for name, verdict in verdicts.items() if not verdict.passed), None)
        if failing is None:
            accepted.append(checked)
        else:
            rejected.append(Rejection(task=checked, gate=failing, reason=verdicts[failing].reason))
    return accepted, rejected


__all__ = ["AGENT_GATES", "Attempts", "apply_reference", "needs_tools", "reference_record", "solvable"]
