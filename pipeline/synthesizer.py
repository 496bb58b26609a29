"""Synthesizer backends: one method per stage, so the flow does not care who writes the data.

`OfflineSynthesizer` is deterministic and needs no network: it reads the built-in domain specs (or a
hand-written domain folder),
fills databases from the column hints and instantiates tasks from the intents' templates.
`LLMSynthesizer` (pipeline/llm/) runs every stage through an OpenAI-compatible endpoint.
"""

from __future__ import annotations

from typing import Protocol

from toolscale.domains import Domain, Environment, builtin_domain, load_domain
from toolscale.domains.tasks import Rejection, Task

from .harden import harden
from .instantiate import RowIndex, instantiate
from .llm import LLMSynthesizer
from .populate import Rows, populate


class Synthesizer(Protocol):
    name: str

    def design(self, name: str) -> Domain: ...

    def populate(self, domain: Domain, seed: int) -> Rows: ...

    def tasks(self, domain: Domain, env: Environment, rows: Rows, seed: int) -> tuple[list[Task], list[Rejection]]: ...

    def harden(self, domain: Domain, env: Environment, tasks: list[Task], seed: int) -> tuple[list[Task], list[Rejection]]: ...


class OfflineSynthesizer:
    """The built-in, deterministic backend."""

    name = "offline"

    def __init__(self, scale: float = 1.0, folders: dict[str, str] | None = None) -> None:
        self.scale = scale
        self.folders = folders or {}  # domain name -> a hand-written domain folder (`--domain-dir`)

    def design(self, name: str) -> Domain:
        return load_domain(self.folders[name]) if name in self.folders else builtin_domain(name)

    def populate(self, domain: Domain, seed: int) -> Rows:
        return populate(domain.spec, seed, self.scale)

    def tasks(self, domain: Domain, env: Environment, rows: Rows, seed: int) -> tuple[list[Task], list[Rejection]]:
        index = RowIndex(rows)
        tasks: list[Task] = []
        rejected: list[Rejection] = []
        for intent in domain.spec.intents:
            accepted, failed = instantiate(domain, env, rows, intent, seed, index)
            tasks.extend(accepted)
            rejected.extend(failed)
        return tasks, rejected

    def harden(self, domain: Domain, env: Environment, tasks: list[Task], seed: int) -> tuple[list[Task], list[Rejection]]:
        """Harder variants of the synthesized tasks (composition, conditions, relative dates, ...)."""
        return harden(domain, env, tasks, seed)


BACKENDS = {"offline": OfflineSynthesizer, "llm": LLMSynthesizer}
