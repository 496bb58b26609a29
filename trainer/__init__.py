"""GRPO training on accepted toolscale tasks, and the evaluation harness that scores like it.

Light to import: torch and TRL load only when a run starts (train.py, grpo.py, tiny.py, warmup).

- rewards.py   τ² outcome, ToolOrchestra preference reward, group filter and clipped advantages
- episode.py   one rollout of one task in a forked Environment (tools, experts, user simulator)
- rollout.py   token-level multi-turn rollouts for the trainer
- evaluate.py  any OpenAI-compatible agent over tasks: pass^k, cost, turns
- train.py     the training script (config, data, model, rewards, loop, save)
"""

from .config import ConfigError, TrainConfig, check, load_config
from .data import DataError, DomainData, Row, build_rows, load_output
from .endpoints import ChatEndpoint, EndpointConfig, EndpointError
from .episode import Episode, UserSimulator
from .evaluate import EvalConfig, TrialResult, evaluate_tasks, pass_hat_k, run_evaluation
from .rewards import Outcome, RolloutStats, group_advantages, preference_rewards, score_outcome
from .toolbox import ExpertConfig, RolloutSpec, SamplingConfig, sample_spec

__all__ = ["ChatEndpoint", "ConfigError", "DataError", "DomainData", "EndpointConfig", "EndpointError", "Episode",
           "EvalConfig", "ExpertConfig", "Outcome", "RolloutSpec", "RolloutStats", "Row", "SamplingConfig",
           "TrainConfig", "TrialResult", "UserSimulator", "build_rows", "check", "evaluate_tasks",
           "group_advantages", "load_config", "load_output", "pass_hat_k", "preference_rewards", "run_evaluation",
           "sample_spec", "score_outcome"]
