"""The one door to the LLM: async requests, a bound on those in flight, retries, cache, usage.

Every request of every stage goes through `LLMClient.complete`. It looks in the response cache
first, and identical requests already in flight share one answer. Otherwise it waits for one of
`max_in_flight` slots, sends, and on 429, 408/409, 5xx, timeouts and dropped connections backs
off (exponentially, with jitter, honouring Retry-After) and tries again, up to `max_retries`.
This is the only retry layer: the openai client is made with `max_retries=0`. Other refusals
(400, 401, 404...) are not retried. A request that never got an answer raises LLMRequestError
and is never cached.

The client owns an event loop on a background thread, so synchronous stages (Prefect tasks,
possibly on several threads) share one connection pool and one in-flight bound: they hand a
coroutine to `run` and wait for its result.
"""

from __future__ import annotations

import asyncio
import atexit
import random
import threading
from collections.abc import Coroutine
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from .cache import CachedAnswer, ResponseCache, request_key
from .config import LLMConfig, api_key
from .usage import Usage, estimate_tokens

if TYPE_CHECKING:
    import openai

T = TypeVar("T")
RETRY_STATUSES = frozenset({408, 409, 429})


class LLMRequestError(RuntimeError):
    """A request that got no answer: refused by the server, or still failing after the retries."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class Answer:
    content: str
    prompt_tokens: int
    completion_tokens: int
    cached: bool


def _retryable(exc: Exception) -> bool:
    import openai  # here, not at the top: an offline run never loads the client library (~0.4 s)

    if isinstance(exc, (openai.APITimeoutError, openai.APIConnectionError)):
        return True
    if isinstance(exc, openai.APIStatusError):
        return exc.status_code in RETRY_STATUSES or exc.status_code >= 500
    return False


def _retry_after(exc: Exception) -> float | None:
    response = getattr(exc, "response", None)
    value = response.headers.get("retry-after") if response is not None else None
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


def _format_refused(exc: Exception) -> bool:
    """A 400/422 that blames the response_format: the server does not do structured outputs."""
    import openai

    return (isinstance(exc, openai.APIStatusError) and exc.status_code in (400, 422)
            and "response_format" in str(exc))


class LLMClient:
    def __init__(self, config: LLMConfig) -> None:
        self.config = config
        self.cache = ResponseCache(config.cache_dir) if config.cache_dir else None
        self.response_format = config.response_format
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="toolscale-llm", daemon=True)
        self._thread.start()
        self._openai: openai.AsyncOpenAI | None = None
        self._slots: asyncio.Semaphore | None = None
        self._pending: dict[str, asyncio.Future] = {}

    # running coroutines --------------------------------------------------------------------
    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run a coroutine on the client's loop and wait for its result (from any other thread)."""
        if threading.current_thread() is self._thread:
            raise RuntimeError("LLMClient.run called from its own event loop; await the coroutine instead")
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result()

    def close(self) -> None:
        if not self._loop.is_running():
            return
        if self._openai is not None:
            asyncio.run_coroutine_threadsafe(self._openai.close(), self._loop).result()
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=5)

    # requests ------------------------------------------------------------------------------
    def _request(self, messages: list[dict[str, str]], schema: tuple[str, dict[str, Any]] | None,
                 seed: int | None) -> dict[str, Any]:
        request: dict[str, Any] = {"model": self.config.model, "messages": messages,
                                   "temperature": self.config.temperature}
        if seed is not None:
            request["seed"] = seed
        if self.config.max_tokens is not None:
            request["max_tokens"] = self.config.max_tokens
        if schema is not None and self.response_format == "json_schema":
            request["response_format"] = {"type": "json_schema",
                                          "json_schema": {"name": schema[0], "schema": schema[1], "strict": False}}
        elif schema is not None and self.response_format == "json_object":
            request["response_format"] = {"type": "json_object"}
        return request

    async def complete(self, messages: list[dict[str, str]], *, stage: str, usage: Usage | None = None,
                       schema: tuple[str, dict[str, Any]] | None = None, seed: int | None = None) -> Answer:
        """The answer to a chat request, from the cache or the server; LLMRequestError if none came."""
        while True:
            request = self._request(messages, schema, seed)
            key = request_key(request)
            cached = self.cache.get(key) if self.cache else None
            if cached is not None:
                if usage:
                    usage.count(stage, "cache_hits")
                return Answer(cached.content, cached.prompt_tokens, cached.completion_tokens, cached=True)
            if key in self._pending:  # the same request is on the wire already: share its answer
                try:
                    answer = await asyncio.shield(self._pending[key])
                except _FormatRefused:
                    continue
                except asyncio.CancelledError:
                    if asyncio.current_task().cancelling():
                        raise
                    continue  # the request we shared was cancelled, not us: send our own
                if usage:
                    usage.count(stage, "cache_hits")
                return Answer(answer.content, answer.prompt_tokens, answer.completion_tokens, cached=True)
            future = self._loop.create_future()
            self._pending[key] = future
            try:
                answer = await self._send(request, key, stage, usage)
            except _FormatRefused as exc:
                future.set_exception(exc)
                future.exception()
                continue  # the response format was downgraded: build the request again
            except asyncio.CancelledError:
                future.cancel()
                raise
            except Exception as exc:
                future.set_exception(exc)
                future.exception()  # retrieved here, so an unshared failure is not logged as lost
                raise
            finally:
                self._pending.pop(key, None)
            future.set_result(answer)
            return answer

    async def _send(self, request: dict[str, Any], key: str, stage: str, usage: Usage | None) -> Answer:
        if self._openai is None:
            import openai

            self._openai = openai.AsyncOpenAI(base_url=self.config.base_url, api_key=api_key(),
                                              max_retries=0, timeout=self.config.timeout_s)
            self._slots = asyncio.Semaphore(self.config.max_in_flight)
        attempt = 0
        while True:
            try:
                async with self._slots:
                    response = await self._openai.chat.completions.create(**request)
                break
            except Exception as exc:
                sent_format = request.get("response_format", {}).get("type")
                if _format_refused(exc) and sent_format is not None:
                    if sent_format == self.response_format:  # concurrent refusals downgrade once
                        self.response_format = "json_object" if sent_format == "json_schema" else "none"
                    raise _FormatRefused() from exc
                retry = _retryable(exc) and attempt < self.config.max_retries
                if usage:
                    usage.count(stage, "retries" if retry else "failed_requests")
                if not retry:
                    status = getattr(exc, "status_code", None)
                    tries = f" after {attempt + 1} attempts" if _retryable(exc) else ""
                    raise LLMRequestError(f"{type(exc).__name__}{tries}: {str(exc)[:300]}", status) from None
                delay = min(self.config.backoff_max_s, self.config.backoff_s * 2 ** attempt)
                delay = _retry_after(exc) or delay * random.uniform(0.5, 1.0)
                await asyncio.sleep(min(delay, self.config.backoff_max_s))
                attempt += 1
        choice = response.choices[0] if response.choices else None
        content = (choice.message.content if choice else None) or ""
        prompt_tokens = getattr(response.usage, "prompt_tokens", None)
        completion_tokens = getattr(response.usage, "completion_tokens", None)
        estimated = prompt_tokens is None or completion_tokens is None
        if estimated:
            prompt_tokens = estimate_tokens("".join(m["content"] for m in request["messages"]))
            completion_tokens = estimate_tokens(content)
        if usage:
            usage.answered(stage, prompt_tokens, completion_tokens, estimated)
        if content and self.cache is not None:  # an empty answer is a failure: never cached
            self.cache.put(key, CachedAnswer(content=content, prompt_tokens=prompt_tokens,
                                             completion_tokens=completion_tokens, tokens_estimated=estimated,
                                             finish_reason=choice.finish_reason if choice else None))
        return Answer(content, prompt_tokens, completion_tokens, cached=False)


class _FormatRefused(Exception):
    """Internal: the server refused the response format, which has just been downgraded."""


_shared: dict[str, LLMClient] = {}
_shared_lock = threading.Lock()


def shared_client(config: LLMConfig) -> LLMClient:
    """One client per endpoint configuration in this process, so every domain shares its bound."""
    key = config.model_dump_json(include={"base_url", "model", "max_in_flight", "max_retries", "backoff_s",
                                          "backoff_max_s", "timeout_s", "temperature", "max_tokens",
                                          "response_format", "cache_dir"})
    with _shared_lock:
        client = _shared.get(key)
        if client is None:
            client = _shared[key] = LLMClient(config)
        return client


@atexit.register
def _close_shared() -> None:
    for client in list(_shared.values()):
        client.close()
    _shared.clear()
