"""A domain folder (`domain.yaml`, `tools.py`, `policy.md`) loaded into one validated object.

Errors name the file, the line and the field, so a person (or an LLM in a repair round) can
fix the spec without guessing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import sqlalchemy as sa
import yaml
from pydantic import ValidationError

from .sql import build_metadata
from .sandbox import ToolCompileError
from .spec import DomainSpec
from .toolkit import Toolkit, build_toolkit

BUILTIN_DIR = Path(__file__).resolve().parent
BUILTIN_DOMAINS = ("bank", "basketball", "ecommerce", "medicine", "movie", "railway", "restaurant",
                   "school", "travel", "weather")


_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


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
        return DomainSpec.model_validate(data)
    except ValidationError as exc:
        tree = yaml.compose(text, Loader=_LOADER)  # only now: line numbers for the message
        problems = []
        for err in exc.errors():
            loc = tuple(p for p in err["loc"] if not (isinstance(p, str) and p.startswith("function-")))
            field_path = ".".join(str(p) for p in loc) or "(top level)"
            problems.append(f"{filename}:{_line_of(tree, loc)}: {field_path}: {err['msg']}")
        raise DomainError("\n".join(problems)) from None


def load_domain_text(spec_text: str, tools_text: str, policy_text: str, origin: str = "<memory>") -> Domain:
    spec = parse_spec(spec_text, f"{origin}/domain.yaml")
    try:
        toolkit = build_toolkit(tools_text, f"{origin}/tools.py")
    except ToolCompileError as exc:
        raise DomainError(str(exc)) from None
    _check_rules(spec, toolkit, f"{origin}/domain.yaml")
    return Domain(spec, policy_text, toolkit,
                  sources={"domain.yaml": spec_text, "tools.py": tools_text, "policy.md": policy_text})


def _check_rules(spec: DomainSpec, toolkit: Toolkit, filename: str) -> None:
    for rule in spec.rules:
        named = rule.enforced_by + ([*rule.check.first, *rule.check.then] if rule.check else [])
        unknown = [t for t in named if t not in toolkit.specs]
        if unknown:
            raise DomainError(f"{filename}: rule {rule.id!r} names unknown tool(s) {', '.join(unknown)}")
    for intent in spec.intents:
        named = [*intent.tools, *(a.name for a in (intent.template.actions if intent.template else []))]
        for name in named:
            if name not in toolkit.specs:
                raise DomainError(f"{filename}: intent {intent.name!r} uses unknown tool {name!r}")


def load_domain(path: str | Path) -> Domain:
    """Load a domain folder. DomainError names the missing or faulty file."""
    path = Path(path)
    texts = {}
    for name in ("domain.yaml", "tools.py", "policy.md"):
        try:
            texts[name] = (path / name).read_text(encoding="utf-8")
        except FileNotFoundError:
            raise DomainError(f"{path / name}: missing") from None
    domain = load_domain_text(texts["domain.yaml"], texts["tools.py"], texts["policy.md"], str(path))
    return Domain(domain.spec, domain.policy, domain.toolkit, path, domain.sources)


def builtin_domain(name: str) -> Domain:
    """One of the ten built-in domains, by name."""
    if name not in BUILTIN_DOMAINS or not (BUILTIN_DIR / name / "domain.yaml").exists():
        available = [d for d in BUILTIN_DOMAINS if (BUILTIN_DIR / d / "domain.yaml").exists()]
        raise DomainError(f"unknown domain {name!r}; built-in domains: {', '.join(available)}")
    return load_domain(BUILTIN_DIR / name)


def available_domains() -> list[str]:
    return [d for d in BUILTIN_DOMAINS if (BUILTIN_DIR / d / "domain.yaml").exists()]
