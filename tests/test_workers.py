"""Worker processes (pipeline/workers.py) do not outlive a parent killed outright: a pool's worker
holds both ends of its queue, so it never sees the parent go, and a `kill -9` of `toolscale
generate` left its stage workers running for good."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import psutil
import pytest

from toolscale.pipeline.workers import process_pool

PARENT = """
import os, sys, time
from toolscale.pipeline.workers import process_pool
pool = process_pool(1)
print(pool.submit(os.getpid).result(), flush=True)
time.sleep(600)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the kernel's parent-death signal is Linux's")
def test_a_worker_ends_when_its_parent_is_killed():
    parent = subprocess.Popen([sys.executable, "-c", PARENT], stdout=subprocess.PIPE, text=True)
    worker = None
    try:
        worker = psutil.Process(int(parent.stdout.readline()))
        assert worker.is_running()
        os.kill(parent.pid, signal.SIGKILL)
        parent.wait(timeout=10)
        gone, _ = psutil.wait_procs([worker], timeout=10)
        assert gone, "the worker outlived its killed parent"
    finally:
        if parent.poll() is None:
            parent.kill()
        if worker is not None and worker.is_running():
            worker.kill()


def test_a_worker_has_the_environment_and_folder_of_the_process_that_made_its_pool(tmp_path, monkeypatch):
    """Workers are forked from a fork server started with the first pool (pipeline/workers.py): a later
    pool's worker must still see what a spawned one would, the environment and folder of now."""
    with process_pool(1) as first:
        first.submit(os.getpid).result()
    monkeypatch.setenv("TOOLSCALE_WORKER_MARK", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    with process_pool(1) as pool:
        assert pool.submit(os.getenv, "TOOLSCALE_WORKER_MARK").result() == str(tmp_path)
        assert pool.submit(os.getcwd).result() == str(tmp_path)
