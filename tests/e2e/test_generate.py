"""`toolscale generate` end to end: the real CLI, a real (ephemeral) Prefect flow, the output layout."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from toolscale.domains import Environment, Task, builtin_domain, replay

SCALE = "0.5"  # the CLI's layout and determinism, at half the cost (the default size: test_synthesis.py)
DOMAIN_FILES = ["domain.yaml", "tools.py", "policy.md", "db.sqlite", "tools.json", "tasks.jsonl", "rejected.jsonl"]


def toolscale(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    exe = shutil.which("toolscale") or sys.executable
    cmd = [exe, *args] if exe.endswith("toolscale") else [exe, "-m", "toolscale.flows.cli", *args]
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=600, env={**os.environ})


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    work = tmp_path_factory.mktemp("generate")
    results = {}
    for name, seed in (("a", "11"), ("b", "11"), ("c", "12")):
        proc = toolscale("generate", "--domains", "bank", "--seed", seed, "--scale", SCALE, "--out", str(work / name),
                         cwd=work)
        assert proc.returncode == 0, proc.stderr[-3000:]
        results[name] = (work / name, proc)
    return results


def test_prefect_lists_the_runs_by_name_with_their_seed_backend_and_domain_tags(runs):
    """A Prefect UI showed random run names and no tags to filter by (notes/audit-2026-12-01/ecosystem.md)."""
    out, _ = runs["a"]
    database = Path(os.environ["PREFECT_HOME"]) / "prefect.db"  # the ephemeral server's (tests/conftest.py)
    with sqlite3.connect(database) as db:
        flows = [(name, set(json.loads(run_tags))) for name, run_tags in db.execute("select name, tags from flow_run")]
    assert any(name == "generate-11-bank" and {"seed:11", "backend:offline"} <= t for name, t in flows)
    assert any(name == "build-bank" and {"seed:11", "backend:offline", "domain:bank"} <= t for name, t in flows)
    assert any(name == "generate-12-bank" and "seed:12" in t for name, t in flows)
    assert any(name == "publish-a" for name, _ in flows)  # the output folder it published


def test_generate_writes_the_documented_layout(runs):
    out, proc = runs["a"]
    for name in DOMAIN_FILES:
        assert (out / "bank" / name).exists(), name
    report = json.loads((out / "report.json").read_text())
    assert report["domains"]["bank"]["accepted"] >= 150 and report["scale"] == float(SCALE)
    assert report["totals"]["accepted"] == report["domains"]["bank"]["accepted"]
    assert "accepted tasks" in proc.stderr
    text = (out / "report.md").read_text()
    assert "## Funnel" in text and "| bank |" in text
    for plot in ("report_funnel.png", "report_mix.png"):
        assert (out / plot).read_bytes().startswith(b"\x89PNG")
    bank = report["domains"]["bank"]
    assert bank["hardened"]["share"] >= 0.3 and bank["coverage"]["used"] <= bank["coverage"]["tools"]


def test_same_seed_gives_byte_identical_outputs(runs):
    for name in ("tasks.jsonl", "rejected.jsonl", "db.sqlite", "tools.json"):
        assert (runs["a"][0] / "bank" / name).read_bytes() == (runs["b"][0] / "bank" / name).read_bytes(), name


def test_another_seed_gives_different_tasks(runs):
    assert (runs["a"][0] / "bank/tasks.jsonl").read_bytes() != (runs["c"][0] / "bank/tasks.jsonl").read_bytes()


def test_written_tasks_replay_on_the_written_database(runs):
    out = runs["a"][0] / "bank"
    domain = builtin_domain("bank")
    tasks = [Task.model_validate_json(line) for line in (out / "tasks.jsonl").read_text().splitlines()]
    with Environment.from_sqlite(domain, out / "db.sqlite") as env:
        for task in tasks:
            with env.fork() as fork:
                assert all(r.ok for r in replay(fork, task.gold_calls()))
                assert fork.state_hash() == task.meta.final_state_hash


@pytest.mark.parametrize("args, message", [
    (["generate", "--domains", "casino"], "unknown domain(s) casino"),
    (["generate", "--backend", "magic"], "unknown backend 'magic'"),
    (["generate", "--seed", "x"], "Invalid value"),
])
def test_bad_usage_exits_2_with_a_reason(tmp_path, args, message):
    proc = toolscale(*args, "--out", str(tmp_path / "out"), cwd=tmp_path)
    assert proc.returncode == 2
    assert message in proc.stderr
    assert not (tmp_path / "out" / "report.json").exists()
