"""A publication is keyed like a stage: reused when nothing it is made from changed, rebuilt otherwise."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from published_run import published_run
from toolscale.flows.publish import build_publication, mark_published, publication_key, reuse_publication
from toolscale.pipeline.rows import read_run

DOMAINS = ("railway", "school")


@pytest.fixture()
def out(tmp_path) -> Path:
    """A private copy of a published run, marked as the publish flow marks it."""
    copy = tmp_path / "out"
    shutil.copytree(published_run(DOMAINS), copy)
    dataset, summary = build_publication(read_run(copy))
    mark_published(copy, publication_key(copy), summary, dataset)
    return copy


def report(out: Path) -> dict:
    return json.loads((out / "report.json").read_text())


def test_an_unchanged_run_reuses_its_publication_and_restores_its_statistics(out):
    changed = report(out)
    changed.pop("dataset", None)
    changed["timings_s"] = {"flow": 12.5}  # a rerun rewrites the report with other timings
    changed["stages"] = {"computed": 0, "reused": 12}
    (out / "report.json").write_text(json.dumps(changed))
    summary = reuse_publication(out)
    assert summary is not None and summary["reused"] and summary["domains"] == len(DOMAINS)
    assert report(out)["dataset"]["rows"]["tasks"] == summary["tasks"]
    assert report(out)["timings_s"] == {"flow": 12.5, "publish": 0.0}


def test_a_changed_task_file_or_setting_makes_the_publication_stale(out):
    key = publication_key(out)
    assert publication_key(out, test_fraction=0.2) != key
    tasks = out / DOMAINS[0] / "tasks.jsonl"
    lines = tasks.read_text().splitlines(keepends=True)
    tasks.write_text("".join(lines[:-1]))
    assert publication_key(out) != key
    assert reuse_publication(out) is None


def test_a_damaged_publication_is_rebuilt_not_reused(out):
    (out / "hf" / "README.md").write_text("edited by hand\n")
    assert reuse_publication(out) is None


def test_a_funnel_change_in_the_report_makes_the_publication_stale(out):
    key = publication_key(out)
    changed = report(out)
    changed["domains"][DOMAINS[0]]["accepted"] += 1
    (out / "report.json").write_text(json.dumps(changed))
    assert publication_key(out) != key


def test_no_marker_means_no_reuse(out):
    (out / ".toolscale" / "published.json").unlink()
    assert reuse_publication(out) is None
