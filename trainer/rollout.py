"""Token-level multi-turn rollouts for GRPO: generate, parse tool calls, step the Episode, append results.

The loop is backend-neutral: it takes a `Generate` callable (token ids in, token ids and optional
logprobs out) for a batch of contexts. In training that is TRL's own generation (transformers on
the CPU, vLLM on GPUs; see grpo.py); in tests, a scripted function. Sequences are built by
concatenation, never re-tokenized: prompt + each assistant turn as generated + the chat template's
rendering of what came back (tool results or the user's reply), the latter masked out of the loss
(`env_mask` 0), as TRL's own tool loop does. With a simulated user (episode.py), the user's opening
message is part of the prompt and each later reply is such a masked suffix; a rollout whose
simulator failed ends with finish "user_error" and is masked out of the loss entirely, so an
outage teaches the policy nothing.

Tool calls are parsed in the Hermes format that Qwen models use:
`<tool_call>\n{"name": ..., "arguments": {...}}\n</tool_call>`, several per turn allowed.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Any

from toolscale.agents.endpoints import EndpointError
from toolscale.agents.episode import Episode
from toolscale.agents.scoring import RolloutStats

from .rewards import USER_ERROR

Generate = Callable[[list[list[int]]], tuple[list[list[int]], list[list[float]] | None]]

_TOOL_CALL = re.compile(r"<tool_call>(.*?)(?:</tool_call>|$)", re.S)
_THINK = re.compile(r"<think>.*?(?:</think>|$)", re.S)
_NAME = re.compile(r'"name"\s*:\s*"([^"]*)"')


def format_tool_call(name: str, arguments: dict[str, Any]) -> str:
    """One call as Qwen's chat template renders it (and as the model should emit it)."""
    return f'<tool_call>\n{{"name": "{name}", "arguments": {json.dumps(arguments, ensure_ascii=False)}}}\n</tool_call>'


def parse_hermes(text: str) -> dict[str, Any]:
    """An assistant message (content, tool_calls) from generated text. Malformed calls are kept, as
    calls whose arguments fail to parse, so the episode counts them and answers with an error."""
    calls = []
    for index, match in enumerate(_TOOL_CALL.finditer(text)):
        body = match.group(1).strip()
        try:
            value = json.loads(body)
            if not isinstance(value, dict):
                raise ValueError("not an object")
            name, arguments = str(value.get("name", "")), value.get("arguments", {})
            if not isinstance(arguments, (dict, str)):
                arguments = json.dumps(arguments)
        except ValueError:
            found = _NAME.search(body)
            name, arguments = (found.group(1) if found else "invalid_tool_call"), body or "<empty>"
        calls.append({"id": f"call_{index}", "type": "function", "function": {"name": name, "arguments": arguments}})
    content = _TOOL_CALL.sub("", _THINK.sub("", text)).strip()
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if calls:
        message["tool_calls"] = calls
    return message


