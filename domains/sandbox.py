"""Compile a domain's `tools.py` with RestrictedPython, and the guards it runs under.

Tool source is untrusted (an LLM may have written it). It may not import, define classes,
touch names or attributes that start with `_`, or call open/eval/exec/getattr: those are
refused at compile time with the file and line. At run time attribute access is limited to
the record API, the clock and a short list of str/dict/list methods, and every loop draws
from a step budget, so a tool that never ends is stopped with a clear error.
"""

from __future__ import annotations

import ast
import builtins
import operator
import unicodedata
from collections.abc import Iterable, Iterator
from types import CodeType
from typing import Any

from RestrictedPython import RestrictingNodeTransformer, compile_restricted_exec
from RestrictedPython.Guards import guarded_unpack_sequence

STEP_BUDGET = 1_000_000


class ToolError(Exception):
    """A business-rule failure a tool reports to the agent (insufficient funds, wrong status...)."""


class ToolCompileError(ValueError):
    """Tool source that breaks the sandbox rules; the message names the file and line."""


class StepBudgetExceeded(RuntimeError):
    """A tool looped past its step budget."""


_FORBIDDEN_NODES = {
    ast.Import: "imports are not allowed",
    ast.ImportFrom: "imports are not allowed",
    ast.ClassDef: "classes are not allowed",
    ast.Global: "global statements are not allowed",
    ast.Nonlocal: "nonlocal statements are not allowed",
    ast.AsyncFunctionDef: "async functions are not allowed",
    ast.Await: "await is not allowed",
    ast.Yield: "generators are not allowed",
    ast.YieldFrom: "generators are not allowed",
}
_FORBIDDEN_CALLS = {"open", "eval", "exec", "compile", "getattr", "setattr", "delattr", "vars",
                    "globals", "locals", "dir", "type", "super", "__import__", "breakpoint", "input"}


class _ToolPolicy(RestrictingNodeTransformer):
    """RestrictedPython's policy, no dangerous builtins by name, a step tick in every while loop.

    Imports, classes and the other _FORBIDDEN_NODES are refused before this policy runs.
    """

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if node.id in _FORBIDDEN_CALLS:
            self.error(node, f"{node.id!r} is not available to tools")
        return super().visit_Name(node)

    def visit_While(self, node: ast.While) -> ast.AST:
        node = super().visit_While(node)
        tick = ast.Expr(ast.Call(ast.Name("_tick_", ast.Load()), [], []))
        node.body.insert(0, ast.copy_location(tick, node))
        ast.fix_missing_locations(node)
        return node


def compile_tool_module(tree: ast.Module, filename: str) -> CodeType:
    """Compile a parsed tools module under the policy; raise ToolCompileError naming each line."""
    for node in ast.walk(tree):
        reason = _FORBIDDEN_NODES.get(type(node))
        if reason:
            raise ToolCompileError(f"{filename}:{node.lineno}: {reason}")
    result = compile_restricted_exec(tree, filename=filename, policy=_ToolPolicy)
    if result.errors:
        raise ToolCompileError("; ".join(f"{filename}: {e}" for e in result.errors))
    return result.code


class StepBudget:
    def __init__(self) -> None:
        self.left = STEP_BUDGET

    def reset(self) -> None:
        self.left = STEP_BUDGET

    def tick(self) -> None:
        self.left -= 1
        if self.left < 0:
            raise StepBudgetExceeded(f"tool exceeded its budget of {STEP_BUDGET:,} loop steps")

    def iterate(self, iterable: Iterable[Any]) -> Iterator[Any]:
        """Iterate, paying one step per item: up front when the length is known (C speed)."""
        if isinstance(iterable, (list, tuple, dict, str, set, frozenset, range)):
            self.left -= len(iterable)
            if self.left < 0:
                raise StepBudgetExceeded(f"tool exceeded its budget of {STEP_BUDGET:,} loop steps")
            return iter(iterable)
        return self._counted(iterable)

    def _counted(self, iterable: Iterable[Any]) -> Iterator[Any]:
        for item in iterable:
            self.tick()
            yield item


