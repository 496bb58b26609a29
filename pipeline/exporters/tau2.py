"""τ²-bench domain packages (`OUT/tau2/<domain>/`), self-contained, each written and checked in a
publishing worker.

A package is laid out as τ²-bench's own domains are (data model, tools, environment entry points,
db.json, policy.md, tasks.json, split_tasks.json with a `base` split), in one folder. Its tool
methods run the domain's restricted tool source over the database's rows as plain dicts, through
toolscale's runtime: `domains/dictdb.py` and the modules it imports are copied into `runtime/`
verbatim at export time (records.py without its SQL half), so there is one source of truth. The
package needs pydantic and RestrictedPython; with τ²-bench installed it uses τ²-bench's base
classes, without it small stand-ins with the same interface (see its compat.py).
"""

from __future__ import annotations

import ast
import functools
import importlib.util
import itertools
import json
import re
import sys
import typing
import warnings
from pathlib import Path
from typing import Any, Literal
from string import Template

from toolscale.domains import dictdb
from toolscale.domains.sandbox import parse_python

from ..export import atomic_write
from ..publication import Collector, Exported, Exporter, Part
from ..rows import BuiltDomain, PublishError, Run
from ..tau2_templates import TEMPLATES

RUNTIME_ROOT = "dictdb"
ALLOWED_IMPORTS = {"__future__", "ast", "builtins", "collections", "ctypes", "datetime", "hashlib", "json", "keyword",
                   "math", "operator", "os", "re", "sqlite3", "threading", "time", "types", "typing", "unicodedata",
                   "weakref", "pydantic", "RestrictedPython"}
_PY_TYPES = {"string": "str", "date": "str", "datetime": "str", "integer": "int", "number": "float",
             "boolean": "bool"}


def _camel(name: str) -> str:
    return "".join(part.capitalize() for part in name.split("_"))


def _needs_sql(node: ast.stmt) -> bool:
    """An import of SQLAlchemy or of toolscale's sql module: what the exported runtime leaves out."""
    if isinstance(node, ast.Import):
        return any(a.name.split(".")[0] == "sqlalchemy" for a in node.names)
    if isinstance(node, ast.ImportFrom):
        return (node.module or "").split(".")[0] == "sqlalchemy" or node.level == 1 and node.module == "sql"
    return False


def _names(node: ast.stmt, ctx: type) -> set[str]:
    if ctx is ast.Store and isinstance(node, (ast.FunctionDef, ast.ClassDef)):
        return {node.name}
    if ctx is ast.Store and isinstance(node, (ast.Import, ast.ImportFrom)):
        return {(a.asname or a.name).split(".")[0] for a in node.names}
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ctx)}


def _without_sql(name: str, source: str) -> str:
    """The module less its SQL imports and every top-level statement that needs them (to a fixpoint);
    each statement kept is copied line for line."""
    tree = parse_python(source)
    body = tree.body[1:] if ast.get_docstring(tree) is not None else tree.body
    dropped = [n for n in body if _needs_sql(n)]
    while True:
        gone = set().union(*(_names(n, ast.Store) for n in dropped))
        more = [n for n in body if n not in dropped and _names(n, ast.Load) & gone]
        if not more:
            break
        dropped += more
    lines = source.splitlines(keepends=True)
    for node in dropped:
        first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
        lines[first - 1:node.end_lineno] = [""] * (node.end_lineno - first + 1)
    if body is not tree.body:  # the module docstring says where the file comes from instead
        lines[tree.body[0].lineno - 1:tree.body[0].end_lineno] = [""] * (tree.body[0].end_lineno - tree.body[0].lineno + 1)
    text = re.sub(r"\n{4,}", "\n\n\n", "".join(lines))
    return f'"""Vendored from toolscale/domains/{name}.py: the part that does not need SQL."""\n\n' + text.strip() + "\n"


