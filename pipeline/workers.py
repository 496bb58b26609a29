"""Worker processes for CPU-bound work (stages, publishing): Python threads share one core.

Spawned, not forked: the parent has threads (Prefect's, the terminal's) whose held locks a fork
would copy. Workers ignore SIGINT: Ctrl-C in a terminal reaches the whole process group, and the
run's own stop (flows/interrupts.py) ends them with its other children. A parent killed outright
(SIGKILL, out of memory) cannot do that, and a pool's worker never sees its queue close (it holds
both ends): on Linux the kernel ends a worker whose parent is gone.
"""

from __future__ import annotations

import ctypes
import multiprocessing
import os
import signal
import sys
from concurrent.futures import ProcessPoolExecutor

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


def cores() -> int:
    return os.cpu_count() or 1
