"""The stages of one domain, in order: plain functions that read the artifacts of the stages before
them and write their own into a folder (the flow in generate.py only wires them).

Every artifact is plain files, so a stage never depends on objects another stage held in memory:
a resumed run and an uninterrupted one read the same bytes. Conventions between stages:
- `design` writes the domain's files (`sources.json`); `populate` writes `rows.json`. Later
  stages get the Domain, rows and Environment from `DomainWork`, rebuilt from those.
- a stage that passes tasks on writes `tasks.jsonl` and `rejected.jsonl`; the next such stage reads
  the latest `tasks.jsonl`, and `export` writes the last one as OUT/<domain>/tasks.jsonl and every
  stage's `rejected.jsonl`, in stage order, as OUT/<domain>/rejected.jsonl.

Adding a stage is a function `_name(call: StageCall) -> None` and one `Stage(...)` line in STAGES.
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from toolscale.domains import Domain, Environment
from toolscale.domains.domain import load_domain_text
from toolscale.domains.tasks import Rejection, Task
from toolscale.pipeline.export import write_domain_files, write_jsonl
from toolscale.pipeline.outdir import PUBLIC_FILES, real_folder, remove
from toolscale.pipeline.populate import Rows
from toolscale.quality.agent_gates import apply_reference
from toolscale.quality.difficulty import user_writes
from toolscale.quality.gating import run_gates
from toolscale.quality.reference import ReferenceConfig, reference_attempts
from toolscale.quality.report import domain_funnel

from . import progress
from .digests import code_digest, file_digest, source_digest, stage_key
from .store import StageStore, concatenate, read_json, read_jsonl, write_json



def scaled(domain: Domain, scale: float) -> Domain:
    """The domain with every intent's template count multiplied by `scale` (at least one)."""
    if scale == 1:
        return domain
    intents = [i.model_copy(update={"template": i.template.model_copy(
        update={"count": max(1, round(i.template.count * scale))})}) if i.template else i for i in domain.spec.intents]
    return dataclasses.replace(domain, spec=domain.spec.model_copy(update={"intents": intents}))


class DomainWork:
    """One domain's run: where it writes, its settings and synthesizer, and what the design and
    populate artifacts load into (loaded once per process, closed by `close`)."""

    def __init__(self, name: str, out: Path, seed: int, scale: float, synth: Any, store: StageStore,
                 keys: dict[str, str], reference: ReferenceConfig | None = None) -> None:
        self.name, self.out, self.seed, self.scale, self.synth = name, Path(out), seed, scale, synth
        self.store, self.keys, self.reference = store, keys, reference
        self._domain: Domain | None = None
        self._rows: Rows | None = None
        self._env: Environment | None = None

    def artifact(self, stage: str) -> Path:
        return self.store.path(stage, self.keys[stage])

    def domain(self) -> Domain:
        if self._domain is None:
            sources = read_json(self.artifact("design") / "sources.json")
            domain = load_domain_text(sources["domain.yaml"], sources["tools.py"], sources["policy.md"], self.name)
            self._domain = scaled(domain, self.scale)
        return self._domain

    def rows(self) -> Rows:
        if self._rows is None:
            self._rows = read_json(self.artifact("populate") / "rows.json")
        return self._rows

    def env(self) -> Environment:
        if self._env is None:
            self._env = Environment.from_rows(self.domain(), self.rows())
        return self._env

    def close(self) -> None:
        if self._env is not None:
            self._env.close()
        self._domain = self._rows = self._env = None


@dataclass
class StageCall:
    """One stage at work: the domain, the folder it writes, and the artifacts of the stages before."""

    work: DomainWork
    out: Path
    earlier: list[Path] = field(default_factory=list)

    def latest_tasks(self) -> Path:
        """The file of tasks the latest earlier stage passed on."""
        return next(p / "tasks.jsonl" for p in reversed(self.earlier) if (p / "tasks.jsonl").exists())

    def tasks(self) -> list[Task]:
        return list(read_jsonl(self.latest_tasks(), Task))

    def write_tasks(self, tasks: list[Task], rejected: list[Rejection]) -> None:
        write_jsonl(self.out / "tasks.jsonl", tasks)
        write_jsonl(self.out / "rejected.jsonl", rejected)