def vendored_runtime() -> dict[str, str]:
    """{module: source} for `runtime/`: dictdb and what it imports from toolscale/domains, verbatim
    (a module that imports SQL loses that part). PublishError if one needs more than pydantic and
    RestrictedPython."""
    files: dict[str, str] = {}
    pending = [RUNTIME_ROOT]
    while pending:
        name = pending.pop()
        if name in files:
            continue
        source = (Path(dictdb.__file__).parent / f"{name}.py").read_text(encoding="utf-8")
        if any(_needs_sql(n) for n in parse_python(source).body):
            source = _without_sql(name, source)
        files[name] = source
        for node in parse_python(source).body:
            if isinstance(node, ast.ImportFrom) and node.level == 1:
                pending.append(node.module)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                roots = [node.module] if isinstance(node, ast.ImportFrom) else [a.name for a in node.names]
                bad = [r for r in roots if r.split(".")[0] not in ALLOWED_IMPORTS]
                if bad:
                    raise PublishError(f"domains/{name}.py imports {', '.join(bad)}: an exported package "
                                       "may need only pydantic and RestrictedPython")
    return dict(sorted(files.items()))


def _field(column) -> str:
    kind = _PY_TYPES[column.type]
    if column.enum:
        kind = f"Literal[{', '.join(repr(v) for v in column.enum)}]"
    description = repr(column.description or column.name)
    if column.nullable and not column.primary_key:
        return f"    {column.name}: Optional[{kind}] = Field(None, description={description})"
    return f"    {column.name}: {kind} = Field(description={description})"


def data_model_source(built: BuiltDomain) -> str:
    spec, db_class = built.domain.spec, f"{_camel(built.domain.name)}DB"
    parts = [f'"""Data model of the {spec.name} domain: one model per table, and the database (τ²-bench `DB`).\n\n'
             'Generated by toolscale from domain.yaml; regenerate rather than edit."""\n\n'
             "from typing import Dict, Literal, Optional\n\n"
             "from pydantic import BaseModel, ConfigDict, Field\n\n"
             "from .compat import DB\nfrom .utils import DB_PATH\n"]
    for table in spec.creation_order():
        parts.append(f"\nclass {_camel(table.name)}Record(BaseModel):\n"
                     f"    {_docstring(table.description or table.name, '    ')}\n\n"
                     '    model_config = ConfigDict(extra="forbid")\n\n'
                     + "\n".join(_field(c) for c in table.columns) + "\n")
    fields = "\n".join(f"    {t.name}: Dict[str, {_camel(t.name)}Record] = Field(\n"
                       f"        description={f'{t.name} indexed by {t.primary_key.name}'!r})"
                       for t in spec.creation_order())
    parts.append(f"\nclass {db_class}(DB):\n    {_docstring(spec.description, '    ')}\n\n{fields}\n\n\n"
                 f"def get_db() -> {db_class}:\n    return {db_class}.load(DB_PATH)\n")
    return "\n".join(parts)


def _docstring(text: str, indent: str = "        ") -> str:
    if '"""' in text or "\\" in text or text.endswith('"') or not all(c.isprintable() for c in text.replace("\n", "")):
        return repr(text)
    body = "\n".join(indent + line if line else "" for line in text.splitlines()).lstrip()
    return f'"""{body}\n{indent}"""' if "\n" in text else f'"""{text}"""'


