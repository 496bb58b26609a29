"""The training configuration: one YAML file (trainer/configs/), typed, with dotted overrides.

`load_config(path, ["grpo.max_steps=3", "data.path=out"])` reads the file, applies the overrides
(values parsed as YAML) and validates the result; any bad key or value raises ConfigError naming it.
`check(config)` then looks for settings that parse but do not fit together (batch sizes that do
not split into groups, vLLM on a model it cannot load, a context too short for the completion...),
so a broken H100 configuration is caught on a laptop before it costs a GPU hour.
"""

from __future__ import annotations

import dataclasses
import importlib.util
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from toolscale.agents.endpoints import EndpointConfig
from .tiny import TinyModelConfig
from toolscale.agents.toolbox import ExpertConfig, SamplingConfig
from .warmup import WarmupConfig

# GRPOConfig settings the trainer owns: set from the other sections, not from `grpo:`.
RESERVED_GRPO_KEYS = frozenset({"output_dir", "remove_unused_columns"})


class ConfigError(ValueError):
    """A configuration that cannot be used; the message names the file, key and reason."""


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


class DataConfig(_Section):
    path: Path = Field(Path("output"), description="a `toolscale generate` output folder")
    dataset: str | None = Field(None, description="instead of `path`: a toolscale Hugging Face dataset, as a "
                                                  "local folder (OUT/hf) or a Hub repo id (org/name)")
    split: Literal["train", "test", "all"] = Field("train", description="the split to train on: train (the default keeps the held-out test "
                                            "tasks out), test, or all")
    domains: list[str] | None = None
    intents: list[str] | None = None
    max_tasks_per_domain: int | None = Field(None, ge=1)


class PromptConfig(_Section):
    policy_max_chars: int | None = Field(None, ge=0, description="cut policy.md short (tiny models); None: all")
    show_preferences: bool = True
    max_prompt_tokens: int | None = Field(None, ge=1, description="rows with longer prompts are left out")


class RolloutConfig(_Section):
    max_turns: int = Field(10, ge=1)
    tool_latency_s: float = Field(0.05, ge=0, description="modelled seconds per domain tool call")
    policy_price_in: float = Field(0.0, ge=0, description="$ per million tokens the policy reads")
    policy_price_out: float = Field(0.0, ge=0, description="$ per million tokens the policy writes")
    chat_template_kwargs: dict[str, Any] = Field(default_factory=dict)
    concurrency: int = Field(1, ge=1, description="episodes stepped at once after each generation, so their "
                                                  "expert and user-simulator requests overlap")
    save_rollouts: int = Field(0, ge=0, description="rollouts per generation batch written to "
                                                    "OUTPUT_DIR/rollouts.jsonl with their loss mask (main process)")


class RewardConfig(_Section):
    normalize_over: Literal["group", "batch"] = "group"
    min_group_std: float = Field(0.1, ge=0)
    advantage_clip: float = Field(3.0, gt=0)


class ModelConfig(_Section):
    name_or_path: str | None = Field(None, description="a hub id or a local folder")
    tiny: TinyModelConfig | None = Field(None, description="build a tiny model and tokenizer locally instead")
    dtype: Literal["auto", "float32", "bfloat16"] = "auto"
    attn_implementation: str | None = None

    @model_validator(mode="after")
    def _one_source(self) -> ModelConfig:
        if (self.name_or_path is None) == (self.tiny is None):
            raise ValueError("set exactly one of model.name_or_path and model.tiny")
        return self


class LaunchConfig(_Section):
    """How the run is launched; used to check batch arithmetic and to document the launch."""

    num_processes: int = Field(1, ge=1)
    num_machines: int = Field(1, ge=1)
    accelerate_config: Path | None = None


