"""A domain folder (`domain.yaml`, `tools.py`, `policy.md`) loaded into one validated object.

Errors name the file, the line and the field, so a person (or an LLM in a repair round) can
fix the spec without guessing.
"""

from __future__ import annotations

import hashlib
import keyword
import threading
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import sqlalchemy as sa
import yaml
from pydantic import BaseModel, ValidationError

from .files import DOMAIN_FILES, MAX_FILE_BYTES, DomainFileError, read_domain_file
from .sql import build_metadata
from .premises import premise_problems
from .rules import rule_problems
from .sandbox import ToolCompileError
from .spec import DomainSpec
from .toolkit import Toolkit, build_toolkit

BUILTIN_DIR = Path(__file__).resolve().parent
BUILTIN_DOMAINS = tuple(sorted(p.parent.name for p in BUILTIN_DIR.glob("*/domain.yaml")))  # a domain is its folder


_BASE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _DomainLoader(_BASE_LOADER):  # type: ignore[misc,valid-type]
    """YAML's safe loader, stricter where domain.yaml is hostile input:
    - an alias of a mapping or list is refused: nine nested ones expand to 10^9 leaves ("billion
      laughs"), which hung populate when it formatted them into a message;
    - an alias of a scalar stays (medicine's domain.yaml names a long condition once and reuses it),
      but all aliases together may add no more text than the file itself may hold;
    - a key given twice in one mapping is refused: YAML keeps the last, a reviewer reads the first.
    Each raises a ConstructorError at the offending node, which parse_spec turns into file:line."""

    def __init__(self, stream: Any) -> None:
        super().__init__(stream)
        self._aliased = 0  # characters the scalar aliases added so far

    def construct_object(self, node: yaml.Node, deep: bool = False) -> Any:
        if node in self.constructed_objects or node in self.recursive_objects:  # the node was seen: an alias
            if not isinstance(node, yaml.ScalarNode):
                raise yaml.constructor.ConstructorError(None, None, "the mapping or list anchored here (&name) is "
                                                        "aliased (*name): aliases of mappings and lists are not "
                                                        "allowed", node.start_mark)
            self._aliased += len(node.value)
            if self._aliased > MAX_FILE_BYTES["domain.yaml"]:
                raise yaml.constructor.ConstructorError(
                    None, None, f"aliases (*name) expand past {MAX_FILE_BYTES['domain.yaml']:,} characters",
                    node.start_mark)
        return super().construct_object(node, deep=deep)

    def construct_mapping(self, node: yaml.Node, deep: bool = False) -> dict[Any, Any]:
        if not isinstance(node, yaml.MappingNode):
            raise yaml.constructor.ConstructorError(None, None, f"expected a mapping, found {node.id}", node.start_mark)
        self.flatten_mapping(node)
        mapping: dict[Any, Any] = {}
        first_line: dict[Any, int] = {}
        for key_node, value_node in node.value:
            key = self.construct_object(key_node, deep=True)
            try:
                duplicate = key in mapping
            except TypeError:
                raise yaml.constructor.ConstructorError(
                    None, None, "a mapping key must be a plain value", key_node.start_mark) from None
            if duplicate:
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicate key {_clip(key)} (first at line {first_line[key]})", key_node.start_mark)
            first_line[key] = key_node.start_mark.line + 1
            mapping[key] = self.construct_object(value_node, deep=deep)
        return mapping


def _clip(value: Any, limit: int = 80) -> str:
    """repr(value) cut to `limit` characters: a user's value never goes unbounded into a message."""
    text = repr(value) if not isinstance(value, str) or len(value) <= limit else repr(value[:limit])
    return text if len(text) <= limit + 2 else text[:limit] + "…"


_LOADER = _DomainLoader
# Names a table or column cannot have, and why: the exported package makes each table a field of a pydantic
# `DB` (τ²-bench's environment/db.py adds load, dump, get_*) and each column a field of a pydantic model
# whose annotations name str, int, float and bool. Soft keywords (`type`, `match`) stay: Python takes them as names.
RESERVED_NAMES = {
    **dict.fromkeys(("str", "int", "float", "bool"), "a type the exported data model names"),
    **dict.fromkeys([*(n for n in dir(BaseModel) if not n.startswith("_")), "load", "dump", "get_json_schema",
                     "get_hash", "get_statistics"], "an attribute of the exported pydantic models"),
    **dict.fromkeys(keyword.kwlist, "a Python keyword"),
}


class DomainError(ValueError):
    """A domain folder that cannot be loaded; the message says where and why."""


