"""`toolscale new-domain "BRIEF"`: design a domain that is not in the catalog, then build it.

The brief becomes the domain's name (`pet grooming salon` -> `pet_grooming_salon`) and its
design brief; the run is the `generate` flow with the llm backend on that one domain, so the
designed folder (domain.yaml, tools.py, policy.md) goes through the same loader, stages, gates,
resume and report as any other: OUT/<name>/ and OUT/report.json.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from toolscale.domains import BUILTIN_DOMAINS
from toolscale.pipeline.llm import LLMConfig

from .generate import run_generation
from .plan import RunConfig

MAX_NAME = 40


class BriefError(ValueError):
    """A brief that gives no usable domain name."""


def domain_name(brief: str) -> str:
    """A snake_case name for a brief: its words, lowercased, at most MAX_NAME characters."""
    words = re.findall(r"[a-z0-9]+", brief.lower())
    name = ""
    for word in words:
        candidate = f"{name}_{word}" if name else word
        if len(candidate) > MAX_NAME:
            break
        name = candidate
    if not name:
        raise BriefError(f"the brief {brief!r} has no words to name a domain after")
    if not name[0].isalpha():
        name = f"d_{name}"[:MAX_NAME]
    return name


def new_domain_config(brief: str, llm: LLMConfig, out: Path = Path("output"), seed: int = 0, scale: float = 1.0,
                      name: str | None = None, runner: str = "threads") -> RunConfig:
    """The run that designs and builds `brief` as domain `name` (derived from the brief by default)."""
    name = name or domain_name(brief)
    if not re.fullmatch(r"[a-z][a-z0-9_]*", name):
        raise BriefError(f"domain name {name!r} must be snake_case, starting with a letter")
    if name in BUILTIN_DOMAINS:
        raise BriefError(f"{name!r} is a built-in domain: use `toolscale generate --domains {name} --backend llm`, "
                         "or give --name")
    llm = llm.model_copy(update={"briefs": {**llm.briefs, name: brief.strip()}})
    return RunConfig(domains=[name], seed=seed, out=out, backend="llm", llm=llm, scale=scale, runner=runner, merge=True)


def new_domain(brief: str, llm: LLMConfig, **options: Any) -> dict[str, Any]:
    """Design and build a domain from a brief; returns the run report."""
    return run_generation(new_domain_config(brief, llm, **options))
