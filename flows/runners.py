"""Where domains run: the task runner setting, as one short string.

    threads[:N]            N threads in this process: the default. N defaults to 4 for a backend
                           that waits on the network (LLM calls), else to one per core: offline
                           stages hold the GIL, so more threads would only hold more domains in
                           memory at once
    processes[:N]          N worker processes on this machine (default: one per core)
    dask[:N]               a local Dask cluster of N worker processes (needs toolscale[dask])
    dask://HOST:PORT       an existing Dask scheduler, e.g. `dask scheduler` + `dask worker` on
                           each machine (tcp://HOST:PORT works too)
    ray[:N]                a local Ray instance with N CPUs (needs toolscale[ray])
    ray://HOST:PORT        an existing Ray cluster (`ray start --head`, then workers)

The unit of distribution is a domain (its subflow and stages run on one worker), so a cluster
needs the output directory on a filesystem that every worker shares.
"""

from __future__ import annotations

import logging
import os
import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

DEFAULT_THREADS = 4
_SPEC = re.compile(r"^(?P<kind>threads|processes|dask|ray)(?::(?P<workers>\d+))?$")
_ADDRESS = re.compile(r"^(?P<scheme>dask|tcp|tls|ray)://(?P<rest>[^\s/]+)$")


class RunnerError(ValueError):
    """A runner setting that cannot be used; says which forms exist or what to install."""


class RunnerSpec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    kind: Literal["threads", "processes", "dask", "ray"]
    workers: int | None = None
    address: str | None = None


def parse_runner(text: str) -> RunnerSpec:
    """`threads`, `processes:2`, `dask`, `dask://host:8786`, `ray://host:10001`, ... as a RunnerSpec."""
    text = text.strip()
    if match := _SPEC.match(text):
        workers = int(match["workers"]) if match["workers"] else None
        if workers == 0:
            raise RunnerError(f"runner {text!r}: the number of workers must be at least 1")
        return RunnerSpec(kind=match["kind"], workers=workers)
    if match := _ADDRESS.match(text):
        kind = "ray" if match["scheme"] == "ray" else "dask"
        address = text if kind == "ray" or match["scheme"] != "dask" else f"tcp://{match['rest']}"
        return RunnerSpec(kind=kind, address=address)
    raise RunnerError(f"unknown runner {text!r}; use threads[:N], processes[:N], dask[:N], dask://HOST:PORT, "
                      "ray[:N] or ray://HOST:PORT")


def _quiet_dask() -> None:
    # Dask logs every worker start and stop at INFO; workers inherit the setting from the environment.
    os.environ.setdefault("DASK_LOGGING__DISTRIBUTED", "warning")
    logging.getLogger("distributed").setLevel(logging.WARNING)


def task_runner(text: str, domains: int, io_bound: bool = False) -> Any:
    """The Prefect task runner for a setting; `domains` bounds the local pools (no idle workers),
    `io_bound` (the backend waits on the network) raises the default number of threads."""
    spec = parse_runner(text)
    local = max(1, min(spec.workers or os.cpu_count() or 1, domains))
    if spec.kind == "threads":
        from prefect.task_runners import ThreadPoolTaskRunner

        return ThreadPoolTaskRunner(max_workers=thread_count(text, domains, io_bound))
    if spec.kind == "processes":
        from prefect.task_runners import ProcessPoolTaskRunner

        return ProcessPoolTaskRunner(max_workers=local)
    if spec.kind == "dask":
        try:
            from prefect_dask import DaskTaskRunner
        except ImportError:
            raise RunnerError("the dask runner needs prefect-dask: pip install 'toolscale[dask]'") from None
        _quiet_dask()
        if spec.address:
            return DaskTaskRunner(address=spec.address)
        return DaskTaskRunner(cluster_kwargs={"n_workers": local, "threads_per_worker": 1, "processes": True,
                                              "dashboard_address": None})
    try:
        from prefect_ray import RayTaskRunner
    except ImportError:
        raise RunnerError("the ray runner needs prefect-ray: pip install 'toolscale[ray]'") from None
    if spec.address:
        return RayTaskRunner(address=spec.address)
    return RayTaskRunner(init_kwargs={"num_cpus": local, "include_dashboard": False})


def thread_count(text: str, domains: int, io_bound: bool = False) -> int:
    """How many domains the threads runner `text` runs at once."""
    threads = parse_runner(text).workers or (DEFAULT_THREADS if io_bound else os.cpu_count() or 1)
    return max(1, min(threads, domains))


def runs_in_this_process(text: str) -> bool:
    """Whether domains run in this process (then stage progress reaches the caller as it happens)."""
    return parse_runner(text).kind == "threads"
