"""An output folder is hostile input (red-team 2026-12-06 R4, R10): on 7043c43 a symlink planted at
OUT/.toolscale/stages/<domain> made the next run delete its target's contents and write the artifacts
there, OUT/<domain> as a symlink sent the public files elsewhere, and a FIFO in place of tasks.jsonl or
published.json hung the next run for ever.

Now a run or a push first refuses an OUT whose insides are symlinks, FIFOs or the wrong kind (one line
naming the path, exit 2: pipeline/outdir.py), and below that check nothing deletes or writes through a
symlink or opens anything but a regular file for reading. Each attack checks that the symlink's target
is byte-identical afterwards.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
import time
from pathlib import Path

import pytest

from toolscale.flows.digests import file_digest
from toolscale.flows.plan import RunConfig, domain_work
from toolscale.flows.publish import reuse_publication, upload_plan
from toolscale.flows.stages import STAGE_NAMES, compute_stage
from toolscale.flows.store import StageStore, read_json
from toolscale.pipeline.outdir import NotRegularFile, OutputFolderError, check_output_folder, remove

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: the shared helpers

from trainer_support import toolscale  # noqa: E402

DOMAIN = "weather"
FAST_S = 3.0
LIBRARY = Path(__file__).resolve().parents[1] / "fixtures" / "library"


def checksums(folder: Path) -> dict[str, str]:
    """Every file under `folder` (a victim) by its relative path, with its SHA-256."""
    return {p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture
def victim(tmp_path):
    """A folder outside OUT that must come out of every attack byte-identical."""
    folder = tmp_path / "victim"
    (folder / "sub").mkdir(parents=True)
    (folder / "a.txt").write_text("precious\n")
    (folder / "sub" / "b.txt").write_text("also precious\n")
    (folder / ".settings.tmp.bak").write_text("a dot file the .*tmp* sweep deleted\n")
    return folder


# ---- the check before a run: every inside path, every kind of plant ------------------------------------

INSIDE = {  # the paths toolscale keeps, with whether each is a folder
    ".toolscale": True, ".toolscale/stages": True, f".toolscale/stages/{DOMAIN}": True,
    f".toolscale/stages/{DOMAIN}/populate-0123456789abcdef0123": True,
    f".toolscale/stages/{DOMAIN}/populate-0123456789abcdef0123/rows.json": False,
    f".toolscale/stages/{DOMAIN}/populate-0123456789abcdef0123/meta.json": False,
    f".toolscale/stages/{DOMAIN}/failed-llm.json": False, ".toolscale/published.json": False,
    DOMAIN: True, f"{DOMAIN}/tasks.jsonl": False, f"{DOMAIN}/db.sqlite": False, f"{DOMAIN}/policy.md": False,
    "hf": True, "hf/README.md": False, "hf/data/tasks": True, "tau2": True, f"tau2/{DOMAIN}": True,
    f"tau2/{DOMAIN}/tools.py": False, ".hf.tmp": True, ".tau2.old": True, "report.json": False, "report.md": False,
}


def skeleton(out: Path) -> None:
    """An output folder with every inside path as toolscale writes it."""
    for path, folder in INSIDE.items():
        target = out / path
        if folder:
            target.mkdir(parents=True, exist_ok=True)
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text("{}\n")


def plant(out: Path, path: str, how: str, victim: Path) -> None:
    target = out / path
    remove(target)
    if how == "symlink-to-a-folder-outside":
        os.symlink(victim, target)
    elif how == "symlink-to-a-file-outside":
        os.symlink(victim / "a.txt", target)
    elif how == "relative-symlink-within-out":
        os.symlink(".", target)
    elif how == "fifo":
        os.mkfifo(target)
    elif how == "the-other-kind":
        if INSIDE[path]:
            target.write_text("a file where a folder belongs\n")
        else:
            target.mkdir()


PLANTS = ("symlink-to-a-folder-outside", "symlink-to-a-file-outside", "relative-symlink-within-out", "fifo",
          "the-other-kind")


KIND_UNKNOWN = {"hf/data/tasks", f"tau2/{DOMAIN}", f"tau2/{DOMAIN}/tools.py",  # inside a published folder, either
                f".toolscale/stages/{DOMAIN}/populate-0123456789abcdef0123/rows.json"}  # kind is written there


@pytest.mark.parametrize(("path", "how"), [(path, how) for path in INSIDE for how in PLANTS
                                           if not (how == "the-other-kind" and path in KIND_UNKNOWN)])
def test_an_output_folder_with_a_planted_path_is_refused_naming_it(tmp_path, victim, path, how):
    out = tmp_path / "out"
    skeleton(out)
    before = checksums(victim)
    plant(out, path, how, victim)
    start = time.monotonic()
    with pytest.raises(OutputFolderError) as caught:
        check_output_folder(out, [DOMAIN])
    assert time.monotonic() - start < FAST_S
    message = str(caught.value)
    assert "\n" not in message and message.startswith(str(out / path) + ":"), message
    assert checksums(victim) == before


def test_an_untouched_output_folder_and_a_symlinked_out_itself_pass(tmp_path):
    """OUT itself may be a link (the user's choice of where outputs go)."""
    out = tmp_path / "out"
    skeleton(out)
    check_output_folder(out, [DOMAIN])
    os.symlink(out, tmp_path / "link")
    check_output_folder(tmp_path / "link", [DOMAIN])


# ---- below the check: a finished run's store and public files ------------------------------------------

@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    config = RunConfig(domains=[DOMAIN], out=tmp_path_factory.mktemp("run"), seed=5, scale=0.3)
    work = domain_work(DOMAIN, config)
    try:
        for stage in STAGE_NAMES:
            compute_stage(work, stage)
    finally:
        work.close()
    return config


@pytest.fixture
def run(finished, tmp_path):
    shutil.copytree(finished.out, tmp_path / "out", symlinks=True)
    return finished.model_copy(update={"out": tmp_path / "out"})


def store_root(config: RunConfig) -> Path:
    return StageStore(config.out, DOMAIN).root


def test_clean_through_a_symlinked_store_deletes_nothing_r4(run, victim):
    """R4's reproducer: `ln -s victim OUT/.toolscale/stages/<d>`; the next run's clean emptied victim."""
    before = checksums(victim)
    shutil.rmtree(store_root(run))
    os.symlink(victim, store_root(run))
    work = domain_work(DOMAIN, run)
    with pytest.raises(OutputFolderError, match="a symlink"):
        work.store.clean(keep=work.keys)
    assert checksums(victim) == before


def test_writing_an_artifact_through_a_symlinked_store_is_refused(run, victim):
    before = checksums(victim)
    shutil.rmtree(store_root(run))
    os.symlink(victim, store_root(run))
    work = domain_work(DOMAIN, run)
    with pytest.raises(OutputFolderError):
        with work.store.writing("design", work.keys["design"]) as folder:
            (folder / "sources.json").write_text("{}")
    assert checksums(victim) == before and sorted(p.name for p in victim.iterdir()) == [
        ".settings.tmp.bak", "a.txt", "sub"]


def test_writing_through_a_symlinked_toolscale_folder_is_refused(run, victim):
    before = checksums(victim)
    shutil.rmtree(run.out / ".toolscale")
    os.symlink(victim, run.out / ".toolscale")
    work = domain_work(DOMAIN, run)
    with pytest.raises(OutputFolderError, match=r"\.toolscale: a symlink"):
        work.store.clean(keep=work.keys)
    with pytest.raises(OutputFolderError):
        with work.store.writing("design", work.keys["design"]):
            pass
    assert checksums(victim) == before


@pytest.mark.parametrize("what", ["a-stale-artifact", "a-current-artifact", "a-temporary-folder", "a-file"])
def test_clean_unlinks_a_symlink_inside_the_store_never_its_target(run, victim, what):
    before = checksums(victim)
    work = domain_work(DOMAIN, run)
    name = {"a-stale-artifact": "populate-ffffffffffffffffffff", "a-temporary-folder": ".design-x.123.tmp",
            "a-current-artifact": f"gate-{work.keys['gate']}", "a-file": "failed-llm.json"}[what]
    remove(store_root(run) / name)
    os.symlink(victim, store_root(run) / name)
    work.store.clean(keep=work.keys)
    assert not os.path.lexists(store_root(run) / name)
    assert checksums(victim) == before


def test_export_through_a_symlinked_public_folder_is_refused(run, victim):
    """R4's second reproducer: OUT/<d> a symlink (the export artifact removed) wrote all eight files there
    and the `.*tmp*` sweep deleted victim's .settings.tmp.bak."""
    before = checksums(victim)
    shutil.rmtree(run.out / DOMAIN)
    os.symlink(victim, run.out / DOMAIN)
    work = domain_work(DOMAIN, run)
    remove(work.artifact("export"))
    try:
        with pytest.raises(OutputFolderError, match=f"{DOMAIN}: a symlink"):
            compute_stage(work, "export")
    finally:
        work.close()
    assert checksums(victim) == before


@pytest.mark.parametrize("name", ["tasks.jsonl", "db.sqlite", "rejected.jsonl"])
@pytest.mark.parametrize("how", ["fifo", "symlink-to-a-file-outside"])
def test_a_planted_public_file_is_never_read_through(run, victim, name, how):
    """R10: a FIFO in place of tasks.jsonl hung the next run's export check; now it is not a regular file:
    the export is not intact (it is rewritten), at once."""
    target = run.out / DOMAIN / name
    target.unlink()
    os.mkfifo(target) if how == "fifo" else os.symlink(victim / "a.txt", target)
    work = domain_work(DOMAIN, run)
    start = time.monotonic()
    with pytest.raises(NotRegularFile):
        file_digest(target)
    from toolscale.flows.stages import _export_intact

    assert not _export_intact(work, work.artifact("export"))
    assert time.monotonic() - start < FAST_S
    work.close()


@pytest.mark.parametrize("how", ["fifo", "symlink-to-a-file-outside", "symlink-to-dev-zero"])
@pytest.mark.parametrize("name", ["meta.json", "rows.json"])
def test_a_planted_artifact_file_is_damage_not_a_hang(run, victim, name, how):
    work = domain_work(DOMAIN, run)
    target = work.artifact("populate") / name
    target.unlink()
    if how == "fifo":
        os.mkfifo(target)
    else:
        os.symlink("/dev/zero" if how == "symlink-to-dev-zero" else victim / "a.txt", target)
    start = time.monotonic()
    damage = work.store.damage("populate", work.keys["populate"])
    assert damage is not None and time.monotonic() - start < FAST_S
    assert damage in (f"{name} is not a regular file", "meta.json unreadable")


@pytest.mark.parametrize("how", ["fifo", "symlink-to-dev-zero", "symlink-to-a-file-outside"])
def test_a_planted_published_marker_is_republished_not_waited_on(run, victim, how):
    """R10: OUT/.toolscale/published.json as a FIFO hung the next run."""
    marker = run.out / ".toolscale" / "published.json"
    remove(marker)
    if how == "fifo":
        os.mkfifo(marker)
    else:
        os.symlink("/dev/zero" if how == "symlink-to-dev-zero" else victim / "a.txt", marker)
    start = time.monotonic()
    assert reuse_publication(run.out) is None
    with pytest.raises(NotRegularFile):
        read_json(marker)
    assert time.monotonic() - start < FAST_S


def test_publishing_over_a_planted_temporary_folder_removes_the_link_not_its_target(tmp_path, victim):
    before = checksums(victim)
    out = tmp_path / "out"
    out.mkdir()
    os.symlink(victim, out / ".hf.tmp")
    remove(out / ".hf.tmp")
    assert not os.path.lexists(out / ".hf.tmp") and checksums(victim) == before


def test_push_never_uploads_what_a_symlink_in_the_dataset_points_at(tmp_path, victim):
    out = tmp_path / "out"
    (out / "hf").mkdir(parents=True)
    (out / "hf" / "README.md").write_text("# card\n")
    os.symlink(victim / "a.txt", out / "hf" / "notes.md")
    with pytest.raises(OutputFolderError, match="notes.md: a symlink"):
        upload_plan(out)


# ---- through the real CLI ------------------------------------------------------------------------------

def test_cli_a_symlinked_stage_store_leaves_its_target_byte_identical(tmp_path, victim):
    """R4 through `toolscale generate`: rc 2, one line naming the path, victim checksummed before and after."""
    out = tmp_path / "out"
    (out / ".toolscale" / "stages").mkdir(parents=True)
    os.symlink(victim, out / ".toolscale" / "stages" / "library")
    before = checksums(victim)
    proc = toolscale("generate", "--domain-dir", str(LIBRARY), "--out", str(out), "--scale", "0.3", cwd=tmp_path,
                     timeout=120)
    text = " ".join(proc.stderr.split())
    assert proc.returncode == 2 and ".toolscale/stages/library: a symlink" in text, proc.stderr[-2000:]
    assert len([line for line in proc.stderr.splitlines() if line.strip()]) == 1, proc.stderr
    assert checksums(victim) == before


def test_cli_a_fifo_among_the_public_files_is_one_line_not_a_hang(tmp_path):
    out = tmp_path / "out"
    (out / "library").mkdir(parents=True)
    os.mkfifo(out / "library" / "tasks.jsonl")
    start = time.monotonic()
    proc = toolscale("generate", "--domain-dir", str(LIBRARY), "--out", str(out), "--scale", "0.3", cwd=tmp_path,
                     timeout=60)
    assert time.monotonic() - start < 30
    assert proc.returncode == 2 and "library/tasks.jsonl: a FIFO" in " ".join(proc.stderr.split()), proc.stderr


def test_cli_push_refuses_a_symlink_in_the_dataset(tmp_path, victim):
    out = tmp_path / "out"
    (out / "hf").mkdir(parents=True)
    (out / "hf" / "README.md").write_text("# card\n")
    os.symlink(victim / "a.txt", out / "hf" / "notes.md")
    proc = toolscale("push", "--repo", "org/name", "--dry-run", "--out", str(out), cwd=tmp_path, timeout=60)
    assert proc.returncode == 2 and "hf/notes.md: a symlink" in " ".join(proc.stderr.split()), proc.stderr
    assert "precious" not in proc.stdout + proc.stderr
    json.dumps(proc.returncode)
