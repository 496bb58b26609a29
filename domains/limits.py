"""The bounds one tool call runs under: steps, sizes, wall-clock time, memory and output size.

Steps are the deterministic bound: each loop iteration, function call and element a builtin
consumes costs one, and an operation that builds a string, list or number pays for its size (a
step per SIZE_PER_STEP elements), so the same call stops at the same point on every machine. No
single object may grow past MAX_SIZE elements or MAX_INT_BITS bits: that is checked before it is
built. Time and memory are the backstops for work steps cannot see (C code over large objects):
a watchdog thread raises ToolTimeout or ToolMemoryExceeded in the calling thread. Every limit is a
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
API_CALL_STEPS = 100           # a call into the record API or the clock (plus a step per row it returns)
MAX_SIZE = 10_000_000          # elements of one string, list, tuple or dict
MAX_INT_BITS = 100_000         # about 30,000 digits
MAX_FORMAT_WIDTH = 10_000      # a width or precision in an f-string or %-format
OUTPUT_LIMIT = 1_000_000       # characters of a call's output as JSON
TIME_LIMIT = 5.0               # seconds of wall-clock time per call
MEMORY_LIMIT = 512 << 20       # bytes a call may add to the process's resident memory
_POLL = 0.02                   # how often the watchdog looks, in seconds


class ToolLimitExceeded(BaseException):
    """A tool call ran past one of its bounds; the call fails and changes nothing."""


class StepBudgetExceeded(ToolLimitExceeded):
    """A tool did more work than its step budget allows."""


class ToolSizeExceeded(ToolLimitExceeded):
    """A tool tried to build an object, or return an output, past its size limit."""


class ToolTimeout(ToolLimitExceeded):
    """A tool call ran past its wall-clock limit."""


class ToolMemoryExceeded(ToolLimitExceeded):
    """A tool call grew the process's memory past its limit."""


_SIZED = frozenset({list, tuple, dict, str, range, bytes})
_UNORDERED = frozenset({set, frozenset})
_SEQUENCES = frozenset({str, list, tuple, bytes})
_NUMBERS = frozenset({int, float, bool})


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
        if kind in _UNORDERED:
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


def _int_bits(bits: int) -> None:
    if bits > MAX_INT_BITS:
        raise ToolSizeExceeded(f"tool tried to build a number of about {bits:,} bits (limit {MAX_INT_BITS:,})")


_FORMAT_NUMBER = re.compile(r"\d+")
_PERCENT_SPEC = re.compile(r"%(?:\([^)]*\))?[-#0 +]*(\*|\d*)(?:\.(\*|\d*))?[hlL]?[a-zA-Z%]")


def _check_width(spec: str) -> None:
    for number in _FORMAT_NUMBER.findall(spec):
        if len(number) > 6 or int(number) > MAX_FORMAT_WIDTH:
            raise ToolSizeExceeded(f"format width {number} is past the limit of {MAX_FORMAT_WIDTH:,}")


def check_text_form(value: Any, budget: StepBudget) -> None:
    """Refuse to turn into text what has no stable text form (a function or a record API object
    shows a memory address, a set an order that depends on the hash seed)."""
    kind = type(value)
    if kind in (str, int, float, bool, type(None), range) or isinstance(value, BaseException):
        return
    if kind in (list, tuple):
        budget.charge(len(value))
        for item in value:
            check_text_form(item, budget)
        return
    if kind is dict:
        budget.charge(len(value))
        for key, item in value.items():
            check_text_form(key, budget)
            check_text_form(item, budget)
        return
    if kind in _UNORDERED:
        raise TypeError("a set has no fixed text form in tools: sort it first")
    raise TypeError(f"a {kind.__name__} has no text form in tools")