def _design(call: StageCall) -> None:
    write_json(call.out / "sources.json", dict(call.work.synth.design(call.work.name).sources))


def _populate(call: StageCall) -> None:
    write_json(call.out / "rows.json", call.work.synth.populate(call.work.domain(), call.work.seed))


def _tasks(call: StageCall) -> None:
    w = call.work
    call.write_tasks(*w.synth.tasks(w.domain(), w.env(), w.rows(), w.seed))


def _harden(call: StageCall) -> None:
    """The tasks with harder variants, and (`bases.jsonl`) the verified tasks variants replaced: the
    gate falls back to one when its variant is rejected."""
    w = call.work
    given = call.tasks()
    tasks, rejected = w.synth.harden(w.domain(), w.env(), given, w.seed)
    replaced = {t.meta.hardened_from for t in tasks}
    write_jsonl(call.out / "bases.jsonl", [t for t in given if t.id in replaced])
    call.write_tasks(tasks, rejected)


def _gate(call: StageCall) -> None:
    bases = next((p / "bases.jsonl" for p in reversed(call.earlier) if (p / "bases.jsonl").exists()), None)
    fallbacks = {t.id: t for t in read_jsonl(bases, Task)} if bases else {}
    call.write_tasks(*run_gates(call.tasks(), call.work.env(), fallbacks=fallbacks))


def _solve(call: StageCall) -> None:
    """The LLM gates, when a reference agent is configured; otherwise every task passes on."""
    w = call.work
    if w.reference is None:  # the file as it is: parsing and writing thousands of tasks costs seconds
        concatenate(call.out / "tasks.jsonl", [call.latest_tasks()])
        write_jsonl(call.out / "rejected.jsonl", [])
        return
    tasks = call.tasks()
    judge = None
    if w.reference.judge is not None:
        from toolscale.pipeline.llm.judge import LLMJudge  # the LLM backend, only for a run with a judge

        judge = LLMJudge(w.reference.judge)
    attempts = reference_attempts(w.domain(), w.env(), tasks, w.reference, judge)
    call.write_tasks(*apply_reference(tasks, attempts, w.reference.agent.model, w.reference.min_solved))


def _export(call: StageCall) -> None:
    """The public files of OUT/<domain>/, then the funnel and the files' digests in the artifact."""
    w = call.work
    target = real_folder(w.out / w.name, w.out)  # never write the public files through a planted symlink
    for leftover in target.glob(".*tmp*"):  # from a run killed while writing (a link is unlinked, not followed)
        remove(leftover)
    domain, env = w.domain(), w.env()
    rejections = [p / "rejected.jsonl" for p in call.earlier if (p / "rejected.jsonl").exists()]
    # read everything before writing anything: a bad record fails the export with the old files in place
    accepted = list(read_jsonl(call.latest_tasks(), Task))
    rejected = [r for path in rejections for r in read_jsonl(path, Rejection)]
    write_domain_files(target, domain, env)
    concatenate(target / "rejected.jsonl", rejections)
    concatenate(target / "tasks.jsonl", [call.latest_tasks()])  # last: its presence marks a finished domain
    funnel = domain_funnel(accepted, rejected, tools=list(domain.toolkit.specs), writes=user_writes(domain))
    funnel.update(tools=len(domain.toolkit.specs), rows=sum(len(r) for r in w.rows().values()), seed=w.seed)
    write_json(call.out / "funnel.json", funnel)
    write_json(call.out / "files.json", {name: file_digest(target / name) for name in PUBLIC_FILES})


def _export_intact(work: DomainWork, artifact: Path) -> bool:
    """The public files are still the ones this export wrote (a user may have changed them)."""
    target = work.out / work.name
    try:
        files = read_json(artifact / "files.json")
        return all(file_digest(target / name) == digest for name, digest in files.items())
    except (OSError, ValueError):
        return False


