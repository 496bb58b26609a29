"""Worker processes for CPU-bound work (stages, publishing): Python threads share one core.

Spawned, not forked: the parent has threads (Prefect's, the terminal's) whose held locks a fork
would copy. Workers ignore SIGINT: Ctrl-C in a terminal reaches the whole process group, and the
run's own stop (flows/interrupts.py) ends them with its other children. A parent killed outright
(SIGKILL, out of memory) cannot do that, and a pool's worker never sees its queue close (it holds
both ends): on Linux the kernel ends a worker whose parent is gone.

A command keeps its idle workers for its next work (`keeping_workers`): the workers it started ahead
for the stages and did not need (a rerun with nothing to compute) publish the run, instead of two new
ones each paying their start (~1 s of CPU) while it waits. A worker that computed stages is not kept:
its memory stays at its largest domain's (at 16x, the publication's peak passed 2 GB with them).
"""

from __future__ import annotations

import ctypes
import multiprocessing
import os
import signal
import sys
import threading
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager

_PR_SET_PDEATHSIG = 1


def process_pool(workers: int) -> ProcessPoolExecutor:
    return ProcessPoolExecutor(max_workers=max(1, workers), mp_context=multiprocessing.get_context("spawn"),
                               initializer=_start_worker, initargs=(os.getpid(),))


def _start_worker(parent: int) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if sys.platform.startswith("linux"):
        # SIGTERM when the thread that started this worker ends; it started this worker for the pool's
        # life, and a parent already gone before the call is caught by the check after it
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
        if os.getppid() != parent:
            os._exit(1)


_kept: list[ProcessPoolExecutor] | None = None  # idle one-worker pools, while a keeping_workers block lasts
_kept_lock = threading.Lock()


@contextmanager
def keeping_workers() -> Iterator[None]:
    """Within the block, one-worker pools handed back (`give_back`) wait for the next work to take
    them (`take_worker`); they stop at its end. Blocks nest: the outermost one stops them."""
    global _kept
    with _kept_lock:
        outermost, _kept = _kept is None, _kept if _kept is not None else []
    try:
        yield
    finally:
        if outermost:
            with _kept_lock:
                idle, _kept = _kept or [], None
            for pool in idle:
                pool.shutdown(wait=False, cancel_futures=True)


def take_worker() -> ProcessPoolExecutor | None:
    """An idle one-worker pool handed back in this block, or None."""
    with _kept_lock:
        return _kept.pop(0) if _kept else None


def give_back(pool: ProcessPoolExecutor) -> None:
    """Keep an idle one-worker pool for the next work of the block; outside one, stop it. Only a pool
    whose worker was started by a thread that outlives the block may be given back: the kernel ends
    a worker when the thread that started it ends (_start_worker)."""
    with _kept_lock:
        if _kept is not None:
            _kept.append(pool)
            return
    pool.shutdown(wait=False, cancel_futures=True)


def cores() -> int:
    return os.cpu_count() or 1
