"""An output folder is hostile input: it can be handed over (a shared team folder, a downloaded run), and
toolscale deletes, renames, reads and writes inside it.

On 7043c43 a symlink planted at OUT/.toolscale/stages/<domain> made the next run delete its target's
contents, OUT/<domain> as a symlink sent the public files elsewhere, and a FIFO in place of tasks.jsonl or
published.json hung the run. So:
- `check_output_folder` refuses, before a run or a push, an OUT whose internals are symlinks, or not a
  folder where toolscale keeps a folder, or not a regular file where it keeps a file (OutputFolderError,
  one line naming the path; the CLI exits 2). OUT itself may be a symlink: that is the user's choice.
- `open_regular` never opens anything but a regular file for reading (no symlink followed, a FIFO never
  waited on), and `remove` never deletes through a symlink: what runs after the check does not trust it.
"""

from __future__ import annotations

import errno
import os
import shutil
import stat
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import BinaryIO

from toolscale.domains.files import file_kind

TOOLSCALE_DIR = ".toolscale"
# a domain's public files in OUT/<domain>/ (flows/stages.py writes them; tasks.jsonl last, marking it finished)
PUBLIC_FILES = ("domain.yaml", "tools.py", "policy.md", "db.sqlite", "tools.json", "rejected.jsonl", "tasks.jsonl")
PUBLISHED_FOLDERS = ("hf", "tau2")  # the exporters' folders, and those they are built in and swapped out of
TOP_FILES = ("report.json", "report.md")


class OutputFolderError(ValueError):
    """A path inside an output folder that toolscale will not read, write or delete through."""


class NotRegularFile(OSError):
    """A path opened for reading that is not a regular file (a symlink, a FIFO, a device, a folder)."""


def open_regular(path: Path) -> BinaryIO:
    """`path` opened for reading in binary, only if it is a regular file: a symlink is not followed (its
    target may be anything), a FIFO not waited on. NotRegularFile (an OSError) otherwise."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise NotRegularFile(errno.ELOOP, "a symlink, not a regular file", str(path)) from None
        raise
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise NotRegularFile(errno.EINVAL, f"{file_kind(mode)}, not a regular file", str(path))
    os.set_blocking(fd, True)
    return os.fdopen(fd, "rb")


def is_regular(path: Path) -> bool:
    """A regular file, not through a symlink."""
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


def remove(path: Path) -> None:
    """Delete `path` whatever it is, never what a symlink points at: a link or a file is unlinked, a real
    folder removed with everything in it (shutil.rmtree does not follow the links inside)."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    if stat.S_ISDIR(mode):
        shutil.rmtree(path, ignore_errors=True)
    else:
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass


def real_folder(path: Path, out: Path) -> Path:
    """`path`, after checking that it and every folder between it and `out` is a real folder (or missing):
    OutputFolderError naming the first that is a symlink or not a folder."""
    path, out = Path(path), Path(out)
    chain = [path, *path.parents]
    for step in reversed(chain[: chain.index(out)] if out in chain else [path]):
        _expect(step, folder=True)
    return path


def _expect(path: Path, folder: bool | None) -> bool:
    """Whether `path` exists; OutputFolderError when it is a symlink or not the kind expected (a folder,
    a regular file, or with None either)."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return False
    if (folder is not False and stat.S_ISDIR(mode)) or (not folder and stat.S_ISREG(mode)):
        return True
    wanted = {True: "a folder", False: "a regular file", None: "only folders and regular files"}[folder]
    raise OutputFolderError(f"{path}: {file_kind(mode)} where toolscale keeps {wanted}: toolscale will not read, "
                            "write or delete through it (move it away or use another --out)")


def _walk(folder: Path) -> Iterator[tuple[Path, bool]]:
    """(path, is a folder) of everything under `folder`, not following symlinks; raises for anything that
    is neither a real folder nor a regular file."""
    for root, dirs, files in os.walk(folder, followlinks=False):
        for name in sorted(dirs + files):
            path = Path(root) / name
            mode = os.lstat(path).st_mode
            if not (stat.S_ISDIR(mode) or stat.S_ISREG(mode)):
                _expect(path, folder=None)
            yield path, stat.S_ISDIR(mode)


def check_output_folder(out: Path, domains: Iterable[str] = ()) -> None:
    """OutputFolderError naming the first path toolscale would read, write or delete through that is a
    symlink, or a FIFO, device or socket, or a file where it keeps a folder (and the reverse): the stage
    store (OUT/.toolscale, all of it), the published folders (OUT/hf, OUT/tau2 and their temporary
    siblings, all of them: `push` uploads what they hold), the report, and the public folder of every
    domain in `domains` or finished in OUT (OUT/<domain>/ and its files)."""
    out = Path(out)
    if not out.is_dir():
        return
    store = out / TOOLSCALE_DIR
    if _expect(store, folder=True):
        _expect(store / "published.json", folder=False)
        if _expect(store / "stages", folder=True):
            for domain in sorted((store / "stages").iterdir()):
                _expect(domain, folder=True)
                for entry in sorted(domain.iterdir()):  # artifacts (folders), and what a failed try spent
                    if _expect(entry, folder=not entry.name.endswith(".json")) and entry.is_dir():
                        _expect(entry / "meta.json", folder=False)
        for _ in _walk(store):
            pass
    for name in PUBLISHED_FOLDERS:
        for folder in (out / name, out / f".{name}.tmp", out / f".{name}.old"):
            if _expect(folder, folder=True):
                for _ in _walk(folder):
                    pass
    _expect(out / "hf" / "README.md", folder=False)
    for name in TOP_FILES:
        _expect(out / name, folder=False)
    with os.scandir(out) as entries:  # a symlinked folder counts too: its tasks.jsonl would be read
        finished = {e.name for e in entries if os.path.lexists(os.path.join(e.path, "tasks.jsonl"))}
    for name in sorted(finished | set(domains)):
        if _expect(out / name, folder=True):
            for file in PUBLIC_FILES:
                _expect(out / name / file, folder=False)
            for _ in _walk(out / name):
                pass
