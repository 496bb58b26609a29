"""Digests that key the stage store: a stage's code, a domain's sources, and the settings.

A stage's key changes when anything that can change its artifact changes: the file that
defines it, the source of the toolscale modules it uses (followed through their toolscale imports),
the domain's files, the run's settings, or the key of the stage before it (so a change upstream
makes everything downstream stale). Keys are short hex digests; they are computed before
anything runs, so a run knows up front what it can reuse.
"""

from __future__ import annotations

import ast
import hashlib
import importlib.util
import inspect
import json
from collections.abc import Callable, Iterable
from functools import lru_cache
from pathlib import Path
from typing import Any

from toolscale.domains.domain import BUILTIN_DIR, BUILTIN_DOMAINS, read_domain_files
from toolscale.domains.sandbox import parse_python
from toolscale.pipeline.outdir import open_regular

PACKAGE = "toolscale"
PROMPTS_DIR = Path(__file__).resolve().parent.parent / "prompts"


def _digest(data: bytes | str, size: int = 16) -> str:
    return hashlib.blake2b(data.encode() if isinstance(data, str) else data, digest_size=size).hexdigest()


def _module_file(name: str) -> Path | None:
    """The file of module `name`, found without running it: find_spec imports the parent, so a
    name whose parent is a plain module (`from .hf import name` gives `...hf.name`) is looked
    up no further; importing that module here would load all it imports (e.g. `datasets`)."""
    parent = name.rpartition(".")[0]
    try:
        if parent and getattr(importlib.util.find_spec(parent), "submodule_search_locations", None) is None:
            return None
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    return Path(spec.origin) if spec and spec.origin and spec.origin.endswith(".py") else None


@lru_cache(maxsize=None)  # the closures of a run's stages share most of their modules
def _imports(name: str, path: Path) -> frozenset[str]:
    """The toolscale modules `name` imports (absolute and relative), as dotted names."""
    tree = parse_python(path.read_text(encoding="utf-8"))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.split(".")[0] == PACKAGE)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                parts = parts[: len(parts) - node.level + 1]
                base = ".".join(parts + ([node.module] if node.module else []))
            if base.split(".")[0] != PACKAGE:
                continue
            found.add(base)
            found.update(f"{base}.{a.name}" for a in node.names)  # `from . import progress`
    return frozenset(found)


@lru_cache(maxsize=None)
def module_closure(name: str) -> tuple[tuple[str, Path], ...]:
    """`name` and every toolscale module it reaches through imports, sorted, with their files."""
    seen: dict[str, Path] = {}
    todo = [name]
    while todo:
        current = todo.pop()
        if current in seen:
            continue
        path = _module_file(current)
        if path is None:
            continue  # `from .x import name` adds `x.name`, which is not a module
        seen[current] = path
        todo.extend(_imports(current, path) - seen.keys())
        parent = current.rpartition(".")[0]
        if parent.startswith(PACKAGE):
            todo.append(parent)  # a package's __init__ runs before its modules
    return tuple(sorted(seen.items()))


@lru_cache(maxsize=None)
def _file_digest(path: Path) -> str:
    return _digest(path.read_bytes())


def file_digest(path: Path) -> str:
    """A file's SHA-256, read in chunks and not cached: for outputs, which change under a running process.
    Only a regular file is read (NotRegularFile, an OSError, otherwise: a FIFO in OUT must not hang a run)."""
    with open_regular(path) as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()


def _listing_digest(root: Path, paths: Iterable[Path], digest_of: Callable[[Path], str]) -> str:
    return _digest("\n".join(f"{p.relative_to(root).as_posix()}:{digest_of(p)}" for p in sorted(paths)))


def _tree_digest(root: Path) -> str:
    if not root.is_dir():
        return ""
    return _listing_digest(root, [p for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts],
                           _file_digest)


def code_digest(function: Callable[..., Any], modules: Iterable[str], prompts: bool = False) -> str:
    """The code version of a stage: the file that defines its function (the stage glue, without
    following its imports) and the import closure of the modules it names."""
    parts = [_file_digest(Path(inspect.getsourcefile(function)))]
    for module in sorted(set(modules)):
        parts += [f"{name}:{_file_digest(path)}" for name, path in module_closure(module)]
    if prompts:
        parts.append(f"prompts:{_tree_digest(PROMPTS_DIR)}")
    return _digest("\n".join(parts))


def source_digest(domain: str, folder: str | None = None) -> str:
    """The digest of the domain's folder: a hand-written one (`--domain-dir`: the files the loader reads,
    read as it reads them, so nothing else in a hostile folder is opened), else the built-in one
    ("" for a domain that is designed, not read)."""
    if folder is not None:
        return _digest("\n".join(f"{name}:{_digest(text)}" for name, text in read_domain_files(folder).items()))
    return _tree_digest(BUILTIN_DIR / domain) if domain in BUILTIN_DOMAINS else ""


def files_digest(root: Path, paths: Iterable[Path]) -> str:
    """The digest of output files' names (relative to `root`) and contents."""
    return _listing_digest(root, paths, file_digest)


def json_digest(data: Any) -> str:
    """A short key for JSON-like data (keys sorted; anything else as its str)."""
    return _digest(json.dumps(data, sort_keys=True, default=str), size=10)


def stage_key(stage: str, code: str, settings: dict[str, Any], upstream: str) -> str:
    """The key of one stage's artifact."""
    return json_digest({"stage": stage, "code": code, "settings": settings, "upstream": upstream})
