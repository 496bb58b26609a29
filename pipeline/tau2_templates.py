"""The fixed files of an exported τ²-bench package (see tau2.py), as string.Template texts.

They are code that runs inside the package, beside the vendored runtime, with or without τ²-bench.
"""

# placeholders: $name, $db_class, $tools_class, $description ($doc_description in a docstring), $tasks.
_INIT = '''"""The $name domain as a τ²-bench domain package, exported by toolscale ($tasks tasks).

$doc_description
"""

from .environment import get_environment, get_tasks, get_tasks_split

__all__ = ["get_environment", "get_tasks", "get_tasks_split"]
'''
_UTILS = '''"""Where the package's data is: beside the code, in this folder."""

from pathlib import Path

DATA_DIR = Path(__file__).resolve().parent
DB_PATH = DATA_DIR / "db.json"
POLICY_PATH = DATA_DIR / "policy.md"
TASK_SET_PATH = DATA_DIR / "tasks.json"
SPLIT_TASKS_PATH = DATA_DIR / "split_tasks.json"
SPEC_PATH = DATA_DIR / "domain.json"
TOOL_SOURCE_PATH = DATA_DIR / "restricted_tools.py"
'''
_COMPAT = '''"""τ²-bench's classes when τ²-bench is installed; otherwise stand-ins with the same interface,
so the package also runs with only pydantic and RestrictedPython installed."""

import hashlib
import json
import warnings
from enum import Enum
from pathlib import Path
from typing import Any, Callable, Optional

from pydantic import BaseModel, ConfigDict

try:
    from tau2.data_model.tasks import Task
    from tau2.environment.db import DB
    from tau2.environment.environment import Environment
    from tau2.environment.toolkit import ToolKitBase, ToolType, is_tool

    TAU2 = True
except ImportError as _missing:
    TAU2 = False
    Task = None  # get_tasks returns the task records as dicts
    # said once, when the package is imported: a τ² that fails to import must not pass for an absent one
    warnings.warn(f"the $name package runs on its stand-ins for τ²-bench, which does not import ({_missing}); "
                  "they replay tasks, τ²-bench evaluates them (see the package's README.md)")

    def _hash(data: Any) -> str:
        """τ²-bench's database hash: sha256 of the JSON dump with sorted keys."""
        return hashlib.sha256(json.dumps(data, sort_keys=True, default=str).encode()).hexdigest()

    def _merge(base: dict, update: dict) -> dict:
        merged = dict(base)
        for key, value in update.items():
            merged[key] = _merge(merged[key], value) if isinstance(value, dict) and isinstance(
                merged.get(key), dict) else value
        return merged

    class ToolType(str, Enum):
        READ = "read"
        WRITE = "write"
        THINK = "think"
        GENERIC = "generic"

    def is_tool(tool_type: ToolType = ToolType.READ, mutates_state: Optional[bool] = None) -> Callable:
        def mark(func: Callable) -> Callable:
            func.__tool__ = True
            func.__tool_type__ = tool_type
            func.__mutates_state__ = tool_type == ToolType.WRITE if mutates_state is None else mutates_state
            return func

        return mark

    class DB(BaseModel):
        model_config = ConfigDict(extra="forbid")

        @classmethod
        def load(cls, path: Any) -> "DB":
            return cls.model_validate(json.loads(Path(path).read_text(encoding="utf-8")))

        def dump(self, path: Any) -> None:
            Path(path).write_text(json.dumps(self.model_dump(), indent=1), encoding="utf-8")

        def get_hash(self) -> str:
            return _hash(self.model_dump())

    class ToolKitBase:
        def __init__(self, db: Optional[DB] = None) -> None:
            self.db = db

        @property
        def tools(self) -> dict:
            return {name: getattr(self, name) for name in dir(type(self))
                    if getattr(getattr(type(self), name, None), "__tool__", False)}

        def use_tool(self, tool_name: str, **kwargs: Any) -> Any:
            if tool_name not in self.tools:
                raise ValueError(f"Tool '{tool_name}' not found.")
            return self.tools[tool_name](**kwargs)

        def has_tool(self, tool_name: str) -> bool:
            return tool_name in self.tools

        def tool_type(self, tool_name: str) -> ToolType:
            return self.tools[tool_name].__tool_type__

        def update_db(self, update_data: Optional[dict] = None) -> None:
            self.db = type(self.db).model_validate(_merge(self.db.model_dump(), update_data or {}))

        def get_db_hash(self) -> str:
            return _hash(self.db.model_dump())

    class Environment:
        """What a replay needs of τ²-bench's Environment."""

        def __init__(self, domain_name: str, policy: str, tools: Optional[ToolKitBase] = None,
                     user_tools: Optional[ToolKitBase] = None, solo_mode: bool = False) -> None:
            self.domain_name, self.policy, self.tools = domain_name, policy, tools
            self.user_tools, self.solo_mode = user_tools, solo_mode

        def get_policy(self) -> str:
            return self.policy

        def use_tool(self, tool_name: str, **kwargs: Any) -> Any:
            return self.tools.use_tool(tool_name, **kwargs)

        def make_tool_call(self, tool_name: str, requestor: str = "assistant", **kwargs: Any) -> Any:
            if requestor != "assistant":
                raise ValueError(f"this domain has no {requestor} tools")
            return self.use_tool(tool_name, **kwargs)

        def get_db_hash(self) -> str:
            return self.tools.get_db_hash()
'''
_BASE = '''"""Tool methods that run restricted_tools.py over the database's rows as plain dicts.

The rows live twice: as plain dicts in toolscale's record API (runtime/dictdb.py, copied from
toolscale), where the tools run exactly as they run in toolscale, and as the pydantic models of
data_model.py in `self.db`, which τ²-bench reads and hashes. Each write is copied across.
"""

import inspect
import typing
from typing import Any, Optional

from pydantic import ConfigDict, create_model

from .compat import ToolKitBase
from .runtime.dictdb import DictTools
from .runtime.sandbox import ToolError
from .runtime.spec import DomainSpec
from .utils import SPEC_PATH, TOOL_SOURCE_PATH

_COMPILED: dict = {}  # toolkit class -> its DictTools: the source is compiled once per process


def _arguments_model(method: Any) -> Any:
    """The tool's arguments model from the method's signature, as toolscale builds it from the source."""
    params = list(inspect.signature(method).parameters.values())[1:]
    fields = {p.name: (p.annotation, ... if p.default is p.empty else p.default) for p in params}
    return create_model(f"{method.__name__}_args", __config__=ConfigDict(extra="forbid"), **fields)


def _rows(db: Any) -> dict:
    return {table: [row.model_dump() for row in getattr(db, table).values()] for table in type(db).model_fields}


class RestrictedToolKit(ToolKitBase):
    """A τ²-bench toolkit whose tools are the domain's restricted source."""

    def __init__(self, db: Any) -> None:
        super().__init__(db)
        self._runtime = self._compiled().with_rows(_rows(db))

    @classmethod
    def _compiled(cls) -> DictTools:
        if cls not in _COMPILED:
            spec = DomainSpec.model_validate_json(SPEC_PATH.read_text(encoding="utf-8"))
            names = [name for name, member in vars(cls).items() if getattr(member, "__tool__", False)]
            models = {name: _arguments_model(getattr(cls, name)) for name in names}
            _COMPILED[cls] = DictTools(spec, TOOL_SOURCE_PATH.read_text(encoding="utf-8"), {}, models,
                                       filename="restricted_tools.py")
        return _COMPILED[cls]

    def call(self, name: str, arguments: Optional[dict] = None) -> dict:
        """Run a tool as toolscale's Environment.call does: {name, output, error, error_type};
        arguments are validated against the tool's signature, and a failed call changes nothing."""
        result = self._runtime.call(name, arguments)
        for table, key, row in self._runtime.records.changes():
            rows = getattr(self.db, table)
            if row is None:
                rows.pop(str(key), None)
            else:
                record = typing.get_args(type(self.db).model_fields[table].annotation)[1]
                rows[str(key)] = record.model_validate(row)
        return result

    def _call(self, tool: str, /, **arguments: Any) -> Any:  # positional-only: a tool may have a `tool` argument
        result = self.call(tool, arguments)
        if result["error"] is not None:
            raise ToolError(result["error"])
        return result["output"]

    def update_db(self, update_data: Optional[dict] = None) -> None:
        super().update_db(update_data)
        self._runtime = self._compiled().with_rows(_rows(self.db))

    def fork(self) -> "RestrictedToolKit":
        """An independent copy of the current state; cheap, as rows are replaced, never changed in place."""
        twin = object.__new__(type(self))
        ToolKitBase.__init__(twin, self.db.model_copy(
            update={table: dict(getattr(self.db, table)) for table in type(self.db).model_fields}))
        twin._runtime = self._runtime.fork()
        return twin

    def state_hash(self) -> str:
        """toolscale's digest of the rows: after a task's gold actions, its meta.final_state_hash."""
        return self._runtime.state_hash()
'''
_ENVIRONMENT = '''"""τ²-bench entry points of the $name domain: get_environment, get_tasks, get_tasks_split."""

import json
from typing import Optional

from .compat import TAU2, Environment, Task
from .data_model import $db_class
from .tools import $tools_class
from .utils import DB_PATH, POLICY_PATH, SPLIT_TASKS_PATH, TASK_SET_PATH


_PRISTINE: list = []  # the policy and the toolkit over db.json, loaded once; each get_environment() forks it


def _pristine() -> tuple:
    if not _PRISTINE:
        _PRISTINE.append((POLICY_PATH.read_text(encoding="utf-8"), $tools_class($db_class.load(DB_PATH))))
    return _PRISTINE[0]


def get_environment(db: Optional[$db_class] = None, solo_mode: bool = False) -> Environment:
    """The domain's policy and its tools over `db` (a fresh copy of db.json when not given: τ²-bench
    calls this several times per simulation, so db.json is read once and each call forks it)."""
    if solo_mode:
        raise ValueError("the $name domain has no user tools, so it has no solo mode")
    policy, pristine = _pristine()
    tools = pristine.fork() if db is None else $tools_class(db)
    return Environment(domain_name="$name", policy=policy, tools=tools)


def get_tasks(task_split_name: Optional[str] = "base") -> list:
    """The tasks of a split (every task for None): τ²-bench Tasks, or dicts without τ²-bench."""
    tasks = json.loads(TASK_SET_PATH.read_text(encoding="utf-8"))
    if task_split_name is not None:
        splits = get_tasks_split()
        if task_split_name not in splits:
            raise ValueError(f"Invalid task split name: {task_split_name}. Valid splits are: {list(splits)}")
        wanted = set(splits[task_split_name])
        tasks = [task for task in tasks if task["id"] in wanted]
    return [Task.model_validate(task) for task in tasks] if TAU2 else tasks


def get_tasks_split() -> dict:
    """{split: [task id]}: `base` holds every task; `train` and `test` are the dataset's split."""
    return json.loads(SPLIT_TASKS_PATH.read_text(encoding="utf-8"))
'''
_README = '''# $name: a τ²-bench domain package

Exported by toolscale: $tasks tasks. $description

| file | what |
|---|---|
| `environment.py` | `get_environment()`, `get_tasks(split)`, `get_tasks_split()`, as τ²-bench's domains have |
| `data_model.py`, `db.json` | one pydantic model per table; the database as τ²-bench's `DB` (`{table: {id: row}}`) |
| `tools.py` | one method per tool (signature and docstring are its schema); each runs `restricted_tools.py` |
| `restricted_tools.py`, `domain.json` | the tools' source (restricted Python) and the schema they see |
| `runtime/` | toolscale's record API over plain dicts and its sandbox, copied verbatim |
| `policy.md`, `tasks.json`, `split_tasks.json` | the agent policy; τ²-bench Tasks; splits `base`, `train`, `test` |

## Importing it runs its code

This package is Python, and importing it runs it: its tool code, `restricted_tools.py`, is checked as toolscale
checks it and runs under the vendored runtime's sandbox (`runtime/`); its other files (`tools.py`, `base.py`,
`environment.py`, `runtime/` itself) are ordinary Python that run as they are, unchecked. Import a package only
from a publisher you trust, or read it first. The dataset's `domains` rows are the path that sandboxes the tool
code: toolscale's `environment_from_row` (`toolscale.pipeline.rows`) compiles a row's `tools_source` in its
sandbox and runs nothing else from the row.

## In τ²-bench

In τ²-bench's own environment, install RestrictedPython beside τ²'s dependencies (`pip install RestrictedPython`;
without it the lines below break `import tau2.registry` for every domain). Copy this folder to
`src/tau2/domains/$name/` of a τ²-bench checkout (data and code stay together), then append these lines to the
end of `src/tau2/registry.py` (τ²-bench registers its domains only in that file):

```python
from tau2.domains.$name.environment import get_environment as ${name}_get_environment
from tau2.domains.$name.environment import get_tasks as ${name}_get_tasks
from tau2.domains.$name.environment import get_tasks_split as ${name}_get_tasks_split

registry.register_domain(${name}_get_environment, "$name")
registry.register_tasks(${name}_get_tasks, "$name", get_task_splits=${name}_get_tasks_split)
```

`tau2 run --domain $name --task-split-name test ...` then runs the test split. The domain has no user tools,
so it has no solo mode (`llm_agent_solo` cannot run it).

## Without τ²-bench

Only `pip install pydantic RestrictedPython` is needed:

```python
import sys
sys.path.insert(0, "path/to/tau2")        # the folder holding this package
from $name import get_environment, get_tasks

tools = get_environment().tools
task = get_tasks()[0]                      # a dict without τ²-bench, a Task with it
for action in task["evaluation_criteria"]["actions"]:
    print(tools.use_tool(action["name"], **action["arguments"]))
```

`tools.call(name, arguments)` answers `{name, output, error, error_type}` as toolscale's `Environment.call`;
`tools.fork()` copies the state cheaply; `tools.state_hash()` is toolscale's digest of the rows (a task's
`final_state_hash` in the dataset) and `tools.get_db_hash()` τ²-bench's.
'''
TEMPLATES = {"__init__.py": _INIT, "utils.py": _UTILS, "compat.py": _COMPAT, "base.py": _BASE,
             "environment.py": _ENVIRONMENT, "README.md": _README}
