"""Each gate passes a sound task and fails a broken one with a reason (fail closed)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import psutil
import pytest

from toolscale.domains import Environment
from toolscale.pipeline.synthesizer import OfflineSynthesizer
from toolscale.quality import elsewhere, gates
from toolscale.quality.elsewhere import OtherInterpreter, replay_task
from toolscale.quality.gates import DeterminismGate, GateContext, ReplayGate
from toolscale.quality.gating import run_gates

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture(scope="module")
def library_tasks(library, library_rows):
    from toolscale.domains import Environment
    env = Environment.from_rows(library, library_rows)
    tasks, rejected = OfflineSynthesizer().tasks(library, env, library_rows, seed=0)
    assert tasks and not rejected
    yield env, tasks
    env.close()


def with_actions(task, **changes):
    """A copy of the task whose gold action `i` gets `changes[i]` merged into its fields."""
    actions = [a.model_copy(update=changes.get(f"a{a.action_id}", {})) for a in task.evaluation_criteria.actions]
    criteria = task.evaluation_criteria.model_copy(update={"actions": actions})
    return task.model_copy(update={"evaluation_criteria": criteria})


def with_meta(task, **changes):
    return task.model_copy(update={"meta": task.meta.model_copy(update=changes)})


def check(gate, env, task):
    return gate.check(GateContext(env, task))


def test_replay_passes_a_sound_task(library_tasks):
    env, tasks = library_tasks
    assert check(ReplayGate(), env, tasks[0]).passed


@pytest.mark.parametrize("change, reason", [
    ({"a2": {"arguments": {"member_id": "MEM-999999", "book_id": "BK-000001"}}}, "action 2 (borrow_book) failed: ToolError"),
    ({"a0": {"name": "find_patron"}}, "action 0 (find_patron) failed: UnknownTool"),
    ({"a1": {"arguments": {"title": 42}}}, "action 1 (search_books) failed: InvalidArguments"),
])
def test_replay_fails_closed_on_a_gold_action_that_errors(library_tasks, change, reason):
    env, tasks = library_tasks
    verdict = check(ReplayGate(), env, with_actions(tasks[0], **change))
    assert not verdict.passed
    assert verdict.reason.startswith(reason)


def test_replay_fails_a_task_without_gold(library_tasks):
    env, tasks = library_tasks
    task = tasks[0].model_copy(update={"evaluation_criteria": tasks[0].evaluation_criteria.model_copy(update={"actions": []})})
    assert check(ReplayGate(), env, task).reason == "the task has no gold actions"


def test_determinism_passes_a_sound_task(library_tasks):
    env, tasks = library_tasks
    assert check(DeterminismGate(), env, tasks[0]).passed


def test_determinism_fails_when_the_recorded_state_is_not_reached(library_tasks):
    env, tasks = library_tasks
    verdict = check(DeterminismGate(), env, with_meta(tasks[0], final_state_hash="0" * 32))
    assert not verdict.passed and verdict.reason == "the state differs on two replays"


def test_determinism_fails_when_recorded_outputs_differ(library_tasks):
    env, tasks = library_tasks
    outputs = list(tasks[0].meta.expected_outputs)
    outputs[2] = {**outputs[2], "due_on": "2030-01-01"}
    verdict = check(DeterminismGate(), env, with_meta(tasks[0], expected_outputs=outputs))
    assert not verdict.passed and verdict.reason == "action 2 returned different outputs on two replays"


def test_run_gates_keeps_every_rejection_with_gate_and_reason(library_tasks):
    env, tasks = library_tasks
    broken = with_actions(tasks[1], a2={"arguments": {"member_id": "MEM-999999", "book_id": "BK-000001"}})
    accepted, rejected = run_gates([tasks[0], broken], env, [ReplayGate(), DeterminismGate()], [])
    assert [t.id for t in accepted] == [tasks[0].id]
    assert accepted[0].meta.gates["replay"].passed and accepted[0].meta.gates["determinism"].passed
    assert len(rejected) == 1 and rejected[0].gate == "replay" and "MEM-999999" in rejected[0].reason
    assert rejected[0].task.meta.gates["replay"].passed is False


def check_elsewhere(gate, env, task, other: OtherInterpreter):
    return gate.check(GateContext(env, task, other))


def test_determinism_compares_synthesis_with_the_replay_in_a_second_interpreter(library_tasks, library,
                                                                                  library_rows):
    env, tasks = library_tasks
    gate = DeterminismGate()
    other = OtherInterpreter(env, tasks[:2])
    assert check_elsewhere(gate, env, tasks[0], other).passed and check_elsewhere(gate, env, tasks[1], other).passed
    ctx = GateContext(env, tasks[0], other)
    assert ctx.first_replay == replay_task(env, tasks[0]) and ctx.elsewhere_failure is None  # what the gates read
    changed = {**library_rows, "books": [{**b, "title": b["title"] + " (2nd ed.)"} for b in library_rows["books"]]}
    with Environment.from_rows(library, changed) as elsewhere_env:  # what a process that sees other data replays
        verdict = check_elsewhere(gate, env, tasks[0], OtherInterpreter(elsewhere_env, tasks[:1]))
    assert not verdict.passed and verdict.reason.endswith("returned different outputs in a second interpreter")
    assert check(gate, env, tasks[0]).passed  # without a second interpreter: a second replay here


def test_the_gate_stage_replays_each_task_once_in_the_second_interpreter(library_tasks, monkeypatch):
    """The gates read the child's replay; the gate stage made a second one here before."""
    env, tasks = library_tasks
    here = []
    monkeypatch.setattr(gates, "replay_task", lambda env, task: here.append(task.id))
    accepted, rejected = run_gates(tasks[:3], env, [ReplayGate(), DeterminismGate()], [])
    assert [t.id for t in accepted] == [t.id for t in tasks[:3]] and not rejected and here == []
    assert all(t.meta.gates["determinism"].passed for t in accepted)


