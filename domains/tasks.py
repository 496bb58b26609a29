"""Tasks: τ²-bench's `Task` with its exact field names, plus toolscale's `meta`.

`Task.tau2()` gives the plain τ²-bench record (no meta) for export.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

RewardBasis = Literal["DB", "ENV_ASSERTION", "NL_ASSERTION", "ACTION", "COMMUNICATE"]
Difficulty = Literal["easy", "medium", "hard"]


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid")


class StructuredUserInstructions(_Record):
    domain: str
    reason_for_call: str
    known_info: str | None = None
    unknown_info: str | None = None
    task_instructions: str


class UserScenario(_Record):
    persona: str | None = None
    instructions: StructuredUserInstructions

    def text(self) -> str:
        """Everything the user's side is told, as one text."""
        i = self.instructions
        return " ".join(filter(None, [self.persona, i.reason_for_call, i.known_info, i.unknown_info,
                                      i.task_instructions]))


class Description(_Record):
    purpose: str | None = None
    relevant_policies: str | None = None
    notes: str | None = None


class Action(_Record):
    action_id: str
    requestor: Literal["assistant", "user"] = "assistant"
    name: str
    arguments: dict[str, Any]
    info: str | None = None
    compare_args: list[str] | None = None


class EvaluationCriteria(_Record):
    actions: list[Action] = Field(default_factory=list)
    env_assertions: list[dict[str, Any]] | None = None
    communicate_info: list[str] = Field(default_factory=list)
    nl_assertions: list[str] = Field(default_factory=list)
    reward_basis: list[RewardBasis] = Field(default_factory=lambda: ["DB", "COMMUNICATE"])


class Lineage(_Record):
    backend: str
    model: str | None = None
    seed: int
    prompt_digest: str | None = None


class GateVerdict(_Record):
    passed: bool
    reason: str = ""


class ReferenceSolve(_Record):
    """How a reference agent did on the task (the LLM gates): k tries with the tools, one without."""

    model: str
    trials: int
    solved: int
    pass_hat: dict[str, float] = Field(description="τ²-bench's pass^k for k = 1..trials")
    solved_without_tools: bool | None = None


class TaskMeta(_Record):
    intent: str
    kind: Literal["read", "write"]
    difficulty: Difficulty
    hardening: list[str] = Field(default_factory=list)
    hardened_from: str | None = Field(None, description=(
        "the id of the verified task this harder variant replaced; when a gate rejects the variant, that task "
        "is gated in its place"))
    lineage: Lineage
    expected_outputs: list[Any] = Field(default_factory=list, description="gold replay's outputs")
    final_state_hash: str | None = None
    judged_answers: list[str] = Field(default_factory=list, description=(
        "why each fact the task wants told was left to nl_assertions: a kind of value no substring check can "
        "grade (domains/answers.py WHY)"))
    gates: dict[str, GateVerdict] = Field(default_factory=dict)
    reference: ReferenceSolve | None = None
    tests_rule: str | None = Field(None, description=(
        "the agent-enforced policy rule the task is built to test: doing what the user literally asks "
        "(naive_actions) runs in the tools and breaks it"))
    naive_actions: list[Action] = Field(default_factory=list, description=(
        "what an agent that does exactly what the user asks would call; empty when that is the gold"))


class Task(_Record):
    id: str
    description: Description | None = None
    user_scenario: UserScenario
    initial_state: dict[str, Any] | None = None
    evaluation_criteria: EvaluationCriteria
    meta: TaskMeta

    @property
    def domain(self) -> str:
        return self.user_scenario.instructions.domain

    def gold_calls(self) -> list[tuple[str, dict[str, Any]]]:
        return [(a.name, a.arguments) for a in self.evaluation_criteria.actions]

    def tau2(self) -> dict[str, Any]:
        """The τ²-bench Task record."""
        return self.model_dump(mode="json", exclude={"meta"})


class Rejection(_Record):
    """A candidate the gate turned away, kept with the gate and the reason."""

    task: Task
    gate: str
    reason: str
