"""Compile a domain's `tools.py` with RestrictedPython, and the guards it runs under.

Tool source is untrusted (an LLM or a stranger may have written it). `check_tool_module` is the
one check every copy of tool code passes, in toolscale and in exported packages: at module level
only functions and literal constants, at most one `@tool("read"|"write")` per function, type
hints from a short whitelist, literal defaults, no duplicate or reserved names. Then the body may
not import, define classes, touch names or attributes that start with `_`, use `with`, or call
open/eval/exec/getattr: all refused at compile time with the file and line. At run time
attribute reads are limited to the record API, the clock and a short list of str/dict/list
methods; attributes of anything but the tool's own dicts and lists cannot be written; and
operators, comparisons, builtins and methods that can do unbounded work (or hash a value nested
deep enough to overflow the C stack) go through guards.Guards.
"""

from __future__ import annotations

import ast
import builtins
import keyword
import math
import operator
import re
import threading
import unicodedata
from collections.abc import Iterable, Iterator
from types import CodeType
from typing import Any, Literal

from RestrictedPython import RestrictingNodeTransformer, compile_restricted_exec
from RestrictedPython.Guards import guarded_unpack_sequence

from .costs import SMALL
from .guards import API_CALL_STEPS, CHECKED_METHODS, KEYED_METHODS, MAX_INT_BITS, SIZED_METHODS, Guards
from .limits import StepBudget


class ToolError(Exception):
    """A business-rule failure a tool reports to the agent (insufficient funds, wrong status...)."""


class ToolCompileError(ValueError):
    """Tool source that breaks the sandbox rules; the message names the file and line, one line per
    problem (a model's repair round can then fix them all at once)."""

    @classmethod
    def of(cls, problems: list[str]) -> ToolCompileError:
        return cls("\n".join(dict.fromkeys(problems)))


# CPython 3.11 keeps the ast module's conversion depth per interpreter, not per thread: two threads
# parsing or compiling at once may fail with "SystemError: AST constructor recursion depth mismatch"
# (gh-106905; it cost a default run its railway domain). Tools are parsed and compiled one at a time.
_AST_LOCK = threading.Lock()

_FORBIDDEN_NODES = {
    ast.Import: "imports are not allowed",
    ast.ImportFrom: "imports are not allowed",
    ast.ClassDef: "classes are not allowed",
    ast.Global: "global statements are not allowed",
    ast.Nonlocal: "nonlocal statements are not allowed",
    ast.AsyncFunctionDef: "async functions are not allowed",
    ast.AsyncFor: "async loops are not allowed",
    ast.AsyncWith: "with statements are not allowed",
    ast.With: "with statements are not allowed",
    ast.Await: "await is not allowed",
    ast.Yield: "generators are not allowed",
    ast.YieldFrom: "generators are not allowed",
}
_FORBIDDEN_CALLS = {"open", "eval", "exec", "compile", "getattr", "setattr", "delattr", "vars",
                    "globals", "locals", "dir", "type", "super", "__import__", "breakpoint", "input",
                    "id", "hash", "repr", "format", "iter", "next", "object", "memoryview", "print"}
# The exceptions a tool may name in `except`; the limits are BaseExceptions, none of these.
CATCHABLE = {name: getattr(builtins, name) for name in (
    "Exception", "ArithmeticError", "LookupError", "ValueError", "TypeError", "KeyError", "IndexError",
    "ZeroDivisionError")}
_CHECKED_OPERATORS = {ast.Add: "_add_", ast.Mult: "_mul_", ast.Pow: "_pow_", ast.LShift: "_lshift_",
                      ast.Mod: "_mod_"}
# checked unless one side is a constant: with a constant, each is cheap and hashes nothing of the tool's
_CHECKED_UNLESS_CONSTANT = {ast.FloorDiv: "_floordiv_", ast.Sub: "_sub_", ast.BitOr: "_or_", ast.BitAnd: "_and_",
                            ast.BitXor: "_xor_"}
