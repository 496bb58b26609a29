"""Jinja's sandbox with bounded work, for the templates in domain.yaml (red-team 2026-12-06 R6).

Jinja's SandboxedEnvironment stops attribute escapes but not work: `{{ 'a' * 10**10 }}` asked for 10 GB,
two nested `range(100000)` loops and `pick('ab' * 10**9)` hung populate. Here every way a template can make
something big or loop long is bounded before it runs, and fails fast as a TemplateLimitError:
- `*`, `**`, `+` and `%` (Jinja's documented `intercepted_binops` / `call_binop`): no string, list or number
  past MAX_SIZE characters, items or MAX_INT_BITS bits, and no `%` format with a width past MAX_SIZE;
- `~` (concatenation) and the filters and string methods that grow text (center, indent, replace, format,
  join, ljust, zfill, expandtabs, ...): their result size is checked from their arguments first;
- loops: every `{% for %}` iteration, `loop(...)` recursion item and `range` item is charged to a per-render
  budget of MAX_STEPS, and a render may take at most MAX_SECONDS;
- the output of a render is at most MAX_SIZE characters.
Built-in objects cannot be changed (Jinja's immutable sandbox: no `list.append` doubling a list per loop).
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Iterable, Iterator, Sized
from contextlib import contextmanager
from typing import Any

from jinja2 import nodes
from jinja2.runtime import LoopContext
from jinja2.sandbox import ImmutableSandboxedEnvironment
from jinja2.visitor import NodeTransformer

# A domain's templates make short values (a name, an email, a date, a sentence of a task): 100k characters
# is far past any of them, and far below what hurts (R6 asked for 10^10).
MAX_SIZE = 100_000
MAX_INT_BITS = 4096  # as the tool sandbox's integers (domains/limits.py)
MAX_STEPS = 200_000  # loop iterations and range items per render: the built-in templates need a few hundred
MAX_SECONDS = 2.0  # per render: populate renders thousands, each in microseconds
_FORMAT_SPEC = re.compile(r"%[-#0 +]*(\*|\d+)?(?:\.(\*|\d+))?")
_NEW_FORMAT_SPEC = re.compile(r"\{[^{}]*?:[^{}]*?(\d+)[^{}]*\}")
_GROWING_METHODS = {"center", "ljust", "rjust", "zfill", "expandtabs"}  # str methods whose int is a width


class TemplateLimitError(ValueError):
    """A template that would make something too big or work too long; the message says which bound."""


_state = threading.local()


@contextmanager
def bounded_render() -> Iterator[None]:
    """A fresh step budget and deadline for one render (nested renders share the outer one)."""
    if getattr(_state, "depth", 0):
        _state.depth += 1
        try:
            yield
        finally:
            _state.depth -= 1
        return
    _state.depth, _state.steps, _state.deadline = 1, 0, time.monotonic() + MAX_SECONDS
    try:
        yield
    finally:
        _state.depth = 0


def charge(steps: int) -> None:
    """Count `steps` against the render's budget; TemplateLimitError past it or past its deadline."""
    if not getattr(_state, "depth", 0):
        return
    _state.steps += steps
    if _state.steps > MAX_STEPS:
        raise TemplateLimitError(f"more than {MAX_STEPS:,} loop steps in one template")
    if time.monotonic() > _state.deadline:
        raise TemplateLimitError(f"a template ran past {MAX_SECONDS:g} s")


def _size(value: Any) -> int:
    """How big a value is for the caps: characters of a string, items (and their characters) of a list."""
    if isinstance(value, (str, bytes)):
        return len(value)
    if isinstance(value, (list, tuple)):
        return len(value) + sum(len(v) for v in value if isinstance(v, (str, bytes)))
    return 0


def _check_size(size: int, what: str) -> None:
    if size > MAX_SIZE:
        raise TemplateLimitError(f"{what} would be {size:,} characters or items, over the {MAX_SIZE:,} cap")


def _bits(value: Any) -> int:
    return abs(int(value)).bit_length() if isinstance(value, (int, bool)) else 0


def _check_format(text: str, what: str) -> None:
    """No `%` or `{:}` format whose width or precision is past the cap, or taken from an argument (`*`)."""
    for width, precision in _FORMAT_SPEC.findall(text):
        for number in (width, precision):
            if number == "*" or (number and int(number) > MAX_SIZE):
                raise TemplateLimitError(f"{what}: a format width over {MAX_SIZE:,} (or `*`)")
    for number in _NEW_FORMAT_SPEC.findall(text):
        if int(number) > MAX_SIZE:
            raise TemplateLimitError(f"{what}: a format width over {MAX_SIZE:,}")


def check_binop(operator: str, left: Any, right: Any) -> None:
    """TemplateLimitError when `left operator right` would be too big, before it is computed."""
    if operator == "*":
        for seq, count in ((left, right), (right, left)):
            if isinstance(seq, (str, bytes, list, tuple)) and isinstance(count, int):
                _check_size(_size(seq) * max(count, 0), "a repetition (*)")
        if isinstance(left, int) and isinstance(right, int) and _bits(left) + _bits(right) > MAX_INT_BITS:
            raise TemplateLimitError(f"a product past {MAX_INT_BITS} bits")
    elif operator == "**":
        if isinstance(left, int) and isinstance(right, int) and abs(left) > 1 and \
                (right > MAX_INT_BITS or _bits(left) * right > MAX_INT_BITS):
            raise TemplateLimitError(f"a power past {MAX_INT_BITS} bits")
    elif operator == "+":
        if isinstance(left, (str, bytes, list, tuple)) and isinstance(right, (str, bytes, list, tuple)):
            _check_size(_size(left) + _size(right), "a sum (+)")
    elif operator == "%" and isinstance(left, str):
        _check_format(left, "a % format")