def _child_pid(other: OtherInterpreter) -> int:
    return other._child.process.pid


def test_the_second_interpreter_serves_gate_run_after_gate_run(library_tasks):
    env, tasks = library_tasks
    pids = []
    for _ in range(2):
        other = OtherInterpreter(env, tasks[:3])
        assert all(check_elsewhere(DeterminismGate(), env, task, other).passed for task in tasks[:3])
        pids.append(_child_pid(other))
    assert pids[0] == pids[1]  # kept for the next run, not started again


def test_replays_elsewhere_are_read_as_asked_and_finish_reads_the_rest(library_tasks):
    """The gates wait for the task they check, not the whole request: the child works ahead (read
    all at the first ask, it stopped at a full pipe and the gates waited ~1 s per domain). Tasks
    never asked (an earlier gate rejected them) are read at finish, and the child serves the next run."""
    env, tasks = library_tasks
    other = OtherInterpreter(env, tasks[:4])
    assert check_elsewhere(DeterminismGate(), env, tasks[0], other).passed
    assert len(other._results) == 1 and not other._done
    other.finish()
    assert len(other._results) == 4 and other._done
    assert check_elsewhere(DeterminismGate(), env, tasks[3], other).passed
    again = OtherInterpreter(env, tasks[:1])
    assert check_elsewhere(DeterminismGate(), env, tasks[0], again).passed and _child_pid(again) == _child_pid(other)


def test_a_second_interpreter_that_died_idle_is_replaced(library_tasks):
    env, tasks = library_tasks
    other = OtherInterpreter(env, tasks[:1])
    assert check_elsewhere(DeterminismGate(), env, tasks[0], other).passed
    dead = _child_pid(other)
    other._child.process.kill()
    other._child.process.wait()
    other = OtherInterpreter(env, tasks[:1])
    assert check_elsewhere(DeterminismGate(), env, tasks[0], other).passed and _child_pid(other) != dead


def test_a_failed_replay_elsewhere_rejects_with_its_reason_and_the_next_run_gets_a_fresh_child(library_tasks,
                                                                                              monkeypatch):
    env, tasks = library_tasks
    send = elsewhere._Child.send
    # the child is told of a request file that is not there (deleting a file it may already have read races it)
    monkeypatch.setattr(elsewhere._Child, "send", lambda child, request, timeout=elsewhere.TIMEOUT_S:
                        send(child, request.with_name("none.json"), timeout))
    other = OtherInterpreter(env, tasks[:1])
    monkeypatch.undo()
    failing = _child_pid(other)
    ctx = GateContext(env, tasks[0], other)
    assert ReplayGate().check(ctx).passed  # the gates still get their replay, made here
    verdict = DeterminismGate().check(ctx)
    assert not verdict.passed and verdict.reason.startswith("the replay in a second interpreter failed: ")
    assert not psutil.pid_exists(failing)  # killed and reaped
    other = OtherInterpreter(env, tasks[:1])
    assert check_elsewhere(DeterminismGate(), env, tasks[0], other).passed and _child_pid(other) != failing


def test_a_second_interpreter_past_its_time_is_killed_with_a_reason(tmp_path):
    os.mkfifo(tmp_path / "request.json")  # nothing ever writes it: the child waits on it forever
    child = elsewhere._Child()
    assert child.send(tmp_path / "request.json", timeout=0.5)
    with pytest.raises(elsewhere.ReplayFailed, match="^the replay in a second interpreter ran past 0 s$"):
        child.next_replay()
    assert child.process.returncode is not None


def test_the_second_interpreter_ends_with_its_parent(tmp_path):
    script = tmp_path / "parent.py"
    script.write_text(textwrap.dedent("""
        from pathlib import Path
        from toolscale.domains import Environment, load_domain
        from toolscale.pipeline.populate import populate
        from toolscale.pipeline.synthesizer import OfflineSynthesizer
        from toolscale.quality.elsewhere import OtherInterpreter
        from toolscale.quality.gates import DeterminismGate, GateContext

        library = load_domain(Path(%r))
        rows = populate(library.spec, seed=0)
        with Environment.from_rows(library, rows) as env:
            tasks, _ = OfflineSynthesizer().tasks(library, env, rows, seed=0)
            other = OtherInterpreter(env, tasks[:1])
            assert DeterminismGate().check(GateContext(env, tasks[0], other)).passed
            print(other._child.process.pid, flush=True)
    """) % str(FIXTURES / "library"))
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    child = int(done.stdout.split()[-1])
    deadline = time.monotonic() + 10
    while _running(child):
        assert time.monotonic() < deadline, "the second interpreter outlived its parent"
        time.sleep(0.1)


def _running(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE  # ended, not yet reaped by its new parent
    except (psutil.NoSuchProcess, psutil.ZombieProcess):
        return False
