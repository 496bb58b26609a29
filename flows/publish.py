"""The `publish` flow (a finished run folder → every exporter's folder: OUT/hf, OUT/tau2) and the `push`
flow (those folders → a dataset repo on the Hub).

`publish` reads only the run's files (OUT/<domain>/..., OUT/report.json), so it serves any finished
run (pipeline/publication.py does the work). What it was made from is keyed like a stage
(`publication_key`), so a rerun whose domains did not change reuses it without starting Prefect.
`push` uploads the folders with huggingface_hub (create_repo + upload_folder) to HF_ENDPOINT (the public
Hub by default). The token is read from the environment
or huggingface_hub's login inside the flow, never passed as a parameter, so Prefect never records it.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import prefect.runtime as prefect_runtime
from prefect import flow, task
from prefect.cache_policies import NO_CACHE

from toolscale.domains.splits import TEST_FRACTION
from toolscale.pipeline.card import with_repo_id
from toolscale.pipeline.outdir import check_output_folder
from toolscale.pipeline.export import atomic_write
from toolscale.pipeline.publication import (build_publication, exporter_modules, exporter_names, exporters,
                                           useful_workers)
from toolscale.pipeline.rows import Run, read_run, stable_report
from toolscale.pipeline.secret_scan import check_no_secrets
from toolscale.pipeline.workers import cores

from .digests import code_digest, files_digest, json_digest
from .store import read_json

DEFAULT_ENDPOINT = "https://huggingface.co"
PUBLISHED = Path(".toolscale") / "published.json"


def publication_key(out: Path, test_fraction: float = TEST_FRACTION) -> str:
    """What the exporters' folders are made from: every file of the finished domains, the report
    without its timings (the card shows the funnel), the test fraction and the publishing code."""
    run = read_run(out)
    blob = {"report": stable_report(run.report), "test_fraction": test_fraction,
            "files": files_digest(out, [p for name in run.names for p in (out / name).rglob("*") if p.is_file()]),
            "code": code_digest(build_publication, exporter_modules())}
    return json_digest(blob)


def _outputs_digest(out: Path) -> str:
    """The digest of what the exporters' folders hold now (so a damaged folder is rebuilt, not reused)."""
    return files_digest(out, [p for folder in exporter_names() for p in (out / folder).rglob("*")
                              if p.is_file() and "__pycache__" not in p.parts])


def reuse_publication(out: Path, test_fraction: float = TEST_FRACTION) -> dict[str, Any] | None:
    """The summary of the publication in `out` if it is current (made from the same key, and its
    files unchanged since), after putting its statistics back into report.json; else None."""
    out = Path(out)
    try:  # a marker that is missing, unreadable or not as mark_published writes it: publish again
        published = read_json(out / PUBLISHED)
        summary, fields = dict(published["summary"]), dict(published["report"])
        current = published["key"] == publication_key(out, test_fraction) and \
            published["outputs"] == _outputs_digest(out)
    except (OSError, ValueError, TypeError, KeyError):
        return None
    if not current:
        return None
    _record(out, fields, seconds=0.0)
    return {**summary, "reused": True}


def _record(out: Path, fields: dict[str, Any], seconds: float) -> None:
    """Put the exporters' fields (the dataset's statistics) and the publish time into report.json."""
    report = read_json(out / "report.json")
    report |= fields
    report.setdefault("timings_s", {})["publish"] = seconds
    atomic_write(out / "report.json", json.dumps(report, indent=2) + "\n")


@task(name="read-run", cache_policy=NO_CACHE)
def read_stage(out: Path) -> Run:
    return read_run(out)


@task(name="dataset-and-packages", cache_policy=NO_CACHE)
def publication_stage(run: Run, test_fraction: float) -> tuple[dict[str, Any], dict[str, Any]]:
    return build_publication(run, test_fraction, workers=useful_workers(run, cores()))


