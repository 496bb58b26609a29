"""Rewards, framework-neutral: τ²-bench's outcome, ToolOrchestra's preference reward, group filtering.

Nothing here imports a trainer library; the TRL adapter (grpo.py) and the evaluation harness
(evaluate.py) call these functions, and tests/test_rewards.py checks them directly.

Outcome, as τ²-bench scores a task with reward_basis [DB, COMMUNICATE]: the final database equals
the gold replay's (`task.meta.final_state_hash`), and every `communicate_info` string occurs in some
assistant message, compared as τ² does: `info.lower() in content.lower().replace(",", "")` (τ² strips
commas from the message only, so an info string that itself holds a comma can never match).
The components named in `reward_basis` multiply.

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
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from toolscale.domains import Task
from toolscale.domains.answers import contains

OUTCOME = "outcome"
COST = "cost"
LATENCY = "latency"
LOWER_IS_BETTER = frozenset({COST, LATENCY})
SUPPORTED_BASIS = frozenset({"DB", "COMMUNICATE", "ACTION"})
USER_ERROR = "user_error"  # a rollout's finish when its simulated user failed (it is masked out of the loss)


class UnsupportedRewardBasis(ValueError):
    """A task asks for a reward component this scorer cannot compute offline (NL or ENV assertions)."""


class Outcome(BaseModel):
    """The τ²-style verdict on one finished rollout."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    reward: float
    db: bool | None = None
    communicate: bool | None = None
    action: bool | None = None
    missing_info: list[str] = Field(default_factory=list)


class RolloutStats(BaseModel):
    """What one rollout did and what it cost: the raw material of the preference reward."""

    model_config = ConfigDict(extra="forbid")
    outcome: float = 0.0
    db: bool | None = None
    communicate: bool | None = None
    tool_calls: dict[str, int] = Field(default_factory=dict, description="calls per domain tool")
    expert_calls: dict[str, int] = Field(default_factory=dict, description="calls per expert alias")
    tool_errors: int = 0
    cost: float = Field(0.0, description="dollars: experts' tokens plus the policy's own tokens")
    user_cost: float = Field(0.0, description="dollars: the simulated user's tokens (0 in solo mode)")
    latency: float = Field(0.0, description="modelled seconds spent in tools and experts")
    turns: int = 0
    user_turns: int = Field(0, description="the simulated user's replies after its opening message")
    policy_tokens: int = 0
    finish: str = ""

    @property
    def total_cost(self) -> float:
        """Every dollar the rollout spent: the policy's, the experts' and the simulated user's tokens."""
        return self.cost + self.user_cost

    def features(self) -> dict[str, float]:
        """The preference-reward feature vector, keyed as preference vectors are. Its cost is the total:
        a rollout that drags the simulated user through more turns spends more."""
        vector = {f"tool:{name}": float(n) for name, n in self.tool_calls.items()}
        vector.update({f"expert:{alias}": float(n) for alias, n in self.expert_calls.items()})
        vector.update({OUTCOME: float(self.outcome), COST: self.total_cost, LATENCY: self.latency})
        return vector

    @property
    def total_tool_calls(self) -> int:
        return sum(self.tool_calls.values()) + sum(self.expert_calls.values())


# outcome -----------------------------------------------------------------------------------
def communicated(info: str, assistant_texts: Iterable[str]) -> bool:
    """τ²-bench's check: `info` occurs, lowercased, in a lowercased assistant text with commas removed."""
    return any(contains(text, info) for text in assistant_texts)


def _actions_match(task: Task, calls: Sequence[tuple[str, Mapping[str, Any]]]) -> bool:
    """τ²'s ACTION check: every gold assistant action matches some call (on compare_args, if given)."""
    for gold in task.evaluation_criteria.actions:
        if gold.requestor != "assistant":
            continue
        keys = gold.compare_args if gold.compare_args is not None else list(gold.arguments)
        expected = {k: gold.arguments.get(k) for k in keys}
        if not any(name == gold.name and {k: args.get(k) for k in keys} == expected for name, args in calls):
            return False
    return True


def score_outcome(task: Task, final_state_hash: str, assistant_texts: Sequence[str],
                  calls: Sequence[tuple[str, Mapping[str, Any]]] = ()) -> Outcome:
    """Score a finished rollout as τ²-bench does: the product of the components in reward_basis.

    `assistant_texts` are the texts the agent said to the user; `calls` the (name, arguments) of the
    tool calls that ran (used only when ACTION is in the basis).
    """
    basis = set(task.evaluation_criteria.reward_basis)
    unsupported = basis - SUPPORTED_BASIS
    if unsupported:
        raise UnsupportedRewardBasis(f"task {task.id}: cannot score {sorted(unsupported)} offline")
    reward = 1.0
    db = communicate = action = None
    missing: list[str] = []
    if "DB" in basis:
        if task.meta.final_state_hash is None:
            raise UnsupportedRewardBasis(f"task {task.id}: DB in reward_basis but no meta.final_state_hash")
        db = final_state_hash == task.meta.final_state_hash
        reward *= float(db)
    if "COMMUNICATE" in basis:
        missing = [info for info in task.evaluation_criteria.communicate_info
                   if not communicated(info, assistant_texts)]
        communicate = not missing
        reward *= float(communicate)
    if "ACTION" in basis:
        action = _actions_match(task, calls)
        reward *= float(action)
    return Outcome(reward=reward, db=db, communicate=communicate, action=action, missing_info=missing)


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


__all__ = ["USER_ERROR", "Outcome", "RolloutStats", "UnsupportedRewardBasis", "communicated", "group_advantages",
           "preference_rewards", "score_outcome", "summarize"]
