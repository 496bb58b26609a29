"""One rollout of one task, step by step: the policy acts, tools run in a forked Environment.

An `Episode` is driven by whoever produces assistant messages: the token-level GRPO rollout
(trainer/rollout.py) or an OpenAI-compatible agent (evaluate.py). Both hand `step` an assistant message in
OpenAI form and get back the messages the policy sees next (tool results, or the simulated user's
reply), so training and evaluation run, count and score the same way.

Two views of the conversation are kept: `messages`, what the policy sees (its `call_expert` calls
included), and `transcript`, what actually happened in the world (the domain tool calls that ran,
whoever made them, and what was said to the user). Experts and the user simulator see the
transcript; the outcome is scored on it.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from toolscale.domains import Domain, Environment, Task

from .endpoints import ChatEndpoint, EndpointError, parse_arguments
from .scoring import RolloutStats, score_outcome
from .toolbox import CALL_EXPERT, RolloutSpec, solo_instruction

GREETING = "Hi! How can I help you today?"
STOP = "###STOP###"


def likely_opening(task: Task, with_user: bool) -> list[dict[str, Any]]:
    """The messages an episode of `task` opens with after the system prompt, for building prompts ahead
    of the run (warm-up, length filters): solo, the instruction; with a simulated user, the greeting
    and the instruction standing in for the simulator's opening, which is known only once asked."""
    request = {"role": "user", "content": solo_instruction(task)}
    return [{"role": "assistant", "content": GREETING}, request] if with_user else [request]


class UserSimulator:
    """An LLM playing the user of a task from its user_scenario, as τ²-bench's simulator does."""

    def __init__(self, endpoint: ChatEndpoint, task: Task) -> None:
        self.endpoint = endpoint
        ins = task.user_scenario.instructions
        self.system = (
            "You are a user talking to a customer-service agent. Follow these instructions; reveal what "
            "you know only when it is asked for; never invent facts. When your request is fully handled, "
            f"or cannot be, reply with exactly {STOP}.\n\n"
            f"Domain: {ins.domain}\nReason for the call: {ins.reason_for_call}\n"
            f"Known info: {ins.known_info or '-'}\nUnknown info: {ins.unknown_info or '-'}\n"
            f"Task instructions: {ins.task_instructions}")
        self.cost = 0.0

    def reply(self, transcript: list[dict[str, Any]], seed: int | None = None) -> str:
        """The user's next message; roles are flipped so the simulator speaks as 'assistant'."""
        flipped = [{"role": "system", "content": self.system}]
        for message in transcript:
            if message["role"] == "assistant" and message.get("content") and not message.get("tool_calls"):
                flipped.append({"role": "user", "content": message["content"]})
            elif message["role"] == "user":
                flipped.append({"role": "assistant", "content": message["content"]})
        reply = self.endpoint.complete(flipped, seed=seed)
        self.cost += reply.cost
        return reply.message.get("content") or STOP

    def opening(self, seed: int | None = None) -> str:
        """The user's first message, answering the agent's greeting (asked for before the episode
        starts when a caller wants a whole batch's openings at once, see Episode's `opening`)."""
        return self.reply([{"role": "assistant", "content": GREETING}], seed)