class ChatFormat:
    """Renders prompts and follow-up messages to token ids with the tokenizer's chat template."""

    def __init__(self, tokenizer: Any, chat_template_kwargs: dict[str, Any] | None = None,
                 chat_template: str | None = None) -> None:
        self.tokenizer = tokenizer
        self.kwargs = dict(chat_template_kwargs or {})
        if chat_template is not None:  # e.g. TRL's prefix-preserving version of Qwen3's template
            self.kwargs["chat_template"] = chat_template
        eos = tokenizer.eos_token_id
        self.eos_ids = set(eos if isinstance(eos, list) else [eos])

    def _ids(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None,
             generation_prompt: bool = False) -> list[int]:
        ids = self.tokenizer.apply_chat_template(messages, tools=tools or None, tokenize=True, return_dict=False,
                                                 add_generation_prompt=generation_prompt, **self.kwargs)
        return list(ids)

    def prompt_ids(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> list[int]:
        return self._ids(_for_template(messages), tools, generation_prompt=True)

    def suffix_ids(self, messages: list[dict[str, Any]]) -> list[int]:
        """The tokens that follow an assistant turn's end-of-turn token: `messages` (tool results or a
        user reply) and the next generation prompt. Found by rendering a dummy exchange with and
        without them, and cutting the common prefix at its last end-of-turn token."""
        if messages[0]["role"] == "tool":
            call = {"type": "function", "function": {"name": messages[0].get("name", "tool"), "arguments": {}}}
            dummy = [{"role": "user", "content": "dummy"}, {"role": "assistant", "content": "", "tool_calls": [call]}]
        else:
            dummy = [{"role": "user", "content": "dummy"}, {"role": "assistant", "content": "dummy"}]
        prefix = self._ids(dummy)
        ends = [i for i, t in enumerate(prefix) if t in self.eos_ids]
        if ends:
            prefix = prefix[: ends[-1] + 1]
        full = self._ids(dummy + _for_template(messages), generation_prompt=True)
        if full[: len(prefix)] != prefix:
            raise ValueError("chat template is not prefix-preserving: cannot append turns by concatenation")
        return full[len(prefix):]

    def render(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None) -> str:
        """The text of a whole conversation as the chat template renders it (for checks and debugging)."""
        return self.tokenizer.apply_chat_template(_for_template(messages), tools=tools or None, tokenize=False,
                                                  **self.kwargs)

    def decode(self, ids: Sequence[int]) -> str:
        return self.tokenizer.decode(list(ids), skip_special_tokens=True)


def _for_template(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Messages as chat templates expect them: tool-call arguments as objects, not JSON strings."""
    out = []
    for message in messages:
        if message.get("tool_calls"):
            calls = []
            for call in message["tool_calls"]:
                arguments = call["function"]["arguments"]
                if isinstance(arguments, str):
                    try:
                        arguments = json.loads(arguments)
                    except json.JSONDecodeError:
                        arguments = {"_raw": arguments}
                calls.append({**call, "function": {**call["function"], "arguments": arguments}})
            message = {**message, "tool_calls": calls}
        out.append(message)
    return out


@dataclass
class RolloutBatch:
    """What TRL's `rollout_func` returns, plus the per-rollout statistics the reward needs."""

    prompt_ids: list[list[int]]
    completion_ids: list[list[int]]
    env_mask: list[list[int]]
    logprobs: list[list[float]] | None
    stats: list[RolloutStats]


def segments(fmt: ChatFormat, ids: Sequence[int], mask: Sequence[int]) -> list[dict[str, Any]]:
    """A completion as runs of text that carry loss (`loss` 1: the policy's) or not (tool results, user
    replies), special tokens kept, for reading rollouts."""
    runs: list[dict[str, Any]] = []
    start = 0
    for end in range(1, len(ids) + 1):
        if end == len(ids) or mask[end] != mask[start]:
            runs.append({"loss": int(mask[start]), "text": fmt.tokenizer.decode(list(ids[start:end]))})
            start = end
    return runs


def _step(episode: Episode, message: dict[str, Any]) -> list[dict[str, Any]]:
    try:
        return episode.step(message)
    except EndpointError as exc:  # only the simulated user raises: experts' failures are tool errors
        print(f"user simulator failed on task {episode.task.id}: {exc}", file=sys.stderr, flush=True)
        episode.finish(USER_ERROR)
        return []


def run_rollouts(episodes: list[Episode], fmt: ChatFormat, generate: Generate, max_completion_tokens: int,
                 price_in: float = 0.0, price_out: float = 0.0,
                 others_active: Callable[[bool], bool] | None = None, workers: int = 1) -> RolloutBatch:
    """Run every episode to its end, generating for all live ones at once each turn.

    The whole multi-turn completion (model and environment tokens) is bounded by
    `max_completion_tokens`; a turn cut short (no end-of-turn token) ends its episode unexecuted.
    The policy's own tokens are charged at `price_in` / `price_out` dollars per million. After each
    generation, up to `workers` episodes step at once, so their expert and user-simulator requests
    overlap (each episode has its own environment fork; one thread steps it at a time).

    With several processes, generation can be collective (ZeRO-3 gathers parameters, vLLM tensor
    parallelism gathers prompts), so every process must call `generate` equally often:
    `others_active(mine)` says whether any process still has live episodes, and a process whose
    episodes are all done keeps calling with a throwaway context until none has.
    """
    prompt_ids = [fmt.prompt_ids(ep.messages, ep.tools) for ep in episodes]
    completion: list[list[int]] = [[] for _ in episodes]
    mask: list[list[int]] = [[] for _ in episodes]
    logprobs: list[list[float]] | None = [[] for _ in episodes]
    active = [i for i, ep in enumerate(episodes) if not ep.done]
    with ThreadPoolExecutor(max_workers=workers) if workers > 1 else nullcontext() as pool:
        step_all = pool.map if pool is not None else map
        while others_active(bool(active)) if others_active else active:
            if not active:
                generate([prompt_ids[0]])  # keep in step with the processes that still generate
                continue
            contexts = [prompt_ids[i] + completion[i] for i in active]
            outputs, output_logprobs = generate(contexts)
            if output_logprobs is None:
                logprobs = None
            stepping = []
            for j, i in enumerate(active):
                ids = list(outputs[j])[: max(max_completion_tokens - len(completion[i]), 0)]
                episodes[i].charge((len(contexts[j]) * price_in + len(ids) * price_out) / 1e6, tokens=len(ids))
                completion[i] += ids
                mask[i] += [1] * len(ids)
                if logprobs is not None and output_logprobs is not None:
                    logprobs[i] += list(output_logprobs[j])[: len(ids)]
                if not ids or ids[-1] not in fmt.eos_ids:
                    episodes[i].finish("truncated")
                else:
                    stepping.append((i, parse_hermes(fmt.decode(ids))))
            observations = step_all(_step, [episodes[i] for i, _ in stepping], [m for _, m in stepping])
            survivors = []
            for (i, _), observation in zip(stepping, observations):
                if episodes[i].done:
                    continue
                suffix = fmt.suffix_ids(observation)
                if len(completion[i]) + len(suffix) >= max_completion_tokens:
                    episodes[i].finish("length")
                    continue
                completion[i] += suffix
                mask[i] += [0] * len(suffix)
                if logprobs is not None:
                    logprobs[i] += [0.0] * len(suffix)
                survivors.append(i)
            active = survivors
    stats = [ep.finish("length") for ep in episodes]
    for i, stat in enumerate(stats):
        if stat.finish == USER_ERROR:
            mask[i] = [0] * len(mask[i])
    return RolloutBatch(prompt_ids, completion, mask, logprobs, stats)


__all__ = ["ChatFormat", "Generate", "RolloutBatch", "format_tool_call", "parse_hermes", "run_rollouts", "segments"]
