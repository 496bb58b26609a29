"""Resume, regenerate-domain and the Dask runner, through the real CLI.

A generation is killed (SIGKILL, with its whole process group) at several points and rerun; the
result must be byte-identical to an uninterrupted run with the same seed. To keep this module
fast, every CLI run talks to this test worker's Prefect server (tests/conftest.py, instead of paying
~15 s for an ephemeral server per run), and the runs share fixtures.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path

import pytest

ARGS = ["--domains", "bank,weather", "--seed", "3", "--scale", "0.3"]
STAGES_PER_RUN = 14  # 2 domains x 7 stages


def command(*args: str) -> list[str]:
    exe = shutil.which("toolscale")
    return [exe, *args] if exe else [sys.executable, "-m", "toolscale.flows.cli", *args]


@pytest.fixture(scope="module")
def env(cli_prefect_server):
    """The environment for CLI runs: this test worker's Prefect server (tests/conftest.py), which other
    modules' runs use too (and, through its database, the other workers' runs)."""
    return {**os.environ, "PREFECT_API_URL": cli_prefect_server}


def toolscale(env: dict, cwd: Path, *args: str) -> subprocess.CompletedProcess:
    proc = subprocess.run(command(*args), cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    proc.said = " ".join(proc.stderr.split())  # as one line: rich wraps long messages
    return proc


def kill_when(env: dict, cwd: Path, args: list[str], ready: Callable[[], bool], timeout: float = 300) -> bool:
    """Start a CLI run and SIGKILL it (and its children) as soon as `ready()`; False if it ended first."""
    with open(cwd / "killed-run.log", "ab") as log:
        proc = subprocess.Popen(command(*args), cwd=cwd, env=env, stdout=log, stderr=log, start_new_session=True)
    deadline = time.monotonic() + timeout
    try:
        while proc.poll() is None and time.monotonic() < deadline:
            if ready():
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                return True
            time.sleep(0.02)
        return False
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def stored(out: Path, temporary: bool = False) -> int:
    """Published stage artifacts under OUT (or, with `temporary`, any entry, even one being written)."""
    root = out / ".toolscale" / "stages"
    if not root.is_dir():
        return 0
    return sum(1 for d in root.iterdir() for e in d.iterdir() if temporary or not e.name.startswith("."))


def public_files(out: Path) -> dict[str, bytes]:
    """Every file a user sees in the domains' folders, by relative path."""
    return {str(p.relative_to(out)): p.read_bytes() for d in ("bank", "weather") for p in sorted((out / d).rglob("*"))
            if p.is_file()}


def funnels(out: Path) -> dict[str, dict]:
    report = json.loads((out / "report.json").read_text())
    return {name: {k: v for k, v in entry.items() if k != "timings_s"} for name, entry in report["domains"].items()}


@pytest.fixture(scope="module")
def baseline(env, tmp_path_factory):
    work = tmp_path_factory.mktemp("baseline")
    proc = toolscale(env, work, "generate", *ARGS, "--out", str(work / "out"))
    assert proc.returncode == 0, proc.stderr[-3000:]
    return work / "out"


@pytest.fixture(scope="module")
def resumed(env, tmp_path_factory):
    """A run killed three times (during its first stage, after 5 artifacts, after 11), then finished."""
    work = tmp_path_factory.mktemp("resumed")
    out = work / "out"
    args = ["generate", *ARGS, "--out", str(out)]
    seen = []
    for ready in (lambda: stored(out, temporary=True) > 0, lambda: stored(out) >= 5,
                  lambda: stored(out) >= STAGES_PER_RUN - 1):
        assert kill_when(env, work, args, ready), "the run ended before the kill point"
        seen.append(stored(out))
    final = toolscale(env, work, *args)
    assert final.returncode == 0, final.stderr[-3000:]
    return out, seen, final


def test_a_killed_run_resumes_to_byte_identical_output(baseline, resumed):
    out, seen, final = resumed
    assert seen[0] < 5 <= seen[1] < STAGES_PER_RUN - 1 <= seen[2]
    assert "resumed: reused" in final.said or "nothing to recompute" in final.said
    assert public_files(out) == public_files(baseline)
    assert funnels(out) == funnels(baseline)
    leftovers = [p for p in out.rglob(".*") if p.name not in (".toolscale",)]
    assert not leftovers, leftovers


def test_a_rerun_of_a_finished_run_does_no_stage_work_and_says_so(env, resumed):
    out = resumed[0]
    before = {p: p.stat().st_mtime_ns for p in out.rglob("*")
              if p.is_file() and {".toolscale", "hf", "tau2"} & set(p.relative_to(out).parts)}
    published = json.loads((out / "report.json").read_text())["dataset"]
    proc = toolscale(env, out.parent, "generate", *ARGS, "--out", str(out))
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "nothing to recompute" in proc.said
    assert "are current: nothing they are made from changed" in proc.said  # publishing is reused too
    assert json.loads((out / "report.json").read_text())["dataset"] == published
    assert json.loads((out / "report.json").read_text())["stages"] == {"computed": 0, "reused": STAGES_PER_RUN}
    assert {p: p.stat().st_mtime_ns for p in before} == before


