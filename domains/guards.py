"""The checked operators, builtins and methods compiled tool code calls (see sandbox._ToolPolicy).

Each pays the step budget for the work it does, and refuses, before building it, an object past
limits.MAX_SIZE elements or a number past MAX_INT_BITS bits; what becomes text must have a text
form that is the same in every process (no memory addresses, no set order). `round`,
`int(text, base)`, `//` and `%` are checked against MAX_INT_BITS, case changes against MAX_SIZE by
their worst growth, and bytes %-formatting goes through the checks str %-formatting does. What
comparisons, searches and hashing cost, and where tool code hashes, is costs.CheckedWork's part."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from .costs import _CONTAINERS, _HASHED, _NUMBERS, SMALL, CheckedWork
from .limits import MAX_DEPTH, MAX_SIZE, SIZE_PER_STEP, UNORDERED, StepBudget, ToolSizeExceeded, text_size

API_CALL_STEPS = 100           # reaching for the record API or the clock (each call does)
MAX_INT_BITS = 4_096           # about 1,200 digits: comparing two stays cheap
MAX_FORMAT_WIDTH = 10_000      # a width or precision in an f-string or %-format
MAX_ROUND_DIGITS = 1_000       # round(x, n): 10**1000 is under MAX_INT_BITS
_SEQUENCES = frozenset({str, list, tuple, bytes})
_REPR = (ord("r"), ord("a"))  # conversions that escape what they show


def _int_bits(bits: int) -> None:
    if bits > MAX_INT_BITS:
        raise ToolSizeExceeded(f"tool tried to build a number of about {bits:,} bits (limit {MAX_INT_BITS:,})")


_FORMAT_NUMBER = re.compile(r"\d+")
_PERCENT_SPEC = re.compile(r"%(?:\([^)]*\))?[-#0 +]*(\*|\d*)(?:\.(\*|\d*))?[hlL]?[a-zA-Z%]")


def _check_width(spec: str) -> None:
    for number in _FORMAT_NUMBER.findall(spec):
        if len(number) > 6 or int(number) > MAX_FORMAT_WIDTH:
            raise ToolSizeExceeded(f"format width {number} is past the limit of {MAX_FORMAT_WIDTH:,}")


_PLAIN = frozenset({str, int, float, bool, type(None), range})


def check_text_form(value: Any, budget: StepBudget) -> None:
    """Refuse to turn into text what has no stable text form (a function or a record API object
    shows a memory address, a set an order that depends on the hash seed), and what nests past
    MAX_DEPTH (its text would be made by recursion). Iterative: a deep value cannot overflow it."""
    if type(value) in _PLAIN:  # most f-string fields
        return
    pending = [(value, 0)]
    while pending:
        item, depth = pending.pop()
        kind = type(item)
        if kind in _PLAIN:
            continue
        if depth >= MAX_DEPTH:
            raise ToolSizeExceeded(f"tool tried to show a value nested more than {MAX_DEPTH} levels deep")
        if isinstance(item, BaseException):  # shown as its arguments are
            pending.append((item.args, depth + 1))
        elif kind in (list, tuple):
            budget.charge(len(item))
            pending.extend((i, depth + 1) for i in item)
        elif kind is dict:
            budget.charge(len(item))
            pending.extend((k, depth + 1) for k in item)
            pending.extend((v, depth + 1) for v in item.values())
        elif kind in UNORDERED:
            raise TypeError("a set has no fixed text form in tools: sort it first")
        else:  # the record API and the clock by what they are, not by class: the two runtimes differ there
            what = "record API or clock object" if hasattr(kind, "TOOL_API") else kind.__name__
            raise TypeError(f"a {what} has no text form in tools")


def shown_size(value: Any, limit: int = MAX_SIZE) -> int:
    """About how many characters str() or repr() of `value` takes at most (a text that repr escapes
    may grow tenfold: '\\U000e0001'), counted without building it; counting stops past `limit`."""
    if type(value) is str:
        return len(value) + 2 if value.isprintable() else 10 * len(value)
    total, pending = 0, [value.args if isinstance(value, BaseException) else value]
    while pending and total <= limit:
        item = pending.pop()
        kind = type(item)
        if kind is str:
            total += len(item) + 2 if item.isprintable() else 10 * len(item)
        elif kind in (list, tuple):
            total += len(item) + 2
            pending.extend(item)
        elif kind is dict:
            total += 2 * len(item) + 2
            pending.extend(item)
            pending.extend(item.values())
        elif isinstance(item, BaseException):
            pending.append(item.args)
        else:
            total += text_size(item)
    return total


def interruptible(items: Iterator[Any]) -> Iterator[Any]:
    """`items` as a Python generator, so a C loop that consumes it passes bytecode boundaries,
    where the watchdog's exception can land (a `for` loop's jump back checks for it; `yield from`
    does not)."""
    for item in items:
        yield item


class Guards(CheckedWork):
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

    def floordiv(self, a: Any, b: Any) -> Any:
        if type(a) is int and type(b) is int:  # long division is quadratic in the digits
            _int_bits(max(a.bit_length(), b.bit_length()))
        return a // b

    def mod(self, a: Any, b: Any) -> Any:
        kind = type(a)
        if kind is str or kind is bytes:  # %-formatting
            if type(b) is dict:
                raise TypeError("%-formatting with a mapping is not available to tools; use an f-string")
            specs = _PERCENT_SPEC.findall(a if kind is str else a.decode("latin-1"))
            for width, precision in specs:
                if "*" in (width, precision):
                    raise ToolSizeExceeded("'*' widths are not available to tools")
                _check_width(f"{width} {precision}")
            check_text_form(b, self.budget)
            values = b if type(b) is tuple else (b,)
            longest = max((shown_size(v) for v in values), default=0)
            self.budget.sized(len(a) + len(specs) * (MAX_FORMAT_WIDTH + longest), kind.__name__)
            result = a % b
            self.budget.sized(len(result), kind.__name__)
            return result
        if kind is int and type(b) is int:
            _int_bits(max(a.bit_length(), b.bit_length()))
        return a % b

    def inplace(self, op: str, target: Any, value: Any) -> Any:
        """`x op= y`, through the same checks as `x = x op y`."""
        checked = self._INPLACE.get(op)
        if checked is None:
            raise TypeError(f"operator {op} is not available to tools")
        return checked(self, target, value)

    _INPLACE = {"+=": add, "*=": mul, "**=": pow, "<<=": lshift, "%=": mod, "//=": floordiv,
                "-=": CheckedWork.sub, "|=": CheckedWork.or_, "&=": CheckedWork.and_, "^=": CheckedWork.xor,
                "/=": lambda self, a, b: a / b, ">>=": lambda self, a, b: a >> b}

    # formatting ------------------------------------------------------------------------------
    def format(self, value: Any, conversion: int, spec: str) -> str:
        """One `{value!c:spec}` of an f-string."""
        check_text_form(value, self.budget)
        kind = type(value)
        if kind in _CONTAINERS or (kind not in _PLAIN and isinstance(value, BaseException)) or (
                kind is str and conversion in _REPR):
            self.budget.sized(shown_size(value), "str")  # its text is made from its parts: not past MAX_SIZE
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
        if type(value) in _CONTAINERS or isinstance(value, BaseException):
            self.budget.sized(shown_size(value), "str")
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
        return dict(*(interruptible(self.keys(self.budget.iterate(a))) for a in args), **kwargs)

    def reversed(self, sequence: Any) -> Iterator[Any]:
        self.budget.charge(len(sequence))
        return reversed(sequence)

    def int(self, value: Any = 0, base: Any = None) -> int:
        if type(value) in (str, bytes):  # a numeral: in base 2, 4, 8, 16 or 32 Python reads any length
            if len(value) > MAX_INT_BITS:
                raise ToolSizeExceeded(f"tool tried to read a number of {len(value):,} digits "
                                       f"(limit {MAX_INT_BITS:,} bits)")
            number = int(value) if base is None else int(value, base)
            _int_bits(number.bit_length())
            return number
        return int(value) if base is None else int(value, base)

    def round(self, number: Any, ndigits: Any = None) -> Any:
        if type(ndigits) is int and abs(ndigits) > MAX_ROUND_DIGITS:  # round(5, -10**8) computes 10**(10**8)
            raise ToolSizeExceeded(f"tool tried to round to {ndigits:,} digits (limit {MAX_ROUND_DIGITS:,})")
        return round(number) if ndigits is None else round(number, ndigits)

    def builtins(self) -> dict[str, Callable[..., Any]]:
        """The builtins that take iterables, each paying for what it consumes (and, for sorted, min
        and max, for what it compares)."""
        iterate = self.budget.iterate

        def each(builtin: Callable[..., Any]) -> Callable[..., Any]:  # every argument is an iterable
            return lambda *iterables, **kwargs: builtin(*map(iterate, iterables), **kwargs)

        def after_function(builtin: Callable[..., Any]) -> Callable[..., Any]:  # map(f, *iterables)
            return lambda function, *iterables: builtin(function, *map(iterate, iterables))

        def hashing(builtin: Callable[..., Any]) -> Callable[..., Any]:
            # a big set is built item by item from Python, so the watchdog can stop one whose keys collide
            return lambda *iterables: builtin(*(interruptible(self.keys(iterate(i))) for i in iterables))

        def extremum(builtin: Callable[..., Any]) -> Callable[..., Any]:  # min(iterable) or min(a, b, ...)
            # a key that is a C method (text.count) would run the whole search in C, past the watchdog
            def checked(first: Any, *rest: Any, key: Any = None, **kwargs: Any) -> Any:
                items = [first, *rest] if rest else list(iterate(first))
                if key is None:
                    self._ordered(items, 1)
                else:
                    kwargs["key"] = self._keyed(key, 1)
                return builtin(*items, **kwargs) if rest else builtin(items, **kwargs)
            return checked

        def checked_sorted(iterable: Any, *, key: Any = None, reverse: Any = False) -> list[Any]:
            items = list(iterate(iterable))
            self.sort(items, items.sort, key, reverse)
            return items

        def finite_float(value: Any = 0.0) -> float:
            number = float(value)
            if number != number or number in (float("inf"), float("-inf")):
                raise ValueError(f"tools work with finite numbers, not {number}")
            return number

        checked = {"all": each(all), "any": each(any), "list": each(list), "tuple": each(tuple),
                   "set": hashing(set), "zip": each(zip), "min": extremum(min), "max": extremum(max),
                   "map": after_function(map), "filter": after_function(filter), "sorted": checked_sorted,
                   "float": finite_float, "int": self.int, "round": self.round,
                   "enumerate": lambda iterable, start=0: enumerate(iterate(iterable), start),
                   "sum": self.sum, "dict": self.dict, "str": self.str, "reversed": self.reversed}
        kinds = {checked[k.__name__]: k for k in (list, tuple, set, dict, str, int)}  # what isinstance is asked about

        def checked_isinstance(value: Any, kind: Any) -> bool:
            self.key(kind)  # looked up in `kinds` below: hashed
            kind = tuple(kinds.get(k, k) for k in kind) if type(kind) is tuple else kinds.get(kind, kind)
            return isinstance(value, kind)
        return {**checked, "isinstance": checked_isinstance}

    # methods that consume iterables, compare, search or build big strings -------------------------
    def method(self, obj: Any, name: str) -> Any:
        """A bound str/list/dict/set method named in CHECKED_METHODS (or SIZED_METHODS, on a long
        object), checked for unbounded work."""
        bound, checked = getattr(obj, name), self._METHODS[type(obj), name]
        return lambda *a, **k: checked(self, obj, bound, *a, **k)

    def _join(self, sep: str, bound: Callable[..., str], items: Iterable[Any]) -> str:
        items = list(self.budget.iterate(items))
        self.budget.sized(sum(len(i) if type(i) is str else 0 for i in items) + len(sep) * len(items), "str")
        return bound(items)

    def _replace(self, text: str, bound: Callable[..., str], old: str, new: str, count: int = -1) -> str:
        if type(old) is str and type(new) is str:
            self._pay(len(text) + len(old))
            times = text.count(old) if old else len(text) + 1
            if type(count) is int and count >= 0:
                times = min(times, count)
            self.budget.sized(len(text) + times * (len(new) - len(old)), "str")
        return bound(old, new, count)

    def _zfill(self, text: str, bound: Callable[..., str], width: int) -> str:
        if type(width) is int:
            self.budget.sized(width, "str")
        return bound(width)

    def _split(self, text: str, bound: Callable[..., list[str]], *args: Any, **kwargs: Any) -> list[str]:
        self.budget.sized(len(text), "str")
        return bound(*args, **kwargs)

    def _search(self, text: str, bound: Callable[..., Any], *args: Any) -> Any:
        """find / count / startswith / endswith on a long text: paid for the text and the needles."""
        self._pay(len(text) + sum(len(a) for a in args if type(a) is str))
        return bound(*args)

    def _strip(self, text: str, bound: Callable[..., str], chars: Any = None) -> str:
        """strip and friends look each character up in `chars`: a long `chars` costs per character."""
        self._pay(len(text) * (1 + len(chars) // 64) if type(chars) is str else len(text))
        return bound(chars)

    def _case(self, text: str, bound: Callable[..., str]) -> str:
        """lower / upper / title / capitalize: one character may become three ('ﬃ'.upper() is 'FFI')."""
        self.budget.sized(len(text) if text.isascii() else 3 * len(text), "str")
        return bound()

    def _copy(self, obj: Any, bound: Callable[..., Any]) -> Any:
        self.budget.charge(len(obj) // SIZE_PER_STEP)
        return bound()

    def _keyed_method(self, obj: Any, bound: Callable[..., Any], *args: Any) -> Any:
        """dict.get / pop / setdefault, set.add / discard reached other than at a call site."""
        if args:
            self.key(args[0])
        return bound(*args)

    def _consume(self, obj: Any, bound: Callable[..., Any], *others: Any, **kwargs: Any) -> Any:
        """extend / update / union...: each item taken in pays a step (a dict is passed on as it is);
        what a set or dict hashes is checked by `key`."""
        hashes = type(obj) is not list
        taken = []
        for other in others:
            if type(other) is dict:
                self.budget.charge(len(other))
                taken.append(other)
            elif hashes and type(obj) is dict:  # update(pairs): each pair's first item is a key
                taken.append([self._pair(p) for p in self.budget.iterate(other)])
            else:
                items = self.budget.iterate(other)
                taken.append(list(self.keys(items) if hashes and type(other) not in _HASHED else items))
        return bound(*taken, **kwargs)

    def _pair(self, pair: Any) -> Any:
        if type(pair) in (tuple, list) and pair:
            self.key(pair[0])
        return pair

    def _sort(self, obj: list[Any], bound: Callable[..., None], *, key: Any = None, reverse: Any = False) -> None:
        self.budget.charge(len(obj))
        return self.sort(obj, bound, key, reverse)



# (type, name) -> the check; built here, where `str` and `dict` are the builtins, not Guards' own
Guards._METHODS = {
    (str, "join"): Guards._join, (str, "replace"): Guards._replace, (str, "zfill"): Guards._zfill,
    (str, "split"): Guards._split, (list, "extend"): Guards._consume, (dict, "update"): Guards._consume,
    (set, "union"): Guards._consume, (set, "intersection"): Guards._consume, (set, "difference"): Guards._consume,
    (list, "sort"): Guards._sort, (list, "count"): Guards.search_list, (list, "index"): Guards.search_list,
    (list, "remove"): Guards.search_list, (dict, "get"): Guards._keyed_method,
    (dict, "setdefault"): Guards._keyed_method, (dict, "pop"): Guards._keyed_method,
    (set, "add"): Guards._keyed_method, (set, "discard"): Guards._keyed_method,
}
# checked only on an object longer than SMALL: on a short one each is a little C work
_SIZED_METHODS = {
    (str, "find"): Guards._search, (str, "count"): Guards._search, (str, "startswith"): Guards._search,
    (str, "endswith"): Guards._search, (str, "strip"): Guards._strip, (str, "lstrip"): Guards._strip,
    (str, "rstrip"): Guards._strip, (str, "lower"): Guards._case, (str, "upper"): Guards._case,
    (str, "title"): Guards._case, (str, "capitalize"): Guards._case, (list, "copy"): Guards._copy,
    (dict, "copy"): Guards._copy,
}
CHECKED_METHODS = frozenset(Guards._METHODS)
"""(type, name) of the methods that always go through Guards.method."""
SIZED_METHODS = frozenset(_SIZED_METHODS)
"""(type, name) of the methods that go through Guards.method on an object longer than SMALL."""
KEYED_METHODS = frozenset({"get", "pop", "setdefault", "add", "discard"})
"""Methods that hash their first argument: at a call site the policy checks it with `_key_`."""
Guards._METHODS.update(_SIZED_METHODS)