def _publish_run_name() -> str:
    """publish-<output folder>: what a Prefect UI lists the run as (random names otherwise)."""
    return f"publish-{Path(str(prefect_runtime.flow_run.parameters['out'])).name}"


@flow(name="publish", flow_run_name=_publish_run_name)
def publish(out: Path, test_fraction: float = TEST_FRACTION) -> dict[str, Any]:
    """Every exporter's folder from the finished run in `out`; the dataset's statistics go into
    report.json, and what the folders were made from into OUT/.toolscale/published.json."""
    start = time.perf_counter()
    out = Path(out)
    key = publication_key(out, test_fraction)
    run = read_stage(out)
    fields, summary = publication_stage(run, test_fraction)
    _record(out, fields, seconds=round(time.perf_counter() - start, 3))
    mark_published(out, key, summary, fields)
    return summary


def mark_published(out: Path, key: str, summary: dict[str, Any], fields: dict[str, Any]) -> None:
    """Note what the exporters' folders were made from (`key`), what they hold now, and what
    publishing said (the summary, the report's fields) for a rerun that reuses them."""
    atomic_write(out / PUBLISHED, json.dumps({"key": key, "outputs": _outputs_digest(out), "summary": summary,
                                              "report": fields}, indent=1) + "\n")


def hub_endpoint() -> str:
    return os.environ.get("HF_ENDPOINT") or DEFAULT_ENDPOINT


def hub_token() -> str | None:
    """HF_TOKEN, or the token `hf auth login` stored (under HF_HOME)."""
    from huggingface_hub import get_token

    return get_token()


def upload_plan(out: Path) -> list[tuple[str, Path, int]]:
    """(path in the repo, local file, size in bytes) of every file `push` sends, sorted: each
    exporter's folder where it says (the dataset folder OUT/hf at the repo's root, the τ²-bench
    packages OUT/tau2 under tau2/), hidden files and caches left out."""
    check_output_folder(out)  # a symlink in OUT/hf would upload what it points at
    plan = []
    for name, exporter in exporters().items():
        folder, prefix = out / name, exporter.repo_folder and exporter.repo_folder + "/"
        for path in folder.rglob("*") if folder.is_dir() else ():
            parts = path.relative_to(folder).parts
            if path.is_file() and not any(p.startswith(".") or p == "__pycache__" for p in parts):
                plan.append((prefix + "/".join(parts), path, path.stat().st_size))
    return sorted(plan)


@task(name="upload", cache_policy=NO_CACHE, retries=2, retry_delay_seconds=[5, 30])
def upload_stage(out: Path, repo_id: str, private: bool) -> dict[str, str]:
    """Create the repo if needed and commit the plan in one commit, the card naming `repo_id`."""
    from huggingface_hub import CommitOperationAdd, HfApi

    check_no_secrets([path for _, path, _ in upload_plan(Path(out))])  # the CLI checked; a caller may not have
    api = HfApi(endpoint=hub_endpoint(), token=hub_token())
    repo_url = api.create_repo(repo_id, repo_type="dataset", private=private, exist_ok=True)
    operations = [CommitOperationAdd(path_in_repo=name, path_or_fileobj=with_repo_id(
                      path.read_text(encoding="utf-8"), repo_id).encode() if name == "README.md" else str(path))
                  for name, path, _ in upload_plan(Path(out))]
    commit = api.create_commit(repo_id=repo_id, repo_type="dataset", operations=operations,
                               commit_message="Publish toolscale dataset")
    return {"repo_url": str(repo_url), "commit_url": commit.commit_url}


@flow(name="push", flow_run_name=lambda: f"push-{prefect_runtime.flow_run.parameters['repo_id']}")
def push(out: Path, repo_id: str, private: bool = False) -> dict[str, str]:
    """Create the dataset repo (if needed) and upload the exporters' folders to it in one commit."""
    return upload_stage(out, repo_id, private)


__all__ = ["build_publication", "hub_endpoint", "hub_token", "mark_published", "publication_key", "publish",
           "push", "reuse_publication", "upload_plan"]
