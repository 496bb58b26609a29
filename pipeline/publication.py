"""A finished run published one domain at a time: each domain is loaded once, in a worker process
when there are several, which writes and checks its τ²-bench package and hands back its dataset
rows for the parent to stream into the parquet files (pipeline/hf.py), in name order.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from concurrent.futures import Future
from itertools import islice
from pathlib import Path

from .rows import DatasetRows, Run, dataset_rows
from .tau2 import vendored_runtime, verify_package, write_package
from .workers import process_pool


def publish_domain(run: Run, name: str, tau2_dest: Path, test_fraction: float,
                   runtime: dict[str, str] | None = None) -> DatasetRows:
    """Load one finished domain, write its package under `tau2_dest` and check it (verify_package);
    return its dataset rows."""
    built = run.load(name)
    splits = run.splits(built, test_fraction)
    verify_package(write_package(built, tau2_dest / name, splits, runtime), built)
    return dataset_rows(built, splits)


def published_domains(run: Run, tau2_dest: Path, test_fraction: float, workers: int = 1) -> Iterator[DatasetRows]:
    """publish_domain for every finished domain of `run`, yielding their rows in name order; in
    `workers` worker processes, at most one domain ahead of them (memory holds a few domains' rows)."""
    runtime = vendored_runtime()  # the same for every package: read and trimmed once
    if workers <= 1 or len(run.names) == 1:
        for name in run.names:
            yield publish_domain(run, name, tau2_dest, test_fraction, runtime)
        return
    pool = process_pool(min(workers, len(run.names)))

    def submit(name: str) -> Future[DatasetRows]:
        return pool.submit(publish_domain, run, name, tau2_dest, test_fraction, runtime)

    names = iter(run.names)
    try:
        pending = deque(submit(name) for name in islice(names, workers + 1))
        while pending:
            rows = pending.popleft().result()
            if (name := next(names, None)) is not None:
                pending.append(submit(name))
            yield rows
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
