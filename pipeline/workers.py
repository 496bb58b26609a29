"""Worker processes for CPU-bound work (stages, publishing): Python threads share one core.

Spawned, not forked: the parent has threads (Prefect's, the terminal's) whose held locks a fork
would copy. Workers ignore SIGINT: Ctrl-C in a terminal reaches the whole process group, and the
run's own stop (flows/interrupts.py) ends them with its other children.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
from concurrent.futures import ProcessPoolExecutor


def process_pool(workers: int) -> ProcessPoolExecutor:
    return ProcessPoolExecutor(max_workers=max(1, workers), mp_context=multiprocessing.get_context("spawn"),
                               initializer=signal.signal, initargs=(signal.SIGINT, signal.SIG_IGN))


def cores() -> int:
    return os.cpu_count() or 1
