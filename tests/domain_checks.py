"""Helpers for the built-in domain tests: docstring examples and the tool call graph."""

from __future__ import annotations

import ast
import json
import re
from typing import Any

from toolscale.domains import Domain

_EXAMPLE = re.compile(r'e\.g\. ("(?:[^"\\]|\\.)*"|\[[^\]]*\]|-?\d+(?:\.\d+)?|true|false)')


def example_arguments(domain: Domain, tool: str) -> dict[str, Any]:
    """Arguments built from the `e.g.` examples in the tool's docstring (required ones only)."""
    spec = domain.toolkit.specs[tool]
    args: dict[str, Any] = {}
    for name in spec.parameters["required"]:
        match = _EXAMPLE.search(spec.parameters["properties"][name].get("description", ""))
        assert match, f"{domain.name}.{tool}: parameter {name!r} has no 'e.g.' example"
        raw = match.group(1)
        if raw.startswith("["):
            args[name] = json.loads(raw)
        elif raw.startswith('"'):
            args[name] = raw[1:-1]
        elif raw in ("true", "false"):
            args[name] = raw == "true"
        else:
            args[name] = float(raw) if "." in raw else int(raw)
    return args


RAISING_HELPERS = ("one", "owned", "ensure")  # the record API's checks: each raises ToolError when it fails


def _checks_with_a_helper(node: ast.AST) -> bool:
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in RAISING_HELPERS
            and isinstance(node.func.value, ast.Name) and node.func.value.id == "db")


def raises_tool_error(domain: Domain) -> dict[str, bool]:
    """For each tool: does it, or a helper it calls (transitively), `raise ToolError`?"""
    tree = ast.parse(domain.toolkit.source)
    functions = {f.name: f for f in tree.body if isinstance(f, ast.FunctionDef)}
    calls = {name: {n.func.id for n in ast.walk(f) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
             for name, f in functions.items()}
    direct = {name: any(isinstance(n, ast.Raise) and n.exc is not None and "ToolError" in ast.unparse(n.exc)
                        or _checks_with_a_helper(n) for n in ast.walk(f)) for name, f in functions.items()}

    def reaches(name: str, seen: set[str]) -> bool:
        if direct.get(name):
            return True
        seen.add(name)
        return any(reaches(c, seen) for c in calls.get(name, ()) if c in functions and c not in seen)

    return {name: reaches(name, set()) for name in domain.toolkit.specs}
