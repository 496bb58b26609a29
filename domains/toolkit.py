"""A domain's tools: parsed from restricted source, described as OpenAI function schemas.

The signature and the Google-style docstring of each `@tool("read")` / `@tool("write")`
function are its schema; they are read from the syntax tree, so nothing in the source runs
before it has been compiled under the sandbox policy.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from types import CodeType
from typing import Any, Literal

import docstring_parser
from pydantic import BaseModel, ConfigDict, ValidationError, create_model

from .sandbox import ToolCompileError, compile_tool_module

ToolKind = Literal["read", "write"]
_JSON_TYPES = {"str": ("string", str), "int": ("integer", int), "float": ("number", float),
               "bool": ("boolean", bool)}


@dataclass(frozen=True)
class ToolSpec:
    """What the agent sees of a tool, and the model its arguments are validated with."""

    name: str
    kind: ToolKind
    description: str
    parameters: dict[str, Any]
    args_model: type[BaseModel]

    def openai_schema(self) -> dict[str, Any]:
        return {"type": "function",
                "function": {"name": self.name, "description": self.description,
                             "parameters": self.parameters}}

    def validate_arguments(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """Coerce arguments to the declared types; raise ValueError naming every bad field."""
        try:
            model = self.args_model.model_validate(arguments)
        except ValidationError as exc:
            problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'arguments'}: {e['msg']}"
                                 for e in exc.errors())
            raise ValueError(f"invalid arguments for {self.name}: {problems}") from None
        return model.model_dump(exclude_unset=False)


@dataclass(frozen=True)
class Toolkit:
    """The compiled module and the specs of the functions it exposes as tools."""

    code: CodeType
    specs: dict[str, ToolSpec]
    source: str


def _annotation(node: ast.expr | None, where: str) -> tuple[dict[str, Any], Any]:
    """(JSON schema, python type) for a parameter annotation."""
    if node is None:
        raise ToolCompileError(f"{where}: every tool parameter needs a type hint")
    if isinstance(node, ast.Name) and node.id in _JSON_TYPES:
        json_type, py_type = _JSON_TYPES[node.id]
        return {"type": json_type}, py_type
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name):
        if node.value.id == "list":
            item_schema, item_type = _annotation(node.slice, where)
            return {"type": "array", "items": item_schema}, list[item_type]
        if node.value.id == "Literal":
            elts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
            values = [ast.literal_eval(e) for e in elts]
            return {"type": "string", "enum": values}, Literal[tuple(values)]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        if isinstance(node.right, ast.Constant) and node.right.value is None:
            schema, py_type = _annotation(node.left, where)
            return {"anyOf": [schema, {"type": "null"}]}, py_type | None
    raise ToolCompileError(f"{where}: unsupported type hint {ast.unparse(node)!r} "
                           "(use str, int, float, bool, list[...], Literal[...] or X | None)")


def _tool_kind(fn: ast.FunctionDef, filename: str) -> ToolKind | None:
    kinds = []
    for deco in fn.decorator_list:
        if (isinstance(deco, ast.Call) and isinstance(deco.func, ast.Name) and deco.func.id == "tool"
                and len(deco.args) == 1 and isinstance(deco.args[0], ast.Constant)
                and deco.args[0].value in ("read", "write") and not deco.keywords):
            kinds.append(deco.args[0].value)
        else:
            raise ToolCompileError(f"{filename}:{deco.lineno}: the only decorator allowed is "
                                   '@tool("read") or @tool("write")')
    return kinds[0] if kinds else None


def _spec(fn: ast.FunctionDef, kind: ToolKind, filename: str) -> ToolSpec:
    where = f"{filename}:{fn.lineno}: tool {fn.name!r}"
    doc = docstring_parser.parse(ast.get_docstring(fn) or "")
    if not doc.short_description:
        raise ToolCompileError(f"{where}: needs a docstring")
    described = {p.arg_name: p.description for p in doc.params}
    args = fn.args
    if args.vararg or args.kwarg or args.posonlyargs or args.kwonlyargs:
        raise ToolCompileError(f"{where}: only plain named parameters are allowed")
    defaults = [None] * (len(args.args) - len(args.defaults)) + list(args.defaults)
    properties: dict[str, Any] = {}
    required: list[str] = []
    fields: dict[str, Any] = {}
    for arg, default in zip(args.args, defaults):
        if arg.arg not in described:
            raise ToolCompileError(f"{where}: parameter {arg.arg!r} is not described under Args:")
        schema, py_type = _annotation(arg.annotation, f"{where}, parameter {arg.arg!r}")
        properties[arg.arg] = {**schema, "description": described[arg.arg]}
        if default is None:
            required.append(arg.arg)
            fields[arg.arg] = (py_type, ...)
        else:
            fields[arg.arg] = (py_type, ast.literal_eval(default))
    description = doc.short_description
    if doc.long_description:
        description = f"{description}\n\n{doc.long_description}"
    parameters = {"type": "object", "properties": properties, "required": required,
                  "additionalProperties": False}
    model = create_model(f"{fn.name}_args", __config__=ConfigDict(extra="forbid"), **fields)
    return ToolSpec(fn.name, kind, description, parameters, model)


def build_toolkit(source: str, filename: str = "tools.py") -> Toolkit:
    """Parse, check and compile tool source. Raises ToolCompileError naming file and line."""
    try:
        tree = ast.parse(source, filename=filename)
    except SyntaxError as exc:
        raise ToolCompileError(f"{filename}:{exc.lineno}: {exc.msg}") from None
    specs: dict[str, ToolSpec] = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            kind = _tool_kind(node, filename)
            if kind is not None:
                specs[node.name] = _spec(node, kind, filename)
            node.decorator_list = []
            node.returns = None
            for arg in node.args.args:
                arg.annotation = None
        elif isinstance(node, ast.Assign) and all(isinstance(t, ast.Name) for t in node.targets):
            try:
                ast.literal_eval(node.value)
            except ValueError:
                raise ToolCompileError(f"{filename}:{node.lineno}: module-level values must be constants") from None
        elif not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)):
            raise ToolCompileError(f"{filename}:{node.lineno}: only functions and constants may appear at "
                                   "module level")
    if not specs:
        raise ToolCompileError(f"{filename}: defines no @tool functions")
    return Toolkit(compile_tool_module(tree, filename), specs, source)
