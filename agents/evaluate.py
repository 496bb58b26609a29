"""Evaluate any OpenAI-compatible agent on accepted tasks: pass^k per domain, cost and turns.

Each trial is an Episode (episode.py) driven by the agent's chat completions: in solo mode the
task's instruction is the first user message; in user mode an LLM user simulator plays the user.
Trials are scored exactly as training rollouts are (scoring.score_outcome), so a policy's
evaluation and its reward agree. pass^k is τ²-bench's: per task, C(successes, k) / C(trials, k),
averaged over tasks.

`evaluate_tasks` is the library entry point (the LLM quality gates call it on candidate tasks);
`run_evaluation` loads an output folder, runs every trial and returns the report that
`toolscale eval` prints and writes.
"""

from __future__ import annotations

import threading
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from toolscale.domains import Task

from .scoring import pass_hat_k
from .tasks import DomainData, load_output
from .endpoints import ChatEndpoint, EndpointConfig, EndpointError
from .episode import Episode, UserSimulator
from .toolbox import ExpertConfig, ExpertOffer, RolloutSpec, system_prompt, tool_schemas


class EvalConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    tasks: Path = Field(Path("output"), description="a `toolscale generate` output folder")
    domains: list[str] | None = None
    per_domain: int | None = Field(None, ge=1, description="at most this many tasks per domain (all intents)")
    split: Literal["train", "test", "all"] = Field("test", description="the held-out test tasks by default")
    task_ids: list[str] | None = Field(None, description="only these tasks")
    seed: int | None = Field(None, description="draws the per_domain sample (None: the first tasks of each intent)")
    trials: int = Field(1, ge=1, description="k: attempts per task")
    mode: Literal["solo", "user"] = "solo"
    agent: EndpointConfig
    user: EndpointConfig | None = None
    experts: list[ExpertConfig] = Field(default_factory=list)
    use_tools: bool = Field(True, description="False: the agent must answer without tools (a leakage probe)")
    max_turns: int = Field(30, ge=1)
    tool_latency_s: float = Field(0.0, ge=0)
    concurrency: int = Field(4, ge=1)
    keep_messages: bool = Field(False, description="keep each trial's conversation in its result (for a judge)")
    out: Path = Path("eval.json")

    @model_validator(mode="after")
    def _user_mode(self) -> EvalConfig:
        if self.mode == "user" and self.user is None:
            raise ValueError("user mode needs a user simulator endpoint")
        return self


class TrialResult(BaseModel):
    model_config = ConfigDict(extra="forbid")
    task_id: str
    domain: str
    intent: str
    trial: int
    reward: float
    db: bool | None = None
    communicate: bool | None = None
    cost: float = 0.0
    turns: int = 0
    tool_calls: int = 0
    tool_errors: int = 0
    finish: str = ""
    error: str | None = None
    messages: list[dict[str, Any]] | None = None

    def record(self) -> dict[str, Any]:
        """The result as JSON, its conversation only when it was kept."""
        return self.model_dump(mode="json", exclude=None if self.messages is not None else {"messages"})


def summarize_trials(results: list[TrialResult], trials: int) -> dict[str, dict[str, float]]:
    """Per domain (and 'all'): tasks, pass^1..pass^trials, mean reward, cost, turns, errors."""
    groups: dict[str, list[TrialResult]] = defaultdict(list)
    for r in results:
        groups[r.domain].append(r)
    groups = dict(sorted(groups.items()))
    groups["all"] = list(results)
    table = {}
    for name, rows in groups.items():
        per_task: dict[str, int] = defaultdict(int)
        for r in rows:
            per_task[r.task_id] += r.reward >= 1.0
        n = max(len(rows), 1)
        line: dict[str, float] = {"tasks": len(per_task)}
        for k in range(1, trials + 1):
            line[f"pass^{k}"] = pass_hat_k(list(per_task.values()), trials, k)
        line.update(reward=sum(r.reward for r in rows) / n, cost=sum(r.cost for r in rows) / n,
                    turns=sum(r.turns for r in rows) / n, errors=sum(r.error is not None for r in rows))
        table[name] = line
    return table