class Guards:
    """The checked operators and builtins compiled tool code calls (see sandbox._ToolPolicy)."""

    def __init__(self, budget: StepBudget) -> None:
        self.budget = budget

    # operators that can build big objects ------------------------------------------------
    def add(self, a: Any, b: Any) -> Any:
        if type(a) in _SEQUENCES and type(b) in _SEQUENCES:
            self.budget.sized(len(a) + len(b), type(a).__name__)
        return a + b

    def mul(self, a: Any, b: Any) -> Any:
        ta, tb = type(a), type(b)
        if ta in _NUMBERS and tb in _NUMBERS:
            if ta is int and tb is int:
                _int_bits(a.bit_length() + b.bit_length())
        elif ta in _SEQUENCES and tb in (int, bool):
            self.budget.sized(len(a) * max(b, 0), ta.__name__)
        elif tb in _SEQUENCES and ta in (int, bool):
            self.budget.sized(len(b) * max(a, 0), tb.__name__)
        return a * b

    def pow(self, a: Any, b: Any) -> Any:
        if type(a) is int and type(b) is int and b > 0 and abs(a) > 1:
            _int_bits((a.bit_length() - 1) * b)
        return a ** b

    def lshift(self, a: Any, b: Any) -> Any:
        if type(a) is int and type(b) is int and b > 0 and a:
            _int_bits(a.bit_length() + b)
        return a << b

    def mod(self, a: Any, b: Any) -> Any:
        if type(a) is str:  # %-formatting
            for width, precision in _PERCENT_SPEC.findall(a):
                if "*" in (width, precision):
                    raise ToolSizeExceeded("'*' widths are not available to tools")
                _check_width(f"{width} {precision}")
            check_text_form(b, self.budget)
            result = a % b
            self.budget.sized(len(result), "str")
            return result
        return a % b

    def inplace(self, op: str, target: Any, value: Any) -> Any:
        """`x op= y`, through the same checks as `x = x op y`."""
        checked = self._INPLACE.get(op)
        if checked is None:
            raise TypeError(f"operator {op} is not available to tools")
        return checked(self, target, value)

    _INPLACE = {"+=": add, "*=": mul, "**=": pow, "<<=": lshift, "%=": mod,
                "-=": lambda self, a, b: a - b, "/=": lambda self, a, b: a / b,
                "//=": lambda self, a, b: a // b, "|=": lambda self, a, b: a | b,
                "&=": lambda self, a, b: a & b, "^=": lambda self, a, b: a ^ b,
                ">>=": lambda self, a, b: a >> b}

    def format(self, value: Any, conversion: int, spec: str) -> str:
        """One `{value!c:spec}` of an f-string."""
        check_text_form(value, self.budget)
        if conversion == ord("r"):
            value = repr(value)
        elif conversion == ord("a"):
            value = ascii(value)
        elif conversion == ord("s"):
            value = str(value)
        if spec:
            _check_width(spec)
        text = format(value, spec)
        self.budget.sized(len(text), "str")
        return text

    # builtins ------------------------------------------------------------------------------
    def str(self, value: Any = "") -> str:
        check_text_form(value, self.budget)
        text = str(value)
        self.budget.sized(len(text), "str")
        return text

    def sum(self, iterable: Iterable[Any], start: Any = 0) -> Any:
        if type(start) not in _NUMBERS:
            raise TypeError("sum() adds numbers only in tools; join texts with str.join")
        return sum(self.budget.iterate(iterable), start)

    def dict(self, *args: Any, **kwargs: Any) -> dict[Any, Any]:
        if args and type(args[0]) is dict:
            self.budget.charge(len(args[0]))
            return dict(args[0], **kwargs)
        return dict(*map(self.budget.iterate, args), **kwargs)

    def reversed(self, sequence: Any) -> Iterator[Any]:
        self.budget.charge(len(sequence))
        return reversed(sequence)

    def builtins(self) -> dict[str, Callable[..., Any]]:
        """The builtins that take iterables, each paying for what it consumes."""
        iterate = self.budget.iterate

        def each(builtin: Callable[..., Any]) -> Callable[..., Any]:  # every argument is an iterable
            return lambda *iterables, **kwargs: builtin(*map(iterate, iterables), **kwargs)

        def extremum(builtin: Callable[..., Any]) -> Callable[..., Any]:  # min(iterable) or min(a, b, ...)
            return lambda first, *rest, **kwargs: builtin(first if rest else iterate(first), *rest, **kwargs)

        def after_function(builtin: Callable[..., Any]) -> Callable[..., Any]:  # map(f, *iterables)
            return lambda function, *iterables: builtin(function, *map(iterate, iterables))

        checked = {"all": each(all), "any": each(any), "list": each(list), "tuple": each(tuple),
                   "set": each(set), "zip": each(zip), "min": extremum(min), "max": extremum(max),
                   "map": after_function(map), "filter": after_function(filter),
                   "sorted": lambda iterable, **kwargs: sorted(iterate(iterable), **kwargs),
                   "enumerate": lambda iterable, start=0: enumerate(iterate(iterable), start),
                   "sum": self.sum, "dict": self.dict, "str": self.str, "reversed": self.reversed}
        kinds = {checked[k.__name__]: k for k in (list, tuple, set, dict, str)}  # what isinstance is asked about

        def checked_isinstance(value: Any, kind: Any) -> bool:
            kind = tuple(kinds.get(k, k) for k in kind) if type(kind) is tuple else kinds.get(kind, kind)
            return isinstance(value, kind)
        return {**checked, "isinstance": checked_isinstance}

    def api(self, bound: Callable[..., Any]) -> Callable[..., Any]:
        """A record API or clock method that pays for the call and for each row it returns."""
        charge = self.budget.charge

        def checked(*args: Any, **kwargs: Any) -> Any:
            charge(API_CALL_STEPS)
            result = bound(*args, **kwargs)
            if type(result) is list:
                charge(len(result))
            return result
        return checked

    # methods that consume iterables or build big strings --------------------------------------
    def method(self, obj: Any, name: str) -> Any:
        """A bound str/list/dict/set method, checked where it can do unbounded work."""
        bound = getattr(obj, name)
        checked = self._METHODS.get(name)
        return bound if checked is None else (lambda *a, **k: checked(self, obj, bound, *a, **k))

    def _join(self, sep: str, bound: Callable[..., str], items: Iterable[Any]) -> str:
        items = list(self.budget.iterate(items))
        self.budget.sized(sum(len(i) if type(i) is str else 0 for i in items) + len(sep) * len(items), "str")
        return bound(items)

    def _replace(self, text: str, bound: Callable[..., str], old: str, new: str, count: int = -1) -> str:
        if type(old) is str and type(new) is str:
            times = text.count(old) if old else len(text) + 1
            if type(count) is int and count >= 0:
                times = min(times, count)
            self.budget.sized(len(text) + times * (len(new) - len(old)), "str")
        return bound(old, new, count)

    def _zfill(self, text: str, bound: Callable[..., str], width: int) -> str:
        if type(width) is int:
            self.budget.sized(width, "str")
        return bound(width)

    def _split(self, text: str, bound: Callable[..., list[str]], *args: Any) -> list[str]:
        self.budget.sized(len(text), "str")
        return bound(*args)

    def _consume(self, obj: Any, bound: Callable[..., Any], *others: Any) -> Any:
        return bound(*(o if type(o) is dict else list(self.budget.iterate(o)) for o in others))

    def _sort(self, obj: list[Any], bound: Callable[..., None], **kwargs: Any) -> None:
        self.budget.charge(len(obj))
        return bound(**kwargs)

    _METHODS = {"join": _join, "replace": _replace, "zfill": _zfill, "split": _split, "extend": _consume,
                "update": _consume, "union": _consume, "intersection": _consume, "difference": _consume,
                "sort": _sort}


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
                    if watch.fired is not None:
                        continue
                    if rss is not None and watch.rss is None:
                        watch.rss = rss
                    if now > watch.deadline:
                        watch.fired = ToolTimeout
                    elif rss is not None and rss - watch.rss > MEMORY_LIMIT:
                        watch.fired = ToolMemoryExceeded
                    if watch.fired is not None:
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
            text = json.dumps(output, allow_nan=False)
        except BaseException as exc:
            _limit_passed(budget, watch, exc)
            raise
        if watch.fired is not None or budget.left < 0:
            _limit_passed(budget, watch, None)
    finally:
        WATCHDOG.leave(watch)
    if len(text) > OUTPUT_LIMIT:
        raise ToolSizeExceeded(f"tool output of {len(text):,} characters is past the limit of {OUTPUT_LIMIT:,}")
    return json.loads(text)


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