@dataclass(frozen=True, eq=False)
class Domain:
    spec: DomainSpec
    policy: str
    toolkit: Toolkit
    path: Path | None = None
    sources: dict[str, str] = field(default_factory=dict, repr=False)

    @property
    def name(self) -> str:
        return self.spec.name

    @cached_property
    def metadata(self) -> sa.MetaData:
        return build_metadata(self.spec)

    def tool_schemas(self) -> list[dict[str, Any]]:
        return [spec.openai_schema() for spec in self.toolkit.specs.values()]


def _line_of(node: yaml.Node | None, loc: tuple[Any, ...]) -> int | None:
    """The 1-based line of the YAML node at a pydantic error location, or of its nearest parent."""
    line = node.start_mark.line + 1 if node is not None else None
    for key in loc:
        if isinstance(node, yaml.MappingNode):
            child = next((v for k, v in node.value if k.value == key), None)
            if child is None:
                child = next((k for k, _ in node.value if k.value == key), None)
        elif isinstance(node, yaml.SequenceNode) and isinstance(key, int) and key < len(node.value):
            child = node.value[key]
        else:
            child = None
        if child is None:
            break
        node = child
        line = node.start_mark.line + 1
    return line


def parse_spec(text: str, filename: str = "domain.yaml") -> DomainSpec:
    """Validate domain.yaml text; DomainError lists each bad field with its file and line."""
    try:
        data = yaml.load(text, Loader=_LOADER)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{filename}:{mark.line + 1}" if mark else filename
        raise DomainError(f"{where}: not valid YAML: {getattr(exc, 'problem', exc)}") from None
    if not isinstance(data, dict):
        raise DomainError(f"{filename}:1: expected a mapping at the top level")
    try:
        spec = DomainSpec.model_validate(data)
    except ValidationError as exc:
        problems = [(tuple(p for p in err["loc"] if not (isinstance(p, str) and p.startswith("function-"))),
                     err["msg"]) for err in exc.errors()]
    else:
        problems = _export_problems(spec)
        if not problems:
            return spec
    tree = yaml.compose(text, Loader=_LOADER)  # only now: line numbers for the message
    raise DomainError("\n".join(f"{filename}:{_line_of(tree, loc)}: {'.'.join(map(str, loc)) or '(top level)'}: {msg}"
                                 for loc, msg in problems)) from None


def _export_problems(spec: DomainSpec) -> list[tuple[tuple[Any, ...], str]]:
    """(location, reason) for what a valid spec still cannot be built or exported with: reserved or
    colliding names, a cycle of foreign keys, more rows than populate may make."""
    problems = list(_name_problems(spec))
    try:
        spec.creation_order()
    except ValueError as exc:
        return [*problems, (("tables",), str(exc))]
    size = spec.size_problem()
    if size is not None:
        table, reason = size
        at = [i for i, t in enumerate(spec.tables) if t.name == table]
        problems.append((("tables", *at), reason))
    return problems


def _name_problems(spec: DomainSpec) -> Iterator[tuple[tuple[Any, ...], str]]:
    if keyword.iskeyword(spec.name):
        yield ("name",), f"{spec.name!r} is a Python keyword: its package could not be imported"
    classes: dict[str, str] = {}
    indexes: dict[str, str] = {}
    for i, table in enumerate(spec.tables):
        if table.name in RESERVED_NAMES:
            yield ("tables", i, "name"), f"{table.name!r} is {RESERVED_NAMES[table.name]}: the export cannot use it"
        if table.name.startswith("sqlite_"):
            yield ("tables", i, "name"), "names starting with sqlite_ are reserved by SQLite"
        # the exporter's class name for the table (pipeline/exporters/tau2.py, _camel): x_1 and x1 both give X1Record
        camel = "".join(part.capitalize() for part in table.name.split("_"))
        if classes.setdefault(camel, table.name) != table.name:
            yield ("tables", i, "name"), (f"tables {classes[camel]!r} and {table.name!r} would both be "
                                          f"exported as class {camel}Record")
        for j, col in enumerate(table.columns):
            at, column = ("tables", i, "columns", j, "name"), f"{table.name}.{col.name}"
            if col.name in RESERVED_NAMES:
                yield at, f"{col.name!r} is {RESERVED_NAMES[col.name]}: the export cannot use it"
            index = f"ix_{table.name}_{col.name}"  # a foreign key's index (sql.py)
            if col.references and indexes.setdefault(index, column) != column:
                yield at, f"{indexes[index]} and {column} would both get index {index}"


# A run loads each domain's texts twice (its design stage, then the stages that use the Domain), and
# compiling the tools costs a fifth of a second: the last few loads are kept, by their texts. A Domain
# is not changed once loaded (its dataclass and spec are frozen), so callers can share one.
_LOADED: OrderedDict[bytes, Domain] = OrderedDict()
_LOADED_LOCK = threading.Lock()
_LOADED_MAX = 16


