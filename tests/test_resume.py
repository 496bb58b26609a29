"""The stage store and resume, without Prefect's server: stages run as plain functions
(`run_stage.fn`) on a small built-in domain, so these tests take seconds."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from toolscale.flows.digests import module_closure, stage_key
from toolscale.flows.generate import domain_entry, run_stage
from toolscale.flows.plan import RunConfig, domain_work, stages_to_run
from toolscale.flows.runners import RunnerError, parse_runner
from toolscale.flows.stages import STAGE_NAMES, PUBLIC_FILES, DomainWork
from toolscale.flows.store import StageStore
from toolscale.pipeline.synthesizer import OfflineSynthesizer

DOMAIN = "weather"


def build(config: RunConfig, work: DomainWork | None = None) -> list[str]:
    """Run the stages that are not current, as the subflow does; returns their names."""
    work = work or domain_work(DOMAIN, config)
    todo = stages_to_run(work, config.refresh)
    work.store.clean(keep=work.keys)
    try:
        for stage in todo:
            run_stage.fn(stage, DOMAIN, work)
    finally:
        work.close()
    return todo


def public_bytes(out: Path) -> dict[str, bytes]:
    return {name: (out / DOMAIN / name).read_bytes() for name in PUBLIC_FILES}


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    config = RunConfig(domains=[DOMAIN], out=tmp_path_factory.mktemp("run"), seed=5, scale=0.3)
    assert build(config) == list(STAGE_NAMES)
    return config, public_bytes(config.out)


def copy_run(config: RunConfig, tmp_path: Path, **changes) -> RunConfig:
    shutil.copytree(config.out, tmp_path / "out")
    return config.model_copy(update={"out": tmp_path / "out", **changes})


def test_a_finished_run_has_nothing_to_recompute(finished, tmp_path):
    config = copy_run(finished[0], tmp_path)
    assert build(config) == []
    assert public_bytes(config.out) == finished[1]


def test_a_lost_artifact_is_recomputed_with_everything_after_it(finished, tmp_path):
    config = copy_run(finished[0], tmp_path)
    work = domain_work(DOMAIN, config)
    shutil.rmtree(work.artifact("harden"))
    for name in PUBLIC_FILES:
        (config.out / DOMAIN / name).unlink()
    assert build(config) == ["harden", "gate", "solve", "export"]
    assert public_bytes(config.out) == finished[1]


def test_a_changed_public_file_reruns_only_the_export(finished, tmp_path):
    config = copy_run(finished[0], tmp_path)
    (config.out / DOMAIN / "tasks.jsonl").write_text("edited by hand\n")
    assert build(config) == ["export"]
    assert public_bytes(config.out) == finished[1]


def test_refresh_recomputes_every_stage_to_the_same_bytes(finished, tmp_path):
    config = copy_run(finished[0], tmp_path, refresh=True)
    assert build(config) == list(STAGE_NAMES)
    assert public_bytes(config.out) == finished[1]


def test_another_seed_makes_every_artifact_stale_and_the_old_ones_are_removed(finished, tmp_path):
    config = copy_run(finished[0], tmp_path, seed=6)
    old = domain_work(DOMAIN, finished[0]).keys
    work = domain_work(DOMAIN, config)
    assert all(work.keys[s] != old[s] for s in STAGE_NAMES)
    assert build(config) == list(STAGE_NAMES)
    stored = sorted(p.name for p in work.store.root.iterdir())
    assert stored == sorted(f"{s}-{work.keys[s]}" for s in STAGE_NAMES)


def test_the_report_entry_comes_from_the_artifacts(finished):
    entry = domain_entry(domain_work(DOMAIN, finished[0]))
    accepted = finished[1]["tasks.jsonl"].decode().count("\n")
    assert entry["accepted"] == accepted and entry["seed"] == 5
    assert set(entry["timings_s"]) == set(STAGE_NAMES)


class BrokenTasks(OfflineSynthesizer):
    """A backend whose task stage fails, e.g. an endpoint that went away."""

    def tasks(self, *args, **kwargs):
        raise ConnectionError("endpoint unreachable")


def test_a_failed_stage_leaves_no_artifact_and_the_rerun_retries_it(finished, tmp_path):
    config = copy_run(finished[0], tmp_path, seed=9)
    good = domain_work(DOMAIN, config)
    broken = DomainWork(DOMAIN, config.out, config.seed, config.scale, BrokenTasks(scale=config.scale),
                        StageStore(config.out, DOMAIN), good.keys)
    with pytest.raises(ConnectionError):
        build(config, broken)
    assert [s for s in STAGE_NAMES if broken.store.has(s, good.keys[s])] == ["design", "populate"]
    assert not any(p.name.startswith(".") for p in broken.store.root.iterdir())
    assert build(config) == ["tasks", "harden", "gate", "solve", "export"]


def test_an_artifact_appears_only_when_its_stage_returns(tmp_path):
    store = StageStore(tmp_path, "bank")
    with pytest.raises(RuntimeError):
        with store.writing("tasks", "k1") as folder:
            (folder / "tasks.jsonl").write_text("half")
            raise RuntimeError("killed")
    assert not store.has("tasks", "k1") and not list(store.root.iterdir())
    with store.writing("tasks", "k1") as folder:
        (folder / "meta.json").write_text("{}")
    assert store.has("tasks", "k1")


def test_keys_chain_so_an_upstream_change_reaches_every_later_stage():
    a = stage_key("tasks", "code", {"seed": 1}, upstream="x")
    assert a == stage_key("tasks", "code", {"seed": 1}, upstream="x")
    assert a != stage_key("tasks", "code", {"seed": 1}, upstream="y")
    assert a != stage_key("tasks", "code2", {"seed": 1}, upstream="x")
    assert a != stage_key("tasks", "code", {"seed": 2}, upstream="x")


def test_a_stage_code_version_follows_relative_imports():
    names = {name for name, _ in module_closure("toolscale.pipeline.synthesizer")}
    assert {"toolscale.pipeline.populate", "toolscale.pipeline.instantiate", "toolscale.pipeline.templating",
            "toolscale.domains.environment"} <= names


@pytest.mark.parametrize("text, kind, workers, address", [
    ("threads", "threads", None, None),
    ("threads:8", "threads", 8, None),
    ("processes:2", "processes", 2, None),
    ("dask", "dask", None, None),
    ("dask://10.0.0.5:8786", "dask", None, "tcp://10.0.0.5:8786"),
    ("tcp://10.0.0.5:8786", "dask", None, "tcp://10.0.0.5:8786"),
    ("ray://head:10001", "ray", None, "ray://head:10001"),
])
def test_runner_settings(text, kind, workers, address):
    spec = parse_runner(text)
    assert (spec.kind, spec.workers, spec.address) == (kind, workers, address)


@pytest.mark.parametrize("text", ["thread", "processes:0", "dask:x", "spark://h:1", ""])
def test_unknown_runner_settings_say_which_exist(text):
    with pytest.raises(RunnerError, match="threads|at least 1"):
        parse_runner(text)


def test_keying_the_stages_runs_none_of_the_code_it_digests(tmp_path):
    """Digests find module files without importing them: `from .hf import name` once imported
    pipeline/hf.py and with it `datasets` (about 130 MB) into every generate process. An offline
    run does not load the LLM client library either (0.3 s and 14 MB a process), and planning a run
    imports no Prefect: its stages compute while the flow imports it (flows/plan.py)."""
    script = ("import sys; from pathlib import Path; from toolscale.flows.plan import RunConfig, domain_work; "
              f"domain_work('bank', RunConfig(domains=['bank'], out=Path({str(tmp_path)!r}))); "
              "print(sorted(m for m in ('datasets', 'torch', 'transformers', 'openai', 'prefect') if m in sys.modules))")
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "[]"
