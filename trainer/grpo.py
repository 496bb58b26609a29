"""The TRL adapter: our rollouts as GRPOTrainer's `rollout_func`, our reward, our group filter.

Built on TRL's GRPOTrainer, pinned (trl==1.16.0): generation, the loss, DeepSpeed/accelerate and
the vLLM weight sync are TRL's. What this module adds, and where it touches TRL's internals:

- `EpisodeRollout` is the `rollout_func`. TRL hands it only the prompts, so the trainer keeps the
  batch's dataset rows (`current_rows`) to find each prompt's task and offer. It generates through
  `GRPOTrainer._generate_single_turn` (private; transformers `generate` on the CPU, colocated or
  served vLLM on GPUs, weights already synced by TRL).
- `preference_reward` is the one reward function: it gathers every process's rollouts (so group or
  batch normalization sees whole groups wherever they ran) and logs each reward component.
- `ToolscaleGRPOTrainer` replaces TRL's advantages with `rewards.group_advantages` (clipped, with
  low-spread groups dropped) and masks dropped groups out of the loss. It overrides the private
  `_calculate_rewards` and `_generate_and_score_completions`; tests/e2e/test_train_smoke.py guards them.
"""

from __future__ import annotations

from typing import Any

from .data import DomainData, Row
from .endpoints import ChatEndpoint
from .episode import Episode
from .rewards import RolloutStats, group_advantages, preference_rewards, summarize
from .rollout import ChatFormat, Generate, run_rollouts

try:
    from trl import GRPOTrainer
except ImportError as exc:  # the train extra is not installed
    raise ImportError("the trainer needs the train extra: pip install -e '.[train]'") from exc


def trl_generate(trainer: GRPOTrainer) -> Generate:
    """Generation through TRL's own single-turn path, one completion per context."""

    def generate(contexts: list[list[int]]) -> tuple[list[list[int]], list[list[float]] | None]:
        return trainer._generate_single_turn(contexts, None, {}, 1)

    return generate


def any_process(trainer: GRPOTrainer):
    """With several processes, a function telling whether any of them still has live episodes."""
    import torch

    accelerator = trainer.accelerator
    if accelerator.num_processes == 1:
        return None

    def others_active(mine: bool) -> bool:
        flag = torch.tensor([int(mine)], device=accelerator.device)
        return bool(accelerator.gather(flag).sum().item() > 0)

    return others_active


class EpisodeRollout:
    """TRL's `rollout_func`: one Episode per prompt (prompts arrive repeated, G per task)."""

    def __init__(self, rows: list[Row], data: dict[str, DomainData], fmt: ChatFormat,
                 experts: dict[str, ChatEndpoint], max_turns: int, tool_latency_s: float,
                 price_in: float, price_out: float) -> None:
        self.rows, self.data, self.fmt, self.experts = rows, data, fmt, experts
        self.max_turns, self.tool_latency_s = max_turns, tool_latency_s
        self.price_in, self.price_out = price_in, price_out

    def episode(self, row: Row) -> Episode:
        item = self.data[row.spec.domain]
        experts = {o.alias: self.experts[o.alias] for o in row.spec.experts}
        return Episode(row.task, item.domain, item.env, row.spec, row.system, row.tools, experts=experts,
                       max_turns=self.max_turns, tool_latency_s=self.tool_latency_s)

    def __call__(self, prompts: list[Any], trainer: ToolscaleGRPOTrainer) -> dict[str, Any]:
        rows = [self.rows[x["row_index"]] for x in trainer.current_rows]
        if len(rows) != len(prompts):
            raise RuntimeError(f"rollout got {len(prompts)} prompts for {len(rows)} dataset rows")
        episodes = [self.episode(row) for row in rows]
        try:
            batch = run_rollouts(episodes, self.fmt, trl_generate(trainer), trainer.max_completion_length,
                                 self.price_in, self.price_out, any_process(trainer))
        finally:
            for episode in episodes:
                episode.close()
        return {"prompt_ids": batch.prompt_ids, "completion_ids": batch.completion_ids, "logprobs": batch.logprobs,
                "env_mask": batch.env_mask, "rollout_stats": [s.model_dump() for s in batch.stats]}


def preference_reward(rows: list[Row], group_size: int, normalize_over: str):
    """The reward function TRL calls (per process, on its slice), computed over all processes."""
    from accelerate.utils import gather_object
    from accelerate.state import PartialState

    def preference(prompts, completions, completion_ids, rollout_stats, row_index, log_metric, **_) -> list[float]:
        local = [RolloutStats.model_validate(s) for s in rollout_stats]
        stats = [RolloutStats.model_validate(s) for s in gather_object([s.model_dump() for s in local])]
        indices = gather_object(list(row_index))
        rewards = preference_rewards(stats, [rows[i].spec.preference for i in indices], group_size, normalize_over)
        for name, value in summarize(local).items():
            log_metric(name, value)
        start = PartialState().process_index * len(local)
        return rewards[start: start + len(local)]

    return preference


class ToolscaleGRPOTrainer(GRPOTrainer):
    """GRPOTrainer with ToolOrchestra's advantage: groups of low reward spread dropped, the rest clipped."""

    def __init__(self, *args: Any, min_group_std: float = 0.1, advantage_clip: float = 3.0, **kwargs: Any) -> None:
        self.min_group_std = min_group_std
        self.advantage_clip = advantage_clip
        self.current_rows: list[dict[str, Any]] = []
        self._gathered_rewards = None
        super().__init__(*args, **kwargs)

    def _calculate_rewards(self, inputs, prompts, completions, completion_ids_list):
        rewards_per_func = super()._calculate_rewards(inputs, prompts, completions, completion_ids_list)
        weights = self.reward_weights.to(rewards_per_func.device).unsqueeze(0)
        self._gathered_rewards = (rewards_per_func * weights).nansum(dim=1)
        return rewards_per_func

    def _generate_and_score_completions(self, inputs):
        import torch

        self.current_rows = inputs
        output = super()._generate_and_score_completions(inputs)
        mode = "train" if self.model.training else "eval"
        group = self.num_generations if mode == "train" else self.num_generations_eval
        advantages, keep = group_advantages(self._gathered_rewards.tolist(), group, self.min_group_std,
                                            self.advantage_clip)
        start = self.accelerator.process_index * len(inputs)
        device = output["advantages"].device
        output["advantages"] = torch.tensor(advantages[start: start + len(inputs)], device=device)
        local_keep = torch.tensor(keep[start: start + len(inputs)], device=device, dtype=torch.long).unsqueeze(1)
        tool_mask = output.get("tool_mask", torch.ones_like(output["completion_mask"]))
        output["tool_mask"] = tool_mask * local_keep
        loss_mask = output["completion_mask"] * output["tool_mask"]
        output["num_items_in_batch"] = self.accelerator.gather(loss_mask.sum()).sum()
        self._metrics[mode]["groups/kept_fraction"].append(sum(keep) / max(len(keep), 1))
        clipped = sum(abs(a) >= self.advantage_clip for a in advantages) / max(len(advantages), 1)
        self._metrics[mode]["advantages/clipped_fraction"].append(clipped)
        return output


__all__ = ["EpisodeRollout", "ToolscaleGRPOTrainer", "any_process", "preference_reward", "trl_generate"]
