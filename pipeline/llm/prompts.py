"""The prompt files: prompts/<stage>.j2 for the user message, prompts/partials/ for shared pieces.

Prompts are found through the path constant `PROMPTS_DIR` (the repository's `prompts/`). Every
request is a system message (partials/system.j2, opened by the role the stage's template states in
its first line) and the stage's user message; machine-readable parts sit in `## Title` sections
holding one fenced JSON block.
`digest(stage)` changes whenever the stage's template or any partial changes; it goes into each
task's lineage.
"""

from __future__ import annotations

import hashlib
import json
import re
from functools import lru_cache
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, StrictUndefined

PROMPTS_DIR = Path(__file__).resolve().parents[2] / "prompts"
_ROLE = re.compile(r"\A\{#\s*role:\s*(?P<role>.+?)\s*#\}", re.S)


@lru_cache(maxsize=1)
def roles() -> dict[str, str]:
    """{stage: role}: every prompts/<stage>.j2 is a stage, and its first line, `{# role: ... #}`,
    is the sentence that opens the stage's system prompt (partials/system.j2)."""
    found = {}
    for path in sorted(PROMPTS_DIR.glob("*.j2")):
        match = _ROLE.match(path.read_text(encoding="utf-8"))
        if match is None:
            raise ValueError(f"prompts/{path.name}: a stage's template opens with its role, {{# role: ... #}}")
        found[path.stem] = " ".join(match["role"].split())
    return found


def _json(value: Any, indent: int | None = None) -> str:
    return json.dumps(value, ensure_ascii=False, indent=indent, default=str)


@lru_cache(maxsize=1)
def _env() -> Environment:
    env = Environment(loader=FileSystemLoader(PROMPTS_DIR), undefined=StrictUndefined, autoescape=False,
                      trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=False)
    env.filters["json"] = _json
    return env


def render(template: str, **variables: Any) -> str:
    """Render one template file of prompts/ (e.g. 'task.j2' or 'partials/repair.j2')."""
    return _env().get_template(template).render(**variables).strip() + "\n"


def messages(stage: str, **variables: Any) -> list[dict[str, str]]:
    """The chat messages of a stage's request."""
    if stage not in roles():
        raise ValueError(f"unknown prompt stage {stage!r}; stages: {', '.join(roles())}")
    return [{"role": "system", "content": render("partials/system.j2", role=roles()[stage])},
            {"role": "user", "content": render(f"{stage}.j2", **variables)}]


@lru_cache(maxsize=None)
def digest(stage: str) -> str:
    """A digest of the stage's template and the shared partials."""
    h = hashlib.blake2b(digest_size=8)
    for path in [PROMPTS_DIR / f"{stage}.j2", *sorted((PROMPTS_DIR / "partials").glob("*.j2"))]:
        h.update(path.name.encode())
        h.update(path.read_bytes())
    return h.hexdigest()