_COMPARISONS = {ast.Eq: ("_eq_", "=="), ast.NotEq: ("_ne_", "!="), ast.Lt: ("_lt_", "<"), ast.LtE: ("_le_", "<="),
                ast.Gt: ("_gt_", ">"), ast.GtE: ("_ge_", ">="), ast.In: ("_in_", "in"),
                ast.NotIn: ("_not_in_", "not in"), ast.Is: (None, "is"), ast.IsNot: (None, "is not")}
# Tool names an exported package's toolkit (τ²-bench's ToolKitBase and ours) already uses.
RESERVED_TOOL_NAMES = frozenset({
    "tools", "use_tool", "get_tools", "has_tool", "is_discoverable", "get_discoverable_tools",
    "has_discoverable_tool", "tool_type", "tool_mutates_state", "get_statistics", "update_db",
    "get_db_hash", "db", "call", "fork", "state_hash", "tool", "mro",
    # names the generated tools.py itself uses
    "str", "int", "float", "bool", "list", "dict", "is_tool"})
_TOOL_NAME = re.compile(r"[a-z][a-z0-9_]*")


def _call(name: str, *args: ast.expr) -> ast.Call:
    return ast.Call(ast.Name(name, ast.Load()), list(args), [])


def _constant(node: ast.expr) -> bool:
    """A literal: a constant, or a list or tuple display of literals (bounded by the source)."""
    return isinstance(node, ast.Constant) or (
        isinstance(node, (ast.Tuple, ast.List)) and all(_constant(e) for e in node.elts))


def _key(node: ast.expr) -> ast.expr:
    """`node` as a value Python will hash: checked by `_key_` unless it is a literal."""
    return node if _constant(node) else ast.copy_location(_call("_key_", node), node)


def _compare_checked(op: ast.cmpop, left: ast.expr, right: ast.expr) -> bool:
    """Whether `left op right` needs its guard: not with a literal on either side (a literal bounds
    the work, and hashes nothing the tool built), except `x in {literal set}`, which hashes x, and
    `0.5 in xs`, which may search a range item by item (an int is looked up in a range directly)."""
    if isinstance(op, (ast.Is, ast.IsNot)):
        return False
    if isinstance(op, (ast.In, ast.NotIn)):
        return not (_constant(right) or isinstance(left, ast.Constant) and type(left.value) is int)
    return not (_constant(left) or _constant(right))


