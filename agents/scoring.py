"""How an agent's finished try at a task is scored, as τ²-bench scores it, and pass^k.

Outcome, with reward_basis [DB, COMMUNICATE]: the final database equals the gold replay's
(`task.meta.final_state_hash`), and every `communicate_info` string occurs in some assistant message,
compared as τ² does: `info.lower() in content.lower().replace(",", "")` (τ² strips commas from the
message only, so an info string that itself holds a comma can never match). The components named in
`reward_basis` multiply. The evaluation harness, the LLM gates' reference agent and the trainer's
reward all score with `score_outcome`, so they agree.

pass^k is τ²-bench's: per task, C(successes, k) / C(trials, k): the chance that k tries drawn from its
trials all succeed; over tasks, the mean.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from math import comb
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from toolscale.domains import Task
from toolscale.domains.answers import contains

OUTCOME = "outcome"
COST = "cost"
LATENCY = "latency"
SUPPORTED_BASIS = frozenset({"DB", "COMMUNICATE", "ACTION"})


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


# pass^k ------------------------------------------------------------------------------------------
def pass_hat(solved: int, trials: int, k: int) -> float:
    """τ²-bench's pass^k for one task: the chance that k tries drawn from its trials all succeed."""
    return comb(solved, k) / comb(trials, k) if 0 < k <= trials else 0.0


def pass_hat_k(successes: list[int], trials: int, k: int) -> float:
    """τ²-bench's pass^k over tasks, from each task's number of successful trials."""
    if not successes or k > trials:
        return 0.0
    return sum(pass_hat(c, trials, k) for c in successes) / len(successes)


__all__ = ["COST", "LATENCY", "OUTCOME", "SUPPORTED_BASIS", "Outcome", "RolloutStats", "UnsupportedRewardBasis",
           "communicated", "pass_hat", "pass_hat_k", "score_outcome"]
