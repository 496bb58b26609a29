"""Train a tool-calling policy with GRPO on accepted toolscale tasks. Reads top to bottom:
config, data, model, rewards, loop, save.

    toolscale train --config trainer/configs/cpu-smoke.yaml          # a tiny model, a few CPU steps
    accelerate launch --config_file trainer/configs/accelerate-zero3.yaml \\
        -m toolscale.trainer.train --config trainer/configs/h100.yaml  # Qwen3-8B, vLLM rollouts, 8 GPUs

Per prompt, a group of rollouts runs in forked environments of the task's domain (rollout.py,
episode.py); each is scored by the τ² outcome and ToolOrchestra's preference reward (rewards.py);
TRL's GRPOTrainer does the update (grpo.py). With `user:` set, an LLM user simulator plays each
task's user (the rollout opens with its message, and it answers the policy's text turns); without,
the task's instruction is the first user message (solo mode). Writes OUTPUT_DIR/final (model and
tokenizer), OUTPUT_DIR/metrics.jsonl (every logged step), OUTPUT_DIR/summary.json and, with
`rollout.save_rollouts`, OUTPUT_DIR/rollouts.jsonl.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from toolscale.agents.endpoints import ChatEndpoint
from toolscale.agents.episode import likely_opening
from toolscale.agents.tasks import DataError, load_output
from toolscale.agents.toolbox import solo_instruction

from .config import ConfigError, TrainConfig, check, load_config
from .data import build_rows, load_dataset
from .rollout import ChatFormat, format_tool_call
from .warmup import final_answer, gold_sequence, warm_up


def tokenizer_corpus(rows) -> list[str]:
    """Every text a tiny tokenizer must handle well: prompts, tool schemas, gold calls and results."""
    texts = []
    for row in rows:
        texts += [row.system, solo_instruction(row.task), final_answer(row.task.evaluation_criteria.communicate_info)]
        texts += [json.dumps(schema, ensure_ascii=False) for schema in row.tools]
        for (name, arguments), output in zip(row.task.gold_calls(), row.task.meta.expected_outputs):
            texts += [format_tool_call(name, arguments), json.dumps(output, ensure_ascii=False)]
    return texts * 3  # repetition lets BPE merge the long, recurring JSON keys


def main(config: TrainConfig) -> dict[str, Any]:
    # -- config ----------------------------------------------------------------------------------
    problems = check(config)
    if problems:
        raise ConfigError("; ".join(problems))
    if config.model.tiny is not None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")  # a tiny run never needs the hub
    import torch
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer, TrainerCallback, set_seed
    from trl import GRPOConfig
    from trl.chat_template_utils import get_training_chat_template, is_chat_template_prefix_preserving

    from .grpo import EpisodeRollout, ToolscaleGRPOTrainer, preference_reward
    from .tiny import build_model, build_tokenizer

    if config.threads:
        torch.set_num_threads(config.threads)
    set_seed(config.seed)
    out = Path(config.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()

    # -- data ------------------------------------------------------------------------------------
    if config.data.dataset is not None:
        data = load_dataset(config.data.dataset, config.data.split, config.data.domains, config.data.intents,
                            config.data.max_tasks_per_domain)
    else:
        data = load_output(config.data.path, config.data.domains, config.data.intents,
                           config.data.max_tasks_per_domain, split=config.data.split)
    rows = build_rows(data, config.experts, config.sampling, config.prompt.policy_max_chars,
                      config.prompt.show_preferences)
    if not rows:
        raise ConfigError(f"{config.data.dataset or config.data.path}: no usable tasks for this configuration")

    # -- model and tokenizer ---------------------------------------------------------------------
    if config.model.tiny is not None:
        tokenizer = build_tokenizer(tokenizer_corpus(rows), config.model.tiny.vocab_size)
        model = build_model(tokenizer, config.model.tiny)
    else:
        tokenizer = AutoTokenizer.from_pretrained(config.model.name_or_path)
        dtype = {"auto": "auto", "float32": torch.float32, "bfloat16": torch.bfloat16}[config.model.dtype]
        extra = {"attn_implementation": config.model.attn_implementation} if config.model.attn_implementation else {}
        model = AutoModelForCausalLM.from_pretrained(config.model.name_or_path, dtype=dtype, **extra)
    # Rollouts append turns by concatenation, so the template must be prefix-preserving; TRL ships
    # fixed versions of those that are not (Qwen3's drops earlier turns' thinking).
    template = None if is_chat_template_prefix_preserving(tokenizer) else get_training_chat_template(tokenizer)
    fmt = ChatFormat(tokenizer, config.rollout.chat_template_kwargs, template)
    with_user = config.user is not None

    def prompt(row) -> list[dict[str, Any]]:  # as rollouts will open (a simulated user's opening: estimated)
        return [{"role": "system", "content": row.system}, *likely_opening(row.task, with_user)]

    if config.prompt.max_prompt_tokens:
        rows = [r for r in rows if len(fmt.prompt_ids(prompt(r), r.tools)) <= config.prompt.max_prompt_tokens]
        rows = [dataclasses.replace(r, index=i) for i, r in enumerate(rows)]
    warmup_losses = warm_up(model, [gold_sequence(r, data[r.spec.domain].env, fmt, with_user) for r in rows]
                            if config.warmup.steps else [], config.warmup)
    n_params = sum(p.numel() for p in model.parameters())
    before = {k: v.detach().clone() for k, v in model.state_dict().items()} if n_params < 50_000_000 else None

    # -- rewards ---------------------------------------------------------------------------------
    grpo_args = {"report_to": "none", "save_strategy": "no", "logging_steps": 1, "seed": config.seed,
                 **({"use_cpu": True, "bf16": False, "gradient_checkpointing": False}
                    if config.model.tiny is not None else {}),
                 **config.grpo, "output_dir": str(out / "checkpoints"), "remove_unused_columns": False}
    args = GRPOConfig(**grpo_args)
    reward = preference_reward(rows, args.num_generations, config.reward.normalize_over)

    # -- loop ------------------------------------------------------------------------------------
    experts = {e.alias: ChatEndpoint(e) for e in config.experts}
    user = ChatEndpoint(config.user) if config.user is not None else None  # None: solo mode
    rollout = EpisodeRollout(rows, data, fmt, experts, config.rollout, user, config.seed, out / "rollouts.jsonl")
    dataset = Dataset.from_list([{"prompt": prompt(r), "row_index": r.index} for r in rows])

    class StepClock(TrainerCallback):
        """Seconds per optimizer step (rollouts, reward and update), for the summary."""

        def __init__(self) -> None:
            self.seconds: list[float] = []

        def on_step_begin(self, *_: Any, **__: Any) -> None:
            self._t = time.perf_counter()

        def on_step_end(self, *_: Any, **__: Any) -> None:
            self.seconds.append(time.perf_counter() - self._t)

    clock = StepClock()
    trainer = ToolscaleGRPOTrainer(model=model, reward_funcs=[reward], args=args, train_dataset=dataset,
                                   processing_class=tokenizer, rollout_func=rollout, callbacks=[clock],
                                   min_group_std=config.reward.min_group_std,
                                   advantage_clip=config.reward.advantage_clip)
    trainer.train()

    # -- save ------------------------------------------------------------------------------------
    trainer.save_model(str(out / "final"))
    if not trainer.accelerator.is_main_process:
        return {}
    tokenizer.save_pretrained(str(out / "final"))
    history = trainer.state.log_history
    (out / "metrics.jsonl").write_text("".join(json.dumps(h) + "\n" for h in history))
    steps = [h for h in history if "loss" in h]
    change = None
    if before is not None:
        after = trainer.accelerator.unwrap_model(trainer.model).state_dict()
        change = sum(float((after[k].float() - v.float()).norm() ** 2) for k, v in before.items() if k in after) ** 0.5
    summary = {
        "tasks": {name: len(d.tasks) for name, d in data.items()},
        "skipped": {name: dict(d.skipped) for name, d in data.items()},
        "rows": len(rows), "parameters": n_params, "global_steps": trainer.state.global_step,
        "warmup_loss": [warmup_losses[0], warmup_losses[-1]] if warmup_losses else None,
        "seconds_per_step": clock.seconds, "loss": [h["loss"] for h in steps],
        "tool_calls_per_rollout": [h.get("rollout/tool_calls") for h in steps],
        "user_turns_per_rollout": [h.get("rollout/user_turns") for h in steps],
        "outcome": [h.get("reward/outcome") for h in steps],
        "kept_groups": [h.get("groups/kept_fraction") for h in steps],
        "parameter_change_l2": change, "seconds": round(time.perf_counter() - started, 1),
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    return summary


def cli(argv: list[str] | None = None) -> int:
    """`python -m toolscale.trainer.train --config FILE [--set KEY=VALUE ...]` (for accelerate launch)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", required=True)
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    options = parser.parse_args(argv)
    try:
        summary = main(load_config(options.config, options.set))
    except (ConfigError, DataError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if summary:
        print(json.dumps(summary, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(cli())
