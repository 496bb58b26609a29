"""GRPO training on accepted toolscale tasks; the episodes, scoring and evaluation it shares with the
LLM gates live in agents/.

Light to import: torch and TRL load only when a run starts (train.py, grpo.py, tiny.py, warmup).

- rewards.py   ToolOrchestra's preference reward, group filter and clipped advantages
- rollout.py   token-level multi-turn rollouts for the trainer
- data.py      training rows (from an output folder or a toolscale dataset)
- train.py     the training script (config, data, model, rewards, loop, save)
"""

from .config import ConfigError, TrainConfig, check, load_config
from .data import Row, build_rows, load_dataset
from .rewards import group_advantages, preference_rewards

__all__ = ["ConfigError", "Row", "TrainConfig", "build_rows", "check", "group_advantages", "load_config",
           "load_dataset", "preference_rewards"]
