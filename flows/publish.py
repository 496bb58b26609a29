"""The `publish` flow (a finished run folder → OUT/hf and OUT/tau2) and the `push` flow (OUT/hf → the Hub).

`publish` reads only the run's files (OUT/<domain>/..., OUT/report.json), so it serves any finished
run, one domain at a time, and writes each folder beside its final place before swapping it in: an
interrupted publish leaves the previous one whole. What it was made from is keyed like a stage
(`publication_key`), so a rerun whose domains did not change reuses it without starting Prefect.
`push` uploads OUT/hf with huggingface_hub (create_repo + upload_folder) to HF_ENDPOINT (the public
Hub by default). The token is read from the environment
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
from toolscale.pipeline.card import render_card, with_repo_id
from toolscale.domains.splits import TEST_FRACTION
from toolscale.pipeline.hf import write_dataset
from toolscale.pipeline.rows import Run, read_run
from toolscale.pipeline.publication import published_domains
from toolscale.pipeline.workers import cores
from toolscale.quality.stats import dataset_stats

from .digests import code_digest, files_digest, json_digest
from .store import read_json

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


def build_publication(run: Run, test_fraction: float = TEST_FRACTION,
                      workers: int = 1) -> tuple[dict[str, Any], dict[str, Any]]:
    """Write OUT/hf (the parquet of both configs, then the card with DuckDB statistics over it) and
    OUT/tau2/<domain>/ for every finished domain, each domain loaded once (in `workers` processes).

    Returns the dataset ({rows: {config: {split: n}}, fingerprint, per_domain, per_difficulty,
    per_tool, splits}) and the summary ({tasks, domains, tau2: the packages' domain names})."""
    hf_tmp, tau2_tmp = run.out / ".hf.tmp", run.out / ".tau2.tmp"
    for tmp in (hf_tmp, tau2_tmp):
        shutil.rmtree(tmp, ignore_errors=True)
    counts, fingerprint = write_dataset(published_domains(run, tau2_tmp, test_fraction, workers), hf_tmp)
    stats = dataset_stats(hf_tmp)
    atomic_write(hf_tmp / "README.md", render_card(run, counts, stats, fingerprint))
    atomic_write(hf_tmp / "report.json", json.dumps(stable_report(run.report), indent=1, sort_keys=True) + "\n")
    _swap_in(hf_tmp, run.out / "hf")
    _swap_in(tau2_tmp, run.out / "tau2")
    dataset = {"rows": counts, "fingerprint": fingerprint, **stats}
    return dataset, {"tasks": counts["tasks"], "domains": len(run.names), "tau2": list(run.names)}


PUBLISHED = Path(".toolscale") / "published.json"
_RUN_ONLY = ("timings_s", "stages", "dataset")  # report fields that differ between runs of the same data


def stable_report(report: dict[str, Any]) -> dict[str, Any]:
    """The run's report without what differs between runs of the same data (timings): the copy
    published beside the data, and part of the publication's key."""
    stable = {k: v for k, v in report.items() if k not in _RUN_ONLY}
    stable["domains"] = {name: {k: v for k, v in entry.items() if k not in _RUN_ONLY}
                         for name, entry in stable.get("domains", {}).items()}
    return stable


def publication_key(out: Path, test_fraction: float = TEST_FRACTION) -> str:
    """What OUT/hf and OUT/tau2 are made from: every file of the finished domains, the report
    without its timings (the card shows the funnel), the test fraction and the publishing code."""
    run = read_run(out)
    blob = {"report": stable_report(run.report), "test_fraction": test_fraction,
            "files": files_digest(out, [p for name in run.names for p in (out / name).rglob("*") if p.is_file()]),
            "code": code_digest(build_publication, ["toolscale.pipeline.hf", "toolscale.pipeline.card",
                                                     "toolscale.pipeline.publication", "toolscale.pipeline.tau2",
                                                     "toolscale.quality.stats"])}
    return json_digest(blob)


def _outputs_digest(out: Path) -> str:
    """The digest of what OUT/hf and OUT/tau2 hold now (so a damaged folder is rebuilt, not reused)."""
    return files_digest(out, [p for folder in ("hf", "tau2") for p in (out / folder).rglob("*")
                              if p.is_file() and "__pycache__" not in p.parts])


def reuse_publication(out: Path, test_fraction: float = TEST_FRACTION) -> dict[str, Any] | None:
    """The summary of the publication in `out` if it is current (made from the same key, and its
    files unchanged since), after putting its statistics back into report.json; else None."""
    out = Path(out)
    try:  # a marker that is missing, unreadable or not as mark_published writes it: publish again
        published = read_json(out / PUBLISHED)
        summary, dataset = dict(published["summary"]), published["dataset"]
        current = published["key"] == publication_key(out, test_fraction) and \
            published["outputs"] == _outputs_digest(out)
    except (OSError, ValueError, TypeError, KeyError):
        return None
    if not current:
        return None
    _record(out, dataset, seconds=0.0)
    return {**summary, "reused": True}


def _record(out: Path, dataset: dict[str, Any], seconds: float) -> None:
    report = read_json(out / "report.json")
    report["dataset"] = dataset
    report.setdefault("timings_s", {})["publish"] = seconds
    atomic_write(out / "report.json", json.dumps(report, indent=2) + "\n")


@task(name="read-run", cache_policy=NO_CACHE)
def read_stage(out: Path) -> Run:
    return read_run(out)


@task(name="dataset-and-packages", cache_policy=NO_CACHE)
def publication_stage(run: Run, test_fraction: float) -> tuple[dict[str, Any], dict[str, Any]]:
    return build_publication(run, test_fraction, workers=cores())


@flow(name="publish")
def publish(out: Path, test_fraction: float = TEST_FRACTION) -> dict[str, Any]:
    """OUT/hf and OUT/tau2 from the finished run in `out`; the dataset's statistics go into
    report.json, and what the folders were made from into OUT/.toolscale/published.json."""
    start = time.perf_counter()
    out = Path(out)
    key = publication_key(out, test_fraction)
    run = read_stage(out)
    dataset, summary = publication_stage(run, test_fraction)
    _record(out, dataset, seconds=round(time.perf_counter() - start, 3))
    mark_published(out, key, summary, dataset)
    return summary


def mark_published(out: Path, key: str, summary: dict[str, Any], dataset: dict[str, Any]) -> None:
    """Note what OUT/hf and OUT/tau2 were made from (`key`) and what they hold now."""
    atomic_write(out / PUBLISHED, json.dumps({"key": key, "outputs": _outputs_digest(out), "summary": summary,
                                              "dataset": dataset}, indent=1) + "\n")


def hub_endpoint() -> str:
    return os.environ.get("HF_ENDPOINT") or DEFAULT_ENDPOINT


def hub_token() -> str | None:
    """HF_TOKEN, or the token `hf auth login` stored (under HF_HOME)."""
    from huggingface_hub import get_token

    return get_token()


def upload_plan(out: Path) -> list[tuple[str, Path, int]]:
    """(path in the repo, local file, size in bytes) of every file `push` sends, sorted: the dataset
    folder OUT/hf at the repo's root and the τ²-bench packages OUT/tau2 under tau2/ (hidden files and
    caches left out)."""
    plan = []
    for folder, prefix in ((out / "hf", ""), (out / "tau2", "tau2/")):
        for path in folder.rglob("*") if folder.is_dir() else ():
            parts = path.relative_to(folder).parts
            if path.is_file() and not any(p.startswith(".") or p == "__pycache__" for p in parts):
                plan.append((prefix + "/".join(parts), path, path.stat().st_size))
    return sorted(plan)


@task(name="upload", cache_policy=NO_CACHE, retries=2, retry_delay_seconds=[5, 30])
def upload_stage(out: Path, repo_id: str, private: bool) -> dict[str, str]:
    """Create the repo if needed and commit the plan in one commit, the card naming `repo_id`."""
    from huggingface_hub import CommitOperationAdd, HfApi

    api = HfApi(endpoint=hub_endpoint(), token=hub_token())
    repo_url = api.create_repo(repo_id, repo_type="dataset", private=private, exist_ok=True)
    operations = [CommitOperationAdd(path_in_repo=name, path_or_fileobj=with_repo_id(
                      path.read_text(encoding="utf-8"), repo_id).encode() if name == "README.md" else str(path))
                  for name, path, _ in upload_plan(Path(out))]
    commit = api.create_commit(repo_id=repo_id, repo_type="dataset", operations=operations,
                               commit_message="Publish toolscale dataset")
    return {"repo_url": str(repo_url), "commit_url": commit.commit_url}


@flow(name="push")
def push(out: Path, repo_id: str, private: bool = False) -> dict[str, str]:
    """Create the dataset repo (if needed) and upload the run's dataset and τ² packages to it in one commit."""
    return upload_stage(out, repo_id, private)


__all__ = ["build_publication", "hub_endpoint", "hub_token", "mark_published", "publication_key", "publish",
           "push", "reuse_publication", "upload_plan"]
