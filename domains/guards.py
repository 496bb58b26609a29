"""The checked operators, builtins and methods compiled tool code calls (see sandbox._ToolPolicy).

Each pays the step budget for the work it does, and refuses, before building it, an object past
limits.MAX_SIZE elements or a number past MAX_INT_BITS bits; what becomes text must have a text
form that is the same in every process (no memory addresses, no set order).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from .limits import UNORDERED, StepBudget, ToolSizeExceeded, text_size

API_CALL_STEPS = 100           # reaching for the record API or the clock (each call does)
MAX_INT_BITS = 4_096           # about 1,200 digits: comparing two stays cheap
MAX_FORMAT_WIDTH = 10_000      # a width or precision in an f-string or %-format
_SEQUENCES = frozenset({str, list, tuple, bytes})
_NUMBERS = frozenset({int, float, bool})


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
    if kind in (str, int, float, bool, type(None), range):
        return
    if isinstance(value, BaseException):  # shown as its arguments are
        check_text_form(value.args, budget)
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
    if kind in UNORDERED:
        raise TypeError("a set has no fixed text form in tools: sort it first")
    raise TypeError(f"a {kind.__name__} has no text form in tools")


def interruptible(items: Iterator[Any]) -> Iterator[Any]:
    """`items` as a Python generator, so a C loop that consumes it passes bytecode boundaries,
    where the watchdog's exception can land (a `for` loop's jump back checks for it; `yield from`
    does not)."""
    for item in items:
        yield item


class Guards:
    """The checked operators, builtins and methods of one environment's tool code."""

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
            if type(b) is dict:
                raise TypeError("%-formatting with a mapping is not available to tools; use an f-string")
            specs = _PERCENT_SPEC.findall(a)
            for width, precision in specs:
                if "*" in (width, precision):
                    raise ToolSizeExceeded("'*' widths are not available to tools")
                _check_width(f"{width} {precision}")
            check_text_form(b, self.budget)
            values = b if type(b) is tuple else (b,)
            longest = max((len(self.str(v)) for v in values), default=0)
            self.budget.sized(len(a) + len(specs) * (MAX_FORMAT_WIDTH + longest), "str")
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
        if type(value) in (list, tuple, dict):
            self.budget.sized(text_size(value), "str")
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
        return dict(*(interruptible(self.budget.iterate(a)) for a in args), **kwargs)

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

        def hashing(builtin: Callable[..., Any]) -> Callable[..., Any]:
            # a big set is built item by item from Python, so the watchdog can stop one whose keys collide
            return lambda *iterables: builtin(*(interruptible(iterate(i)) for i in iterables))

        def keyed(builtin: Callable[..., Any], make: Callable[..., Any]) -> Callable[..., Any]:
            # a key that is a C method (text.count) would run the whole sort in C, past the watchdog
            def checked(*args: Any, key: Any = None, **kwargs: Any) -> Any:
                if key is not None:
                    kwargs["key"] = lambda item: key(item)
                return make(*args, **kwargs)
            return checked

        def finite_float(value: Any = 0.0) -> float:
            number = float(value)
            if number != number or number in (float("inf"), float("-inf")):
                raise ValueError(f"tools work with finite numbers, not {number}")
            return number

        checked = {"all": each(all), "any": each(any), "list": each(list), "tuple": each(tuple),
                   "set": hashing(set), "zip": each(zip), "min": keyed(min, extremum(min)),
                   "max": keyed(max, extremum(max)), "map": after_function(map), "filter": after_function(filter),
                   "sorted": keyed(sorted, lambda iterable, **kwargs: sorted(iterate(iterable), **kwargs)),
                   "float": finite_float,
                   "enumerate": lambda iterable, start=0: enumerate(iterate(iterable), start),
                   "sum": self.sum, "dict": self.dict, "str": self.str, "reversed": self.reversed}
        kinds = {checked[k.__name__]: k for k in (list, tuple, set, dict, str)}  # what isinstance is asked about

        def checked_isinstance(value: Any, kind: Any) -> bool:
            kind = tuple(kinds.get(k, k) for k in kind) if type(kind) is tuple else kinds.get(kind, kind)
            return isinstance(value, kind)
        return {**checked, "isinstance": checked_isinstance}

    # methods that consume iterables or build big strings --------------------------------------
    def method(self, obj: Any, name: str) -> Any:
        """A bound str/list/dict/set method named in CHECKED_METHODS, checked for unbounded work."""
        bound, checked = getattr(obj, name), self._METHODS[name]
        return lambda *a, **k: checked(self, obj, bound, *a, **k)

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

    def _consume(self, obj: Any, bound: Callable[..., Any], *others: Any, **kwargs: Any) -> Any:
        """extend / update / union...: each item taken in pays a step (a dict is passed on as it is)."""
        taken = []
        for other in others:
            if type(other) is dict:
                self.budget.charge(len(other))
                taken.append(other)
            else:
                taken.append(list(self.budget.iterate(other)))
        return bound(*taken, **kwargs)

    def _sort(self, obj: list[Any], bound: Callable[..., None], **kwargs: Any) -> None:
        self.budget.charge(len(obj))
        return bound(**kwargs)

    _METHODS = {"join": _join, "replace": _replace, "zfill": _zfill, "split": _split, "extend": _consume,
                "update": _consume, "union": _consume, "intersection": _consume, "difference": _consume,
                "sort": _sort}


CHECKED_METHODS = frozenset(Guards._METHODS)
