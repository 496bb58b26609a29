"""`toolscale eval` end to end: the real CLI against a local OpenAI-compatible server, pass^k written.

The agent behind the server plays each task's gold actions, except on a seeded 30% of trials where it
gives up at once, so the expected pass^k is known exactly and the scoring can be checked.
"""

from __future__ import annotations

import json
import sys
from math import comb
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: the shared helpers

from llm_server import LLMTestServer  # noqa: E402
from trainer_support import GoldAgent, bank_output, read_tasks, toolscale  # noqa: E402


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    out = bank_output(tmp_path_factory)
    agent = GoldAgent(read_tasks(out), fail_rate=0.3)
    with LLMTestServer(fallback=agent) as server:
        yield out, agent, server, tmp_path_factory.mktemp("eval")


def test_eval_over_20_tasks_prints_and_writes_pass_k(served):
    out, agent, server, work = served
    proc = toolscale("eval", "--tasks", str(out), "--base-url", server.base_url, "--model", "gold",
                     "--per-domain", "20", "--trials", "3", "--price-in", "1.0", "--price-out", "2.0",
                     "--out", str(work / "eval.json"), cwd=work)
    assert proc.returncode == 0, proc.stderr[-3000:]
    for text in ("pass^1", "pass^3", "bank", "all", "wrote"):
        assert text in proc.stderr
    report = json.loads((work / "eval.json").read_text())
    trials = report["trials"]
    assert len(trials) == 60 and len({t["task_id"] for t in trials}) == 20
    assert len({t["intent"] for t in trials}) >= 15  # spread over the intents, not the first 20 lines
    tasks = {t.id: t for t in read_tasks(out)}
    successes = {}
    for trial in trials:
        task = tasks[trial["task_id"]]
        gives_up = agent.failing(task, trial["trial"])
        expected = 0.0 if gives_up else 1.0
        assert trial["reward"] == expected, trial
        calls = 0 if gives_up else len(task.gold_calls())
        assert trial["tool_calls"] == calls and trial["turns"] == calls + 1
        assert trial["cost"] > 0 and trial["error"] is None
        successes[task.id] = successes.get(task.id, 0) + int(expected)
    summary = report["summary"]["bank"]
    for k in (1, 2, 3):
        want = sum(comb(c, k) / comb(3, k) for c in successes.values()) / 20
        assert summary[f"pass^{k}"] == pytest.approx(want)
    assert summary["pass^1"] > summary["pass^3"] > 0
    assert report["summary"]["all"]["tasks"] == 20


def test_eval_with_a_simulated_user(served):
    out, agent, server, work = served
    proc = toolscale("eval", "--tasks", str(out), "--base-url", server.base_url, "--model", "gold",
                     "--per-domain", "4", "--mode", "user", "--out", str(work / "user.json"), cwd=work)
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads((work / "user.json").read_text())
    assert report["config"]["mode"] == "user"
    for trial in report["trials"]:
        assert trial["finish"] == "user_stop"
        assert trial["reward"] == (0.0 if agent.failing(next(t for t in read_tasks(out) if t.id == trial["task_id"]),
                                                         0) else 1.0)


def test_eval_says_why_it_cannot_start(tmp_path):
    from typer.testing import CliRunner

    from toolscale.flows.cli import app

    runner = CliRunner()
    missing = runner.invoke(app, ["eval", "--tasks", str(tmp_path / "nowhere"), "--base-url", "http://127.0.0.1:9/v1",
                                  "--model", "m"])
    assert missing.exit_code == 2 and "no such output folder" in " ".join(missing.stderr.split())
    bad_mode = runner.invoke(app, ["eval", "--base-url", "http://127.0.0.1:9/v1", "--model", "m", "--mode", "duet"])
    assert bad_mode.exit_code == 2 and "mode" in " ".join(bad_mode.stderr.split())