class _Runner:
    """Runs trials on worker threads, each with its own copy of every domain's database."""

    def __init__(self, data: dict[str, DomainData], config: EvalConfig) -> None:
        self.data, self.config = data, config
        self.agent = ChatEndpoint(config.agent)
        self.user = ChatEndpoint(config.user) if config.user else None
        self.expert_configs = {e.alias: e for e in config.experts}
        self.experts = {e.alias: ChatEndpoint(e) for e in config.experts}
        self._local = threading.local()

    def _env(self, domain: str):
        envs = self._local.__dict__.setdefault("envs", {})
        if domain not in envs:
            envs[domain] = self.data[domain].open_env()
        return envs[domain]

    def trial(self, task: Task, trial: int) -> TrialResult:
        item = self.data[task.domain]
        offers = [ExpertOffer(alias=e.alias, price_in=e.price_in, price_out=e.price_out, latency_s=e.latency_s,
                              latency_s_per_token=e.latency_s_per_token) for e in self.config.experts]
        spec = RolloutSpec(task_id=task.id, domain=item.domain.name, tools=list(item.domain.toolkit.specs),
                           experts=offers)
        tools = tool_schemas(item.domain, spec, self.expert_configs) if self.config.use_tools else []
        system = system_prompt(item.domain, spec, show_preferences=False)
        result = TrialResult(task_id=task.id, domain=item.domain.name, intent=task.meta.intent, trial=trial, reward=0.0)
        episode = None
        try:
            user = UserSimulator(self.user, task) if self.config.mode == "user" else None
            episode = Episode(task, item.domain, self._env(task.domain), spec, system, tools, self.experts, user,
                              self.config.max_turns, self.config.tool_latency_s, seed=trial)
            while not episode.done:
                reply = self.agent.complete(episode.messages, tools=tools or None, seed=trial)
                episode.charge(reply.cost, reply.completion_tokens)
                episode.step(reply.message)
        except EndpointError as exc:
            result.error = str(exc)
        if episode is not None:
            stats = episode.finish("error" if result.error else "")
            episode.close()
            result = result.model_copy(update=dict(
                reward=0.0 if result.error else stats.outcome, db=stats.db, communicate=stats.communicate,
                cost=stats.cost, turns=stats.turns, tool_calls=stats.total_tool_calls,
                tool_errors=stats.tool_errors, finish=stats.finish,
                messages=list(episode.messages) if self.config.keep_messages else None))
        return result

    def run(self, tasks: list[Task]) -> list[TrialResult]:
        jobs = [(task, t) for task in tasks for t in range(self.config.trials)]
        with ThreadPoolExecutor(max_workers=self.config.concurrency) as pool:
            return list(pool.map(lambda job: self.trial(*job), jobs))


def evaluate_tasks(data: dict[str, DomainData], tasks: list[Task], config: EvalConfig) -> list[TrialResult]:
    """Run `config.trials` trials of each task (tasks' domains must be in `data`), in task order."""
    return _Runner(data, config).run(tasks)


def run_evaluation(config: EvalConfig) -> dict:
    """Load the output folder, evaluate, and return {config, summary, trials} (API keys are never stored)."""
    data = load_output(config.tasks, config.domains, max_tasks_per_domain=config.per_domain, split=config.split,
                       task_ids=config.task_ids, seed=config.seed)
    tasks = [task for name in sorted(data) for task in data[name].tasks]
    results = evaluate_tasks(data, tasks, config)
    return {"config": config.model_dump(mode="json"), "summary": summarize_trials(results, config.trials),
            "trials": [r.record() for r in results]}


__all__ = ["EvalConfig", "TrialResult", "evaluate_tasks", "run_evaluation", "summarize_trials"]