class TrainConfig(_Section):
    output_dir: Path = Path("runs/train")
    seed: int = 0
    threads: int | None = Field(None, ge=1, description="torch CPU threads (CI: 1)")
    data: DataConfig = Field(default_factory=DataConfig)
    prompt: PromptConfig = Field(default_factory=PromptConfig)
    sampling: SamplingConfig = Field(default_factory=SamplingConfig)
    experts: list[ExpertConfig] = Field(default_factory=list)
    user: EndpointConfig | None = Field(None, description="an LLM user simulator: each rollout opens with its "
                                        "message and it answers the policy's text turns until it says "
                                        "###STOP###; unset: solo mode (the instruction is the first message)")
    rollout: RolloutConfig = Field(default_factory=RolloutConfig)
    reward: RewardConfig = Field(default_factory=RewardConfig)
    model: ModelConfig
    warmup: WarmupConfig = Field(default_factory=WarmupConfig)
    launch: LaunchConfig = Field(default_factory=LaunchConfig)
    grpo: dict[str, Any] = Field(default_factory=dict, description="passed to trl.GRPOConfig")


def _set(tree: dict[str, Any], dotted: str, value: Any) -> None:
    keys = dotted.split(".")
    node: Any = tree
    for i, key in enumerate(keys[:-1]):
        nxt = node[int(key)] if isinstance(node, list) else node.setdefault(key, {})
        if not isinstance(nxt, (dict, list)):
            raise ConfigError(f"--set {dotted}: {'.'.join(keys[: i + 1])} is not a section")
        node = nxt
    if isinstance(node, list):
        node[int(keys[-1])] = value
    else:
        node[keys[-1]] = value


def load_config(path: str | Path, overrides: list[str] | None = None) -> TrainConfig:
    """Read, override and validate a configuration file."""
    path = Path(path)
    try:
        tree = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such configuration file") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML: {exc}") from None
    if not isinstance(tree, dict):
        raise ConfigError(f"{path}: expected a mapping at the top level")
    for item in overrides or []:
        key, sep, raw = item.partition("=")
        if not sep or not key:
            raise ConfigError(f"--set {item!r}: expected KEY=VALUE, e.g. grpo.max_steps=3")
        try:
            _set(tree, key.strip(), yaml.safe_load(raw))
        except (IndexError, ValueError) as exc:
            raise ConfigError(f"--set {item!r}: {exc}") from None
    try:
        config = TrainConfig.model_validate(tree)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"]) or "(top level)"
        raise ConfigError(f"{path}: {where}: {err['msg']}") from None
    launch = config.launch.accelerate_config
    if launch is not None and not launch.is_absolute():  # beside the config file, wherever we run from
        config.launch.accelerate_config = path.parent / launch
    return config


TRAIN_PACKAGES = ("torch", "transformers", "trl", "accelerate")


def require_train_extra() -> None:
    """ConfigError saying what to install when a package of the `train` extra is missing."""
    missing = [name for name in TRAIN_PACKAGES if importlib.util.find_spec(name) is None]
    if missing:
        raise ConfigError(f"training needs the train extra ({', '.join(missing)} missing): "
                          "pip install -e '.[train]'")


def grpo_fields() -> dict[str, Any]:
    require_train_extra()
    from trl import GRPOConfig

    return {f.name: f for f in dataclasses.fields(GRPOConfig)}


def grpo_setting(config: TrainConfig, key: str) -> Any:
    """A GRPOConfig setting as this configuration gives it, else TRL's default."""
    if key in config.grpo:
        return config.grpo[key]
    field = grpo_fields()[key]
    return field.default if field.default is not dataclasses.MISSING else None


