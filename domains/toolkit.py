"""A domain's tools: parsed from restricted source, described as OpenAI function schemas.

The signature and the Google-style docstring of each `@tool("read")` / `@tool("write")`
function are its schema; they are read from the syntax tree, so nothing in the source runs
before it has been compiled under the sandbox policy.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from types import CodeType
from typing import Any, Literal, get_args, get_origin

import docstring_parser
from pydantic import BaseModel, ConfigDict, ValidationError, create_model

from .sandbox import (ToolCompileError, ToolKind, check_tool_module, compile_tool_module, hint_type, parse_tools,
                      strip_hints)



@dataclass(frozen=True)
class ToolSpec:
    """What the agent sees of a tool, and the model its arguments are validated with."""

    name: str
    kind: ToolKind
    description: str
    parameters: dict[str, Any]
    args_model: type[BaseModel]

    @property
    def changes_what_users_want(self) -> bool:
        """A write a user asks for; an identity check (`verify_*`) writes only a bookkeeping row."""
        return self.kind == "write" and not self.name.startswith("verify")

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


_JSON_TYPES = {str: "string", int: "integer", float: "number", bool: "boolean"}


def _schema(hint: Any) -> dict[str, Any]:
    """The JSON schema of a type sandbox.hint_type accepted."""
    origin, args = get_origin(hint), get_args(hint)
    if hint in _JSON_TYPES:
        return {"type": _JSON_TYPES[hint]}
    if origin is list:
        return {"type": "array", "items": _schema(args[0])}
    if origin is Literal:
        kind = ("string" if all(isinstance(v, str) for v in args)
                else "integer" if all(isinstance(v, int) for v in args) else "number")
        return {"type": kind, "enum": list(args)}
    inner = [a for a in args if a is not type(None)]
    return {"anyOf": [_schema(inner[0]), {"type": "null"}]}


def _summary(doc: docstring_parser.Docstring) -> str:
    """The docstring's first paragraph as one line (a summary may wrap), then the rest after a blank
    line; docstring_parser alone would cut a wrapped summary after its first line."""
    summary, rest = doc.short_description or "", doc.long_description or ""
    if rest and not doc.blank_after_short_description:
        head, _, rest = rest.partition("\n\n")
        summary = " ".join([summary, *head.split()])
    return f"{summary}\n\n{rest}" if rest else summary


def _spec(fn: ast.FunctionDef, kind: ToolKind, filename: str) -> ToolSpec:
    where = f"{filename}:{fn.lineno}: tool {fn.name!r}"
    doc = docstring_parser.parse(ast.get_docstring(fn) or "")
    if not doc.short_description:
        raise ToolCompileError(f"{where}: needs a docstring")
    described = {p.arg_name: p.description for p in doc.params}
    args = fn.args
    defaults = [None] * (len(args.args) - len(args.defaults)) + list(args.defaults)
    properties: dict[str, Any] = {}
    required: list[str] = []
    fields: dict[str, Any] = {}
    for arg, default in zip(args.args, defaults):
        if arg.arg not in described:
            raise ToolCompileError(f"{where}: parameter {arg.arg!r} is not described under Args:")
        py_type = hint_type(arg.annotation, f"{where}, parameter {arg.arg!r}")
        properties[arg.arg] = {**_schema(py_type), "description": described[arg.arg]}
        if default is None:
            required.append(arg.arg)
            fields[arg.arg] = (py_type, ...)
        else:
            fields[arg.arg] = (py_type, ast.literal_eval(default))
    description = _summary(doc)
    parameters = {"type": "object", "properties": properties, "required": required,
                  "additionalProperties": False}
    model = create_model(f"{fn.name}_args", __config__=ConfigDict(extra="forbid"), **fields)
    return ToolSpec(fn.name, kind, description, parameters, model)


def build_toolkit(source: str, filename: str = "tools.py") -> Toolkit:
    """Parse, check and compile tool source. Raises ToolCompileError naming file and line."""
    tree = parse_tools(source, filename)
    kinds = check_tool_module(tree, filename, keep_hints=True)
    specs, problems = {}, []
    for fn in tree.body:
        if isinstance(fn, ast.FunctionDef) and fn.name in kinds:
            try:
                specs[fn.name] = _spec(fn, kinds[fn.name], filename)
            except ToolCompileError as exc:  # every tool is read: a repair round sees all the problems
                problems.append(str(exc))
    if problems:
        raise ToolCompileError.of(problems)
    strip_hints(tree)
    return Toolkit(compile_tool_module(tree, filename), specs, source)
