"""The TRL adapter: our rollouts as GRPOTrainer's `rollout_func`, our reward, our group filter.

Built on TRL's GRPOTrainer, pinned (trl==1.16.0): generation, the loss, DeepSpeed/accelerate and
the vLLM weight sync are TRL's. What this module adds, and where it touches TRL's internals:

- `EpisodeRollout` is the `rollout_func`. TRL hands it only the prompts, so the trainer keeps the
  batch's dataset rows (`current_rows`) to find each prompt's task and offer. It generates through
  `GRPOTrainer._generate_single_turn` (private; transformers `generate` on the CPU, colocated or
  served vLLM on GPUs, weights already synced by TRL). With a user simulator it asks for every
  episode's opening message at once, and the returned `prompt_ids` are the policy's real prompt
  (greeting and the simulator's opening), not the dataset's solo prompt.
- `preference_reward` is the one reward function: it gathers every process's rollouts (so group or
  batch normalization sees whole groups wherever they ran) and logs each reward component.
- `ToolscaleGRPOTrainer` replaces TRL's advantages with `rewards.group_advantages` (clipped, with
  low-spread groups dropped) and masks dropped groups out of the loss. It overrides the private
  `_calculate_rewards` and `_generate_and_score_completions`; tests/e2e/test_train_smoke.py guards them.
"""

from __future__ import annotations

import json
import sys
import zlib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from toolscale.agents.endpoints import ChatEndpoint, EndpointError
from toolscale.agents.episode import Episode, UserSimulator
from toolscale.agents.scoring import RolloutStats
from toolscale.agents.tasks import DomainData

from .config import RolloutConfig
from .data import Row
from .rewards import USER_ERROR, RolloutStats, group_advantages, preference_rewards, summarize
from .rollout import ChatFormat, Generate, RolloutBatch, run_rollouts, segments

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
    """TRL's `rollout_func`: one Episode per prompt (prompts arrive repeated, G per task).

    Episodes are seeded per (seed, step, row): the G rollouts of a task in one step send the same
    seed to the user simulator and experts, so a server that honours seeds opens them alike.
    A rollout whose simulator failed to open falls back to the solo instruction and is masked out
    of the loss (finish "user_error"), as one whose simulator fails later is (rollout.py).
    """

    def __init__(self, rows: list[Row], data: dict[str, DomainData], fmt: ChatFormat,
                 experts: dict[str, ChatEndpoint], settings: RolloutConfig, user: ChatEndpoint | None = None,
                 seed: int = 0, samples_path: Path | None = None) -> None:
        self.rows, self.data, self.fmt, self.experts = rows, data, fmt, experts
        self.settings, self.user, self.seed, self.samples_path = settings, user, seed, samples_path
        self._saved = False

    def episode(self, row: Row, seed: int, user: UserSimulator | None, opening: str | None) -> Episode:
        item = self.data[row.spec.domain]
        experts = {o.alias: self.experts[o.alias] for o in row.spec.experts}
        return Episode(row.task, item.domain, item.env, row.spec, row.system, row.tools, experts=experts, user=user,
                       max_turns=self.settings.max_turns, tool_latency_s=self.settings.tool_latency_s, seed=seed,
                       opening=opening)

    def openings(self, rows: list[Row], users: list[UserSimulator], seeds: list[int]) -> list[str | None]:
        """Every simulated user's first message, asked for at once; None where the simulator failed."""

        def ask(row: Row, user: UserSimulator, seed: int) -> str | None:
            try:
                return user.opening(seed)
            except EndpointError as exc:
                print(f"user simulator failed to open task {row.task.id}: {exc}", file=sys.stderr, flush=True)
                return None

        with ThreadPoolExecutor(max_workers=self.settings.concurrency) as pool:
            return list(pool.map(ask, rows, users, seeds))

    def __call__(self, prompts: list[Any], trainer: ToolscaleGRPOTrainer) -> dict[str, Any]:
        rows = [self.rows[x["row_index"]] for x in trainer.current_rows]
        if len(rows) != len(prompts):
            raise RuntimeError(f"rollout got {len(prompts)} prompts for {len(rows)} dataset rows")
        step = trainer.state.global_step
        seeds = [zlib.crc32(f"{self.seed}:{step}:{row.index}".encode()) for row in rows]
        users: list[UserSimulator | None] = [None] * len(rows)
        openings: list[str | None] = [None] * len(rows)
        if self.user is not None:
            users = [UserSimulator(self.user, row.task) for row in rows]
            openings = self.openings(rows, users, seeds)
        lost = [self.user is not None and opening is None for opening in openings]
        episodes = [self.episode(row, seed, None if failed else user, opening)
                    for row, seed, user, opening, failed in zip(rows, seeds, users, openings, lost)]
        try:
            batch = run_rollouts(episodes, self.fmt, trl_generate(trainer), trainer.max_completion_length,
                                 self.settings.policy_price_in, self.settings.policy_price_out, any_process(trainer),
                                 workers=self.settings.concurrency)
        finally:
            for episode in episodes:
                episode.close()
        for i in (i for i, failed in enumerate(lost) if failed):
            batch.env_mask[i] = [0] * len(batch.env_mask[i])
            batch.stats[i].finish = USER_ERROR
        if self.samples_path is not None and self.settings.save_rollouts and trainer.accelerator.is_main_process:
            self.save(batch, rows, step)
        return {"prompt_ids": batch.prompt_ids, "completion_ids": batch.completion_ids, "logprobs": batch.logprobs,
                "env_mask": batch.env_mask, "rollout_stats": [s.model_dump() for s in batch.stats]}

    def save(self, batch: RolloutBatch, rows: list[Row], step: int) -> None:
        """Append the batch's first `save_rollouts` rollouts to the samples file (new each run), a JSON line each."""
        with self.samples_path.open("a" if self._saved else "w", encoding="utf-8") as out:
            self._saved = True
            for i in range(min(self.settings.save_rollouts, len(rows))):
                record = {"step": step, "task_id": rows[i].task.id, "finish": batch.stats[i].finish,
                          "user_turns": batch.stats[i].user_turns,
                          "prompt": self.fmt.tokenizer.decode(batch.prompt_ids[i]),
                          "segments": segments(self.fmt, batch.completion_ids[i], batch.env_mask[i]),
                          "completion_ids": batch.completion_ids[i], "env_mask": batch.env_mask[i]}
                out.write(json.dumps(record, ensure_ascii=False) + "\n")


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
