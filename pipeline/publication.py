"""A finished run published by every exporter, one domain at a time.

An exporter is one module in pipeline/exporters/ that names its class `EXPORTER`; the module's name
is its folder (OUT/hf, OUT/tau2). Each domain is loaded once, in a worker process when there are
several, where every exporter makes its part of it (a τ²-bench package written and checked, the
dataset rows); the parent hands the parts, in name order, to each exporter's collector, which
writes what spans domains (the parquet files, the card). Every folder is written beside its final
place and swapped in at the end: an interrupted publish leaves the previous one whole.
"""

from __future__ import annotations

import importlib
import os
import pkgutil
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from contextlib import ExitStack
from dataclasses import dataclass, field
from itertools import islice
from pathlib import Path
from typing import Any

from toolscale.domains.splits import TEST_FRACTION

from . import exporters as _package
from .outdir import remove
from .rows import BuiltDomain, PublishError, Run
from .secret_scan import SecretFound, check_no_secrets, public_files
from .workers import give_back, process_pool, take_worker

Part = Callable[[BuiltDomain, dict[str, str]], Any]  # (a domain, {task id: split}) -> the exporter's part of it


@dataclass(frozen=True)
class Exported:
    """What a collector reports when its folder is complete."""

    report: dict[str, Any] = field(default_factory=dict)  # fields for the run's report.json
    summary: dict[str, Any] = field(default_factory=dict)  # fields for the publish flow's answer


class Collector(ABC):
    """One exporter's writer in the parent: takes each domain's part in name order."""

    @abstractmethod
    def add(self, part: Any) -> None: ...

    @abstractmethod
    def finish(self) -> Exported:
        """Complete the folder, once every domain's part was added."""

    def close(self) -> None:
        """Release what the collector holds open; called after finish, and instead of it on failure."""


class Exporter(ABC):
    """One published format, written into OUT/<its module's name>/."""

    repo_folder: str  # where `toolscale push` puts the folder in the dataset repo ("" is the repo's root)

    @abstractmethod
    def part(self, folder: Path) -> Part:
        """What the publishing workers run once per domain, writing into `folder` if it writes. It is
        pickled by name, so its function lives in a module that imports only what a worker needs."""

    @abstractmethod
    def collector(self, run: Run, folder: Path) -> Collector: ...


def exporter_names() -> list[str]:
    """The exporters' names (their modules in pipeline/exporters/), sorted, found without importing them."""
    return sorted(m.name for m in pkgutil.iter_modules(_package.__path__))


def exporter_modules() -> list[str]:
    return [f"{_package.__name__}.{name}" for name in exporter_names()]


def exporters() -> dict[str, Exporter]:
    """{name: exporter} of every module in pipeline/exporters/, in name order."""
    found = {}
    for name, module in zip(exporter_names(), exporter_modules()):
        cls = getattr(importlib.import_module(module), "EXPORTER", None)
        if not (isinstance(cls, type) and issubclass(cls, Exporter)):
            raise PublishError(f"{module}: an exporter module names its Exporter subclass EXPORTER")
        found[name] = cls()
    return found


# A publishing worker costs ~1.5 s of CPU to start (an interpreter and its imports), a task ~2.4 ms to
# publish. Measured on 2 cores: bank and weather at scale 0.3 (319 tasks) took 4.1 s in the parent alone,
# 4.8 s and 2.4 s more CPU with 2 workers; the default run (4,843 tasks) 14.5 s alone, 9.4 s with 2.
TASKS_PER_WORKER = 1000


