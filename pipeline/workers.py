"""Worker processes for CPU-bound work (stages, publishing): Python threads share one core.

Not forked from the parent, whose threads (Prefect's, the terminal's) may hold locks a fork would
copy: forked from a fork server, a clean child of the parent that imported once what every worker
imports (PRELOAD, ~1 s of CPU), so a worker starts in ~0.02 s instead of importing it all again, as a
spawned one did. A worker takes the environment of the process that made its pool, as a spawned one
would (the fork server's is the one it started with), but keeps the fork server's hash seed: that is
the one it runs with. Workers ignore SIGINT: Ctrl-C in a terminal reaches the whole process group,
and the run's own stop (flows/interrupts.py) ends them with its other children. A parent killed
outright (SIGKILL, out of memory) cannot do that, and a pool's worker never sees its queue close (it
holds both ends): on Linux the kernel ends a worker whose fork server is gone, which ends with the
parent.

A command keeps its idle workers for its next work (`keeping_workers`): the workers it started ahead
for the stages and did not need (a rerun with nothing to compute) publish the run, instead of new
ones. A worker that computed stages is not kept: its memory stays at its largest domain's (at 16x,
the publication's peak passed 2 GB with them).
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
from multiprocessing import forkserver

import psutil

_PR_SET_PDEATHSIG = 1


# what workers import, imported once in the fork server: the command's own script (for `toolscale`,
# the CLI and through it the stages), then what the stages and the publication import on first use
PRELOAD = ["__main__", "toolscale.pipeline.synthesizer", "toolscale.pipeline.harden", "toolscale.quality.gating",
           "toolscale.pipeline.publication", "faker"]


def process_pool(workers: int) -> ProcessPoolExecutor:
    if "forkserver" in multiprocessing.get_all_start_methods():
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload(PRELOAD)  # read when the fork server starts: the first pool's
    else:
        context = multiprocessing.get_context("spawn")
    return ProcessPoolExecutor(max_workers=max(1, workers), mp_context=context, initializer=_start_worker,
                               initargs=(os.getpid(), dict(os.environ)))


def _start_worker(parent: int, environ: dict[str, str]) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    hash_seed = os.environ.get("PYTHONHASHSEED")
    os.environ.clear()
    os.environ.update({k: v for k, v in environ.items() if k != "PYTHONHASHSEED"})
    if hash_seed is not None:
        os.environ["PYTHONHASHSEED"] = hash_seed
    _leave_the_fork_server_to_the_parent()
    if sys.platform.startswith("linux"):
        # SIGTERM when the process this worker was forked from ends; one already gone before the call
        # (this worker then belongs to another) is caught by the check after it
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
        if parent not in (os.getppid(), _parent_of(os.getppid())):
            os._exit(1)


def _leave_the_fork_server_to_the_parent() -> None:
    """Close this worker's copy of the pipe that keeps the fork server alive. The server ends when no
    process holds it, and each worker it forks gets one: with them, a parent killed outright left the
    server and so its workers (ended only by the server's end) running for good."""
    server = getattr(forkserver, "_forkserver", None)
    alive = getattr(server, "_forkserver_alive_fd", None)
    if alive is not None:  # None in a spawned worker
        os.close(alive)
        server._forkserver_alive_fd = None


def _parent_of(pid: int) -> int:
    try:
        return psutil.Process(pid).ppid()
    except psutil.Error:
        return -1


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
    """Keep an idle one-worker pool for the next work of the block; outside one, stop it."""
    with _kept_lock:
        if _kept is not None:
            _kept.append(pool)
            return
    pool.shutdown(wait=False, cancel_futures=True)


def cores() -> int:
    return os.cpu_count() or 1
