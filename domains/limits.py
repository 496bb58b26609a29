"""The bounds one tool call runs under: steps, sizes, wall-clock time, memory and output size.

Steps are the deterministic bound: each loop iteration, function call and element a builtin
consumes costs one, and an operation that builds a string, list or number pays for its size (a
step per SIZE_PER_STEP elements), so the same call stops at the same point on every machine. No
single object may grow past MAX_SIZE elements: guards.Guards checks that (and the bits of a
number) before it is built, and that one C call (a sort, a compare, a search) is paid for by
the size of what it works on, so none runs long. Time and memory are the backstops: a watchdog
thread raises ToolTimeout or ToolMemoryExceeded in the calling thread. It can only act between
bytecodes, so it cannot stop one long C call; it reads the whole process's resident memory, so
with several tool calls running in threads of one process an allocation in one can fail another. Every limit is a
BaseException, so a tool's own `except Exception` cannot catch it, and `bounded_call` decides the
outcome from the budget and the watchdog, whatever the tool's code did with the exception.
"""

from __future__ import annotations

import ctypes
import json
import os
import re
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

STEP_BUDGET = 1_000_000
SIZE_PER_STEP = 16
MAX_SIZE = 10_000_000          # elements of one string, list, tuple or dict
OUTPUT_LIMIT = 1_000_000       # characters of a call's output as JSON
MESSAGE_LIMIT = 2_000          # characters of an error message
TIME_LIMIT = 5.0               # seconds of wall-clock time per call
MEMORY_LIMIT = 512 << 20       # bytes a call may add to the process's resident memory
_POLL = 0.02                   # how often the watchdog looks, in seconds
MAX_DEPTH = 100                # containers nested in a hashed key, an output or a text form


class ToolLimitExceeded(BaseException):
    """A tool call ran past one of its bounds; the call fails and changes nothing."""


class StepBudgetExceeded(ToolLimitExceeded):
    """A tool did more work than its step budget allows."""


class ToolSizeExceeded(ToolLimitExceeded):
    """A tool tried to build an object, or return an output, past its size limit."""


class ToolOutputRefused(ToolLimitExceeded):
    """A tool returned what no output may hold: a control character or a lone surrogate."""


class ToolTimeout(ToolLimitExceeded):
    """A tool call ran past its wall-clock limit."""


class ToolMemoryExceeded(ToolLimitExceeded):
    """A tool call grew the process's memory past its limit."""


_SIZED = frozenset({list, tuple, dict, str, range, bytes})
UNORDERED = frozenset({set, frozenset})


def canonical_order(values: Iterable[Any]) -> list[Any]:
    """A set's items in an order that does not depend on the interpreter's hash seed."""
    return sorted(values, key=lambda v: (type(v).__name__, repr(v)))


class StepBudget:
    """The steps one call may take; `left` below zero means the call is over."""

    __slots__ = ("left",)

    def __init__(self) -> None:
        self.left = STEP_BUDGET

    def reset(self) -> None:
        self.left = STEP_BUDGET

    def exceeded(self) -> StepBudgetExceeded:
        return StepBudgetExceeded(f"tool exceeded its budget of {STEP_BUDGET:,} steps")

    def tick(self) -> None:
        self.left -= 1
        if self.left < 0:
            raise self.exceeded()

    def charge(self, steps: int) -> None:
        self.left -= steps
        if self.left < 0:
            raise self.exceeded()

    def iterate(self, iterable: Iterable[Any]) -> Iterator[Any]:
        """Iterate, paying one step per item: up front when the length is known (C speed); a set's
        items come in canonical order, so what a tool makes of them is the same in every process."""
        kind = type(iterable)
        if kind in _SIZED:
            self.charge(len(iterable))
            return iter(iterable)
        if kind in UNORDERED:
            self.charge(len(iterable))
            return iter(canonical_order(iterable))
        return self._counted(iterable)

    def _counted(self, iterable: Iterable[Any]) -> Iterator[Any]:
        for item in iterable:
            self.left -= 1
            if self.left < 0:
                raise self.exceeded()
            yield item

    def sized(self, size: int, what: str = "object") -> None:
        """Pay for building an object of `size` elements, refused past MAX_SIZE before it is built."""
        if size > MAX_SIZE:
            raise ToolSizeExceeded(f"tool tried to build a {what} of {size:,} elements (limit {MAX_SIZE:,})")
        if size > SIZE_PER_STEP:
            self.charge(size // SIZE_PER_STEP)


def _resident_bytes() -> int | None:
    """This process's resident memory, where the system says it cheaply (Linux); else None."""
    try:
        with open("/proc/self/statm", "rb") as stat:
            return int(stat.read().split()[1]) * _PAGE
    except (OSError, ValueError, IndexError):
        return None


_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


class _Watch:
    __slots__ = ("deadline", "rss", "fired")

    def __init__(self, deadline: float) -> None:
        self.deadline, self.rss, self.fired = deadline, None, None


def _raise_in(thread_id: int, exc: type[BaseException] | None) -> None:
    """Raise `exc` in that thread at its next bytecode (None clears a pending one): CPython's own API."""
    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread_id), ctypes.py_object(exc) if exc else None)


