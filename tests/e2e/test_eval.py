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
from toolscale.agents.tasks import load_output  # noqa: E402
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
                     "--per-domain", "20", "--split", "all", "--trials", "3", "--price-in", "1.0", "--price-out", "2.0",
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


def held_out(out: Path) -> set[str]:
    """The bank tasks the published dataset and τ² package hold out for testing."""
    return set(json.loads((out / "tau2" / "bank" / "split_tasks.json").read_text())["test"])


def test_eval_takes_a_split_named_tasks_and_a_sample_seed(served):
    out, agent, server, work = served
    default = toolscale("eval", "--tasks", str(out), "--base-url", server.base_url, "--model", "gold",
                        "--out", str(work / "default.json"), cwd=work)
    assert default.returncode == 0, default.stderr[-3000:]
    report = json.loads((work / "default.json").read_text())
    assert report["config"]["split"] == "test"  # the held-out tasks, by default, and all of them
    assert sorted(t["task_id"] for t in report["trials"]) == sorted(held_out(out))
    chosen = sorted(held_out(out))[:2]
    named = toolscale("eval", "--tasks", str(out), "--base-url", server.base_url, "--model", "gold",
                      "--task-ids", ",".join(chosen), "--out", str(work / "named.json"), cwd=work)
    assert named.returncode == 0, named.stderr[-3000:]
    assert sorted(t["task_id"] for t in json.loads((work / "named.json").read_text())["trials"]) == chosen
    drawn = [[t.id for t in load_output(out, ["bank"], max_tasks_per_domain=5, split="train", seed=seed)["bank"].tasks]
             for seed in (1, 2, 1)]
    assert drawn[0] == drawn[2] != drawn[1] and not set(drawn[0]) & held_out(out)
    unknown = toolscale("eval", "--tasks", str(out), "--base-url", server.base_url, "--model", "gold",
                        "--task-ids", "bank.nothing.000", "--out", str(work / "none.json"), cwd=work)
    assert unknown.returncode == 2 and "no task bank.nothing.000" in " ".join(unknown.stderr.split())


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