class _ToolPolicy(RestrictingNodeTransformer):
    """RestrictedPython's policy, plus: no dangerous builtins by name, a step tick in every while
    loop and function call, checked operators, comparisons and f-string fields, `*x` through the
    budget, every value Python will hash through `_key_` (see costs.py for the list), integer
    literals within MAX_INT_BITS, and exception handlers that name only CATCHABLE exceptions.

    Imports, classes and the other _FORBIDDEN_NODES are refused before this policy runs.
    """

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if node.id in _FORBIDDEN_CALLS:
            self.error(node, f"{node.id!r} is not available to tools")
        return super().visit_Name(node)

    def _ticked(self, node: ast.AST, body: list[ast.stmt]) -> None:
        body.insert(0, ast.copy_location(ast.Expr(_call("_tick_")), node))
        ast.fix_missing_locations(node)

    def visit_While(self, node: ast.While) -> ast.AST:
        node = super().visit_While(node)
        self._ticked(node, node.body)
        return node

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.AST:
        node = super().visit_FunctionDef(node)
        self._ticked(node, node.body)  # recursion pays a step per call
        return node

    def visit_Lambda(self, node: ast.Lambda) -> ast.AST:
        node = super().visit_Lambda(node)
        node.body = ast.copy_location(ast.BoolOp(ast.Or(), [_call("_tick_"), node.body]), node.body)
        return ast.fix_missing_locations(node)

    def visit_BinOp(self, node: ast.BinOp) -> ast.AST:
        node = super().visit_BinOp(node)
        guard = _CHECKED_OPERATORS.get(type(node.op))
        if guard is None and not (_constant(node.left) or _constant(node.right)):
            guard = _CHECKED_UNLESS_CONSTANT.get(type(node.op))
        if guard is None:
            return node
        return ast.fix_missing_locations(ast.copy_location(_call(guard, node.left, node.right), node))

    def visit_Constant(self, node: ast.Constant) -> ast.AST:
        if type(node.value) is int and node.value.bit_length() > MAX_INT_BITS:
            self.error(node, f"an integer literal of {node.value.bit_length():,} bits is past the limit of "
                             f"{MAX_INT_BITS:,}")
        return super().visit_Constant(node)

    def visit_Compare(self, node: ast.Compare) -> ast.AST:
        """Comparisons through the guards (costs.CheckedWork.eq, contains...): `a == b` becomes
        `_eq_(a, b)`; a chain `a < b < c` becomes `_chain_(a, "<", lambda: b, "<", lambda: c)`,
        which evaluates each operand once and stops at the first false comparison, as Python does."""
        node = super().visit_Compare(node)
        operands = [node.left, *node.comparators]
        if not any(_compare_checked(op, operands[i], operands[i + 1]) for i, op in enumerate(node.ops)):
            return node
        if len(node.ops) == 1:
            new = _call(_COMPARISONS[type(node.ops[0])][0], node.left, node.comparators[0])
        else:
            no_arguments = ast.arguments(posonlyargs=[], args=[], vararg=None, kwonlyargs=[], kw_defaults=[],
                                         kwarg=None, defaults=[])
            parts: list[ast.expr] = [node.left]
            for op, right in zip(node.ops, node.comparators):
                parts += [ast.Constant(_COMPARISONS[type(op)][1]), ast.Lambda(no_arguments, right)]
            new = _call("_chain_", *parts)
        return ast.fix_missing_locations(ast.copy_location(new, node))

    def visit_Subscript(self, node: ast.Subscript) -> ast.AST:
        node = super().visit_Subscript(node)
        if isinstance(node, ast.Call):  # a read: _getitem_(value, key)
            if not isinstance(node.args[1], ast.Slice):
                node.args[1] = _key(node.args[1])
        elif not isinstance(node.slice, ast.Slice):  # a write or del: _write_(value)[key]
            node.slice = _key(node.slice)
        return ast.fix_missing_locations(node)

    def visit_Set(self, node: ast.Set) -> ast.AST:
        node = super().visit_Set(node)
        node.elts = [ast.copy_location(ast.Starred(_call("_keys_", e.value), ast.Load()), e)
                     if isinstance(e, ast.Starred) else _key(e) for e in node.elts]
        return ast.fix_missing_locations(node)

    def visit_Dict(self, node: ast.Dict) -> ast.AST:
        node = super().visit_Dict(node)
        node.keys = [k if k is None else _key(k) for k in node.keys]  # None: `**mapping`, hashed already
        return ast.fix_missing_locations(node)

    def visit_SetComp(self, node: ast.SetComp) -> ast.AST:
        node = super().visit_SetComp(node)
        node.elt = _key(node.elt)
        return ast.fix_missing_locations(node)

    def visit_DictComp(self, node: ast.DictComp) -> ast.AST:
        node = super().visit_DictComp(node)
        node.key = _key(node.key)
        return ast.fix_missing_locations(node)

    def visit_Call(self, node: ast.Call) -> ast.AST:
        """`d.get(k)` (and the other KEYED_METHODS) at a call site: the method is taken as it is
        (`_keyed_getattr_`) and `k` checked by `_key_`, so a lookup by a literal costs nothing extra."""
        keyed = (isinstance(node.func, ast.Attribute) and node.func.attr in KEYED_METHODS and node.args
                 and not any(isinstance(a, ast.Starred) for a in node.args)
                 and all(k.arg is not None for k in node.keywords))
        node = super().visit_Call(node)
        func = node.func
        if keyed and isinstance(func, ast.Call) and isinstance(func.func, ast.Name) and func.func.id == "_getattr_":
            func.func = ast.copy_location(ast.Name("_keyed_getattr_", ast.Load()), func.func)
            node.args[0] = _key(node.args[0])
        return ast.fix_missing_locations(node)

    def visit_FormattedValue(self, node: ast.FormattedValue) -> ast.AST:
        node = super().visit_FormattedValue(node)
        spec = node.format_spec if node.format_spec is not None else ast.Constant("")
        node.value = ast.copy_location(_call("_format_", node.value, ast.Constant(node.conversion), spec), node)
        node.conversion, node.format_spec = -1, None
        return ast.fix_missing_locations(node)

    def visit_Starred(self, node: ast.Starred) -> ast.AST:
        node = super().visit_Starred(node)
        if isinstance(node.ctx, ast.Load):
            node.value = ast.copy_location(_call("_getiter_", node.value), node.value)
            ast.fix_missing_locations(node)
        return node

    def visit_Try(self, node: ast.Try) -> ast.AST:
        for stmt in node.finalbody:
            for inner in ast.walk(stmt):
                if isinstance(inner, (ast.Return, ast.Break, ast.Continue)):
                    self.error(inner, "return, break and continue are not allowed in finally (they swallow errors)")
        return super().visit_Try(node)

    def visit_ExceptHandler(self, node: ast.ExceptHandler) -> ast.AST:
        if node.type is None:  # a bare except catches what `except Exception` catches: not the limits
            node.type = ast.copy_location(ast.Name("Exception", ast.Load()), node)
        names = node.type.elts if isinstance(node.type, ast.Tuple) else [node.type]
        for name in names:
            if not (isinstance(name, ast.Name) and (name.id in CATCHABLE or name.id == "ToolError")):
                self.error(node, f"except may name only ToolError or {', '.join(CATCHABLE)}")
        return super().visit_ExceptHandler(node)


