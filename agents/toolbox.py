"""What one rollout is offered: a subset of the domain's tools, priced expert models, a preference vector.

As in ToolOrchestra, tool subsets, expert prices and user preferences vary from row to row; unlike
its released data, they are not baked into the rows but drawn here when the data is loaded, from a
seed and the task id (so the same seed gives the same offer whatever else is loaded).
"""

from __future__ import annotations

import random
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from toolscale.domains import Domain, Task

from .endpoints import EndpointConfig
from .scoring import COST, LATENCY, OUTCOME

CALL_EXPERT = "call_expert"


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ExpertConfig(EndpointConfig):
    """An expert model the policy may hand a turn to, behind an OpenAI-compatible endpoint."""

    alias: str = Field(pattern=r"^[A-Za-z0-9_.-]+$", description="the name the policy sees, e.g. expert-1")
    description: str = "a general-purpose assistant model"
    latency_s: float = Field(1.0, ge=0, description="modelled seconds per call")
    latency_s_per_token: float = Field(0.0, ge=0, description="modelled seconds per completion token")


class ToolSampling(_Model):
    keep_probability: float = Field(1.0, ge=0, le=1,
                                    description="chance each tool the gold actions do not use is offered")


class ExpertSampling(_Model):
    keep_probability: float = Field(1.0, ge=0, le=1)
    min_experts: int = Field(1, ge=0)
    price_jitter: tuple[float, float] = Field((1.0, 1.0), description="prices are scaled by U(lo, hi)")


class PreferenceSampling(_Model):
    """Ranges of the preference weights (uniform). Cost and latency weights are positive: see trainer/rewards.py."""

    outcome: float = Field(1.0, ge=0)
    cost: tuple[float, float] = (0.0, 0.5)
    latency: tuple[float, float] = (0.0, 0.2)
    tool: tuple[float, float] = (0.0, 0.1)
    tool_probability: float = Field(0.2, ge=0, le=1, description="chance a tool or expert gets a weight")


class SamplingConfig(_Model):
    seed: int = 0
    tools: ToolSampling = Field(default_factory=ToolSampling)
    experts: ExpertSampling = Field(default_factory=ExpertSampling)
    preferences: PreferenceSampling = Field(default_factory=PreferenceSampling)


class ExpertOffer(_Model):
    alias: str
    price_in: float
    price_out: float
    latency_s: float
    latency_s_per_token: float


class RolloutSpec(_Model):
    """One row: which task, which tools and experts are offered at which prices, what the user prefers."""

    task_id: str
    domain: str
    tools: list[str]
    experts: list[ExpertOffer] = Field(default_factory=list)
    preference: dict[str, float] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _unique(self) -> RolloutSpec:
        aliases = [e.alias for e in self.experts]
        if len(set(aliases)) != len(aliases):
            raise ValueError(f"duplicate expert aliases in {aliases}")
        return self


def sample_spec(task: Task, domain: Domain, experts: list[ExpertConfig], sampling: SamplingConfig) -> RolloutSpec:
    """Draw the offer for one task. Deterministic in (sampling.seed, task.id)."""
    rng = random.Random(f"{sampling.seed}:{task.id}")
    needed = {name for name, _ in task.gold_calls()}
    tools = [name for name in domain.toolkit.specs
             if name in needed or rng.random() < sampling.tools.keep_probability]
    kept = [e for e in experts if rng.random() < sampling.experts.keep_probability]
    for expert in experts:  # top up to the minimum, in configuration order
        if len(kept) >= min(sampling.experts.min_experts, len(experts)):
            break
        if expert not in kept:
            kept.append(expert)
    kept.sort(key=experts.index)
    lo, hi = sampling.experts.price_jitter
    offers = []
    for expert in kept:
        scale = rng.uniform(lo, hi)
        offers.append(ExpertOffer(alias=expert.alias, price_in=expert.price_in * scale,
                                  price_out=expert.price_out * scale, latency_s=expert.latency_s,
                                  latency_s_per_token=expert.latency_s_per_token))
    prefs = sampling.preferences
    preference = {OUTCOME: prefs.outcome, COST: rng.uniform(*prefs.cost), LATENCY: rng.uniform(*prefs.latency)}
    for key in [f"tool:{t}" for t in tools] + [f"expert:{o.alias}" for o in offers]:
        if rng.random() < prefs.tool_probability:
            preference[key] = rng.uniform(*prefs.tool)
    return RolloutSpec(task_id=task.id, domain=domain.name, tools=tools, experts=offers, preference=preference)


def call_expert_schema(offers: list[ExpertOffer], experts: dict[str, ExpertConfig]) -> dict[str, Any]:
    lines = [f"- {o.alias}: {experts[o.alias].description}; ${o.price_in:.2f} in / ${o.price_out:.2f} out "
             f"per million tokens; about {o.latency_s:.0f}s per call" for o in offers]
    return {"type": "function", "function": {
        "name": CALL_EXPERT,
        "description": "Hand this turn to an expert model: it sees the conversation and the domain tools, "
                       "and its tool calls run on your behalf. Experts:\n" + "\n".join(lines),
        "parameters": {"type": "object", "properties": {
            "expert": {"type": "string", "enum": [o.alias for o in offers], "description": "which expert"}},
            "required": ["expert"], "additionalProperties": False}}}


def tool_schemas(domain: Domain, spec: RolloutSpec, experts: dict[str, ExpertConfig]) -> list[dict[str, Any]]:
    """The OpenAI function schemas the policy sees: the offered domain tools, then call_expert."""
    offered = set(spec.tools)
    schemas = [s for s in domain.tool_schemas() if s["function"]["name"] in offered]
    if spec.experts:
        schemas.append(call_expert_schema(spec.experts, experts))
    return schemas


def system_prompt(domain: Domain, spec: RolloutSpec, policy_max_chars: int | None = None,
                  show_preferences: bool = True) -> str:
    """The domain policy (optionally cut short, for tiny CPU models) and, if asked, the preferences."""
    policy = domain.policy if policy_max_chars is None else domain.policy[:policy_max_chars]
    parts = [policy.strip()]
    if show_preferences and spec.preference:
        weights = ", ".join(f"{k} {v:.2f}" for k, v in sorted(spec.preference.items()) if v)
        parts.append(f"The user weighs the outcome and its efficiency as follows (higher matters more; "
                     f"cost and latency are to be kept low): {weights}.")
    return "\n\n".join(p for p in parts if p)


def solo_instruction(task: Task) -> str:
    """The task as one first user message (solo mode): why they call, what they know, what they want."""
    ins = task.user_scenario.instructions
    return "\n".join(p for p in (ins.reason_for_call, ins.known_info, ins.task_instructions) if p)


__all__ = ["CALL_EXPERT", "ExpertConfig", "ExpertOffer", "ExpertSampling", "PreferenceSampling", "RolloutSpec",
           "SamplingConfig", "ToolSampling", "call_expert_schema", "sample_spec", "solo_instruction",
           "system_prompt", "tool_schemas"]
