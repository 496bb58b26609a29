"""The offline stages in worker processes (flows/lanes.py), without Prefect: the same artifacts as
the stages computed in this process, a failing stage reported with its reason while the other
domains go on, and every stage answered, so a flow waiting for one never hangs."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import psutil
import pytest

from toolscale.flows import lanes as lanes_module
from toolscale.flows import progress
from toolscale.flows.plan import RunConfig, domain_work, stages_to_run
from toolscale.flows.lanes import StageLanes
from toolscale.flows.stages import PUBLIC_FILES, STAGE_NAMES, compute_stage
from toolscale.pipeline.workers import give_back, keeping_workers, process_pool, take_worker

LIBRARY = Path(__file__).parent / "fixtures" / "library"


def config_for(out: Path, folders: dict[str, Path]) -> RunConfig:
    return RunConfig(domains=sorted(folders), domain_dirs={n: str(p) for n, p in folders.items()}, out=out, seed=3)


def run_lanes(config: RunConfig, lanes: int = 2) -> tuple[StageLanes, list[tuple[str, str, dict]]]:
    said: list[tuple[str, str, dict]] = []
    listener = lambda domain, stage, info: said.append((domain, stage, info))  # noqa: E731
    progress.subscribe(listener)
    try:
        works = {name: (work, stages_to_run(work, refresh=False)) for name in config.domains
                 for work in [domain_work(name, config)]}
        lanes_ = StageLanes(works, lanes)
        for name, (_, todo) in works.items():
            for stage in todo:
                try:
                    lanes_.seconds(name, stage)
                except Exception:  # noqa: BLE001 - the tests look at each stage's outcome
                    pass
    finally:
        progress.unsubscribe(listener)
    return lanes_, said


def test_lanes_write_what_the_stages_write_in_this_process(tmp_path):
    lanes, said = run_lanes(config_for(tmp_path / "lanes", {"library": LIBRARY}))
    assert all(isinstance(lanes.seconds("library", stage), float) for stage in STAGE_NAMES)
    assert [stage for domain, stage, _ in said if domain == "library"] == list(STAGE_NAMES)
    here = config_for(tmp_path / "here", {"library": LIBRARY})
    work = domain_work("library", here)
    for stage in STAGE_NAMES:
        compute_stage(work, stage)
    work.close()
    for name in PUBLIC_FILES:
        assert (tmp_path / "lanes" / "library" / name).read_bytes() == (tmp_path / "here" / "library" / name).read_bytes()


def test_a_failing_stage_fails_its_domain_with_its_reason_and_the_others_go_on(tmp_path):
    broken = tmp_path / "broken"
    shutil.copytree(LIBRARY, broken)
    spec = broken / "domain.yaml"
    spec.write_text(spec.read_text().replace("gen: {faker: catch_phrase}", "gen: {faker: no_such_provider}"))
    lanes, _ = run_lanes(config_for(tmp_path / "out", {"library": LIBRARY, "broken": broken}), lanes=1)
    assert lanes.seconds("broken", "design") > 0
    with pytest.raises(Exception, match="no_such_provider"):
        lanes.seconds("broken", "populate")
    for stage in STAGE_NAMES[STAGE_NAMES.index("populate") + 1:]:
        with pytest.raises(RuntimeError, match="not computed: populate failed"):
            lanes.seconds("broken", stage)
    assert all(isinstance(lanes.seconds("library", stage), float) for stage in STAGE_NAMES)  # on the same worker
    assert (tmp_path / "out" / "library" / "tasks.jsonl").is_file()
    assert not (tmp_path / "out" / "broken" / "tasks.jsonl").exists()


def test_a_closed_run_starts_no_more_stages_and_answers_every_one(tmp_path):
    config = config_for(tmp_path / "out", {"library": LIBRARY, "second": LIBRARY})
    works = {name: (domain_work(name, config), list(STAGE_NAMES)) for name in ("library", "second")}
    lanes = StageLanes(works, 1)  # one lane: "second" waits for "library"
    lanes.close()
    outcomes = {}
    for name in works:
        for stage in STAGE_NAMES:
            try:
                outcomes[name, stage] = lanes.seconds(name, stage)
            except RuntimeError as exc:
                outcomes[name, stage] = str(exc)
    assert {outcomes["second", stage] for stage in STAGE_NAMES} == {"not computed: the run ended"}
    assert "not computed" in str(outcomes["library", "export"])


def _workers() -> set[int]:
    """This process's live workers, the children of its fork server (pipeline/workers.py); one another
    test left ending (a zombie, or gone) is not one."""
    found = set()
    for child in psutil.Process().children(recursive=True):
        try:
            if child.ppid() != os.getpid() and "forkserver" in " ".join(child.cmdline()):
                found.add(child.pid)
        except psutil.Error:
            pass
    return found


def test_lanes_take_the_workers_started_ahead_and_leave_the_others_for_the_publication(tmp_path, monkeypatch):
    """The lanes take the workers a command started ahead and stop them when done (their memory stays
    at their largest domain's); those no lane took wait for the publication (pipeline/publication.py),
    and the command's end stops what is left."""
    before = _workers()
    with keeping_workers():
        lanes_module.start_workers(3)
        started = _workers() - before
        assert len(started) == 3
        own = []  # workers a lane started itself
        monkeypatch.setattr(lanes_module, "process_pool", lambda workers: own.append(workers) or process_pool(workers))
        lanes, _ = run_lanes(config_for(tmp_path / "lanes", {"library": LIBRARY}), lanes=1)
        assert all(isinstance(lanes.seconds("library", stage), float) for stage in STAGE_NAMES)
        assert own == []
        lanes.close()
        kept = [take_worker() for _ in range(3)]
        assert kept[2] is None and all(kept[:2])
        left = {pool.submit(os.getpid).result() for pool in kept[:2]}
        assert len(left & started) == 2
        used = started - left
        _, alive = psutil.wait_procs([psutil.Process(pid) for pid in used & _workers()], timeout=30)
        assert not alive  # the lane's worker stopped with the lane
        for pool in kept[:2]:
            give_back(pool)
    _, alive = psutil.wait_procs([psutil.Process(pid) for pid in started & _workers()], timeout=30)
    assert not alive


def test_outside_a_keeping_block_a_worker_handed_back_stops(tmp_path):
    pool = process_pool(1)
    pid = pool.submit(os.getpid).result()
    give_back(pool)
    assert take_worker() is None
    _, alive = psutil.wait_procs([psutil.Process(pid)], timeout=30)
    assert not alive