def compile_tool_module(tree: ast.Module, filename: str) -> CodeType:
    """Compile a checked tools module under the policy; raise ToolCompileError naming each line."""
    forbidden = [f"{filename}:{node.lineno}: {_FORBIDDEN_NODES[type(node)]}" for node in ast.walk(tree)
                 if type(node) in _FORBIDDEN_NODES]
    if forbidden:
        raise ToolCompileError.of(forbidden)
    with _AST_LOCK:
        result = compile_restricted_exec(tree, filename=filename, policy=_ToolPolicy)
    if result.errors:
        raise ToolCompileError.of([f"{filename}: {e}" for e in result.errors])
    return result.code


# the tool module's structure --------------------------------------------------------------
_HINT_TYPES = {"str": str, "int": int, "float": float, "bool": bool}
_RETURN_TYPES = {**_HINT_TYPES, "dict": dict, "list": list}
ToolKind = Literal["read", "write"]


def _literal(node: ast.expr, where: str) -> Any:
    """A literal constant's value; ToolCompileError for anything else (and for inf and NaN, which
    have no literal form to write back)."""
    try:
        value = ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        pass
    else:
        if all(math.isfinite(v) for v in _floats(value)):
            return value
    raise ToolCompileError(f"{where}: {ast.unparse(node)[:80]!r} is not a literal constant")


def _floats(value: Any) -> Iterator[float]:
    """The floats (and complex parts) inside a literal value."""
    if isinstance(value, float):
        yield value
    elif isinstance(value, complex):
        yield from (value.real, value.imag)
    elif isinstance(value, (list, tuple, set, frozenset)):
        for item in value:
            yield from _floats(item)
    elif isinstance(value, dict):
        for item in (*value.keys(), *value.values()):
            yield from _floats(item)


