"""Tamper-evident stages: a stage artifact is reused only while every file in it is the one its stage
wrote. Each attack changes one artifact of a finished run (the red-team report's k1, k2, k4, k5, k6,
k10 and an edited design), then reruns: the damaged stage and everything after it are recomputed,
one line says why, and the public files come out as an untampered run writes them.

Stages run as plain functions (`run_stage.fn`) on a small built-in domain, as in tests/test_resume.py.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from toolscale.flows import progress
from toolscale.flows.digests import file_digest
from toolscale.flows.generate import domain_entry, run_stage
from toolscale.flows.plan import RunConfig, domain_work, stages_to_run
from toolscale.flows.stages import PUBLIC_FILES, STAGE_NAMES
from toolscale.flows.store import StageStore

DOMAIN = "weather"


def build(config: RunConfig) -> tuple[list[str], list[str]]:
    """Run the stages that are not current, as the subflow does; returns them and the notices said."""
    notices: list[str] = []

    def listen(domain: str, stage: str, info: dict) -> None:
        if stage == "notice":
            notices.append(f"{domain}: {info['message']}")

    progress.subscribe(listen)
    work = domain_work(DOMAIN, config)
    try:
        todo = stages_to_run(work, config.refresh)
        work.store.clean(keep=work.keys)
        for stage in todo:
            run_stage.fn(stage, DOMAIN, work)
    finally:
        work.close()
        progress.unsubscribe(listen)
    return todo, notices


def public_bytes(out: Path) -> dict[str, bytes]:
    return {name: (out / DOMAIN / name).read_bytes() for name in PUBLIC_FILES}


def without_timings(entry: dict) -> dict:
    return {k: v for k, v in entry.items() if k != "timings_s"}


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    config = RunConfig(domains=[DOMAIN], out=tmp_path_factory.mktemp("run"), seed=5, scale=0.3)
    assert build(config) == (list(STAGE_NAMES), [])
    return config, public_bytes(config.out), without_timings(domain_entry(domain_work(DOMAIN, config)))


@pytest.fixture
def run(finished, tmp_path):
    """A private copy of the finished run."""
    shutil.copytree(finished[0].out, tmp_path / "out")
    return finished[0].model_copy(update={"out": tmp_path / "out"})


# ---- the attacks: each edits one file of one stage's artifact in place --------------------------------

def change_one_byte(path: Path) -> None:
    """k2: the first digit, one higher (still valid JSON: a balance of 1328.73 becomes 2328.73)."""
    text = path.read_text()
    i = re.search(r"\d", text).start()
    path.write_text(text[:i] + str((int(text[i]) + 1) % 10) + text[i + 1:])


def cut_in_half(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def keep_lines(n: int) -> Callable[[Path], None]:
    def cut(path: Path) -> None:
        path.write_text("".join(path.read_text().splitlines(keepends=True)[:n]))
    return cut


def repeat_first_line(path: Path) -> None:
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join(lines + lines[:1]))


def hostile_tools(path: Path) -> None:
    """An edited design: tool code that never came from the synthesizer (how the F1 payload got in)."""
    sources = json.loads(path.read_text())
    sources["tools.py"] = sources["tools.py"].replace('"""', '"""Edited by hand. ', 1)
    path.write_text(json.dumps(sources))


def edit_json(change: Callable[[dict], None]) -> Callable[[Path], None]:
    def edit(path: Path) -> None:
        data = json.loads(path.read_text())
        change(data)
        path.write_text(json.dumps(data))
    return edit


def write(text: str) -> Callable[[Path], None]:
    return lambda path: path.write_text(text)


def remove(path: Path) -> None:
    path.unlink()


def forge_recorded_digest(path: Path) -> None:
    """rows.json changed and its digest in meta.json updated to match (but not meta.json's own)."""
    rows = path.parent / "rows.json"
    change_one_byte(rows)
    meta = json.loads(path.read_text())
    meta["files"]["rows.json"] = file_digest(rows)
    path.write_text(json.dumps(meta))


ATTACKS = [
    # id, stage, file in its artifact, the edit, what the notice says
    ("k2-populate-rows-one-byte", "populate", "rows.json", change_one_byte, "rows.json changed"),
    ("k1-populate-rows-truncated", "populate", "rows.json", cut_in_half, "rows.json changed"),
    ("populate-rows-removed", "populate", "rows.json", remove, "rows.json missing"),
    ("k10-design-sources-truncated", "design", "sources.json", cut_in_half, "sources.json changed"),
    ("design-sources-hostile-tool-code", "design", "sources.json", hostile_tools, "sources.json changed"),
    ("design-rejections-added", "design", "rejected.jsonl", write('{"id":"x"}\n'), "rejected.jsonl added"),
    ("tasks-first-task-repeated", "tasks", "tasks.jsonl", repeat_first_line, "tasks.jsonl changed"),
    ("harden-tasks-removed", "harden", "tasks.jsonl", remove, "tasks.jsonl missing"),
    ("k4-gate-tasks-cut-to-3-lines", "gate", "tasks.jsonl", keep_lines(3), "tasks.jsonl changed"),
    ("gate-rejections-emptied", "gate", "rejected.jsonl", write(""), "rejected.jsonl changed"),
    ("solve-llm-spending-added", "solve", "llm.json", write('{"requests": 1}\n'), "llm.json added"),
    ("solve-meta-digests-stripped", "solve", "meta.json", edit_json(lambda m: m.pop("files")), "meta.json changed"),
    ("gate-meta-seconds-edited", "gate", "meta.json", edit_json(lambda m: m.update(seconds=0.001)),
     "meta.json changed"),
    ("populate-meta-digest-forged", "populate", "meta.json", forge_recorded_digest, "meta.json changed"),
    ("populate-meta-not-an-object", "populate", "meta.json", write("[]\n"), "meta.json changed"),
    ("k5-export-meta-corrupt", "export", "meta.json", cut_in_half, "meta.json unreadable"),
    ("export-meta-removed-digests-kept", "export", "meta.json", write("{}\n"), "meta.json changed"),
    ("k6-export-funnel-corrupt", "export", "funnel.json", cut_in_half, "funnel.json changed"),
    ("export-funnel-accepted-inflated", "export", "funnel.json", edit_json(lambda f: f.update(accepted=10**6)),
     "funnel.json changed"),
    ("export-files-digests-edited", "export", "files.json", edit_json(lambda f: f.update({"tasks.jsonl": "0"})),
     "files.json changed"),
]


@pytest.mark.parametrize("stage, name, edit, reason", [a[1:] for a in ATTACKS], ids=[a[0] for a in ATTACKS])
def test_a_tampered_artifact_is_recomputed_and_said_so(finished, run, stage, name, edit, reason):
    _, public, entry = finished
    edit(domain_work(DOMAIN, run).artifact(stage) / name)
    todo, notices = build(run)
    assert todo == list(STAGE_NAMES[STAGE_NAMES.index(stage):])
    assert notices == [f"{DOMAIN}: {stage} artifact failed its digest check ({reason}); recomputing"]
    assert public_bytes(run.out) == public
    assert without_timings(domain_entry(domain_work(DOMAIN, run))) == entry
    assert build(run) == ([], [])  # healed: the next run trusts the recomputed artifacts


def test_every_file_of_an_artifact_is_recorded_when_it_is_published(tmp_path):
    store = StageStore(tmp_path, DOMAIN)
    with store.writing("tasks", "k1") as folder:
        (folder / "tasks.jsonl").write_text("{}\n")
        (folder / "meta.json").write_text('{"seconds": 1.5}\n')
    meta = store.meta("tasks", "k1")
    assert meta["seconds"] == 1.5 and set(meta["files"]) == {"tasks.jsonl", "meta.json"}
    assert store.damage("tasks", "k1") is None
