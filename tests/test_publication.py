"""A publication is keyed like a stage: reused when nothing it is made from changed, rebuilt otherwise.
An exporter is one module: dropped into pipeline/exporters/, it is published, keyed and pushed."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from published_run import published_run
from toolscale.flows.publish import mark_published, publication_key, reuse_publication, upload_plan
from toolscale.pipeline import exporters
from toolscale.pipeline.publication import build_publication, exporter_names
from toolscale.pipeline.rows import PublishError, read_run

DOMAINS = ("railway", "school")


@pytest.fixture()
def out(tmp_path, tmp_path_factory) -> Path:
    """A private copy of a published run, marked as the publish flow marks it."""
    copy = tmp_path / "out"
    shutil.copytree(published_run(tmp_path_factory, DOMAINS), copy)
    fields, summary = build_publication(read_run(copy))
    mark_published(copy, publication_key(copy), summary, fields)
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


TASK_IDS = '''"""A third format: each domain's task ids and splits, one text file per domain."""
import functools

from toolscale.pipeline.export import atomic_write
from toolscale.pipeline.publication import Collector, Exported, Exporter


def ids(built, splits, *, folder):
    atomic_write(folder / f"{built.domain.name}.txt", "".join(f"{t.id} {splits[t.id]}\\n" for t in built.tasks))
    return len(built.tasks)


class Total(Collector):
    def __init__(self):
        self.tasks = 0

    def add(self, part):
        self.tasks += part

    def finish(self):
        return Exported(report={"task_ids": self.tasks}, summary={"ids": self.tasks})


class TaskIds(Exporter):
    repo_folder = "extra/ids"

    def part(self, folder):
        return functools.partial(ids, folder=folder)

    def collector(self, run, folder):
        return Total()


EXPORTER = TaskIds
'''


@pytest.fixture()
def more_exporters(tmp_path, monkeypatch):
    """A folder searched for exporter modules after pipeline/exporters/ (for this test only)."""
    folder = tmp_path / "exporters"
    folder.mkdir()
    monkeypatch.setattr(exporters, "__path__", [*exporters.__path__, str(folder)])
    yield folder
    for name in [m for m in sys.modules if m.startswith(exporters.__name__ + ".task_ids")]:
        del sys.modules[name]


def test_an_exporter_is_one_module_published_keyed_and_pushed(out, more_exporters):
    key = publication_key(out)
    (more_exporters / "task_ids.py").write_text(TASK_IDS)
    assert exporter_names() == ["hf", "task_ids", "tau2"]
    assert publication_key(out) != key  # its code is part of what the publication is made from
    fields, summary = build_publication(read_run(out))
    tasks = sum(1 for name in DOMAINS for _ in (out / name / "tasks.jsonl").open())
    assert summary["ids"] == fields["task_ids"] == tasks and summary["tasks"]["train"] + summary["tasks"]["test"] == tasks
    lines = (out / "task_ids" / f"{DOMAINS[0]}.txt").read_text().splitlines()
    assert lines and all(line.startswith(f"{DOMAINS[0]}.") and line.split()[1] in ("train", "test") for line in lines)
    plan = [name for name, _, _ in upload_plan(out)]
    assert f"extra/ids/{DOMAINS[0]}.txt" in plan and "README.md" in plan and f"tau2/{DOMAINS[0]}/tasks.json" in plan


def test_an_exporter_module_without_its_exporter_is_refused_by_name(out, more_exporters):
    (more_exporters / "task_ids.py").write_text('"""Forgot to name its class."""\nEXPORTERS = []\n')
    with pytest.raises(PublishError, match="task_ids: an exporter module names its Exporter subclass EXPORTER"):
        build_publication(read_run(out))


@pytest.mark.parametrize("accepted, cores, workers", [({"bank": 200, "weather": 119}, 2, 1),
                                                      ({"bank": 534, "weather": 497, "movie": 1100}, 2, 2),
                                                      ({"bank": 4843}, 8, 4), ({"bank": 0}, 2, 1)])
def test_worker_processes_publish_only_runs_big_enough_to_pay_for_their_start(tmp_path, accepted, cores, workers):
    """A worker costs more to start than a small run costs to publish in the parent (319 tasks: 4.1 s
    alone, 4.8 s with two), and saves a third of a default run's publish (14.5 s alone, 9.4 s with two)."""
    from toolscale.pipeline.publication import useful_workers
    from toolscale.pipeline.rows import Run

    run = Run(tmp_path, {"domains": {name: {"accepted": n} for name, n in accepted.items()}}, tuple(sorted(accepted)))
    assert useful_workers(run, cores) == workers


def test_the_publication_runs_in_the_workers_a_command_kept_and_hands_them_back(out):
    """In a keeping_workers block (the CLI's generate), the workers it started ahead and did not need
    for the stages publish: parts as the parent publishing alone makes them, no new worker started,
    every worker kept for what follows."""
    import os

    import psutil

    from toolscale.pipeline.publication import domain_parts
    from toolscale.pipeline.workers import give_back, keeping_workers, process_pool, take_worker

    run = read_run(out)
    alone = list(domain_parts(run, [_task_ids], workers=1))
    with keeping_workers():
        pools = [process_pool(1), process_pool(1)]
        pids = {pool.submit(os.getpid).result() for pool in pools}
        for pool in pools:
            give_back(pool)
        before = {p.pid for p in psutil.Process().children()}
        parts = list(domain_parts(run, [_task_ids, _worker_pid], workers=2))
        assert {p.pid for p in psutil.Process().children()} <= before  # no worker started for it
        assert [[ids] for ids, _ in parts] == alone
        assert {pid for _, pid in parts} == pids  # both kept workers took a domain
        assert {take_worker(), take_worker()} == set(pools) and take_worker() is None
        for pool in pools:
            give_back(pool)
    _, alive = psutil.wait_procs([psutil.Process(pid) for pid in pids if psutil.pid_exists(pid)], timeout=30)
    assert not alive  # the block's end stopped them


def _task_ids(built, splits) -> list[str]:
    return sorted(splits)


def _worker_pid(built, splits) -> int:
    import os

    return os.getpid()