def hint_type(node: ast.expr | None, where: str, returns: bool = False) -> Any:
    """The Python type a whitelisted hint names: str, int, float, bool, list[...], Literal[...] and
    X | None for parameters; also dict, list and None for return hints. ToolCompileError otherwise."""
    if node is None:
        raise ToolCompileError(f"{where}: every tool parameter needs a type hint")
    names = _RETURN_TYPES if returns else _HINT_TYPES
    if isinstance(node, ast.Name) and node.id in names:
        return names[node.id]
    if returns and isinstance(node, ast.Constant) and node.value is None:
        return None
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name):
        if node.value.id == "list":
            return list[hint_type(node.slice, where)]
        if node.value.id == "Literal":
            elts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
            values = tuple(_literal(e, where) for e in elts)
            kinds = {type(v) for v in values}
            if not values or not (kinds <= {str} or kinds <= {int} or kinds <= {int, float}) \
                    or any(isinstance(v, str) and len(v) > 200 for v in values):
                raise ToolCompileError(f"{where}: Literal[...] takes texts or numbers of one kind")
            return Literal[values]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr) \
            and isinstance(node.right, ast.Constant) and node.right.value is None:
        return hint_type(node.left, where, returns) | None
    raise ToolCompileError(f"{where}: unsupported type hint {ast.unparse(node)[:80]!r} (use str, int, float, bool, list[...], "
                           "Literal[...] or X | None" + ("; dict or list for a return" if returns else "") + ")")


def _tool_kind(fn: ast.FunctionDef, filename: str) -> ToolKind | None:
    if len(fn.decorator_list) > 1:
        raise ToolCompileError(f"{filename}:{fn.lineno}: {fn.name!r} has more than one decorator")
    for deco in fn.decorator_list:
        if (isinstance(deco, ast.Call) and isinstance(deco.func, ast.Name) and deco.func.id == "tool"
                and len(deco.args) == 1 and isinstance(deco.args[0], ast.Constant)
                and deco.args[0].value in ("read", "write") and not deco.keywords):
            return deco.args[0].value
        raise ToolCompileError(f"{filename}:{deco.lineno}: the only decorator allowed is "
                               '@tool("read") or @tool("write")')
    return None


def _check_function(fn: ast.FunctionDef, kind: ToolKind | None, filename: str) -> None:
    where = f"{filename}:{fn.lineno}: {'tool' if kind else 'function'} {fn.name!r}"
    args = fn.args
    if kind and (args.vararg or args.kwarg or args.posonlyargs or args.kwonlyargs):
        raise ToolCompileError(f"{where}: only plain named parameters are allowed")
    if kind and (fn.name in RESERVED_TOOL_NAMES or not _TOOL_NAME.fullmatch(fn.name)):
        raise ToolCompileError(f"{where}: a tool's name is lower_snake_case and not one the toolkit of an "
                               "exported package uses")
    for arg in [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]:
        if arg is None:
            continue
        if arg.arg == "self" or keyword.iskeyword(arg.arg):
            raise ToolCompileError(f"{where}: a parameter may not be named {arg.arg!r}")
        if arg.annotation is not None or kind:
            hint_type(arg.annotation, f"{where}, parameter {arg.arg!r}")
    if fn.returns is not None:
        hint_type(fn.returns, f"{where}, return hint", returns=True)
    for default in [*args.defaults, *(d for d in args.kw_defaults if d is not None)]:
        _literal(default, f"{where}, a default")  # evaluated when the module runs: constants only


def _check_top_level(node: ast.stmt, filename: str, kinds: dict[str, ToolKind]) -> list[str]:
    """The names a module-level statement defines (a tool's kind goes into `kinds`); ToolCompileError
    for a statement the module may not hold."""
    if isinstance(node, ast.FunctionDef):
        kind = _tool_kind(node, filename)
        _check_function(node, kind, filename)
        if kind is not None:
            kinds[node.name] = kind
        return [node.name]
    if isinstance(node, ast.Assign) and all(isinstance(t, ast.Name) for t in node.targets):
        _literal(node.value, f"{filename}:{node.lineno}: module-level values must be constants")
        return [t.id for t in node.targets]
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
        return []
    raise ToolCompileError(f"{filename}:{node.lineno}: only functions and constants may appear at module level")


