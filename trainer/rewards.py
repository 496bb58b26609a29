"""Rewards for GRPO, framework-neutral: ToolOrchestra's preference reward and group filtering, on top
of the outcome (agents/scoring.py, as τ²-bench scores a try).

Nothing here imports a trainer library; the TRL adapter (grpo.py) calls these functions, and
tests/test_rewards.py checks them directly.

Preference reward (ToolOrchestra, arXiv 2511.21689 §3, with the released code's faults fixed):
per rollout a feature vector (calls per tool and per expert, outcome, cost, latency), min-max
normalized over the group of rollouts of one task (or the whole batch), dotted with the row's
preference vector, and 0 when the outcome failed. Cost is every dollar the rollout spent (the
policy's own tokens, the experts', and the simulated user's when training with one). Cost and
latency enter as (max - x) / (max - min), so a cheaper or faster rollout scores higher with a
positive preference weight (the released code normalized the negated values but plugged the
positive ones back in, rewarding cost). Every tool call of a turn counts (the released code
counted only the first).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Literal

from toolscale.agents.scoring import COST, LATENCY, RolloutStats

LOWER_IS_BETTER = frozenset({COST, LATENCY})
USER_ERROR = "user_error"  # a rollout's finish when its simulated user failed (it is masked out of the loss)


# preference reward ---------------------------------------------------------------------------
def _groups(n: int, group_size: int) -> list[range]:
    if group_size <= 0 or n % group_size:
        raise ValueError(f"{n} rollouts do not split into groups of {group_size}")
    return [range(start, start + group_size) for start in range(0, n, group_size)]


def _normalized(key: str, value: float, low: float, high: float) -> float:
    if high <= low:
        return 0.0  # a feature that does not vary says nothing about this group
    if key in LOWER_IS_BETTER:
        return (high - value) / (high - low)
    return (value - low) / (high - low)


def preference_rewards(stats: Sequence[RolloutStats], preferences: Sequence[Mapping[str, float]],
                       group_size: int, normalize_over: Literal["group", "batch"] = "group") -> list[float]:
    """One reward per rollout: outcome-gated dot product of normalized features and preferences.

    `stats[i]` and `preferences[i]` belong to rollout i; rollouts of one task are `group_size`
    consecutive entries. Features are min-max normalized within each group (or over the whole
    batch); a feature missing from a rollout counts as 0; a preference key with no feature counts 0.
    """
    if len(stats) != len(preferences):
        raise ValueError(f"{len(stats)} rollouts but {len(preferences)} preference vectors")
    vectors = [s.features() for s in stats]
    scopes = _groups(len(stats), group_size) if normalize_over == "group" else [range(len(stats))]
    rewards = [0.0] * len(stats)
    for scope in scopes:
        keys = set().union(*(vectors[i] for i in scope), *(preferences[i] for i in scope))
        bounds = {k: (min(vectors[i].get(k, 0.0) for i in scope), max(vectors[i].get(k, 0.0) for i in scope))
                  for k in keys}
        for i in scope:
            if stats[i].outcome <= 0:
                continue
            rewards[i] = sum(weight * _normalized(k, vectors[i].get(k, 0.0), *bounds[k])
                             for k, weight in preferences[i].items())
    return rewards


# advantages ------------------------------------------------------------------------------------
def _mean_std(values: Sequence[float]) -> tuple[float, float]:
    mean = sum(values) / len(values)
    return mean, math.sqrt(sum((v - mean) ** 2 for v in values) / len(values))


def group_advantages(rewards: Sequence[float], group_size: int, min_group_std: float = 0.1,
                     clip: float = 3.0, eps: float = 1e-6) -> tuple[list[float], list[bool]]:
    """GRPO advantages with ToolOrchestra's filter: (r - mean) / (std + eps), clipped to [-clip, clip].

    A group whose reward standard deviation (population) is below `min_group_std` is dropped: its
    advantages are 0 and its `keep` flags False, so the trainer can mask it out of the loss.
    """
    advantages = [0.0] * len(rewards)
    keep = [False] * len(rewards)
    for group in _groups(len(rewards), group_size):
        values = [rewards[i] for i in group]
        mean, std = _mean_std(values)
        if std < min_group_std or std == 0.0:
            continue
        for i in group:
            advantages[i] = max(-clip, min(clip, (rewards[i] - mean) / (std + eps)))
            keep[i] = True
    return advantages, keep


def summarize(stats: Sequence[RolloutStats]) -> dict[str, float]:
    """Batch means of the reward components, for logging."""
    n = max(len(stats), 1)
    return {
        "reward/outcome": sum(s.outcome for s in stats) / n,
        "reward/db_match": sum(bool(s.db) for s in stats) / n,
        "reward/communicated": sum(bool(s.communicate) for s in stats) / n,
        "reward/cost_usd": sum(s.total_cost for s in stats) / n,
        "reward/user_cost_usd": sum(s.user_cost for s in stats) / n,
        "reward/latency_s": sum(s.latency for s in stats) / n,
        "rollout/tool_calls": sum(sum(s.tool_calls.values()) for s in stats) / n,
        "rollout/expert_calls": sum(sum(s.expert_calls.values()) for s in stats) / n,
        "rollout/tool_errors": sum(s.tool_errors for s in stats) / n,
        "rollout/turns": sum(s.turns for s in stats) / n,
        "rollout/user_turns": sum(s.user_turns for s in stats) / n,
        "rollout/user_errors": sum(s.finish == USER_ERROR for s in stats) / n,
    }


__all__ = ["LOWER_IS_BETTER", "USER_ERROR", "group_advantages", "preference_rewards", "summarize"]