_ALLOWED_METHODS: dict[type, frozenset[str]] = {
    str: frozenset({"lower", "upper", "strip", "lstrip", "rstrip", "startswith", "endswith", "split",
                    "join", "replace", "title", "capitalize", "isdigit", "isalpha", "find", "count",
                    "zfill"}),
    dict: frozenset({"get", "keys", "values", "items", "copy", "update", "pop", "setdefault"}),
    list: frozenset({"append", "extend", "index", "count", "sort", "copy", "pop", "insert", "remove"}),
    set: frozenset({"add", "discard", "union", "intersection", "difference"}),
}


_ALLOWED_PAIRS = {(kind, name) for kind, names in _ALLOWED_METHODS.items() for name in names}


def _guarded_getattr(obj: Any, name: str, *default: Any) -> Any:
    kind = type(obj)
    if (kind, name) in _ALLOWED_PAIRS:  # the hot path: str/dict/list methods
        return getattr(obj, name)
    if not name.startswith("_") and name in getattr(kind, "TOOL_API", ()):
        return getattr(obj, name)
    raise AttributeError(f"attribute {name!r} of {kind.__name__} is not available to tools")


def _iter_unpack_sequence(iterable: Iterable[Any], spec: dict[str, Any], getiter: Any) -> Iterator[Any]:
    """`for a, b in ...`: RestrictedPython's guard, except that flat tuples (dict items, zips,
    enumerates) pass as they are: a tuple's own iteration runs no tool code."""
    flat = not spec["childs"]
    for item in getiter(iterable):
        yield item if flat and type(item) is tuple else guarded_unpack_sequence(item, spec, getiter)


_INPLACE = {"+=": operator.iadd, "-=": operator.isub, "*=": operator.imul, "/=": operator.itruediv,
            "//=": operator.ifloordiv, "%=": operator.imod, "|=": operator.ior, "&=": operator.iand}


def _inplace(op: str, target: Any, value: Any) -> Any:
    if op not in _INPLACE:
        raise ToolCompileError(f"operator {op} is not available to tools")
    return _INPLACE[op](target, value)


_SAFE_BUILTINS = {name: getattr(builtins, name)
                  for name in ("abs", "all", "any", "bool", "dict", "enumerate", "filter", "float", "int",
                               "isinstance", "len", "list", "map", "max", "min", "range", "reversed",
                               "round", "set", "sorted", "str", "sum", "tuple", "zip")}


# Letters that Unicode does not decompose into a base letter plus accents.
_UNDECOMPOSED = str.maketrans({"ß": "ss", "ẞ": "SS", "ð": "d", "Ð": "D", "þ": "th", "Þ": "Th", "ø": "o", "Ø": "O",
                               "æ": "ae", "Æ": "AE", "œ": "oe", "Œ": "OE", "ł": "l", "Ł": "L", "đ": "d", "Đ": "D",
                               "ı": "i"})


def digits_of(text: str) -> str:
    """The digits of a text, in order: how tools compare phone numbers and codes in any format."""
    return "".join(filter(str.isdigit, text))


def unaccent(text: str) -> str:
    """The text without accents ("Córdoba" -> "Cordoba", "Straße" -> "Strasse"): for matching names."""
    decomposed = unicodedata.normalize("NFKD", text.translate(_UNDECOMPOSED))
    return "".join(c for c in decomposed if not unicodedata.combining(c))


# Text helpers tools would otherwise write as per-character loops, which the guards make slow.
_HELPERS = {"digits_of": digits_of, "unaccent": unaccent}


def sandbox_globals(budget: StepBudget, **names: Any) -> dict[str, Any]:
    """The globals a compiled tools module executes in; `names` adds db, clock and friends."""
    return {
        "__builtins__": {**_SAFE_BUILTINS, **_HELPERS},
        "__name__": "tools",
        "_getattr_": _guarded_getattr,
        "_getitem_": operator.getitem,
        "_write_": lambda obj: obj,
        "_getiter_": budget.iterate,
        "_iter_unpack_sequence_": _iter_unpack_sequence,
        "_unpack_sequence_": guarded_unpack_sequence,
        "_inplacevar_": _inplace,
        "_apply_": lambda fn, *args, **kwargs: fn(*args, **kwargs),
        "_tick_": budget.tick,
        "ToolError": ToolError,
        **names,
    }