def check_call(obj: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    """TemplateLimitError when a call of a str method would grow past the cap; charges a `loop(...)` call."""
    charge(1)
    method = getattr(obj, "__wrapped__", obj)  # the sandbox hands out str.format wrapped
    owner, name = getattr(method, "__self__", None), getattr(method, "__name__", "")
    if not isinstance(owner, str):
        return
    ints = [a for a in (*args, *kwargs.values()) if isinstance(a, int)]
    if name in _GROWING_METHODS:
        widths = [a * (8 if name == "expandtabs" else 1) for a in ints]
        _check_size(max([len(owner), *widths]) * (len(owner) if name == "expandtabs" else 1), f"str.{name}")
    elif name == "replace" and len(args) >= 2 and isinstance(args[1], str):
        _check_size(len(owner) + (len(owner) + 1) * len(args[1]), "str.replace")
    elif name == "join" and args:
        items = args[0]
        if isinstance(items, Sized):
            charge(len(items))
            _check_size(_size(list(items)) + len(owner) * len(items), "str.join")
    elif name in ("format", "format_map"):
        _check_format(owner, "str.format")


def _bounded_filter(name: str, original: Any) -> Any:
    """A growing filter, its result size checked from its arguments before it runs."""

    def bounded(*args: Any, **kwargs: Any) -> Any:
        values = [a for a in args if not hasattr(a, "environment")]  # drop an eval context / environment
        value = values[0] if values else ""
        rest = values[1:]
        ints = [a for a in (*rest, *kwargs.values()) if isinstance(a, int) and not isinstance(a, bool)]
        text = str(value) if isinstance(value, str) else ""
        if name in ("center", "wordwrap", "truncate"):
            _check_size(max([len(text), *ints]), f"|{name}")
        elif name == "indent":
            _check_size(len(text) + (text.count("\n") + 1) * max([4, *ints]), "|indent")
        elif name == "replace":
            new = rest[1] if len(rest) > 1 else kwargs.get("new", "")
            _check_size(len(text) + (len(text) + 1) * len(str(new)), "|replace")
        elif name == "format":
            _check_format(text, "|format")
        elif name == "batch":
            _check_size(max(ints, default=0), "|batch")
        elif name == "join" and isinstance(value, Iterable) and not isinstance(value, str):
            items = list(value)  # an iterator is read once: the filter gets the list
            args = tuple(items if a is value else a for a in args)
            charge(len(items))
            sep = rest[0] if rest else kwargs.get("d", "")
            _check_size(sum(len(str(i)) for i in items) + len(items) * len(str(sep)), "|join")
        return original(*args, **kwargs)

    for attribute in ("jinja_pass_arg",):  # pass_context / pass_eval_context / pass_environment markers
        if hasattr(original, attribute):
            setattr(bounded, attribute, getattr(original, attribute))
    return bounded


GROWING_FILTERS = ("center", "indent", "replace", "format", "wordwrap", "batch", "join", "truncate")


def _counted(iterable: Any) -> Iterator[Any]:
    for item in iterable:
        charge(1)
        yield item


def _concat(*parts: Any) -> str:
    texts = [str(p) for p in parts]
    _check_size(sum(map(len, texts)), "a concatenation (~)")
    return "".join(texts)


def _range(*args: int) -> range:
    numbers = range(*args)
    charge(len(numbers))
    return numbers


class _Bound(NodeTransformer):
    """Each `for` loop's iterable counted per item, each `~` concatenation size-checked."""

    def visit_For(self, node: nodes.For) -> nodes.Node:
        node = self.generic_visit(node)
        node.iter = nodes.Call(nodes.Name("_ts_counted", "load"), [node.iter], [], None, None, lineno=node.lineno)
        return node

    def visit_Concat(self, node: nodes.Concat) -> nodes.Node:
        node = self.generic_visit(node)
        return nodes.Call(nodes.Name("_ts_concat", "load"), list(node.nodes), [], None, None, lineno=node.lineno)


class BoundedEnvironment(ImmutableSandboxedEnvironment):
    """Jinja's immutable sandbox, every growth and loop bounded (see the module's docstring)."""

    intercepted_binops = frozenset({"*", "**", "+", "%"})

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.globals.update(range=_range, _ts_counted=_counted, _ts_concat=_concat)
        for name in GROWING_FILTERS:
            if name in self.filters:
                self.filters[name] = _bounded_filter(name, self.filters[name])

    def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
        check_binop(operator, left, right)
        return super().call_binop(context, operator, left, right)

    def call(__self, __context: Any, __obj: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: N805 (Jinja's names)
        check_call(__obj, args, kwargs)
        if isinstance(getattr(__obj, "__self__", None), LoopContext) or isinstance(__obj, LoopContext):
            args = (_counted(args[0]), *args[1:]) if args else args  # a recursive loop's next level
        return super().call(__context, __obj, *args, **kwargs)

    def _generate(self, source: Any, name: Any, filename: Any, defer_init: bool = False) -> Any:
        """Jinja's hook between parsing and code generation: the bounds go into the tree here."""
        return super()._generate(_Bound().visit(source), name, filename, defer_init)


def check_output(value: Any) -> Any:
    """The rendered value, if it is within MAX_SIZE."""
    _check_size(_size(value), "a template's output")
    return value
