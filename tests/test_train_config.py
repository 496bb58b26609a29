"""Training configurations: both shipped configs parse and are coherent; broken ones are caught early.

This is what is checked of trainer/configs/h100.yaml without a GPU: it validates, its GRPOConfig
builds (bf16 and GPUs swapped for the CPU), its batch splits into groups across 8 processes, its
vLLM settings fit the model and context, and it agrees with the accelerate/DeepSpeed launch file.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from toolscale.trainer.config import ConfigError, check, grpo_setting, load_config

CONFIGS = Path(__file__).resolve().parents[1] / "trainer" / "configs"


def test_cpu_smoke_config_is_coherent():
    config = load_config(CONFIGS / "cpu-smoke.yaml")
    assert check(config) == []
    assert config.model.tiny is not None and config.model.name_or_path is None
    assert grpo_setting(config, "use_cpu") and not grpo_setting(config, "use_vllm")
    assert grpo_setting(config, "max_steps") <= 5


def test_h100_config_is_coherent_without_a_gpu():
    config = load_config(CONFIGS / "h100.yaml")
    assert check(config) == []
    assert config.model.name_or_path == "Qwen/Qwen3-8B" and config.model.dtype == "bfloat16"
    g = lambda key: grpo_setting(config, key)  # noqa: E731
    assert g("use_vllm") and g("vllm_mode") == "colocate" and g("bf16") and g("gradient_checkpointing")
    rollouts = g("per_device_train_batch_size") * g("gradient_accumulation_steps") * config.launch.num_processes
    assert rollouts == 128 and rollouts // g("num_generations") == 16  # ToolOrchestra: 16 tasks x 8 per step
    assert g("vllm_max_model_length") >= config.prompt.max_prompt_tokens + g("max_completion_length")
    assert g("vllm_gpu_memory_utilization") <= 0.5  # training shares each GPU with its vLLM engine
    launch = yaml.safe_load(config.launch.accelerate_config.read_text())
    assert launch["num_processes"] == config.launch.num_processes == 8
    assert launch["distributed_type"] == "DEEPSPEED" and launch["deepspeed_config"]["zero_stage"] == 3
    assert {e.alias for e in config.experts} == {"expert-1", "expert-2", "expert-3"}


def test_overrides_are_typed_and_validated():
    config = load_config(CONFIGS / "cpu-smoke.yaml", ["grpo.max_steps=7", "data.path=/tmp/out",
                                                      "experts=[{alias: e1, model: m, base_url: 'http://x/v1'}]"])
    assert config.grpo["max_steps"] == 7 and str(config.data.path) == "/tmp/out"
    assert config.experts[0].alias == "e1"
    with pytest.raises(ConfigError, match="warmup.steps"):
        load_config(CONFIGS / "cpu-smoke.yaml", ["warmup.steps=-1"])
    with pytest.raises(ConfigError, match="KEY=VALUE"):
        load_config(CONFIGS / "cpu-smoke.yaml", ["grpo.max_steps"])
    with pytest.raises(ConfigError, match="exactly one"):
        load_config(CONFIGS / "cpu-smoke.yaml", ["model.name_or_path=Qwen/Qwen3-8B"])
    with pytest.raises(ConfigError, match="no such configuration"):
        load_config(CONFIGS / "nope.yaml")


@pytest.mark.parametrize("override, problem", [
    ("grpo.per_device_train_batch_size=6", "does not split into groups"),
    ("grpo.num_generations=1", "at least 2"),
    ("grpo.not_a_setting=1", "unknown GRPOConfig settings"),
    ("grpo.output_dir=x", "set by the trainer"),
    ("grpo.use_vllm=true", "needs model.name_or_path"),
    ("grpo.bf16=true", "use_cpu with bf16"),
])
def test_incoherent_cpu_settings_are_reported(override, problem):
    problems = check(load_config(CONFIGS / "cpu-smoke.yaml", [override]))
    assert any(problem in p for p in problems), problems


@pytest.mark.parametrize("override, problem", [
    ("grpo.vllm_max_model_length=8192", "vllm_max_model_length 8192 <"),
    ("grpo.vllm_gpu_memory_utilization=0.9", "vllm_gpu_memory_utilization"),
    ("grpo.vllm_tensor_parallel_size=3", "does not divide"),
    ("launch.num_processes=4", "accelerate-zero3.yaml says 8"),
    ("grpo.num_generations=12", "does not split into groups"),
])
def test_incoherent_gpu_settings_are_reported(override, problem):
    problems = check(load_config(CONFIGS / "h100.yaml", [override]))
    assert any(problem in p for p in problems), problems


def test_the_readme_two_node_recipe_is_coherent():
    config = load_config(CONFIGS / "h100.yaml", ["launch.num_machines=2", "launch.num_processes=16",
                                                 "launch.accelerate_config=accelerate-zero3-2x8.yaml",
                                                 "grpo.gradient_accumulation_steps=2"])
    assert check(config) == []
    rollouts = grpo_setting(config, "per_device_train_batch_size") * 2 * 16
    assert rollouts == 128
    # the one-node launch file does not fit a two-node run
    assert check(load_config(CONFIGS / "h100.yaml", ["launch.num_machines=2", "launch.num_processes=16"]))


def test_without_the_train_extra_train_says_what_to_install_in_one_line(monkeypatch):
    """The audit's `train --dry-run` printed a 43-line traceback where TRL was not installed."""
    import importlib.util

    from typer.testing import CliRunner

    from toolscale.flows.cli import app

    found = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "trl" else found(name, *a))
    for extra in ([], ["--dry-run"]):
        result = CliRunner().invoke(app, ["train", "--config", str(CONFIGS / "h100.yaml"), *extra])
        lines = [line for line in result.output.splitlines() if line.strip()]
        assert result.exit_code == 2
        assert lines == ["error: training needs the train extra (trl missing): pip install -e '.[train]'"]
