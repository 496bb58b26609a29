"""OpenAI-compatible chat endpoints: the agent under evaluation, expert models, the user simulator.

One small client over the `openai` package (any server that speaks /v1/chat/completions: vLLM,
a hosted API, tests/llm_server.py). Each reply carries its token usage, its price in dollars and
its wall time, so callers can account for cost without knowing the server.
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class EndpointError(RuntimeError):
    """A chat endpoint that could not be reached or answered with something unusable."""


class EndpointConfig(BaseModel):
    """Where a chat model lives and what its tokens cost (dollars per million tokens)."""

    model_config = ConfigDict(extra="forbid")
    base_url: str = Field(description="e.g. http://127.0.0.1:8000/v1")
    model: str
    api_key_env: str | None = Field(None, description="environment variable holding the API key, if any")
    price_in: float = Field(0.0, ge=0, description="$ per million prompt tokens")
    price_out: float = Field(0.0, ge=0, description="$ per million completion tokens")
    temperature: float | None = None
    max_tokens: int | None = Field(None, gt=0)
    timeout_s: float = Field(120.0, gt=0)


class ChatReply(BaseModel):
    """One assistant message in OpenAI form (role, content, tool_calls) and what it cost."""

    model_config = ConfigDict(extra="forbid")
    message: dict[str, Any]
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float = 0.0
    seconds: float = 0.0


def _message_dict(message: Any) -> dict[str, Any]:
    calls = []
    for call in message.tool_calls or []:
        calls.append({"id": call.id, "type": "function",
                      "function": {"name": call.function.name, "arguments": call.function.arguments or "{}"}})
    out: dict[str, Any] = {"role": "assistant", "content": message.content or ""}
    if calls:
        out["tool_calls"] = calls
    return out


class ChatEndpoint:
    """A client for one endpoint. Thread-safe: the underlying HTTP client is shared."""

    def __init__(self, config: EndpointConfig) -> None:
        from openai import OpenAI  # imported here: only callers that talk to a server need it

        self.config = config
        api_key = os.environ.get(config.api_key_env, "") if config.api_key_env else ""
        self._client = OpenAI(base_url=config.base_url, api_key=api_key or "not-needed",
                              timeout=config.timeout_s, max_retries=2)

    def price(self, prompt_tokens: int, completion_tokens: int) -> float:
        return (prompt_tokens * self.config.price_in + completion_tokens * self.config.price_out) / 1e6

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None,
                 seed: int | None = None) -> ChatReply:
        """Ask for the next assistant message. Raises EndpointError on transport or protocol failure."""
        kwargs: dict[str, Any] = {"model": self.config.model, "messages": messages}
        if tools:
            kwargs["tools"] = tools
        if seed is not None:
            kwargs["seed"] = seed
        if self.config.temperature is not None:
            kwargs["temperature"] = self.config.temperature
        if self.config.max_tokens is not None:
            kwargs["max_tokens"] = self.config.max_tokens
        started = time.perf_counter()
        try:
            response = self._client.chat.completions.create(**kwargs)
        except Exception as exc:  # the openai client's errors, connection errors: one named error for callers
            raise EndpointError(f"{self.config.base_url} ({self.config.model}): {type(exc).__name__}: {exc}") from exc
        seconds = time.perf_counter() - started
        if not response.choices:
            raise EndpointError(f"{self.config.base_url} ({self.config.model}): no choices in the reply")
        usage = response.usage
        prompt_tokens = usage.prompt_tokens if usage else 0
        completion_tokens = usage.completion_tokens if usage else 0
        return ChatReply(message=_message_dict(response.choices[0].message), prompt_tokens=prompt_tokens,
                         completion_tokens=completion_tokens, cost=self.price(prompt_tokens, completion_tokens),
                         seconds=seconds)


def parse_arguments(raw: Any) -> dict[str, Any]:
    """Tool-call arguments as a dict; OpenAI sends a JSON string. ValueError if they are not an object."""
    if isinstance(raw, dict):
        return raw
    try:
        value = json.loads(raw or "{}")
    except json.JSONDecodeError as exc:
        raise ValueError(f"arguments are not valid JSON: {exc.msg}") from None
    if not isinstance(value, dict):
        raise ValueError(f"arguments must be a JSON object, got {type(value).__name__}")
    return value


__all__ = ["ChatEndpoint", "ChatReply", "EndpointConfig", "EndpointError", "parse_arguments"]
