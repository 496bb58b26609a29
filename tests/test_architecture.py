"""The import graph keeps its shape: arrows point down (flows → pipeline, quality, trainer → agents →
domains) and no module imports itself through others, counting the imports made inside functions (a
lazy import that hides a cycle is still a cycle)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("domains", "agents", "pipeline", "quality", "trainer", "flows", "prompts")
ALLOWED = {  # the toolscale packages each package may import
    "domains": set(),
    "prompts": set(),
    "agents": {"domains"},
    "quality": {"agents", "domains"},
    # sideways, and kept: the dataset card states the gates (pipeline/card.py), the operators check their
    # variants with a gate context; the trainer reads published dataset rows (pipeline/rows.py)
    "pipeline": {"agents", "domains", "quality", "prompts"},
    "trainer": {"agents", "domains", "pipeline"},
    "flows": {"agents", "domains", "pipeline", "quality", "trainer", "prompts"},
}


def _modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            dotted = ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
            found[f"toolscale.{dotted}"] = path
    return found


def _imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The toolscale modules `name` imports anywhere in its file."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(parts + ([node.module] if node.module else []))
            found.update(f"{base}.{a.name}" for a in node.names)
            if node.module:  # `from . import x` needs x, not the package being initialised
                found.add(base)
    return {m for m in found if m in modules and m != name}


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: _imports(name, path, modules) for name, path in modules.items()}


def test_arrows_between_packages_point_down():
    upward = sorted(f"{a} imports {b}" for a, targets in _graph().items() for b in targets
                    if (pa := a.split(".")[1]) != (pb := b.split(".")[1]) and pb not in ALLOWED[pa])
    assert upward == []


def test_no_module_imports_itself_through_others():
    graph, cycles = _graph(), []
    state: dict[str, int] = {}  # 1: on the current path, 2: done

    def visit(name: str, path: list[str]) -> None:
        state[name] = 1
        for target in sorted(graph[name]):
            if state.get(target) == 1:
                cycles.append(" -> ".join(path[path.index(target):] + [target]))
            elif target not in state:
                visit(target, [*path, target])
        state[name] = 2

    for name in sorted(graph):
        if name not in state:
            visit(name, [name])
    assert cycles == []