def _hint_text(hint: Any) -> str:
    """Python source for a type sandbox.hint_type accepted (so only str, int, float, bool, list,
    Literal of constants and None can appear)."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is list:
        return f"list[{_hint_text(args[0])}]"
    if origin is Literal:
        return f"Literal[{', '.join(repr(v) for v in args)}]"
    if args:  # X | None
        return f"{_hint_text(next(a for a in args if a is not type(None)))} | None"
    return hint.__name__


def tools_source(built: BuiltDomain) -> str:
    """tools.py: one method per tool, with the tool's signature and docstring, running the tool.

    Signatures are written from the checked toolkit (its argument models), never copied from the
    source, so nothing but whitelisted hints and literal defaults reaches plain Python."""
    domain = built.domain
    tree = parse_python(domain.sources["tools.py"])
    methods, signatures = [], []
    for fn in (n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name in domain.toolkit.specs):
        spec = domain.toolkit.specs[fn.name]
        fields = spec.args_model.model_fields
        params = "".join(f", {name}: {_hint_text(field.annotation)}"
                         + ("" if field.is_required() else f" = {field.default!r}") for name, field in fields.items())
        returns = (f" -> {fn.returns.id}" if isinstance(fn.returns, ast.Name) and fn.returns.id in ("dict", "list")
                   else "")
        signatures.append(params)
        kind = "WRITE" if spec.kind == "write" else "READ"
        call = ", ".join([repr(fn.name), *(f"{n}={n}" for n in fields)])
        methods.append(f"    @is_tool(ToolType.{kind})\n    def {fn.name}(self{params}){returns}:\n"
                       f"        {_docstring(ast.get_docstring(fn) or fn.name)}\n"
                       f"        return self._call({call})\n")
    cls = f"{_camel(domain.name)}Tools"
    # toolkit.py allows str, int, float, bool, list[...], Literal[...] and X | None: only Literal needs an import
    typing_import = "from typing import Literal\n\n" if "Literal[" in "".join(signatures) else ""
    return (f'"""Tools of the {domain.name} domain for τ²-bench.\n\nEach method runs the tool of the same name in '
            "restricted_tools.py over the database's rows\n(toolscale's record API over plain dicts, see base.py). "
            'Generated by toolscale; regenerate rather than edit."""\n\n'
            f"{typing_import}from .base import RestrictedToolKit\nfrom .compat import ToolType, is_tool\n"
            f"from .data_model import {_camel(domain.name)}DB\n\n\n"
            f"class {cls}(RestrictedToolKit):\n    {_docstring(domain.spec.description, '    ')}\n\n"
            f"    db: {_camel(domain.name)}DB\n\n" + "\n".join(methods))


def database_json(built: BuiltDomain) -> str:
    """db.json: {table: {key: row}} in the τ²-bench way, tables in creation order, rows by key."""
    data = {}
    for table in built.domain.spec.creation_order():
        pk = table.primary_key.name
        data[table.name] = {str(row[pk]): row for row in built.rows.get(table.name, [])}
    return json.dumps(data, indent=1, ensure_ascii=False) + "\n"


def write_package(built: BuiltDomain, folder: Path, splits: dict[str, str],
                  runtime: dict[str, str] | None = None) -> Path:
    """Write one domain's package into `folder` (replacing what was there) and return it.

    `runtime` is vendored_runtime(), when the caller has it already."""
    domain, name = built.domain, built.domain.name
    spec_json = domain.spec.model_dump_json(exclude={"intents"}, indent=1)
    ids = [t.id for t in built.tasks]
    split_tasks = {"base": ids, **{s: [i for i in ids if splits.get(i) == s] for s in ("train", "test")}}
    names = {"name": name, "db_class": f"{_camel(name)}DB", "tools_class": f"{_camel(name)}Tools",
             "description": domain.spec.description, "tasks": len(ids),
             "doc_description": domain.spec.description.replace("\\", "\\\\").replace('"""', "'''")}
    files = {
        **{f: Template(text).substitute(names) for f, text in TEMPLATES.items()},
        "data_model.py": data_model_source(built), "tools.py": tools_source(built),
        "restricted_tools.py": domain.sources["tools.py"], "domain.json": spec_json + "\n",
        "policy.md": domain.policy, "db.json": database_json(built),
        "tasks.json": json.dumps([t.tau2() for t in built.tasks], indent=1, ensure_ascii=False) + "\n",
        "split_tasks.json": json.dumps(split_tasks, indent=1) + "\n",
        "runtime/__init__.py": '"""toolscale\'s runtime, vendored verbatim: the record API over dicts and the sandbox."""\n',
        **{f"runtime/{module}.py": source for module, source in (runtime or vendored_runtime()).items()},
    }
    for relative, text in sorted(files.items()):
        atomic_write(folder / relative, text)
    stale = {p for p in folder.rglob("*") if p.is_file()} - {folder / r for r in files}
    for path in stale:
        if "__pycache__" not in path.parts:
            path.unlink()
    return folder


_imports = itertools.count()


def import_package(folder: Path, name: str | None = None):
    """Import a written package from its folder under a module name of its own (a fresh one unless
    given), and return the module."""
    folder = Path(folder).resolve()
    name = name or f"toolscale_tau2_{folder.name}_{next(_imports)}"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, folder / "__init__.py", submodule_search_locations=[str(folder)])
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


