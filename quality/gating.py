"""The gate sequence and how a set of candidates goes through it.

Every gate a candidate meets, in order, is listed once here (GATE_ORDER, read by the report and the
Prefect artifacts): synthesis's own screening, the per-task gates cheapest and most basic first, the
batch gates, then the reference agent's gates (quality/agent_gates.py, run at the solve stage).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from toolscale.domains import Environment, Task
from toolscale.domains.tasks import GateVerdict, Rejection

from .agent_gates import AGENT_GATES
from .checkability import CheckabilityGate
from .duplicates import DuplicateGate
from .effects import EffectGate, NecessityGate
from .elsewhere import OtherInterpreter
from .gates import BatchGate, DeterminismGate, Gate, GateContext, ReplayGate
from .policy import PolicyGate
from .soundness import SoundnessGate
from .text_gates import AmbiguityGate, LeakageGate, RealizabilityGate
from .wording import WordingGate

PER_TASK_GATES: tuple[type[Gate], ...] = (ReplayGate, DeterminismGate, EffectGate, RealizabilityGate, AmbiguityGate,
                                          LeakageGate, WordingGate, CheckabilityGate, PolicyGate, NecessityGate,
                                          SoundnessGate)
BATCH_GATES: tuple[type[BatchGate], ...] = (DuplicateGate,)
GATE_ORDER: tuple[str, ...] = ("synthesis", *(g.name for g in PER_TASK_GATES), *(g.name for g in BATCH_GATES),
                               *AGENT_GATES)


def default_gates() -> tuple[list[Gate], list[BatchGate]]:
    """A fresh instance of every per-task and batch gate, in order."""
    return [gate() for gate in PER_TASK_GATES], [gate() for gate in BATCH_GATES]


def _with_verdicts(task: Task, verdicts: dict[str, GateVerdict]) -> Task:
    return task.model_copy(update={"meta": task.meta.model_copy(update={"gates": verdicts})})


def _per_task(tasks: list[Task], env: Environment, gates: Sequence[Gate], verdicts: dict[int, dict[str, GateVerdict]],
              elsewhere: OtherInterpreter | None = None) -> tuple[list[Task], list[Rejection]]:
    """Each task through the per-task gates in order, stopping at the first that fails."""
    passing: list[Task] = []
    rejected: list[Rejection] = []
    for task in tasks:
        ctx = GateContext(env, task, elsewhere)
        verdicts[id(task)] = {}
        for gate in gates:
            verdict = verdicts[id(task)][gate.name] = gate.check(ctx)
            if not verdict.passed:
                rejected.append(Rejection(task=_with_verdicts(task, verdicts.pop(id(task))), gate=gate.name,
                                          reason=verdict.reason))
                break
        else:
            passing.append(task)
    return passing, rejected


def _per_task_elsewhere(tasks: list[Task], env: Environment, gates: Sequence[Gate],
                        verdicts: dict[int, dict[str, GateVerdict]]) -> tuple[list[Task], list[Rejection]]:
    """_per_task, with the tasks' gold replayed in a second interpreter meanwhile when a gate needs it."""
    if not any(getattr(gate, "second_interpreter", False) for gate in gates):
        return _per_task(tasks, env, gates, verdicts)
    elsewhere = OtherInterpreter(env, tasks)
    try:
        return _per_task(tasks, env, gates, verdicts, elsewhere)
    finally:
        elsewhere.finish()


def run_gates(tasks: Iterable[Task], env: Environment, gates: Sequence[Gate] | None = None,
              batch_gates: Sequence[BatchGate] | None = None,
              fallbacks: Mapping[str, Task] | None = None) -> tuple[list[Task], list[Rejection]]:
    """Send each task through the gates in order, stopping at the first that fails; then the batch gates.

    `fallbacks` holds the verified tasks that harder variants replaced, by id: when a per-task gate
    rejects a variant (`meta.hardened_from`), its base goes through the gates in its place, so a
    failed hardening costs the variant, not the task it came from.
    """
    if gates is None and batch_gates is None:
        gates, batch_gates = default_gates()
    verdicts: dict[int, dict[str, GateVerdict]] = {}  # by id(task), until the batch gates are done
    passing, rejected = _per_task_elsewhere(list(tasks), env, gates or (), verdicts)
    # a base is gated (and replayed in the second interpreter) only when its variant was rejected: few are
    bases = [fallbacks[r.task.meta.hardened_from] for r in rejected
             if fallbacks and r.task.meta.hardened_from in fallbacks]
    if bases:
        more, more_rejected = _per_task_elsewhere(bases, env, gates or (), verdicts)
        passing += more
        rejected += more_rejected
    for gate in batch_gates or ():
        passing, dropped = gate.check_all(passing)
        for task in passing:
            verdicts[id(task)][gate.name] = GateVerdict(passed=True)
        rejected += [Rejection(task=_with_verdicts(t, {**verdicts.pop(id(t)), gate.name: v}), gate=gate.name,
                               reason=v.reason) for t, v in dropped]
    return [_with_verdicts(task, verdicts[id(task)]) for task in passing], rejected


def screen(task: Task, env: Environment) -> tuple[str, str] | None:
    """The first per-task gate `task` fails, as (gate, reason), or None: what a synthesizer can send
    back to its model for repair before the gate stage would reject the task. The determinism gate's
    second interpreter and the batch gates (duplicates) run at the gate stage only."""
    ctx = GateContext(env, task)
    for gate in default_gates()[0]:
        verdict = gate.check(ctx)
        if not verdict.passed:
            return gate.name, verdict.reason
    return None
