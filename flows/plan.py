"""A run's plan, made before Prefect is imported: its config, each domain's work, the stages to
compute, and the lanes computing them.

Importing the flow (flows/generate.py, which imports Prefect) takes ~1.8 s of a core, and the stages
need none of it: the command plans the run and starts its lanes first, so they compute while Prefect
is imported, and the flow's stage task runs then wait on them.
"""

# No `from __future__ import annotations` here: RunConfig is a parameter of the flows, which Prefect
# validates from the annotations (flows/generate.py).

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from toolscale.pipeline.llm import LLMConfig, LLMSynthesizer
from toolscale.pipeline.synthesizer import OfflineSynthesizer, Synthesizer
from toolscale.quality.gating import screen
from toolscale.quality.reference import ReferenceConfig

from .lanes import StageLanes, computes_in_lanes
from .runners import parse_runner, thread_count
from .stages import STAGES, DomainWork, is_current, stage_keys
from .store import StageStore


class RunConfig(BaseModel):
    """One run. `settings()` (everything but where and how it runs) keys the stage artifacts and is
    recorded in report.json, so keep secrets out of it (add them to RUN_ONLY)."""

    model_config = ConfigDict(extra="forbid")
    RUN_ONLY: ClassVar[set[str]] = {"domains", "domain_dirs", "out", "runner", "refresh", "merge"}
    domains: list[str] = Field(min_length=1)
    domain_dirs: dict[str, str] = Field(default_factory=dict, description=(
        "domain name -> a hand-written domain folder, built like a built-in domain (offline); its content, "
        "not its path, keys the artifacts"))
    seed: int = 0
    out: Path = Path("output")
    backend: Literal["offline", "llm"] = "offline"
    llm: LLMConfig | None = Field(None, description="the endpoint, model and sizes of the llm backend")
    scale: float = Field(1.0, gt=0)
    reference: ReferenceConfig | None = Field(None, description="the LLM gates' reference agent, if any")
    runner: str = "threads"
    refresh: bool = Field(False, description="recompute every stage, ignoring stored artifacts")
    merge: bool = Field(False, description="merge into OUT/report.json instead of replacing it")

    @model_validator(mode="after")
    def _llm_configured(self) -> "RunConfig":
        if self.backend == "llm" and self.llm is None:
            raise ValueError("the llm backend needs an llm config (base_url and model)")
        if self.backend == "llm" and self.domain_dirs:
            raise ValueError("a domain folder is built by the offline backend (an LLM designs its own domains)")
        return self

    @field_validator("runner")
    @classmethod
    def _known_runner(cls, value: str) -> str:
        parse_runner(value)
        return value

    def settings(self) -> dict[str, Any]:
        return self.model_dump(mode="json", exclude=self.RUN_ONLY)


def synthesizer_for(config: RunConfig) -> Synthesizer:
    if config.backend == "llm":
        return LLMSynthesizer(config.llm, seed=config.seed, scale=config.scale, screen=screen)
    return OfflineSynthesizer(scale=config.scale, folders=config.domain_dirs)


def domain_work(name: str, config: RunConfig) -> DomainWork:
    synth = synthesizer_for(config)
    return DomainWork(name, config.out, config.seed, config.scale, synth, StageStore(config.out, name),
                      stage_keys(name, config.settings(), synth), config.reference)


def stages_to_run(work: DomainWork, refresh: bool) -> list[str]:
    """The stages to compute: all with `refresh`, else from the first one that is not current on."""
    for i, stage in enumerate(STAGES):
        if refresh or not is_current(work, stage):
            return [s.name for s in STAGES[i:]]
    return []


@dataclass
class Planned:
    """A planned run: the stages each domain computes (none: all current), the lanes computing them
    when they compute in worker processes, and when planning began. Leaving it closes the lanes."""

    todo: dict[str, list[str]]
    lanes: StageLanes | None
    started: float

    def __enter__(self) -> "Planned":
        return self

    def __exit__(self, *exc: object) -> None:
        if self.lanes is not None:
            self.lanes.close()


def plan_run(config: RunConfig) -> Planned:
    """Plan `config`'s run and start its lanes, if its stages compute in them."""
    started = time.perf_counter()
    config.out.mkdir(parents=True, exist_ok=True)
    works = {name: domain_work(name, config) for name in config.domains}
    todo = {name: stages_to_run(work, config.refresh) for name, work in works.items()}
    lanes = None
    domains = sum(1 for stages in todo.values() if stages)
    if domains and computes_in_lanes(config.backend, config.reference, config.runner):
        lanes = StageLanes({name: (works[name], stages) for name, stages in todo.items() if stages},
                           lanes=thread_count(config.runner, domains))
    return Planned(todo, lanes, started)