class Episode:
    """A task being attempted in its own fork of the domain's environment. Close it when done.

    With a simulated `user`, the conversation opens with the user's answer to GREETING (`opening`,
    when the caller already asked for it, else asked here); whenever the policy answers with text
    and no tool call, the user replies, until it says STOP (`finish` "user_stop") or the policy has
    had `max_turns` turns ("max_turns", without asking the user again). Without one, the task's
    instruction is the first user message and the first text answer ends the episode ("answered").
    A failing simulator raises EndpointError out of the constructor or `step`.
    """

    def __init__(self, task: Task, domain: Domain, parent: Environment, spec: RolloutSpec, system: str,
                 tools: list[dict[str, Any]], experts: dict[str, ChatEndpoint] | None = None,
                 user: UserSimulator | None = None, max_turns: int = 10, tool_latency_s: float = 0.0,
                 seed: int | None = None, opening: str | None = None) -> None:
        self.task, self.domain, self.spec, self.tools = task, domain, spec, tools
        self.env = parent.fork()
        self.experts = experts or {}
        self.user, self.max_turns, self.tool_latency_s, self.seed = user, max_turns, tool_latency_s, seed
        self.stats = RolloutStats()
        self.done = False
        self.said: list[str] = []
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self._offers = {o.alias: o for o in spec.experts}
        self._tool_counts: Counter[str] = Counter()
        self._expert_counts: Counter[str] = Counter()
        self.transcript: list[dict[str, Any]] = [{"role": "system", "content": domain.policy}]
        self.messages: list[dict[str, Any]] = [{"role": "system", "content": system}]
        if user is None:
            opening_messages = [{"role": "user", "content": solo_instruction(task)}]
        else:
            greeting = {"role": "assistant", "content": GREETING}
            self.transcript.append(greeting)
            first = opening if opening is not None else user.opening(seed)
            opening_messages = [greeting, {"role": "user", "content": first}]
        self.transcript.extend(m for m in opening_messages if m["role"] == "user")
        self.messages.extend(opening_messages)

    # driving ---------------------------------------------------------------------------------
    def step(self, assistant: dict[str, Any]) -> list[dict[str, Any]]:
        """Take one assistant message; return what the policy sees next ([] once the episode is done)."""
        if self.done:
            raise RuntimeError(f"episode of task {self.task.id} is already finished")
        self.stats.turns += 1
        content = assistant.get("content") or ""
        calls = [_normal_call(c, i, self.stats.turns) for i, c in enumerate(assistant.get("tool_calls") or [])]
        message: dict[str, Any] = {"role": "assistant", "content": content}
        if calls:
            message["tool_calls"] = calls
        self.messages.append(message)
        if content.strip():
            self._say(content)
        if calls:
            observations = [{"role": "tool", "tool_call_id": c["id"], "name": c["function"]["name"],
                             "content": self._run(c)} for c in calls]
            self.messages.extend(observations)
            if self.stats.turns >= self.max_turns:
                self.finish("max_turns")
            return observations
        if self.user is None:
            self.finish("answered")
            return []
        if self.stats.turns >= self.max_turns:  # the policy could not answer a reply: do not ask for one
            self.finish("max_turns")
            return []
        text = self.user.reply(self.transcript, self.seed)
        if STOP in text:
            self.finish("user_stop")
            return []
        reply = {"role": "user", "content": text}
        self.transcript.append(reply)
        self.messages.append(reply)
        self.stats.user_turns += 1
        return [reply]

    def charge(self, cost: float, tokens: int = 0) -> None:
        """Add the policy's own token cost (ToolOrchestra counts the orchestrator's tokens too)."""
        self.stats.cost += cost
        self.stats.policy_tokens += tokens

    def finish(self, reason: str) -> RolloutStats:
        """End the episode and score it; idempotent."""
        if not self.done:
            self.done = True
            outcome = score_outcome(self.task, self.env.state_hash(), self.said, self.calls)
            self.stats.outcome, self.stats.db, self.stats.communicate = outcome.reward, outcome.db, outcome.communicate
            self.stats.finish = reason
            self.stats.tool_calls = dict(self._tool_counts)
            self.stats.expert_calls = dict(self._expert_counts)
            self.stats.user_cost = self.user.cost if self.user is not None else 0.0
        return self.stats

    def close(self) -> None:
        self.env.close()

    def __enter__(self) -> Episode:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # tools -----------------------------------------------------------------------------------
    def _say(self, text: str) -> None:
        self.said.append(text)
        self.transcript.append({"role": "assistant", "content": text})

    def _error(self, message: str) -> str:
        self.stats.tool_errors += 1
        return json.dumps({"error": message})

    def _run(self, call: dict[str, Any]) -> str:
        name = call["function"]["name"]
        try:
            arguments = parse_arguments(call["function"]["arguments"])
        except ValueError as exc:
            if name == CALL_EXPERT or name in self.spec.tools:
                self._count(name, {})
            return self._error(f"{name}: {exc}")
        if name == CALL_EXPERT:
            return self._call_expert(arguments)
        if name not in self.spec.tools:
            return self._error(f"unknown tool {name!r}")
        return self._domain_call(call, name, arguments)

    def _count(self, name: str, arguments: dict[str, Any]) -> None:
        if name == CALL_EXPERT:
            self._expert_counts[str(arguments.get("expert", "?"))] += 1
        else:
            self._tool_counts[name] += 1

    def _domain_call(self, call: dict[str, Any], name: str, arguments: dict[str, Any]) -> str:
        self._count(name, arguments)
        self.stats.latency += self.tool_latency_s
        result = self.env.call(name, arguments)
        self.calls.append((name, arguments))
        content = json.dumps(result.output, ensure_ascii=False) if result.ok else \
            json.dumps({"error": f"{result.error_type}: {result.error}"}, ensure_ascii=False)
        if not result.ok:
            self.stats.tool_errors += 1
        self.transcript.append({"role": "assistant", "content": "", "tool_calls": [call]})
        self.transcript.append({"role": "tool", "tool_call_id": call["id"], "name": name, "content": content})
        return content

    def _call_expert(self, arguments: dict[str, Any]) -> str:
        alias = arguments.get("expert")
        if alias not in self._offers or alias not in self.experts:
            return self._error(f"unknown expert {alias!r}; offered: {sorted(self._offers)}")
        self._count(CALL_EXPERT, arguments)
        offer = self._offers[alias]
        try:
            reply = self.experts[alias].complete(self.transcript, tools=self.domain.tool_schemas(), seed=self.seed)
        except EndpointError as exc:
            self.stats.latency += offer.latency_s
            return self._error(str(exc))
        self.stats.cost += (reply.prompt_tokens * offer.price_in + reply.completion_tokens * offer.price_out) / 1e6
        self.stats.latency += offer.latency_s + reply.completion_tokens * offer.latency_s_per_token
        result: dict[str, Any] = {"expert": alias}
        if reply.message.get("content"):
            result["said_to_user"] = reply.message["content"]
            self._say(reply.message["content"])
        actions = []
        for i, raw in enumerate(reply.message.get("tool_calls") or []):
            call = _normal_call(raw, i, self.stats.turns, prefix=f"{alias}_")
            name = call["function"]["name"]
            try:
                args = parse_arguments(call["function"]["arguments"])
            except ValueError as exc:
                actions.append({"name": name, "result": json.loads(self._error(f"{name}: {exc}"))})
                continue
            if name not in self.domain.toolkit.specs:
                actions.append({"name": name, "result": json.loads(self._error(f"unknown tool {name!r}"))})
                continue
            output = json.loads(self._domain_call(call, name, args))
            actions.append({"name": name, "arguments": args, "result": output})
        result["actions"] = actions
        return json.dumps(result, ensure_ascii=False)


def _normal_call(call: dict[str, Any], index: int, turn: int, prefix: str = "") -> dict[str, Any]:
    """A tool call in OpenAI form with a JSON-string `arguments` and an id."""
    function = call.get("function", call)
    arguments = function.get("arguments", {})
    if not isinstance(arguments, str):
        arguments = json.dumps(arguments, ensure_ascii=False)
    return {"id": call.get("id") or f"call_{prefix}{turn}_{index}", "type": "function",
            "function": {"name": str(function.get("name", "")), "arguments": arguments}}


__all__ = ["GREETING", "STOP", "Episode", "UserSimulator", "likely_opening"]
