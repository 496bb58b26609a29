"""What the model must answer at each stage, as pydantic types (their JSON schemas go out as
`response_format`). Where an answer is a piece of a domain it reuses the domain's own types
(`Table`, `PolicyRule`), so an LLM's schema meets exactly the validators a domain.yaml meets.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from toolscale.domains.spec import IDENTIFIER, PolicyRule, Table

from ..operators import LLM_STEPS

_STEPS = tuple(step.value for step in LLM_STEPS)  # the hardening steps a model may name


class _Answer(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class DesignAnswer(_Answer):
    """A domain's schema, rules and policy (the intents come later, from the intents stage)."""

    description: str = Field(min_length=1)
    clock: datetime = Field(description="the fixed 'now' every tool sees")
    tables: list[Table] = Field(min_length=1)
    rules: list[PolicyRule] = Field(min_length=1)
    policy: str = Field(min_length=1, description="the agent policy, markdown")


class RowsAnswer(_Answer):
    rows: list[dict[str, Any]]


class ToolsAnswer(_Answer):
    source: str = Field(min_length=1, description="the whole tools.py")


class IntentProposal(_Answer):
    name: str = Field(pattern=IDENTIFIER)
    description: str = Field(min_length=1)
    kind: Literal["read", "write"]
    anchor_table: str = Field(description="the table of the record the request is about")
    tools: list[str] = Field(min_length=1, description="the tools an agent needs, in order")
    premise: str | None = Field(None, description="what the anchor record must be for the request to make "
                                                  "sense: an expression over `row`; null when any record fits")
    tests_rule: str | None = Field(None, description="the id of the agent rule the intent is built to test: what "
                                                     "the user literally asks breaks it; null for an everyday request")


class IntentsAnswer(_Answer):
    intents: list[IntentProposal] = Field(min_length=1)


class ActionAnswer(_Answer):
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)


class TaskAnswer(_Answer):
    """A concrete task: every value literal, except `{{ out[i]... }}` references to earlier outputs."""

    infeasible: str | None = Field(None, description="why no realistic task fits; leave the rest empty")
    reason_for_call: str = ""
    known_info: str = ""
    unknown_info: str = ""
    task_instructions: str = ""
    actions: list[ActionAnswer] = Field(default_factory=list)
    communicate: list[str] = Field(default_factory=list)
    nl_assertions: list[str] = Field(default_factory=list)
    naive: list[ActionAnswer] = Field(default_factory=list, description=(
        "the calls an agent that does exactly what the user literally asks would make after the gold's lookups; "
        "required when the intent tests a rule, empty otherwise"))

    @model_validator(mode="after")
    def _complete(self) -> TaskAnswer:
        if self.infeasible is None:
            missing = [f for f in ("reason_for_call", "task_instructions") if not getattr(self, f).strip()]
            if not self.actions:
                missing.append("actions")
            if missing:
                raise ValueError(f"a feasible task needs {', '.join(missing)}")
        return self


class HardenAnswer(_Answer):
    """A harder variant of a task and the hardening steps it applied."""

    steps: list[Literal[_STEPS]] = Field(min_length=1)  # type: ignore[valid-type]
    task: TaskAnswer


class JudgeAnswer(_Answer):
    verdict: Literal["pass", "fail"]
    reason: str
