"""The `publish` flow (a finished run folder → OUT/hf and OUT/tau2) and the `push` flow (OUT/hf → the Hub).

`publish` reads only the run's files (OUT/<domain>/..., OUT/report.json), so it serves any finished
run, and writes each folder beside its final place before swapping it in: an interrupted publish
leaves the previous one whole. `push` uploads OUT/hf with huggingface_hub (create_repo +
upload_folder) to HF_ENDPOINT (the public Hub by default). The token is read from the environment
or huggingface_hub's login inside the flow, never passed as a parameter, so Prefect never records it.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path
from typing import Any

from prefect import flow, task
from prefect.cache_policies import NO_CACHE

from toolscale.pipeline.export import atomic_write
from toolscale.pipeline.hf import TEST_FRACTION, Run, read_run, render_card, write_dataset
from toolscale.pipeline.tau2 import write_packages
from toolscale.quality.stats import dataset_stats

DEFAULT_ENDPOINT = "https://huggingface.co"


def _swap_in(tmp: Path, final: Path) -> None:
    """Replace `final` by the finished `tmp` folder."""
    if final.exists():
        old = final.with_name(f".{final.name}.old")
        shutil.rmtree(old, ignore_errors=True)
        final.rename(old)
        tmp.rename(final)
        shutil.rmtree(old, ignore_errors=True)
    else:
        tmp.rename(final)


def build_hf(run: Run, test_fraction: float = TEST_FRACTION) -> dict[str, Any]:
    """Write OUT/hf: the parquet of both configs, then the card with DuckDB statistics over it.

    Returns {rows: {config: {split: n}}, per_domain, per_difficulty, per_tool, splits}."""
    final = run.out / "hf"
    tmp = run.out / ".hf.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    counts = write_dataset(run, tmp, test_fraction)
    stats = dataset_stats(tmp)
    atomic_write(tmp / "README.md", render_card(run, counts, stats))
    _swap_in(tmp, final)
    return {"rows": counts, **stats}


def build_tau2(run: Run, test_fraction: float = TEST_FRACTION) -> list[str]:
    """Write OUT/tau2/<domain>/ for every finished domain; returns the domain names."""
    tmp, final = run.out / ".tau2.tmp", run.out / "tau2"
    shutil.rmtree(tmp, ignore_errors=True)
    written = write_packages(run, tmp, test_fraction)
    _swap_in(tmp, final)
    return [path.name for path in written]


@task(name="read-run", cache_policy=NO_CACHE)
def read_stage(out: Path) -> Run:
    return read_run(out)


@task(name="hf-dataset", cache_policy=NO_CACHE)
def hf_stage(run: Run, test_fraction: float) -> dict[str, Any]:
    return build_hf(run, test_fraction)


@task(name="tau2-packages", cache_policy=NO_CACHE)
def tau2_stage(run: Run, test_fraction: float) -> list[str]:
    return build_tau2(run, test_fraction)


@flow(name="publish")
def publish(out: Path, test_fraction: float = TEST_FRACTION) -> dict[str, Any]:
    """OUT/hf and OUT/tau2 from the finished run in `out`; the dataset's statistics go into report.json."""
    start = time.perf_counter()
    run = read_stage(out)
    dataset = hf_stage(run, test_fraction)
    packages = tau2_stage(run, test_fraction)
    report = dict(run.report)
    report["dataset"] = dataset
    report.setdefault("timings_s", {})["publish"] = round(time.perf_counter() - start, 3)
    atomic_write(Path(out) / "report.json", json.dumps(report, indent=2) + "\n")
    return {"tasks": dataset["rows"]["tasks"], "domains": len(run.domains), "tau2": packages}


def hub_endpoint() -> str:
    return os.environ.get("HF_ENDPOINT") or DEFAULT_ENDPOINT


def hub_token() -> str | None:
    """HF_TOKEN, or the token `hf auth login` stored (under HF_HOME)."""
    from huggingface_hub import get_token

    return get_token()


def upload_plan(folder: Path) -> list[tuple[str, int]]:
    """(path in the repo, size in bytes) of every file `push` would send, sorted."""
    return sorted((p.relative_to(folder).as_posix(), p.stat().st_size) for p in folder.rglob("*")
                  if p.is_file() and not any(part.startswith(".") for part in p.relative_to(folder).parts))


@task(name="upload", cache_policy=NO_CACHE, retries=2, retry_delay_seconds=[5, 30])
def upload_stage(folder: Path, repo_id: str, private: bool) -> dict[str, str]:
    from huggingface_hub import HfApi

    api = HfApi(endpoint=hub_endpoint(), token=hub_token())
    repo_url = api.create_repo(repo_id, repo_type="dataset", private=private, exist_ok=True)
    commit = api.upload_folder(folder_path=str(folder), repo_id=repo_id, repo_type="dataset",
                               commit_message="Publish toolscale dataset", ignore_patterns=[".*", "**/.*"])
    return {"repo_url": str(repo_url), "commit_url": commit.commit_url}


@flow(name="push")
def push(folder: Path, repo_id: str, private: bool = False) -> dict[str, str]:
    """Create the dataset repo (if needed) and upload the dataset folder to it in one commit."""
    return upload_stage(folder, repo_id, private)


__all__ = ["build_hf", "build_tau2", "hub_endpoint", "hub_token", "publish", "push", "upload_plan"]