@dataclass(frozen=True)
class Stage:
    """A stage: its function, the toolscale modules it uses (its code version), whether it calls the
    synthesizer (which may call out: retried, and keyed by the backend's code and the prompts) or
    the reference agent (retried when there is one), the run settings only it (and what follows)
    depends on, and an optional check that a stored artifact still holds."""

    name: str
    run: Callable[[StageCall], None]
    code: tuple[str, ...] = ()
    synthesizer: bool = False
    agent: bool = False
    own_settings: tuple[str, ...] = ()
    intact: Callable[[DomainWork, Path], bool] | None = None


STAGES: tuple[Stage, ...] = (
    Stage("design", _design, synthesizer=True),
    Stage("populate", _populate, synthesizer=True),
    Stage("tasks", _tasks, synthesizer=True),
    Stage("harden", _harden, synthesizer=True),
    Stage("gate", _gate, code=("toolscale.quality.gates",)),
    Stage("solve", _solve, code=("toolscale.quality.reference", "toolscale.pipeline.llm.judge"), agent=True,
          own_settings=("reference",)),
    Stage("export", _export, code=("toolscale.pipeline.export", "toolscale.quality.report"), intact=_export_intact),
)
STAGE_NAMES = tuple(s.name for s in STAGES)
BASE_CODE = ("toolscale.flows.store", "toolscale.domains")


def compute_stage(work: DomainWork, stage: str) -> float:
    """Compute one stage and publish its artifact; returns the seconds it took."""
    index = STAGE_NAMES.index(stage)
    earlier = [work.artifact(s.name) for s in STAGES[:index]]
    start = time.perf_counter()
    with work.store.writing(stage, work.keys[stage]) as folder:
        STAGES[index].run(StageCall(work, folder, earlier))
        usage = work.synth.take_report() if hasattr(work.synth, "take_report") else None
        if usage:  # the llm backend's requests, tokens and cost while computing this stage
            (folder / "llm.json").write_text(json.dumps(usage) + "\n")
        seconds = round(time.perf_counter() - start, 3)
        (folder / "meta.json").write_text(json.dumps({"stage": stage, "key": work.keys[stage], "seconds": seconds}) + "\n")
    return seconds


def stage_keys(domain: str, settings: dict[str, Any], synth: Any) -> dict[str, str]:
    """Every stage's key for `domain` under `settings`, computed before anything runs (a domain
    read from a folder is keyed by the folder's content, not its path)."""
    keys: dict[str, str] = {}
    upstream = source_digest(domain, getattr(synth, "folders", {}).get(domain))
    prompted = getattr(synth, "name", "") != "offline"  # the offline backend reads no prompts
    later = {name for stage in STAGES for name in stage.own_settings}
    for stage in STAGES:
        modules = BASE_CODE + stage.code + ((type(synth).__module__,) if stage.synthesizer else ())
        # the reference agent's judge reads prompts/judge.j2
        code = code_digest(stage.run, modules, prompts=(stage.synthesizer and prompted) or stage.agent)
        known = {k: v for k, v in settings.items() if k not in later - set(stage.own_settings)}
        upstream = keys[stage.name] = stage_key(stage.name, code, known, upstream)
        later -= set(stage.own_settings)
    return keys


def is_current(work: DomainWork, stage: Stage) -> bool:
    """The stage's artifact exists under its key with every file as recorded (and, for export, the
    public files are intact). A damaged artifact is said in one line: it is recomputed."""
    key = work.keys[stage.name]
    if not work.store.has(stage.name, key):
        return False
    damage = work.store.damage(stage.name, key)
    if damage:
        progress.emit(work.name, "notice", message=f"{stage.name} artifact failed its digest check ({damage}); "
                                                   "recomputing")
        return False
    return stage.intact is None or stage.intact(work, work.store.path(stage.name, key))
