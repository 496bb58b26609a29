"""`toolscale generate --backend llm` and `toolscale new-domain` end to end: the real CLI and Prefect
flow against a real OpenAI-compatible server (tests/llm_server.py) on a loopback port."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from llm_server import Faults, LLMTestServer
from toolscale.domains import Environment, Task, load_domain, replay


def toolscale(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    exe = shutil.which("toolscale")
    cmd = [exe, *args] if exe else [sys.executable, "-m", "toolscale.flows.cli", *args]
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=600, env={**os.environ})


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    work = tmp_path_factory.mktemp("llm-cli")
    config = work / "llm.yaml"
    config.write_text(yaml.safe_dump({
        "prices": {"toolscale-test": {"input": 0.2, "output": 0.2}}, "cache_dir": str(work / "cache"),
        "synthesis": {"intents": 4, "tasks_per_intent": 2, "populate_scale": 0.1, "rows_per_request": 4}}))
    with LLMTestServer() as server:
        llm = ["--llm-base-url", server.base_url, "--model", "toolscale-test", "--llm-config", str(config)]
        first = toolscale("generate", "--domains", "movie", "--out", "a", *llm, cwd=work)
        sent = server.stats.requests
        new = toolscale("new-domain", "pet grooming salon", "--out", "a", *llm, cwd=work)
        after_new = server.stats.requests
        again = toolscale("generate", "--domains", "movie", "--out", "b", *llm, cwd=work)
        resent = server.stats.requests - after_new
    for proc in (first, new, again):
        assert proc.returncode == 0, proc.stderr[-3000:]
    return {"work": work, "sent": sent, "resent": resent}


def test_generate_with_the_llm_backend_reports_tokens_and_cost(runs):
    report = json.loads((runs["work"] / "a/report.json").read_text())
    movie = report["domains"]["movie"]
    assert report["backend"] == "llm" and report["settings"]["llm"]["model"] == "toolscale-test"
    assert movie["accepted"] > 0
    assert set(movie["llm"]["stages"]) == {"design", "tools", "intents", "populate", "task", "harden"}
    assert movie["llm"]["totals"]["requests"] == runs["sent"]
    assert movie["llm"]["totals"]["prompt_tokens"] > 0 and movie["llm"]["totals"]["cost_usd"] > 0
    assert report["llm"]["totals"]["requests"] > runs["sent"]  # both domains
    text = (runs["work"] / "a/report.md").read_text()
    total = report["llm"]["totals"]["requests"]
    assert "## LLM usage (toolscale-test)" in text and f"| **total** | {total:,} |" in text


def test_a_domain_whose_tools_never_compile_fails_and_its_spending_is_still_reported(tmp_path):
    faults = Faults(rate=1.0, kinds=("bad_tool_source",), max_per_conversation=99, stages=("tools",))
    with LLMTestServer(faults=faults) as server:
        proc = toolscale("generate", "--domains", "movie", "--out", "out", "--llm-base-url", server.base_url,
                         "--model", "toolscale-test", "--llm-config", str(_small_config(tmp_path)), cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr[-3000:]
    said = " ".join(proc.stderr.split())
    assert "movie failed: LLMStageError: movie: no valid tools" in said and "nothing to recompute" not in said
    assert "Traceback" not in proc.stderr and "Task run" not in proc.stderr  # one line, not Prefect's log (issue 16)
    assert any("movie failed: LLMStageError: movie: no valid tools" in line for line in proc.stderr.splitlines())
    report = json.loads((tmp_path / "out/report.json").read_text())
    assert report["domains"] == {} and "no valid tools" in report["failed"]["movie"]
    assert report["llm"]["totals"]["requests"] == server.stats.requests  # design, and every tools round
    assert set(report["llm"]["stages"]) == {"design", "tools"}


def _small_config(folder: Path) -> Path:
    config = folder / "llm.yaml"
    config.write_text(yaml.safe_dump({"cache_dir": None, "synthesis": {"repair_rounds": 1}}))
    return config


def test_written_llm_tasks_replay_on_the_written_database(runs):
    out = runs["work"] / "a/movie"
    domain = load_domain(out)
    tasks = [Task.model_validate_json(line) for line in (out / "tasks.jsonl").read_text().splitlines()]
    assert tasks
    with Environment.from_sqlite(domain, out / "db.sqlite") as env:
        for task in tasks:
            with env.fork() as fork:
                assert all(r.ok for r in replay(fork, task.gold_calls()))
                assert fork.state_hash() == task.meta.final_state_hash


def test_new_domain_designs_a_domain_folder_and_adds_it_to_the_report(runs):
    out = runs["work"] / "a"
    folder = out / "pet_grooming_salon"
    for name in ("domain.yaml", "tools.py", "policy.md", "db.sqlite", "tools.json", "tasks.jsonl", "rejected.jsonl"):
        assert (folder / name).exists(), name
    assert load_domain(folder).name == "pet_grooming_salon"
    report = json.loads((out / "report.json").read_text())
    assert set(report["domains"]) == {"movie", "pet_grooming_salon"}
    assert report["domains"]["pet_grooming_salon"]["accepted"] > 0


def test_a_rerun_with_a_warm_cache_sends_no_request_and_writes_the_same_files(runs):
    work = runs["work"]
    assert runs["resent"] == 0
    report = json.loads((work / "b/report.json").read_text())
    assert report["llm"]["totals"]["requests"] == 0 and report["llm"]["totals"]["cache_hits"] == runs["sent"]
    for name in ("tasks.jsonl", "rejected.jsonl", "db.sqlite", "domain.yaml", "tools.py"):
        assert (work / "a/movie" / name).read_bytes() == (work / "b/movie" / name).read_bytes(), name


@pytest.mark.parametrize("args, message", [
    (["generate", "--backend", "llm"], "needs --llm-base-url URL and --model NAME"),
    (["generate", "--model", "m"], "are for --backend llm"),
    (["new-domain", "pet grooming salon"], "new-domain designs with an LLM"),
    (["new-domain", "!!!", "--llm-base-url", "http://127.0.0.1:9/v1", "--model", "m"], "no words to name a domain"),
    (["generate", "--reference-model", "m"], "--reference-model needs --reference-base-url"),
    (["generate", "--reference-trials", "5"], "--reference-trials and --reference-judge need --reference-model"),
    (["generate", "--reference-judge"], "--reference-trials and --reference-judge need --reference-model"),
])
def test_bad_llm_usage_exits_2_with_a_reason(tmp_path, args, message):
    proc = toolscale(*args, "--out", str(tmp_path / "out"), cwd=tmp_path)
    assert proc.returncode == 2
    assert message in " ".join(proc.stderr.split())