def load_domain_text(spec_text: str, tools_text: str, policy_text: str, origin: str = "<memory>") -> Domain:
    """The Domain of these texts. `origin` names the files in error messages (and in the tools'
    compiled code, which nothing shows): a load that succeeded is reused whatever its origin."""
    key = hashlib.blake2b(repr((spec_text, tools_text, policy_text)).encode(), digest_size=16).digest()
    with _LOADED_LOCK:
        if key in _LOADED:
            _LOADED.move_to_end(key)
            return _LOADED[key]
    domain = _load_domain_text(spec_text, tools_text, policy_text, origin)
    with _LOADED_LOCK:
        _LOADED[key] = domain
        while len(_LOADED) > _LOADED_MAX:
            _LOADED.popitem(last=False)
    return domain


def _load_domain_text(spec_text: str, tools_text: str, policy_text: str, origin: str) -> Domain:
    spec = parse_spec(spec_text, f"{origin}/domain.yaml")
    try:
        toolkit = build_toolkit(tools_text, f"{origin}/tools.py")
    except ToolCompileError as exc:
        raise DomainError(str(exc)) from None
    _check_rules(spec, toolkit, f"{origin}/domain.yaml")
    return Domain(spec, policy_text, toolkit,
                  sources={"domain.yaml": spec_text, "tools.py": tools_text, "policy.md": policy_text})


def _check_rules(spec: DomainSpec, toolkit: Toolkit, filename: str) -> None:
    """DomainError listing every rule and intent that names a tool the toolkit lacks, and every intent
    premise that is not a filter on its anchor table's columns, one line each."""
    problems = []
    for rule in spec.rules:
        named = rule.enforced_by + ([*rule.check.first, *rule.check.then] if rule.check else [])
        unknown = [t for t in named if t not in toolkit.specs]
        if unknown:
            problems.append(f"{filename}: rule {rule.id!r} names unknown tool(s) {', '.join(unknown)}")
        problems += [f"{filename}: {problem}" for problem in rule_problems(rule, spec, toolkit.specs)]
    rule_ids = {rule.id for rule in spec.rules if rule.agent is not None}
    for intent in spec.intents:
        template = intent.template
        named = [*intent.tools, *(a.name for a in ([*template.actions, *template.naive] if template else []))]
        if intent.tests_rule is not None and intent.tests_rule not in rule_ids:
            problems.append(f"{filename}: intent {intent.name!r} tests {intent.tests_rule!r}, which is no rule "
                            "with an agent check")
        problems += [f"{filename}: intent {intent.name!r} uses unknown tool {name!r}"
                     for name in dict.fromkeys(named) if name not in toolkit.specs]
        if intent.premise is not None:  # the spec checked it has an anchor_table
            problems += [f"{filename}: intent {intent.name!r}: {problem}"
                         for problem in premise_problems(intent.premise, spec.table(intent.anchor_table))]
    if problems:
        raise DomainError("\n".join(problems))


def read_domain_files(path: str | Path) -> dict[str, str]:
    """{file name: text} of a domain folder's files, each read only as a regular, capped file inside the
    folder (domains/files.py). DomainError names the missing or refused file in one line."""
    path = Path(path)
    texts = {}
    for name in DOMAIN_FILES:
        try:
            texts[name] = read_domain_file(path, name)
        except FileNotFoundError:
            raise DomainError(f"{path / name}: missing") from None
        except NotADirectoryError:
            raise DomainError(f"{path}: not a folder") from None
        except DomainFileError as exc:
            raise DomainError(str(exc)) from None
        except OSError as exc:
            raise DomainError(f"{path / name}: cannot be read: {exc.strerror or type(exc).__name__}") from None
    return texts


def load_domain(path: str | Path) -> Domain:
    """Load a domain folder. DomainError names the missing or faulty file."""
    path = Path(path)
    texts = read_domain_files(path)
    domain = load_domain_text(texts["domain.yaml"], texts["tools.py"], texts["policy.md"], str(path))
    return Domain(domain.spec, domain.policy, domain.toolkit, path, domain.sources)


def builtin_domain(name: str) -> Domain:
    """One of the ten built-in domains, by name."""
    if name not in BUILTIN_DOMAINS:
        raise DomainError(f"unknown domain {name!r}; built-in domains: {', '.join(BUILTIN_DOMAINS)}")
    return load_domain(BUILTIN_DIR / name)


def available_domains() -> list[str]:
    return list(BUILTIN_DOMAINS)