def check_tool_module(tree: ast.Module, filename: str = "tools.py", keep_hints: bool = False) -> dict[str, ToolKind]:
    """Check a parsed tools module's structure and hints and return {tool name: "read" | "write"}
    in source order; then strip what the runtime does not run (decorators and hints), unless
    `keep_hints` (the caller reads them, then calls strip_hints)."""
    kinds: dict[str, ToolKind] = {}
    seen: dict[str, int] = {}
    problems: list[str] = []  # every node is checked: a repair round sees all of them
    for node in tree.body:
        try:
            names = _check_top_level(node, filename, kinds)
        except ToolCompileError as exc:
            problems.append(str(exc))
            continue
        for name in names:
            if name in seen:
                problems.append(f"{filename}:{node.lineno}: {name!r} is defined twice (first on line {seen[name]})")
            seen.setdefault(name, node.lineno)
    if not kinds and not problems:
        problems.append(f"{filename}: defines no @tool functions")
    if problems:
        raise ToolCompileError.of(problems)
    if not keep_hints:
        strip_hints(tree)
    return kinds


def strip_hints(tree: ast.Module) -> None:
    """Drop decorators and type hints: they were checked, and are never run."""
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef):
            node.decorator_list = []
            node.returns = None
        elif isinstance(node, ast.arg):
            node.annotation = None


def parse_python(source: str, filename: str = "<unknown>") -> ast.Module:
    """ast.parse, one thread at a time (see _AST_LOCK): what every parse in toolscale goes through."""
    with _AST_LOCK:
        return ast.parse(source, filename=filename)


def parse_tools(source: str, filename: str = "tools.py") -> ast.Module:
    try:
        return parse_python(source, filename)
    except SyntaxError as exc:
        raise ToolCompileError(f"{filename}:{exc.lineno}: {exc.msg}") from None
    except (ValueError, MemoryError, RecursionError) as exc:  # NUL bytes, nesting too deep
        raise ToolCompileError(f"{filename}: cannot be parsed ({type(exc).__name__})") from None


def compile_tools(source: str, filename: str = "tools.py") -> tuple[CodeType, dict[str, ToolKind]]:
    """(code, {tool: kind}) for tool source, through every check: what toolscale's loader runs and
    what an exported package runs at import."""
    tree = parse_tools(source, filename)
    kinds = check_tool_module(tree, filename)
    return compile_tool_module(tree, filename), kinds


# run time ---------------------------------------------------------------------------------
_ALLOWED_METHODS: dict[type, frozenset[str]] = {
    str: frozenset({"lower", "upper", "strip", "lstrip", "rstrip", "startswith", "endswith", "split",
                    "join", "replace", "title", "capitalize", "isdigit", "isalpha", "find", "count",
                    "zfill"}),
    dict: frozenset({"get", "keys", "values", "items", "copy", "update", "pop", "setdefault"}),
    list: frozenset({"append", "extend", "index", "count", "sort", "copy", "pop", "insert", "remove"}),
    set: frozenset({"add", "discard", "union", "intersection", "difference"}),
}
_ALLOWED_PAIRS = {(kind, name) for kind, names in _ALLOWED_METHODS.items() for name in names}
_WRITABLE = (dict, list)


_MUTATING = frozenset({"append", "extend", "insert", "remove", "pop", "sort", "update", "setdefault", "add",
                       "discard"})


def run_module(code: CodeType, namespace: dict[str, Any]) -> None:
    """Run a compiled tools module in `namespace` (from sandbox_globals), then seal the lists, dicts
    and sets its constants hold: state kept there would outlive a call, outside the database."""
    exec(code, namespace)  # compiled under the sandbox policy
    frozen, given = namespace["_frozen_"], namespace["__builtins__"]
    pending = [v for v in namespace.values() if type(v) in (list, dict, set) and v is not frozen and v is not given]
    while pending:
        value = pending.pop()
        if type(value) in (list, dict, set) and id(value) not in frozen:
            frozen.add(id(value))
            pending.extend(value.values() if type(value) is dict else value)


