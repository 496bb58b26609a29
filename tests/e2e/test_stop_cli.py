"""Stopping a run (issue 16): SIGTERM or Ctrl-C ends `toolscale generate` within seconds, even while
its stages are busy, leaves no process behind (the audit found Prefect's ephemeral server left running,
reparented to init, after a SIGTERM that took ~14 s), and the rerun resumes from the stored stages."""

from __future__ import annotations

import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

# one lane: bank computes while Prefect's server starts, weather after it, still busy once its subflow runs
ARGS = ["generate", "--domains", "bank,weather", "--seed", "5", "--runner", "threads:1"]


def command(*args: str) -> list[str]:
    exe = shutil.which("toolscale")
    return [exe, *args] if exe else [sys.executable, "-m", "toolscale.flows.cli", *args]


def wait_for(path: Path, words: str, proc: subprocess.Popen, timeout: float = 300) -> None:
    deadline = time.monotonic() + timeout
    while words not in path.read_text(errors="replace"):
        assert proc.poll() is None and time.monotonic() < deadline, path.read_text()[-2000:]
        time.sleep(0.05)


def wait_for_subflow(name: str, since: str, proc: subprocess.Popen, timeout: float = 300) -> None:
    """Until the local server's database (conftest's PREFECT_HOME) has `name` running, created after `since`."""
    deadline = time.monotonic() + timeout
    query = "select count(*) from flow_run where name = ? and state_type = 'RUNNING' and created >= ?"
    while True:
        try:
            with sqlite3.connect(Path(os.environ["PREFECT_HOME"]) / "prefect.db") as db:
                if db.execute(query, (name, since)).fetchone()[0]:
                    return
        except sqlite3.OperationalError:  # not migrated yet, or locked by the server
            pass
        assert proc.poll() is None and time.monotonic() < deadline, f"no {name} run"
        time.sleep(0.2)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_stops_the_run_in_seconds_with_no_process_left_and_the_rerun_resumes(tmp_path, signum):
    env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}  # the ephemeral server: a child
    log = tmp_path / "run.log"
    since = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime())
    with open(log, "wb") as sink:
        proc = subprocess.Popen(command(*ARGS, "--out", "out"), cwd=tmp_path, env=env, stdout=sink, stderr=sink)
    try:
        wait_for(log, "weather: tasks", proc)  # the stages compute in a worker process (flows/lanes.py)
        wait_for_subflow("build-weather", since, proc)  # and Prefect shows weather's subflow running
        assert "weather: export" not in log.read_text(), "the run finished its stages before it could be stopped"
        children = psutil.Process(proc.pid).children(recursive=True)
        assert any("uvicorn" in " ".join(c.cmdline()) for c in children), "no local Prefect server to stop"
        sent = time.monotonic()
        proc.send_signal(signum)  # to the run alone, as a process manager sends it
        code = proc.wait(timeout=30)
        took = time.monotonic() - sent
    finally:
        if proc.poll() is None:
            proc.kill()
    said = log.read_text()
    assert code == 128 + signum, said[-2000:]
    assert took < 8, f"{took:.1f}s to stop"
    assert f"stopping on {signal.Signals(signum).name}" in said and "Traceback" not in said
    assert not [c for c in children if c.is_running() and c.status() != psutil.STATUS_ZOMBIE], children
    with sqlite3.connect(Path(os.environ["PREFECT_HOME"]) / "prefect.db") as db:  # the local server's (conftest)
        run_id, *stopped = db.execute(
            "select r.id, r.name, r.state_type, s.message from flow_run r join flow_run_state s on s.id = r.state_id "
            "where r.name = 'generate-5-bank+weather' order by r.start_time desc limit 1").fetchone()
        domains = db.execute("select f.name, f.state_type from flow_run f join task_run t on f.parent_task_run_id = "
                             "t.id where t.flow_run_id = ? order by f.name", (run_id,)).fetchall()
    assert stopped == ["generate-5-bank+weather", "CANCELLED", f"stopped by {signal.Signals(signum).name}"], stopped
    # not "running" for ever in a UI; a domain whose last stage ended within the grace period is Completed
    assert [name for name, _ in domains] == ["build-bank", "build-weather"]
    assert {state for _, state in domains} <= {"CANCELLED", "COMPLETED"}, domains
    rerun = subprocess.run(command(*ARGS, "--out", "out"), cwd=tmp_path, env=env, capture_output=True, text=True,
                           timeout=600)
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    resumed = " ".join(rerun.stderr.split())
    # the stages still computing may finish within the grace period and be stored
    assert "resumed: reused" in resumed or "nothing to recompute" in resumed, resumed
