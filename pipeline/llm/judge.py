"""The LLM judge of a conversation (prompts/judge.j2): did the agent do what the task asks, so that
its natural-language assertions hold? τ²-bench scores `nl_assertions` with such a judge; the LLM
gates ask it about each reference try that the database and communicate checks already passed.
"""

from __future__ import annotations

from typing import Any

from toolscale.agents.endpoints import ChatEndpoint, EndpointConfig
from toolscale.domains import Task

from . import prompts
from .answers import JudgeAnswer
from .dialogue import Invalid, parse_answer


def _readable(message: dict[str, Any]) -> dict[str, str]:
    """A chat message as one line of text: tool calls written out as `name(arguments)`."""
    content = message.get("content") or ""
    calls = [f"{c['function']['name']}({c['function']['arguments']})" for c in message.get("tool_calls") or []]
    if calls:
        content = f"{content} [calls {'; '.join(calls)}]".strip()
    return {"role": message["role"], "content": content}


def judge_messages(task: Task, conversation: list[dict[str, Any]]) -> list[dict[str, str]]:
    ins = task.user_scenario.instructions
    shown = {"reason_for_call": ins.reason_for_call, "known_info": ins.known_info or "",
             "task_instructions": ins.task_instructions}
    said = [_readable(m) for m in conversation if m.get("role") != "system"]
    criteria = task.evaluation_criteria
    return prompts.messages("judge", task=shown, communicate=criteria.communicate_info,
                            nl_assertions=criteria.nl_assertions, conversation=said,
                            request={"stage": "judge", "task": task.id})


def verdict(answer: str) -> JudgeAnswer:
    """The judge's verdict; one that does not parse is a fail (the gate closes on doubt), with why."""
    try:
        return parse_answer(answer, JudgeAnswer)
    except Invalid as exc:
        return JudgeAnswer(verdict="fail", reason=f"the judge's answer is not a verdict: {exc}")


class LLMJudge:
    """The judge at an endpoint, as the reference gate calls it (quality/reference.py's Judge): did
    `conversation` fulfil `task`? EndpointError when the endpoint does not answer."""

    def __init__(self, config: EndpointConfig) -> None:
        self.endpoint = ChatEndpoint(config)

    def __call__(self, task: Task, conversation: list[dict[str, Any]], seed: int) -> bool:
        reply = self.endpoint.complete(judge_messages(task, conversation), seed=seed)
        return verdict(reply.message.get("content") or "").verdict == "pass"
