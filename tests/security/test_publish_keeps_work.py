"""Publishing never loses work: a run of some domains over an output that holds other finished
domains keeps them in report.json, and so in hf/ and tau2/ (the red-team report's F6: `generate
--domains bank` over a full output shrank hf/ from 4881 tasks to 511, silently); a domain it cannot
keep is said in one line; and a failed export leaves the published files whole (k3).

The first run's stages run as plain functions (`run_stage.fn`), as in tests/test_resume.py; the
rerun is `run_generation` itself, which starts no Prefect when nothing is to be recomputed.
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest

from toolscale.flows import progress
from toolscale.flows.generate import domain_entry, finish_run, run_generation, run_stage
from toolscale.flows.plan import RunConfig, domain_work, stages_to_run
from toolscale.flows.publish import mark_published, publication_key, reuse_publication
from toolscale.pipeline.publication import build_publication
from toolscale.pipeline.rows import read_run

DOMAINS = ["weather", "railway"]


def build(config: RunConfig) -> dict:
    """What the generate flow does for `config`, without Prefect: each domain's stages, then the report."""
    start, results = time.perf_counter(), {}
    for name in config.domains:
        work = domain_work(name, config)
        todo = stages_to_run(work, config.refresh)
        try:
            for stage in todo:
                run_stage.fn(stage, name, work)
        finally:
            work.close()
        results[name] = {"entry": domain_entry(work), "computed": todo}
    return finish_run(config, results, {}, start)


def publish(out: Path) -> dict:
    """What the CLI does after a run: reuse the publication if it is current, else publish again."""
    summary = reuse_publication(out)
    if summary is None:
        fields, summary = build_publication(read_run(out))
        mark_published(out, publication_key(out), summary, fields)
    return summary


def said(run) -> list[str]:
    """The notices said while `run()` ran."""
    notices: list[str] = []

    def listen(domain: str, stage: str, info: dict) -> None:
        if stage == "notice":
            notices.append(f"{domain}: {info['message']}")

    progress.subscribe(listen)
    try:
        run()
    finally:
        progress.unsubscribe(listen)
    return notices


def report(out: Path) -> dict:
    return json.loads((out / "report.json").read_text())


def held(out: Path) -> tuple[list[str], list[str], int]:
    """The domains in report.json and in tau2/, and the tasks in hf/."""
    tasks = json.loads((out / ".toolscale" / "published.json").read_text())["summary"]["tasks"]
    packages = sorted(p.name for p in (out / "tau2").iterdir() if p.is_dir())
    return sorted(report(out)["domains"]), packages, sum(tasks.values())


@pytest.fixture(scope="module")
def published(tmp_path_factory):
    config = RunConfig(domains=DOMAINS, out=tmp_path_factory.mktemp("run") / "out", seed=5, scale=0.3)
    build(config)
    publish(config.out)
    assert held(config.out)[:2] == (sorted(DOMAINS), sorted(DOMAINS))
    return config, held(config.out)


@pytest.fixture
def run(published, tmp_path):
    shutil.copytree(published[0].out, tmp_path / "out")
    return published[0].model_copy(update={"out": tmp_path / "out"})


def test_generating_one_domain_with_nothing_to_recompute_keeps_the_others_published(published, run):
    """F6 as the report ran it: `generate --domains weather` over a finished two-domain output."""
    assert said(lambda: run_generation(run.model_copy(update={"domains": ["weather"]}))) == []
    assert report(run.out)["stages"] == {"computed": 0, "reused": 7}
    publish(run.out)
    assert held(run.out) == published[1]


def test_recomputing_one_domain_keeps_the_others_published(published, run):
    """The same after its stages were recomputed (the generate flow's path through finish_run)."""
    assert said(lambda: build(run.model_copy(update={"domains": ["railway"], "refresh": True}))) == []
    assert report(run.out)["stages"] == {"computed": 7, "reused": 0}
    publish(run.out)
    assert held(run.out) == published[1]


def test_a_domain_that_cannot_be_kept_is_said_not_dropped_silently(run):
    """Other settings: weather with seed 6 cannot sit in one report with railway of seed 5."""
    notices = said(lambda: build(run.model_copy(update={"domains": ["weather"], "seed": 6})))
    assert notices == ["railway: left out of report.json, hf/ and tau2/: not in an earlier report with these "
                       "settings (generate them with these settings, or use another --out)"]
    assert sorted(report(run.out)["domains"]) == ["weather"]


def test_an_unreadable_report_says_which_finished_domains_it_leaves_out(run):
    (run.out / "report.json").write_text('{"domains": {"rail')
    notices = said(lambda: run_generation(run.model_copy(update={"domains": ["weather"]})))
    assert notices == ["railway: left out of report.json, hf/ and tau2/: not in an earlier report with these "
                       "settings (generate them with these settings, or use another --out)"]


def drop(field: str):
    return lambda marker: {k: v for k, v in marker.items() if k != field}


@pytest.mark.parametrize("edit", [lambda marker: [], drop("summary"), drop("report")],
                         ids=["published-marker-not-an-object", "published-marker-without-summary",
                              "published-marker-without-report-fields"])
def test_a_damaged_publication_marker_publishes_again(published, run, edit):
    """OUT/.toolscale/published.json edited by hand: a traceback on 36e9cf1, now a publication."""
    marker = run.out / ".toolscale" / "published.json"
    marker.write_text(json.dumps(edit(json.loads(marker.read_text()))))
    assert reuse_publication(run.out) is None
    publish(run.out)
    assert held(run.out) == published[1]


def test_a_failed_export_leaves_the_published_tasks_whole(run):
    """k3: the export read its tasks after overwriting OUT/<domain>/tasks.jsonl with them, so a bad
    record left a truncated public file (the file whose presence marks a finished domain)."""
    work = domain_work("weather", run)
    solve = work.artifact("solve") / "tasks.jsonl"
    before = (run.out / "weather" / "tasks.jsonl").read_bytes()
    solve.write_bytes(solve.read_bytes()[:-40])  # the last task cut short, by a stage that wrote it so
    with pytest.raises(ValueError):
        run_stage.fn("export", "weather", work)
    work.close()
    assert (run.out / "weather" / "tasks.jsonl").read_bytes() == before