_PLAIN_HINT_NODES = (ast.Name, ast.Constant, ast.Subscript, ast.Tuple, ast.List, ast.Dict, ast.BinOp, ast.BitOr,
                     ast.Load, ast.UnaryOp, ast.USub)
_PLAIN_HINT_NAMES = {"str", "int", "float", "bool", "list", "dict", "Literal", "None"}


def check_tools_module(text: str, where: str) -> None:
    """PublishError unless every hint and default of the package's plain-Python tools.py is a
    whitelisted name or a constant: what runs when the module is imported, checked once more."""
    for fn in (n for n in ast.walk(parse_python(text)) if isinstance(n, ast.FunctionDef)):
        args = fn.args
        evaluated = [fn.returns, *args.defaults, *(a.annotation for a in args.args)]  # decorators are ours
        for node in (n for expr in evaluated if expr is not None for n in ast.walk(expr)):
            if not isinstance(node, _PLAIN_HINT_NODES) or isinstance(node, ast.Name) and node.id not in _PLAIN_HINT_NAMES:
                raise PublishError(f"{where}: {fn.name}: {ast.unparse(node)[:80]!r} is not a plain hint or constant")


def verify_package(folder: Path, built: BuiltDomain, sample: int = 25) -> None:
    """Check the written package before anyone imports it: its tools.py holds only plain hints and
    constants; then replay `sample` of the domain's tasks (evenly spread) through τ²-bench's own
    tool-call path (`use_tool`) and check each against the gold replay's outputs and final state
    hash. PublishError names the first miss."""
    check_tools_module((folder / "tools.py").read_text(encoding="utf-8"), f"tau2/{folder.name}/tools.py")
    with warnings.catch_warnings():  # toolscale checks the package on its stand-ins on purpose: no warning
        warnings.simplefilter("ignore", UserWarning)
        module = import_package(folder)
    try:
        base = module.get_environment().tools
        step = max(len(built.tasks) // sample, 1)
        for task in built.tasks[::step][:sample]:
            tools = base.fork()
            for action, expected in zip(task.evaluation_criteria.actions, task.meta.expected_outputs):
                try:
                    answer = tools.use_tool(action.name, **action.arguments)
                except Exception as exc:  # the package's own failure, reported as what it is
                    answer = f"{type(exc).__name__}: {exc}"
                if answer != expected:
                    raise PublishError(f"tau2/{folder.name}: task {task.id} action {action.action_id} ({action.name}) "
                                       f"answers differently in the package: {answer!r}"[:500])
            if tools.state_hash() != task.meta.final_state_hash:
                raise PublishError(f"tau2/{folder.name}: task {task.id} ends in another state in the package")
    finally:
        for loaded in [m for m in sys.modules if m == module.__name__ or m.startswith(module.__name__ + ".")]:
            del sys.modules[loaded]


def checked_package(built: BuiltDomain, splits: dict[str, str], *, folder: Path, runtime: dict[str, str]) -> str:
    """Write one domain's package into folder/<domain> and check it (verify_package); its name."""
    verify_package(write_package(built, folder / built.domain.name, splits, runtime), built)
    return built.domain.name


class PackageNames(Collector):
    """The packages are whole once written: the collector only counts them."""

    def __init__(self) -> None:
        self.names: list[str] = []

    def add(self, part: str) -> None:
        self.names.append(part)

    def finish(self) -> Exported:
        return Exported(summary={"tau2": self.names})


class Tau2Packages(Exporter):
    """One τ²-bench package per domain, pushed under tau2/ in the dataset repo."""

    repo_folder = "tau2"

    def __init__(self) -> None:
        self.runtime = vendored_runtime()  # the same for every package: read and trimmed once

    def part(self, folder: Path) -> Part:
        return functools.partial(checked_package, folder=folder, runtime=self.runtime)

    def collector(self, run: Run, folder: Path) -> PackageNames:
        return PackageNames()


EXPORTER = Tau2Packages

__all__ = ["EXPORTER", "Tau2Packages", "checked_package", "data_model_source", "database_json", "import_package",
           "tools_source", "vendored_runtime", "verify_package", "write_package"]

