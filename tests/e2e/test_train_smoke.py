"""`toolscale train --config trainer/configs/cpu-smoke.yaml` end to end, on the CPU, as CI runs it.

A tiny model and tokenizer are built in the run (no downloads, no vLLM), warmed up on two bank
tasks' gold trajectories, then trained for three GRPO steps with TRL; an expert served by a local
OpenAI-compatible server is offered as call_expert. Checks the mechanics, not learning: steps
complete, tool calls ran and were counted, the loss is finite, the weights moved, every reward
component was logged, and the saved model and tokenizer load back offline.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: the shared helpers

from llm_server import LLMTestServer  # noqa: E402
from trainer_support import GoldAgent, bank_output, read_tasks, toolscale  # noqa: E402

CONFIGS = Path(__file__).resolve().parents[2] / "trainer" / "configs"
COMPONENTS = ("reward/outcome", "reward/db_match", "reward/communicated", "reward/cost_usd", "reward/latency_s",
              "rollout/tool_calls", "rollout/expert_calls", "rollout/tool_errors", "rollout/turns",
              "rewards/preference/mean", "groups/kept_fraction", "advantages/clipped_fraction")


@pytest.fixture(scope="module")
def smoke(tmp_path_factory):
    out = bank_output(tmp_path_factory)
    work = tmp_path_factory.mktemp("train")
    with LLMTestServer(fallback=GoldAgent(read_tasks(out))) as server:
        expert = {"alias": "expert-1", "model": "gold", "base_url": server.base_url, "price_in": 1.25,
                  "price_out": 10.0, "latency_s": 2.0, "description": "a model that knows the answers"}
        proc = toolscale("train", "--config", str(CONFIGS / "cpu-smoke.yaml"), "--set", f"data.path={out}",
                         "--set", f"output_dir={work / 'run'}", "--set", f"experts=[{json.dumps(expert)}]", cwd=work)
    assert proc.returncode == 0, proc.stderr[-4000:]
    run = work / "run"
    return run, json.loads((run / "summary.json").read_text()), proc


def test_the_steps_complete_with_a_finite_loss(smoke):
    run, summary, proc = smoke
    assert summary["global_steps"] == 3 and len(summary["seconds_per_step"]) == 3
    assert len(summary["loss"]) == 3 and all(math.isfinite(x) for x in summary["loss"])
    assert summary["warmup_loss"][1] < summary["warmup_loss"][0]
    assert "toolscale train: 3 steps" in proc.stderr


def test_tool_calls_ran_and_were_counted(smoke):
    _, summary, _ = smoke
    assert all(calls > 0 for calls in summary["tool_calls_per_rollout"])


def test_the_weights_changed(smoke):
    _, summary, _ = smoke
    assert any(kept > 0 for kept in summary["kept_groups"])  # some group had a reward spread to learn from
    assert summary["parameter_change_l2"] > 0


def test_every_reward_component_is_logged_each_step(smoke):
    run, _, _ = smoke
    steps = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    steps = [s for s in steps if "loss" in s]
    assert len(steps) == 3
    for step in steps:
        for name in COMPONENTS:
            assert name in step and math.isfinite(step[name]), name
        assert step["reward/cost_usd"] > 0  # the policy's own tokens are priced


def test_the_saved_model_and_tokenizer_load_back_offline(smoke, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    from transformers import AutoModelForCausalLM, AutoTokenizer

    run, _, _ = smoke
    tokenizer = AutoTokenizer.from_pretrained(run / "final")
    model = AutoModelForCausalLM.from_pretrained(run / "final")
    text = '<tool_call>\n{"name": "list_accounts", "arguments": {"customer_id": "CUS-000042"}}\n</tool_call>'
    ids = tokenizer.encode(text, add_special_tokens=False)
    assert tokenizer.decode(ids) == text
    assert model.config.vocab_size == len(tokenizer)


def test_dry_run_checks_the_h100_config_without_a_gpu(monkeypatch, tmp_path):
    from typer.testing import CliRunner

    from toolscale.flows.cli import app

    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    result = runner.invoke(app, ["train", "--config", str(CONFIGS / "h100.yaml"), "--dry-run"])
    assert result.exit_code == 0, result.stderr[-3000:]
    text = " ".join(result.stderr.split())
    assert "Qwen/Qwen3-8B" in text and "coherent" in text and "none: solo" in text
    user = "user={base_url: http://127.0.0.1:9/v1, model: sim}"
    simulated = runner.invoke(app, ["train", "--config", str(CONFIGS / "h100.yaml"), "--dry-run", "--set", user])
    assert simulated.exit_code == 0 and "simulated by sim" in " ".join(simulated.stderr.split())
    broken = runner.invoke(app, ["train", "--config", str(CONFIGS / "h100.yaml"), "--dry-run",
                                 "--set", "grpo.vllm_max_model_length=4096"])
    assert broken.exit_code == 2 and "vllm_max_model_length 4096" in " ".join(broken.stderr.split())
    missing = runner.invoke(app, ["train", "--config", str(CONFIGS / "cpu-smoke.yaml"),
                                  "--set", f"data.path={tmp_path / 'none'}"])
    assert missing.exit_code == 2 and "no such output folder" in " ".join(missing.stderr.split())
