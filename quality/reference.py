"""The reference agent of the LLM gates: every task that passed the gates is tried k times with the
tools and once without, by an OpenAI-compatible agent (the synthesizer's endpoint or another),
through the evaluation harness (agents/evaluate.py), so it is scored exactly as `toolscale eval`
and the trainer's reward score. agent_gates.py turns the outcomes into verdicts.

With a judge (the caller's: the LLM backend's prompts/judge.j2 at `config.judge`), a try that passed
the database and communicate checks of a task with nl_assertions counts as solved only if the judge
says the conversation fulfilled the task.

An attempt that could not reach the agent (or the judge) decides nothing: the stage fails (and is retried, and
never stored), rather than reject a task because a server was down.
"""

from __future__ import annotations

from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor

from pydantic import BaseModel, ConfigDict, Field, model_validator

from collections.abc import Callable
from typing import Any

from toolscale.agents.endpoints import EndpointConfig, EndpointError
from toolscale.agents.evaluate import EvalConfig, TrialResult, evaluate_tasks
from toolscale.agents.tasks import DomainData
from toolscale.domains import Domain, Environment, Task

from .agent_gates import Attempts

Judge = Callable[[Task, list[dict[str, Any]], int], bool]  # (task, conversation, seed) → fulfilled; may raise EndpointError


class ReferenceConfig(BaseModel):
    """The reference agent (an endpoint, as `toolscale eval` takes one) and how hard it tries."""

    model_config = ConfigDict(extra="forbid")
    agent: EndpointConfig
    trials: int = Field(3, ge=1, description="k: tries with the tools per task")
    min_solved: int = Field(1, ge=1, description="tries that must succeed for the task to be kept")
    without_tools: bool = Field(True, description="also try once without tools; a task solved so is rejected")
    max_turns: int = Field(30, ge=1)
    concurrency: int = Field(4, ge=1, description="tries in flight at once")
    judge: EndpointConfig | None = Field(None, description="an LLM judge (prompts/judge.j2) of each solved try of "
                                                           "a task with nl_assertions; a try it fails is unsolved")

    @model_validator(mode="after")
    def _reachable_bar(self) -> ReferenceConfig:
        if self.min_solved > self.trials:
            raise ValueError(f"min_solved ({self.min_solved}) cannot exceed trials ({self.trials})")
        return self


class ReferenceUnavailable(RuntimeError):
    """The reference agent could not be asked; no verdict was made."""


def _eval_config(config: ReferenceConfig, trials: int, use_tools: bool) -> EvalConfig:
    return EvalConfig(agent=config.agent, trials=trials, use_tools=use_tools, max_turns=config.max_turns,
                      concurrency=config.concurrency, keep_messages=config.judge is not None)


def _judged(config: ReferenceConfig, tasks: list[Task], results: list[TrialResult], judge: Judge | None) -> list[bool]:
    """Each try's success: the outcome checks, and for a task with nl_assertions, the judge's pass."""
    if judge is None:
        return [r.reward >= 1.0 for r in results]
    by_id = {t.id: t for t in tasks}

    def solved(result: TrialResult) -> bool:
        task = by_id[result.task_id]
        if result.reward < 1.0 or not task.evaluation_criteria.nl_assertions:
            return result.reward >= 1.0
        try:
            return judge(task, result.messages or [], result.trial)
        except EndpointError as exc:
            raise ReferenceUnavailable(f"the judge does not answer: {exc}") from None

    with ThreadPoolExecutor(max_workers=config.concurrency) as pool:
        return list(pool.map(solved, results))


def reference_attempts(domain: Domain, env: Environment, tasks: list[Task], config: ReferenceConfig,
                       judge: Judge | None = None) -> dict[str, Attempts]:
    """{task id: Attempts} for every task, each try on its own copy of `env`'s state; `judge` is the
    judge at `config.judge` (required when one is configured)."""
    if (config.judge is None) != (judge is None):
        raise ValueError("reference_attempts needs a judge exactly when config.judge is set")
    data = {domain.name: DomainData(domain=domain, env=env, tasks=tasks)}
    probe = evaluate_tasks(data, tasks[:1], _eval_config(config, 1, use_tools=False))
    if probe and probe[0].error:  # one try, not hundreds of retried ones, to find the server down
        raise ReferenceUnavailable(f"the reference agent at {config.agent.base_url} ({config.agent.model}) does not "
                                   f"answer: {probe[0].error}")
    tried = evaluate_tasks(data, tasks, _eval_config(config, config.trials, use_tools=True))
    bare = evaluate_tasks(data, tasks, _eval_config(config, 1, use_tools=False)) if config.without_tools else []
    failed: list[TrialResult] = [r for r in tried + bare if r.error]
    if failed:
        raise ReferenceUnavailable(f"{len(failed)} of {len(tried) + len(bare)} reference tries got no answer from "
                                   f"{config.agent.base_url} ({config.agent.model}); first: {failed[0].error}")
    with_tools: dict[str, list[bool]] = defaultdict(list)
    for result, solved in zip(tried, _judged(config, tasks, tried, judge)):
        with_tools[result.task_id].append(solved)
    without = {r.task_id: r.reward >= 1.0 for r in bare}
    return {task.id: Attempts(with_tools=with_tools[task.id], without_tools=without.get(task.id)) for task in tasks}


__all__ = ["Judge", "ReferenceConfig", "ReferenceUnavailable", "reference_attempts"]
