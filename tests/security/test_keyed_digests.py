"""Stage seals are keyed (red-team 2026-12-06 R9): on 7043c43 an artifact changed by hand and re-sealed with
the public digests (a balance of rows.json set to 999999.99, both digests recomputed) was reused silently and
the forged balance published. Seals are now HMAC-SHA256 under a per-user key in the cache folder
(flows/sealing.py): a re-sealed artifact fails its check, is recomputed, and one line says so. The key never
reaches an output, and outputs stay byte-identical whatever the key.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import re
import shutil
import stat
import threading
from pathlib import Path

import pytest

from toolscale.flows.digests import file_digest, json_digest
from toolscale.flows.plan import RunConfig, domain_work
from toolscale.flows.stages import STAGE_NAMES

from test_stage_integrity import DOMAIN, build, public_bytes  # the same stage runs, on the same domain

RESEALED = "meta.json sealed without this user's key: re-sealed by hand, or by another user or version"


@pytest.fixture(autouse=True)
def own_cache(tmp_path_factory, monkeypatch):
    """A cache folder (and so a key) of this module's own, shared by its tests."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.getbasetemp() / "keyed-digests-cache"))


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    os.environ["XDG_CACHE_HOME"] = str(tmp_path_factory.getbasetemp() / "keyed-digests-cache")
    try:
        config = RunConfig(domains=[DOMAIN], out=tmp_path_factory.mktemp("run"), seed=5, scale=0.3)
        assert build(config) == (list(STAGE_NAMES), [])
    finally:
        os.environ.pop("XDG_CACHE_HOME")
    return config, public_bytes(config.out)


@pytest.fixture
def run(finished, tmp_path):
    shutil.copytree(finished[0].out, tmp_path / "out")
    return finished[0].model_copy(update={"out": tmp_path / "out"})


def reseal_public(folder: Path) -> None:
    """What store/forge.py did: every file's public SHA-256 and meta.json's public digest, recomputed."""
    meta = json.loads((folder / "meta.json").read_text())
    meta["files"] = {p.relative_to(folder).as_posix(): file_digest(p) for p in sorted(folder.rglob("*"))
                     if p.is_file() and p.name != "meta.json"}
    meta["files"]["meta.json"] = json_digest(meta)
    (folder / "meta.json").write_text(json.dumps(meta))


def reseal_with(key: bytes):
    """A forger's guess at the key: the store's own scheme under another key."""
    def reseal(folder: Path) -> None:
        meta = json.loads((folder / "meta.json").read_text())
        meta["files"] = {p.relative_to(folder).as_posix(): hmac.new(key, p.read_bytes(), hashlib.sha256).hexdigest()
                         for p in sorted(folder.rglob("*")) if p.is_file() and p.name != "meta.json"}
        text = json.dumps(meta, sort_keys=True, default=str)
        meta["files"]["meta.json"] = hmac.new(key, text.encode(), hashlib.sha256).hexdigest()
        (folder / "meta.json").write_text(json.dumps(meta))
    return reseal


def forged_balance(folder: Path) -> None:
    """R9's edit: one number of rows.json changed (still valid JSON)."""
    path = folder / "rows.json"
    text = path.read_text()
    i = re.search(r"\d", text).start()
    path.write_text(text[:i] + str((int(text[i]) + 1) % 10) + text[i + 1:])


def hostile_tools(folder: Path) -> None:
    path = folder / "sources.json"
    sources = json.loads(path.read_text())
    sources["tools.py"] = sources["tools.py"].replace('"""', '"""Edited by hand. ', 1)
    path.write_text(json.dumps(sources))


def dropped_tasks(folder: Path) -> None:
    path = folder / "tasks.jsonl"
    path.write_text("".join(path.read_text().splitlines(keepends=True)[:2]))


def rewritten_funnel(folder: Path) -> None:
    path = folder / "funnel.json"
    funnel = json.loads(path.read_text())
    funnel["accepted"] = 10**6
    path.write_text(json.dumps(funnel))


EDITS = {  # stage: the edit of its artifact
    "populate": forged_balance, "design": hostile_tools, "tasks": dropped_tasks, "gate": dropped_tasks,
    "harden": dropped_tasks, "solve": dropped_tasks, "export": rewritten_funnel,
}


@pytest.mark.parametrize("stage", EDITS)
def test_an_artifact_edited_and_resealed_with_the_public_digests_is_recomputed_and_said_so(run, finished, stage):
    folder = domain_work(DOMAIN, run).artifact(stage)
    EDITS[stage](folder)
    reseal_public(folder)
    todo, notices = build(run)
    assert todo == list(STAGE_NAMES[STAGE_NAMES.index(stage):])
    assert notices == [f"{DOMAIN}: {stage} artifact failed its digest check ({RESEALED}); recomputing"]
    assert public_bytes(run.out) == finished[1]
    assert build(run) == ([], [])


@pytest.mark.parametrize("guess", [b"", b"\0" * 32, b"toolscale", hashlib.sha256(b"digest.key").digest()])
def test_an_artifact_resealed_under_a_guessed_key_is_recomputed(run, finished, guess):
    folder = domain_work(DOMAIN, run).artifact("populate")
    forged_balance(folder)
    reseal_with(guess)(folder)
    todo, notices = build(run)
    assert todo[0] == "populate" and notices == [
        f"{DOMAIN}: populate artifact failed its digest check (meta.json changed); recomputing"]
    assert public_bytes(run.out) == finished[1]


def test_an_artifact_sealed_under_another_users_key_is_recomputed(run, finished, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "another-user"))
    todo, notices = build(run)
    assert todo == list(STAGE_NAMES) and notices[0].startswith(f"{DOMAIN}: design artifact failed its digest check")
    assert public_bytes(run.out) == finished[1]  # a key changes no output byte


def test_the_key_is_made_once_0600_in_the_cache_folder_and_never_written_to_out(run, tmp_path, monkeypatch):
    from toolscale.flows.sealing import key_path, sealing_key

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "fresh-cache"))
    keys = []
    threads = [threading.Thread(target=lambda: keys.append(sealing_key())) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    path = key_path()
    assert path == tmp_path / "fresh-cache" / "toolscale" / "digest.key"
    assert len(set(keys)) == 1 and bytes.fromhex(path.read_text().strip()) == keys[0]
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert [p.name for p in path.parent.iterdir()] == ["digest.key"]  # no temporary file left
    monkeypatch.setenv("XDG_CACHE_HOME", os.environ["XDG_CACHE_HOME"])
    build(run)
    key = sealing_key()
    for found in run.out.rglob("*"):
        if found.is_file():
            data = found.read_bytes()
            assert key not in data and key.hex().encode() not in data, found


def test_a_planted_key_symlink_is_not_trusted(tmp_path, monkeypatch):
    """A key path linked to a file someone else knows (here: a public one) is not read as the key."""
    from toolscale.flows.sealing import key_path, sealing_key

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    known = tmp_path / "known.key"
    known.write_text("00" * 32 + "\n")
    key_path().parent.mkdir(parents=True)
    os.symlink(known, key_path())
    assert sealing_key() != bytes(32)


def test_same_seed_same_bytes_under_two_keys(finished, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "second-key"))
    config = finished[0].model_copy(update={"out": tmp_path / "again"})
    build(config)
    assert public_bytes(config.out) == finished[1]
