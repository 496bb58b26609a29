"""The pipeline against a real `vllm serve`: vLLM's CPU build serving a tiny model trained here.

The model is the cpu-smoke trainer's (a tiny Qwen2 built locally, warmed up on bank gold trajectories,
one GRPO step), saved and served by vLLM with Hermes tool-call parsing, so every request goes through
a real inference server: its chat template, structured outputs and tool parser. The model knows
nothing, which is the point: every stage it answers must end in a recorded rejection or failure, never
a crash or a hang, and the runs must finish.

Needs TOOLSCALE_VLLM_PYTHON (tests/vllm_install.sh makes the virtualenv, CI runs it); skipped without.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: the shared helpers

from trainer_support import bank_output, toolscale  # noqa: E402
from vllm_server import PYTHON_VARIABLE, VLLMServer, vllm_python  # noqa: E402

CONFIGS = Path(__file__).resolve().parents[2] / "trainer" / "configs"
# the design prompt's few-shot domain is long in a 2k-token vocabulary: 31,036 tokens today (agent rules and
# their policy text), under 1k short of 32k with the answer's 768: room to grow
CONTEXT = 49152
MODEL = "tiny"

pytestmark = pytest.mark.skipif(vllm_python() is None, reason=f"{PYTHON_VARIABLE} is not set (tests/vllm_install.sh)")


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    out = bank_output(tmp_path_factory)
    work = tmp_path_factory.mktemp("vllm")
    # head size 32 (hidden 128 over 4 heads): vLLM's CPU attention kernels take no smaller one
    proc = toolscale("train", "--config", str(CONFIGS / "cpu-smoke.yaml"), "--set", f"data.path={out}",
                     "--set", f"output_dir={work / 'run'}", "--set", "model.tiny.hidden_size=128",
                     "--set", f"model.tiny.max_position_embeddings={CONTEXT}", "--set", "grpo.max_steps=1", cwd=work)
    assert proc.returncode == 0, proc.stderr[-4000:]
    with VLLMServer(vllm_python(), work / "run" / "final", MODEL, CONTEXT, work / "vllm.log") as server:
        yield {"out": out, "work": work, "server": server}
        assert server.alive(), server.tail()  # nothing the pipeline sent brought the server down


def test_toolscale_eval_scores_20_tasks_with_the_served_model(served):
    work, server = served["work"], served["server"]
    proc = toolscale("eval", "--tasks", str(served["out"]), "--base-url", server.base_url, "--model", MODEL,
                     "--per-domain", "20", "--split", "all", "--trials", "1", "--out", str(work / "eval.json"),
                     cwd=work)
    assert proc.returncode == 0, proc.stderr[-3000:] + server.tail()
    assert "pass^1" in proc.stderr and "bank" in proc.stderr
    trials = json.loads((work / "eval.json").read_text())["trials"]
    assert len(trials) == 20 and all(t["error"] is None for t in trials), trials[:2]
    assert all(t["reward"] in (0.0, 1.0) and t["turns"] >= 1 for t in trials)


def test_an_llm_backend_run_finishes_and_records_every_garbage_answer(served):
    work, server = served["work"], served["server"]
    config = work / "llm.yaml"
    config.write_text(yaml.safe_dump({"cache_dir": None, "max_tokens": 768, "timeout_s": 300,
                                      "synthesis": {"repair_rounds": 1}}))
    proc = toolscale("generate", "--backend", "llm", "--llm-base-url", server.base_url, "--model", MODEL,
                     "--llm-config", str(config), "--domains", "bank", "--out", str(work / "llm-out"), cwd=work)
    assert proc.returncode == 1, proc.stderr[-3000:]  # a domain without a design fails, the run finishes
    report = json.loads((work / "llm-out" / "report.json").read_text())
    assert "no valid design" in report["failed"]["bank"]
    usage = report["llm"]["totals"]
    assert usage["requests"] > 0 and usage["completion_tokens"] > 0 and usage["failed_requests"] == 0
    # every answer was sent back for repair or ended as a rejection with its reason
    assert usage["requests"] == usage["repair_rounds"] + sum(usage["rejected"].values())


def test_the_served_model_as_reference_agent_gates_the_tasks(served):
    work, server = served["work"], served["server"]
    out = work / "ref-out"
    proc = toolscale("generate", "--domains", "bank", "--scale", "0.05", "--out", str(out), "--reference-model",
                     MODEL, "--reference-base-url", server.base_url, "--reference-trials", "2", cwd=work)
    assert proc.returncode == 0, proc.stderr[-3000:] + server.tail()
    bank = json.loads((out / "report.json").read_text())["domains"]["bank"]
    tried = bank["reference"]["tasks"]
    assert bank["reference"]["model"] == MODEL and tried > 0
    rejected = [json.loads(line) for line in (out / "bank" / "rejected.jsonl").read_text().splitlines()]
    unsolved = [r for r in rejected if r["gate"] in ("solvable", "needs_tools")]
    assert all(f"the reference agent ({MODEL})" in r["reason"] for r in unsolved)
    assert bank["accepted"] + len(unsolved) == tried
