"""Gates on what the gold does: it has an effect, and every write in it is needed."""

from __future__ import annotations

from toolscale.domains import replay
from toolscale.domains.tasks import GateVerdict

from .gates import GateContext, failed, passed
from toolscale.domains.matching import derivable


class EffectGate:
    """A write task changes the state; what a task must communicate comes from tool outputs."""

    name = "effect"

    def check(self, ctx: GateContext) -> GateVerdict:
        task, replayed = ctx.task, ctx.first_replay
        writes = [a.name for a in task.evaluation_criteria.actions
                  if ctx.env.domain.toolkit.specs[a.name].kind == "write"]
        if task.meta.kind == "write" and (not writes or replayed.state_hash == ctx.initial_hash):
            return failed("a write task whose gold leaves the database unchanged")
        communicate = task.evaluation_criteria.communicate_info
        if task.meta.kind == "read" and not communicate:
            return failed("a read task that communicates nothing a grader can check")
        for info in communicate:
            if "," in info:  # τ²-bench strips commas from replies before matching: this could never match
                return failed(f"communicate_info {info!r} has a comma, which τ²-bench's check removes from replies")
            if not derivable(info, replayed.outputs):
                return failed(f"communicate_info {info!r} comes from no tool output")
        return passed()


class NecessityGate:
    """Dropping any single gold write changes the final state (no write is redundant).

    Replays use the gold's fixed arguments, and read tools cannot write (Records refuses), so
    only the other writes need replaying: the reads around them change neither the state nor
    what the writes do.
    """

    name = "necessity"

    def check(self, ctx: GateContext) -> GateVerdict:
        calls = ctx.task.gold_calls()
        specs = ctx.env.domain.toolkit.specs
        full, before = ctx.first_replay.state_hash, ctx.first_replay.step_hashes
        writes = [i for i, (name, _) in enumerate(calls) if specs[name].kind == "write"]
        for i in writes:
            name = calls[i][0]
            if i == writes[-1]:  # only reads follow, and reads change nothing: no replay needed
                if before[i] == full:
                    return failed(f"action {i} ({name}) can be dropped without changing the final state")
                continue
            with ctx.env.fork() as fork:
                replay(fork, [calls[j] for j in writes if j != i])
                if fork.state_hash() == full:
                    return failed(f"action {i} ({name}) can be dropped without changing the final state")
        return passed()
