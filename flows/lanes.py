"""Offline stages in worker processes, started as soon as a run is planned.

Offline stages are pure CPU: in threads, two domains share one core (the GIL). Here each lane is one
worker process (one lane per core by default) that takes the next planned domain and computes its
stages in order, so a domain's design, rows and database are loaded once, in one process. The lanes
start before Prefect is imported (flows/plan.py) and its local server is up (its start costs a core
for ~5 s); the flow's stage task runs then wait for their stage here (flows/generate.py), so a
Prefect UI still shows every domain and stage, with the seconds each took.
"""

from __future__ import annotations

import pickle
import threading
from collections import deque
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool

from toolscale.pipeline.workers import give_back, process_pool, take_worker

from . import interrupts, progress
from .runners import runs_in_this_process
from .stages import STAGE_NAMES, DomainWork, compute_stage


class StageLanes:
    """The planned stages of `works` (domain -> (its work, the stages to compute)), computed in
    `lanes` worker processes, domains taken in the order given. `seconds(domain, stage)` waits for
    one and returns the seconds it took, or raises what it raised."""

    def __init__(self, works: dict[str, tuple[DomainWork, list[str]]], lanes: int) -> None:
        self._works = works
        self._todo = deque(works)
        self._lock = threading.Lock()
        self._closed = False
        self._stopping = False
        self._forget_stop = interrupts.when_stopped(self._stop)
        self._done: dict[tuple[str, str], Future[float]] = {
            (name, stage): Future() for name, (_, todo) in works.items() for stage in todo}
        self._threads = [threading.Thread(target=self._lane, name=f"toolscale-lane-{i}", daemon=True)
                         for i in range(max(1, min(lanes, len(works))))]
        for thread in self._threads:
            thread.start()

    def close(self) -> None:
        """Start no more stages (the run ended early): the stages computing finish, the others are
        answered with an error."""
        self._forget_stop()
        with self._lock:
            never = list(self._todo)
            self._todo.clear()
            self._closed = True
        for name in never:
            for stage in self._works[name][1]:
                self._done[(name, stage)].set_exception(RuntimeError("not computed: the run ended"))

    def _stop(self, signal_name: str) -> None:
        """The process is stopping (flows/interrupts.py): its flow runs are marked Cancelled, and a
        worker it kills next must not fail them now."""
        self._stopping = True

    def computes(self, domain: str, stage: str) -> bool:
        return (domain, stage) in self._done

    def seconds(self, domain: str, stage: str) -> float:
        return self._done[(domain, stage)].result()

    def _next(self) -> str | None:
        with self._lock:
            return self._todo.popleft() if self._todo else None

    def _lane(self) -> None:
        # a worker started ahead (start_workers), else one now; not kept after the lane: its memory
        # stays at its largest domain's, and its second interpreter with it
        pool = take_worker() or process_pool(1)
        try:
            while (name := self._next()) is not None:
                if not self._build(pool, name):
                    pool.shutdown(wait=False, cancel_futures=True)
                    pool = process_pool(1)  # it died (killed, out of memory): a new one for the next domain
        finally:
            pool.shutdown(wait=False, cancel_futures=True)

    def _build(self, pool: ProcessPoolExecutor, name: str) -> bool:
        """Compute one domain's stages on `pool`; False if the worker process died. Every one of
        its stages ends with a result or an exception, whatever happens short of a stop: the flow
        waits for them."""
        work, todo = self._works[name]
        try:
            work.store.clean(keep=work.keys)  # temporary folders of killed runs, artifacts of other settings
            for stage in STAGE_NAMES:
                progress.emit(name, stage, reused=stage not in todo)
                if stage in todo:
                    if self._closed:
                        raise RuntimeError("not computed: the run ended")
                    self._done[(name, stage)].set_result(pool.submit(_compute, work, stage).result())
        except BaseException as exc:  # noqa: BLE001 - the flow's stage task raises it
            if self._stopping:
                return False  # the process ends in a moment, its runs Cancelled: nothing to answer
            waiting = [stage for stage in todo if not self._done[(name, stage)].done()]
            for stage in waiting:
                self._done[(name, stage)].set_exception(
                    exc if stage == waiting[0] else RuntimeError(f"not computed: {waiting[0]} failed"))
            return not isinstance(exc, BrokenProcessPool)
        return True


def computes_in_lanes(backend: str, reference: object, runner: str) -> bool:
    """Offline stages with no reference agent compute in lanes when domains run in this process's
    threads; otherwise in the domain's own worker, as Prefect runs it."""
    return backend == "offline" and reference is None and runs_in_this_process(runner)


def start_workers(count: int) -> None:
    """Start `count` lane workers now, in a keeping_workers block (pipeline/workers.py): their start
    (the first pool's starts the fork server, whose imports take ~1 s of CPU) then overlaps the run's
    own start-up (Prefect's import and the plan, ~2 s on one core) instead of following it. The lanes
    take them; those no lane took (a run with nothing to compute) publish the run; the block's end
    stops those left."""
    for _ in range(count):
        pool = process_pool(1)
        pool.submit(_ready)
        give_back(pool)


def _ready() -> None:
    """In a worker: nothing to do; it imported what the lanes need to call this."""


_current: DomainWork | None = None  # in a worker: the domain it is computing, loaded once


def _compute(work: DomainWork, stage: str) -> float:
    """In a worker: compute `stage` of the domain (its work reused from the stage before)."""
    global _current
    if _current is None or (_current.name, _current.keys) != (work.name, work.keys):
        if _current is not None:
            _current.close()
        _current = work
    try:
        return compute_stage(_current, stage)
    except Exception as exc:
        try:  # the parent gets the exception itself when it survives pickling, else its text
            pickle.loads(pickle.dumps(exc))
        except Exception:  # noqa: BLE001 - any exception a stage raised must reach the parent as one line
            raise RuntimeError(f"{type(exc).__name__}: {exc}") from None
        raise