def _iter_unpack_sequence(iterable: Iterable[Any], spec: dict[str, Any], getiter: Any) -> Iterator[Any]:
    """`for a, b in ...`: RestrictedPython's guard, except that flat tuples (dict items, zips,
    enumerates) pass as they are: a tuple's own iteration runs no tool code."""
    flat = not spec["childs"]
    for item in getiter(iterable):
        yield item if flat and type(item) is tuple else guarded_unpack_sequence(item, spec, getiter)


_SAFE_BUILTINS = {name: getattr(builtins, name) for name in ("abs", "bool", "isinstance", "len", "range")}


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
    guards = Guards(budget)
    method = guards.method
    frozen: set[int] = set()  # ids of the module's constants, filled by run_module

    def guarded_getattr(obj: Any, name: str, keyed: bool = False) -> Any:
        """`obj.name`; `keyed`: at a call site whose first argument the policy checks (see visit_Call)."""
        kind = type(obj)
        pair = (kind, name)
        if pair in _ALLOWED_PAIRS:  # the hot path: str/dict/list methods
            if name in _MUTATING and id(obj) in frozen:
                raise TypeError(f"module-level {kind.__name__}s are constants: {name}() would change one")
            if pair in CHECKED_METHODS:
                return getattr(obj, name) if keyed and name in KEYED_METHODS else method(obj, name)
            if pair in SIZED_METHODS and len(obj) > SMALL:
                return method(obj, name)
            return getattr(obj, name)
        if not name.startswith("_") and name in getattr(kind, "TOOL_API", ()):
            budget.left -= API_CALL_STEPS  # paid when the record API or the clock is reached for
            if budget.left < 0:
                raise budget.exceeded()
            return getattr(obj, name)
        raise AttributeError(f"attribute {name!r} of {kind.__name__} is not available to tools")

    def guarded_write(obj: Any) -> Any:
        """`obj.x = ...`, `obj[k] = ...`, `del ...`: only on the tool's own dicts and lists."""
        if type(obj) in _WRITABLE and id(obj) not in frozen:
            return obj
        what = "a module-level constant" if id(obj) in frozen else (
            "a class" if isinstance(obj, type) else f"a {type(obj).__name__}")
        raise TypeError(f"tools cannot change {what}")

    return {
        "__builtins__": {**_SAFE_BUILTINS, **guards.builtins(), **CATCHABLE, **_HELPERS},
        "__name__": "tools",
        "_getattr_": guarded_getattr,
        "_keyed_getattr_": lambda obj, name: guarded_getattr(obj, name, True),
        "_getitem_": operator.getitem,
        "_write_": guarded_write,
        "_frozen_": frozen,
        "_getiter_": budget.iterate,
        "_iter_unpack_sequence_": _iter_unpack_sequence,
        "_unpack_sequence_": guarded_unpack_sequence,
        "_inplacevar_": guards.inplace,
        "_apply_": lambda fn, *args, **kwargs: fn(*args, **kwargs),
        "_tick_": budget.tick,
        "_add_": guards.add, "_mul_": guards.mul, "_pow_": guards.pow, "_lshift_": guards.lshift,
        "_mod_": guards.mod, "_format_": guards.format, "_floordiv_": guards.floordiv, "_sub_": guards.sub,
        "_or_": guards.or_, "_and_": guards.and_, "_xor_": guards.xor,
        "_key_": guards.key, "_keys_": guards.keys,
        "_eq_": guards.eq, "_ne_": guards.ne, "_lt_": guards.lt, "_le_": guards.le, "_gt_": guards.gt,
        "_ge_": guards.ge, "_in_": guards.contains, "_not_in_": guards.not_in, "_chain_": guards.chain,
        "ToolError": ToolError,
        **names,
    }