def useful_workers(run: Run, cores: int) -> int:
    """How many worker processes pay for their start: one per TASKS_PER_WORKER accepted tasks, at most
    one per core; 1 publishes in this process."""
    tasks = sum(int(run.report["domains"][name].get("accepted", 0)) for name in run.names)
    return max(1, min(cores, tasks // TASKS_PER_WORKER))


def parts_of_domain(run: Run, name: str, parts: list[Part], test_fraction: float) -> list[Any]:
    built = run.load(name)
    splits = run.splits(built, test_fraction)
    return [part(built, splits) for part in parts]


def domain_parts(run: Run, parts: list[Part], test_fraction: float = TEST_FRACTION,
                 workers: int = 1) -> Iterator[list[Any]]:
    """Every finished domain's parts (one per function in `parts`), in name order; in `workers`
    worker processes (idle ones this command kept first: pipeline/workers.py), at most one domain
    ahead of them (memory holds a few domains' parts)."""
    if workers <= 1 or len(run.names) == 1:
        for name in run.names:
            yield parts_of_domain(run, name, parts, test_fraction)
        return
    count = min(workers, len(run.names))
    kept = [pool for _ in range(count) if (pool := take_worker()) is not None]
    pools = kept + [process_pool(1) for _ in range(count - len(kept))]
    pending: deque[tuple[int, Future[list[Any]]]] = deque()

    def submit(name: str) -> None:
        busy = [sum(1 for i, f in pending if i == k and not f.done()) for k in range(count)]
        k = busy.index(min(busy))  # the least busy worker: each computes its domains in turn
        pending.append((k, pools[k].submit(parts_of_domain, run, name, parts, test_fraction)))

    names = iter(run.names)
    finished = False
    try:
        for name in islice(names, count + 1):
            submit(name)
        while pending:
            done = pending.popleft()[1].result()
            if (name := next(names, None)) is not None:
                submit(name)
            yield done
        finished = True
    finally:
        for pool in pools:
            if finished and pool in kept:
                give_back(pool)
            else:
                pool.shutdown(wait=True, cancel_futures=True)


def _swap_in(tmp: Path, final: Path) -> None:
    """Replace `final` by the finished `tmp` folder."""
    if os.path.lexists(final):  # a symlink there is renamed and unlinked, never followed
        old = final.with_name(f".{final.name}.old")
        remove(old)
        final.rename(old)
        tmp.rename(final)
        remove(old)
    else:
        tmp.rename(final)


def _check_no_secrets(run: Run, folders: dict[str, Path]) -> None:
    """PublishError naming the first public file (a domain's, or one of the folders about to be swapped in)
    that holds a secret of this machine; the folders are removed, the previous publication stays."""
    shown: dict[Path, Path] = {}
    for name, tmp in folders.items():
        shown |= {path: run.out / name / path.relative_to(tmp) for path in public_files(tmp)}
    domain_files = [path for name in run.names for path in public_files(run.out / name)]
    try:
        check_no_secrets([*domain_files, *shown], shown)
    except SecretFound as exc:
        for tmp in folders.values():
            remove(tmp)
        raise PublishError(str(exc)) from None


def build_publication(run: Run, test_fraction: float = TEST_FRACTION,
                      workers: int = 1) -> tuple[dict[str, Any], dict[str, Any]]:
    """Write OUT/<name>/ of every exporter for every finished domain, each domain loaded once.

    Returns the fields the exporters add to report.json (the dataset's: {rows: {config: {split: n}},
    fingerprint, per_domain, per_difficulty, per_tool, splits}) and the summary ({domains, and each
    exporter's: tasks, tau2})."""
    chosen = exporters()
    folders = {name: run.out / f".{name}.tmp" for name in chosen}
    for tmp in folders.values():
        remove(tmp)  # a symlink planted there is unlinked: the exporters must not write through it
    with ExitStack() as stack:
        collectors = []
        for name, exporter in chosen.items():
            collectors.append(collector := exporter.collector(run, folders[name]))
            stack.callback(collector.close)
        for parts in domain_parts(run, [e.part(folders[name]) for name, e in chosen.items()], test_fraction, workers):
            for collector, part in zip(collectors, parts):
                collector.add(part)
        results = [collector.finish() for collector in collectors]
    _check_no_secrets(run, folders)
    for name, tmp in folders.items():
        _swap_in(tmp, run.out / name)
    report: dict[str, Any] = {}
    summary: dict[str, Any] = {"domains": len(run.names)}
    for result in results:
        report |= result.report
        summary |= result.summary
    return report, summary


__all__ = ["Collector", "Exported", "Exporter", "Part", "build_publication", "domain_parts", "exporter_modules",
           "exporter_names", "exporters", "useful_workers"]