def test_regenerate_domain_rebuilds_one_domain_and_leaves_the_others_byte_identical(env, baseline, tmp_path):
    out = tmp_path / "out"
    shutil.copytree(baseline, out)
    bank = {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in (out / "bank").iterdir()}
    old = json.loads((out / "report.json").read_text())
    proc = toolscale(env, tmp_path, "regenerate-domain", "weather", "--seed", "4", "--out", str(out))
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in (out / "bank").iterdir()} == bank
    assert (out / "weather/tasks.jsonl").read_bytes() != (baseline / "weather/tasks.jsonl").read_bytes()
    report = json.loads((out / "report.json").read_text())
    assert list(report["domains"]) == ["bank", "weather"]
    assert report["domains"]["bank"] == old["domains"]["bank"]
    assert report["domains"]["weather"]["seed"] == 4 and report["seed"] == 3
    assert report["totals"]["accepted"] == sum(d["accepted"] for d in report["domains"].values())
    assert '"seed":4' in (out / "weather/tasks.jsonl").open().readline()


def test_regenerate_domain_needs_an_existing_output(env, tmp_path):
    proc = toolscale(env, tmp_path, "regenerate-domain", "bank", "--out", str(tmp_path / "none"))
    assert proc.returncode == 2 and "report.json not found" in proc.said


def test_a_local_dask_cluster_gives_the_default_runners_output(env, baseline, tmp_path):
    pytest.importorskip("prefect_dask", reason="the dask runner needs prefect-dask (pip install 'toolscale[dask]')")
    proc = toolscale(env, tmp_path, "generate", *ARGS, "--runner", "dask:2", "--out", str(tmp_path / "out"))
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert public_files(tmp_path / "out") == public_files(baseline)
    assert funnels(tmp_path / "out") == funnels(baseline)


def test_a_prefect_server_shows_the_runs_logs_and_the_reused_stages_as_cached(env, baseline, tmp_path):
    """With a server, the audit found "This run didn't generate logs" and no sign of reused stages
    (notes/audit-2026-12-01/ecosystem.md): each computed stage now logs a line to the API, and a
    stage a run reuses is a task run in state Cached.

    A copy of the finished baseline whose export stages were dropped is run again: both domains reuse
    design..solve and compute export, whatever the timing. The server is shared (other modules' runs,
    and the other test workers' through its database), so only the Prefect runs writing to the copy count."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import (FlowRunFilter, FlowRunFilterStartTime, LogFilter, LogFilterFlowRunId,
                                                LogFilterLevel, TaskRunFilter, TaskRunFilterFlowRunId)
    from prefect.client.schemas.sorting import FlowRunSort
    from prefect.settings import PREFECT_API_URL, temporary_settings

    out = tmp_path / "out"
    shutil.copytree(baseline, out)
    for artifact in (out / ".toolscale" / "stages").glob("*/export-*"):
        shutil.rmtree(artifact)
    since = datetime.now(timezone.utc)
    proc = toolscale(env, tmp_path, "generate", *ARGS, "--out", str(out))
    assert proc.returncode == 0 and "resumed: reused" in proc.said, proc.stderr[-3000:]
    with temporary_settings({PREFECT_API_URL: env["PREFECT_API_URL"]}), get_client(sync_client=True) as client:
        runs: list = []  # oldest first: runs that start meanwhile come after the pages read
        started = FlowRunFilter(start_time=FlowRunFilterStartTime(after_=since))
        while page := client.read_flow_runs(flow_run_filter=started, sort=FlowRunSort.START_TIME_ASC, limit=200,
                                            offset=len(runs)):
            runs += page
        ours = [run.id for run in runs
                if isinstance(config := run.parameters.get("config"), dict) and Path(config.get("out", "")) == out]
        assert ours, f"no Prefect run writing to {out} since {since}"
        states = [(run.name, run.state.name) for run in client.read_task_runs(
            task_run_filter=TaskRunFilter(flow_run_id=TaskRunFilterFlowRunId(any_=ours)), limit=200)]
        logs: list[str] = []
        our_logs = LogFilter(level=LogFilterLevel(ge_=20), flow_run_id=LogFilterFlowRunId(any_=ours))
        while page := client.read_logs(our_logs, limit=200, offset=len(logs)):
            logs += [log.message for log in page]
    cached = {name for name, state in states if state == "Cached"}
    assert {"design-bank", "design-weather", "gate-bank", "gate-weather"} <= cached, states
    assert ("export-bank", "Completed") in states and ("export-weather", "Completed") in states, states
    assert any(m.startswith("export of bank: computed in") for m in logs), logs[:20]
    assert not [m for m in logs if "Traceback" in m]
    assert "Task run" not in proc.stderr  # Prefect's own lines stay out of the terminal