class Watchdog:
    """One daemon thread for the process: it raises ToolTimeout or ToolMemoryExceeded in a thread
    whose tool call passed its deadline or grew the process's memory past MEMORY_LIMIT.

    A call registers on entry and leaves on exit, under a lock the watchdog holds while it fires,
    so an exception is never delivered to host code: a pending one is cleared on the way out."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._calls: dict[int, _Watch] = {}
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None

    def enter(self, seconds: float = TIME_LIMIT) -> _Watch:
        watch = _Watch(time.monotonic() + seconds)
        self._calls[threading.get_ident()] = watch  # one dict store: atomic, no lock needed
        if not self._wake.is_set():
            self._start()
        return watch

    def _start(self) -> None:
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="toolscale-watchdog", daemon=True)
                self._thread.start()
        self._wake.set()

    def leave(self, watch: _Watch) -> None:
        thread_id = threading.get_ident()
        with self._lock:
            if self._calls.get(thread_id) is watch:
                del self._calls[thread_id]
            if watch.fired is not None:
                _raise_in(thread_id, None)  # not delivered yet: it must not reach the host

    def _run(self) -> None:
        while True:
            time.sleep(_POLL)
            if not self._calls:  # idle: sleep until the next call starts
                self._wake.clear()
                if not self._calls:
                    self._wake.wait()
                continue
            now, rss = time.monotonic(), _resident_bytes()
            with self._lock:
                for thread_id, watch in list(self._calls.items()):
                    if rss is not None and watch.rss is None:
                        watch.rss = rss
                    if watch.fired is None and now > watch.deadline:
                        watch.fired = ToolTimeout
                    elif watch.fired is None and rss is not None and rss - watch.rss > MEMORY_LIMIT:
                        watch.fired = ToolMemoryExceeded
                    if watch.fired is not None:  # again at every look: a `finally` cannot keep the call going
                        _raise_in(thread_id, watch.fired)


WATCHDOG = Watchdog()
if hasattr(os, "register_at_fork"):  # a forked child has no watchdog thread, and maybe a held lock
    os.register_at_fork(after_in_child=lambda: WATCHDOG.__init__())
_MESSAGES = {ToolTimeout: f"tool call ran past its limit of {TIME_LIMIT:g} s",
             ToolMemoryExceeded: f"tool call grew memory past its limit of {MEMORY_LIMIT >> 20} MB"}


def bounded_call(budget: StepBudget, function: Callable[..., Any], arguments: dict[str, Any]) -> Any:
    """Run one tool call under every bound; its output as canonical JSON data.

    Raises a ToolLimitExceeded when a bound was passed, even if the tool caught the exception;
    otherwise what the tool raised (ToolError, or a fault)."""
    budget.reset()
    watch = WATCHDOG.enter()
    try:
        try:
            output = function(**arguments)
            _check_output_size(output)
            text = json.dumps(output, allow_nan=False)
            _check_output_text(text)
        except BaseException as exc:
            _limit_passed(budget, watch, exc)
            raise
        if watch.fired is None and time.monotonic() > watch.deadline:
            watch.fired = ToolTimeout  # one long C call: the watchdog could not get in before it returned
        if watch.fired is not None or budget.left < 0:
            _limit_passed(budget, watch, None)
    finally:
        WATCHDOG.leave(watch)
    if len(text) > OUTPUT_LIMIT:
        raise ToolSizeExceeded(f"tool output of {len(text):,} characters is past the limit of {OUTPUT_LIMIT:,}")
    return json.loads(text)


def text_size(value: Any, limit: int = MAX_SIZE) -> int:
    """About how many characters str() or JSON of `value` takes, counted without building it (one
    string may be in it many times); counting stops past `limit`."""
    total, pending = 0, [value]
    while pending and total <= limit:
        item = pending.pop()
        kind = type(item)
        if kind is str:
            total += len(item) + 2
        elif kind is list or kind is tuple:
            total += len(item) + 2
            pending.extend(item)
        elif kind is dict:
            total += 2 * len(item) + 2
            pending.extend(item.keys())
            pending.extend(item.values())
        else:
            total += item.bit_length() // 3 + 2 if kind is int else 8
    return total


def nesting_depth(value: Any, limit: int = MAX_DEPTH) -> int:
    """How deeply lists, tuples and dicts nest in `value` (a scalar is 0), counted without recursion
    and without building anything; counting stops past `limit`. A container reached twice (one
    list put in another many times) is looked into once: its depth below is kept by id."""
    if type(value) not in _CONTAINERS:
        return 0
    below: dict[int, int] = {}  # id -> depth of the container there (kept alive by `value`)
    stack = [(value, iter(value.values() if type(value) is dict else value), 1)]
    deepest = 1
    while stack:
        container, items, depth = stack[-1]
        for item in items:
            if type(item) in _CONTAINERS:
                known = below.get(id(item))
                if known is not None:
                    deepest = max(deepest, depth + known)
                elif depth >= limit:
                    return depth + 1
                else:
                    stack.append((item, iter(item.values() if type(item) is dict else item), depth + 1))
                    break
        else:
            stack.pop()
            height = 1 + max((below.get(id(i), 0) for i in (container.values() if type(container) is dict else container)
                              if type(i) in _CONTAINERS), default=0)
            below[id(container)] = height
            deepest = max(deepest, depth - 1 + height)
            if deepest > limit:
                return deepest
    return deepest


_CONTAINERS = frozenset({list, tuple, dict})


# C0 and C1 control characters other than tab, newline and carriage return, and DEL, as JSON (with
# ensure_ascii) writes them: `\\u001b` (`\\b` and `\\f` for two), where the backslash is not itself escaped.
_CONTROL_JSON = re.compile(r'(?<!\\)(?:\\\\)*\\(?:[bf]|u00(?:[01][0-9a-fA-F]|7[fF]|[89][0-9a-fA-F]))')
_SURROGATE_JSON = re.compile(r'\\u[dD][89a-fA-F]')  # maybe a surrogate (a pair, for a character past U+FFFF)
_UNPRINTABLE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff]")


_UP = object()  # on the stack after a container's items: its level is done


def _check_output_size(output: Any) -> None:
    """ToolSizeExceeded, before anything is serialized, when the output's JSON would pass OUTPUT_LIMIT
    (counted as text_size counts) or nest deeper than MAX_DEPTH (pydantic would not serialize it);
    one pass, without recursion."""
    total, depth, pending = 0, 0, [output]
    while pending and total <= OUTPUT_LIMIT:
        item = pending.pop()
        if item is _UP:
            depth -= 1
            continue
        kind = type(item)
        if kind is str:
            total += len(item) + 2
        elif kind is list or kind is tuple or kind is dict:
            depth += 1
            if depth > MAX_DEPTH:
                raise ToolSizeExceeded(f"tool made an output nested more than {MAX_DEPTH} levels deep")
            pending.append(_UP)
            if kind is dict:
                total += 2 * len(item) + 2
                pending.extend(item.keys())
                pending.extend(item.values())
            else:
                total += len(item) + 2
                pending.extend(item)
        else:
            total += item.bit_length() // 3 + 2 if kind is int else 8
    if total > OUTPUT_LIMIT:
        raise ToolSizeExceeded(f"tool output is past the limit of {OUTPUT_LIMIT:,} characters")


def _check_output_text(text: str) -> None:
    """ToolOutputRefused when the output (its JSON) holds a control character or a lone surrogate:
    nothing a terminal would act on, or a UTF-8 file could not hold, leaves a tool."""
    if "\\" not in text:  # JSON escapes each of them: no backslash, none there (most outputs)
        return
    if _CONTROL_JSON.search(text) is not None:
        raise ToolOutputRefused("tool output holds a control character (only tab, newline and carriage return may)")
    if _SURROGATE_JSON.search(text) is not None:  # rare: check exactly, by encoding the characters
        try:
            json.dumps(json.loads(text), ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError:
            raise ToolOutputRefused("tool output holds a lone surrogate, which no UTF-8 text can") from None


def run_tool(budget: StepBudget, function: Callable[..., Any], arguments: dict[str, Any]) -> tuple[Any, str | None,
                                                                                                    str | None]:
    """One tool call as the runtimes report it: (output, None, None), or (None, message, error
    type) for a ToolError, a limit or a fault in the tool. Nothing the tool raises reaches the
    host as an exception, and no message costs more than MESSAGE_LIMIT characters to make."""
    try:
        return bounded_call(budget, function, arguments), None, None
    except (ToolLimitExceeded, Exception) as exc:
        kind = type(exc).__name__
        text = error_text(exc)
        return None, text if kind == "ToolError" or isinstance(exc, ToolLimitExceeded) else f"{kind}: {text}", kind


_PLAIN_ARGUMENTS = (str, int, float, bool, type(None))
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


def error_text(exc: BaseException) -> str:
    """An exception's message, if its arguments are a few short texts or small numbers (a tool can
    raise ToolError(db) or ToolError([big] * 10**5)); else a fixed phrase."""
    plain = len(exc.args) <= 4 and all(
        type(a) in _PLAIN_ARGUMENTS and (type(a) is not int or a.bit_length() <= 64)
        and (type(a) is not str or len(a) <= MESSAGE_LIMIT) for a in exc.args)
    text = str(exc)[:MESSAGE_LIMIT] if plain else "(a message that is not text)"
    if _UNPRINTABLE.search(text) is not None:  # a terminal acts on these; a published file cannot hold a lone surrogate
        return "(a message with control characters)"
    return _ADDRESS.sub("", text)  # a host message naming an object shows where it lives: not the same twice


def _limit_passed(budget: StepBudget, watch: _Watch, raised: BaseException | None) -> None:
    """Raise the bound the call passed, whatever the tool did with its exception."""
    if watch.fired is not None and not isinstance(raised, watch.fired):
        raise watch.fired(_MESSAGES[watch.fired]) from None
    if isinstance(raised, ToolLimitExceeded):
        if type(raised) in _MESSAGES and not raised.args:
            raise type(raised)(_MESSAGES[type(raised)]) from None
        return
    if budget.left < 0:
        raise budget.exceeded() from None