def check(config: TrainConfig) -> list[str]:
    """Settings that parse but do not fit together; empty when the configuration is coherent."""
    problems = []
    fields = grpo_fields()
    unknown = sorted(set(config.grpo) - set(fields))
    if unknown:
        problems.append(f"grpo: unknown GRPOConfig settings {unknown}")
    reserved = sorted(set(config.grpo) & RESERVED_GRPO_KEYS)
    if reserved:
        problems.append(f"grpo: {reserved} are set by the trainer (use output_dir at the top level)")
    g = lambda key: grpo_setting(config, key)  # noqa: E731
    generations = g("num_generations")
    if generations < 2:
        problems.append("grpo.num_generations must be at least 2 (GRPO compares rollouts within a group)")
    per_step = g("steps_per_generation") or g("gradient_accumulation_steps") or 1
    global_batch = g("per_device_train_batch_size") * per_step * config.launch.num_processes
    if global_batch % max(generations, 1):
        problems.append(f"per_device_train_batch_size x steps_per_generation x num_processes = {global_batch} "
                        f"does not split into groups of num_generations = {generations}")
    if g("use_vllm"):
        if config.model.tiny is not None:
            problems.append("use_vllm loads the model from a path: it needs model.name_or_path, not model.tiny")
        if g("vllm_mode") not in ("colocate", "server"):
            problems.append(f"grpo.vllm_mode must be colocate or server, not {g('vllm_mode')!r}")
        tp = g("vllm_tensor_parallel_size") or 1
        if g("vllm_mode") == "colocate" and config.launch.num_processes % tp:
            problems.append(f"vllm_tensor_parallel_size {tp} does not divide num_processes "
                            f"{config.launch.num_processes}")
        if g("vllm_mode") == "colocate" and not 0 < g("vllm_gpu_memory_utilization") <= 0.7:
            problems.append("colocated vLLM shares the GPU with training: keep vllm_gpu_memory_utilization "
                            "in (0, 0.7]")
        length = g("vllm_max_model_length")
        need = g("max_completion_length") + (config.prompt.max_prompt_tokens or 0)
        if length is not None and length < need:
            problems.append(f"vllm_max_model_length {length} < max_prompt_tokens + max_completion_length = {need}")
        if g("use_cpu"):
            problems.append("use_vllm and use_cpu together: vLLM rollouts need GPUs")
    if g("use_cpu") and g("bf16"):
        problems.append("use_cpu with bf16: train in float32 on the CPU")
    if config.model.tiny is not None and not g("use_cpu"):
        problems.append("model.tiny is for CPU runs: set grpo.use_cpu: true")
    aliases = [e.alias for e in config.experts]
    if len(set(aliases)) != len(aliases):
        problems.append(f"expert aliases repeat: {aliases}")
    if not unknown and not reserved:
        problems.extend(_check_values(config))
    problems.extend(_check_launch(config))
    return problems


def _check_values(config: TrainConfig) -> list[str]:
    """Build the GRPOConfig on this machine (bf16 and GPUs swapped for the CPU) to check the values."""
    import tempfile

    from trl import GRPOConfig

    values = {**config.grpo, "bf16": False, "use_cpu": True, "report_to": "none"}
    # one process here stands for launch.num_processes there: scale the per-device batch to match
    values["per_device_train_batch_size"] = grpo_setting(config, "per_device_train_batch_size") * \
        config.launch.num_processes
    with tempfile.TemporaryDirectory() as scratch:
        try:
            GRPOConfig(**values, output_dir=scratch)
        except (TypeError, ValueError) as exc:
            return [f"grpo: {str(exc).splitlines()[0]}"]
    return []


def _check_launch(config: TrainConfig) -> list[str]:
    path = config.launch.accelerate_config
    if path is None:
        return []
    try:
        launch = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError) as exc:
        return [f"launch.accelerate_config {path}: {exc}"]
    problems = []
    for key in ("num_processes", "num_machines"):
        if key in launch and launch[key] != getattr(config.launch, key):
            problems.append(f"launch.{key} is {getattr(config.launch, key)} but {path} says {launch[key]}")
    mixed = launch.get("mixed_precision")
    if mixed == "bf16" and grpo_setting(config, "bf16") is False:
        problems.append(f"{path} asks for bf16 mixed precision but grpo.bf16 is false")
    return problems


__all__ = ["ConfigError", "DataConfig", "LaunchConfig", "ModelConfig", "PromptConfig", "RewardConfig",
           "RolloutConfig", "TrainConfig", "check", "grpo_setting", "load_config"]
