"""The stage store: each stage's artifact, in the run directory, under the digest of what made it.

An artifact is a folder `OUT/.toolscale/stages/<domain>/<stage>-<key>/`. A stage writes it in a
temporary folder beside it that is renamed into place only after the stage returned, so a folder
under its final name is always complete: a run killed at any moment leaves at worst a temporary
folder (removed by the next run), and a stage that raised leaves nothing (failures are never
cached). `meta.json` in each artifact records the stage, its key and the seconds it took, and the
store adds the digest of every file in the artifact (and of meta.json's own fields) when it is
published, keyed with a secret of the user kept outside OUT (flows/sealing.py, so a re-sealed artifact
fails too): an artifact is trusted only while every file is the one recorded (`damage`), so a file
changed, cut short or added by hand, or an unreadable meta.json, recomputes the stage instead of
flowing silently into the outputs.

Files inside an artifact are JSON and JSON Lines, written with the same line format as the
public exports, so an artifact can be read back without the code that wrote it.
"""

from __future__ import annotations

import hmac
import io
import json
import os
import shutil
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel

from toolscale.pipeline.export import atomic_file
from toolscale.pipeline.outdir import NotRegularFile, is_regular, open_regular, real_folder, remove

from .digests import json_digest
from .sealing import keyed_file_digest, keyed_json_digest

STORE_DIR = Path(".toolscale") / "stages"
META = "meta.json"
FILES = "files"  # meta.json's record of the artifact's file digests
FAILED_USAGE = "failed-llm.json"
Model = TypeVar("Model", bound=BaseModel)


class StageStore:
    """The artifacts of one domain's stages under `OUT/.toolscale/stages/<domain>/`."""

    def __init__(self, out: Path, domain: str) -> None:
        self.out = Path(out)
        self.root = self.out / STORE_DIR / domain

    def path(self, stage: str, key: str) -> Path:
        return self.root / f"{stage}-{key}"

    def has(self, stage: str, key: str) -> bool:
        return is_regular(self.path(stage, key) / META)

    def meta(self, stage: str, key: str) -> dict[str, Any]:
        return read_json(self.path(stage, key) / META)

    def damage(self, stage: str, key: str) -> str | None:
        """Why the artifact under `key` is not the one its stage wrote (e.g. "rows.json changed"),
        or None when every file, and meta.json, is as recorded."""
        folder = self.path(stage, key)
        try:
            meta = read_json(folder / META)
        except (OSError, ValueError):
            return f"{META} unreadable"
        recorded = meta.get(FILES) if isinstance(meta, dict) else None
        if not isinstance(recorded, dict):
            return f"{META} changed"
        sealed = str(recorded.pop(META, ""))
        if not hmac.compare_digest(sealed, keyed_json_digest(meta)):
            if sealed == json_digest(meta):  # the public digest an unkeyed seal records: a forger's, or 7043c43's
                return f"{META} sealed without this user's key: re-sealed by hand, or by another user or version"
            return f"{META} changed"
        found = _files(folder)
        for name in sorted(found.keys() | recorded.keys()):
            if name not in recorded:
                return f"{name} added"
            if name not in found:
                return f"{name} missing"
            try:
                if not hmac.compare_digest(str(recorded[name]), keyed_file_digest(found[name])):
                    return f"{name} changed"
            except NotRegularFile:
                return f"{name} is not a regular file"
            except OSError:
                return f"{name} unreadable"
        return None

    @contextmanager
    def writing(self, stage: str, key: str) -> Iterator[Path]:
        """A fresh folder to write the artifact in; published under its key only if the block returns."""
        final = self.path(stage, key)
        tmp = self.root / f".{final.name}.{os.getpid()}.tmp"
        real_folder(self.root, self.out)  # never write the artifact through a planted symlink
        remove(tmp)
        tmp.mkdir(parents=True)
        try:
            yield tmp
            _seal(tmp)
        except BaseException:
            remove(tmp)
            raise
        if os.path.lexists(final):  # --refresh: the new artifact replaces the old one (or a planted link)
            stale = final.with_name(f".{final.name}.{os.getpid()}.old")
            os.replace(final, stale)
            remove(stale)
        os.replace(tmp, final)

    def clean(self, keep: dict[str, str]) -> None:
        """Remove temporary folders left by killed runs, artifacts whose key is not in `keep`, and
        the spending of an earlier failed try. Nothing is deleted through a symlink: the store's folder
        must be a real one inside OUT (OutputFolderError otherwise), and a link inside it is unlinked."""
        real_folder(self.root, self.out)
        if not self.root.is_dir():
            return
        current = {f"{stage}-{key}" for stage, key in keep.items()}
        for entry in self.root.iterdir():
            if entry.name not in current or entry.is_symlink() or not entry.is_dir():
                remove(entry)

    def record_failed_usage(self, usage: dict[str, Any]) -> None:
        """What a failed stage spent on the LLM: it has no artifact to keep it, and the report must
        still count it."""
        real_folder(self.root, self.out).mkdir(parents=True, exist_ok=True)
        write_json(self.root / FAILED_USAGE, usage)

    def failed_usage(self) -> dict[str, Any] | None:
        path = self.root / FAILED_USAGE
        return read_json(path) if is_regular(path) else None


def _seal(folder: Path) -> None:
    """Record in meta.json the digest of every other file in `folder`, and of the rest of meta.json."""
    meta = read_json(folder / META) if is_regular(folder / META) else {}
    meta[FILES] = {name: keyed_file_digest(path) for name, path in _files(folder).items()}
    meta[FILES][META] = keyed_json_digest(meta)
    write_json(folder / META, meta)


def _files(folder: Path) -> dict[str, Path]:
    """An artifact's files but meta.json, by their path inside it: everything but its real folders, so a
    symlink or a FIFO planted in it is found (and `damage` calls it not a regular file)."""
    found = {p.relative_to(folder).as_posix(): p for p in sorted(folder.rglob("*"))
             if p.is_symlink() or not p.is_dir()}
    found.pop(META, None)
    return found


def write_json(path: Path, data: Any, indent: int | None = None) -> None:
    text = json.dumps(data, ensure_ascii=False, indent=indent, separators=None if indent else (",", ":"))
    path.write_text(text + "\n", encoding="utf-8")


def read_json(path: Path) -> Any:
    """JSON from a regular file (NotRegularFile, an OSError, for a symlink or a FIFO: never waited on)."""
    with open_regular(path) as fh:
        return json.loads(fh.read().decode("utf-8"))


def read_jsonl(path: Path, model: type[Model]) -> Iterator[Model]:
    """Stream validated records from a JSON Lines file."""
    with open_regular(path) as raw, io.TextIOWrapper(raw, encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                yield model.model_validate_json(line)


def concatenate(path: Path, parts: Iterable[Path], chunk: int = 1 << 20) -> None:
    """Write the parts one after another into `path`, atomically, without loading them whole."""
    with atomic_file(path) as out:
        for part in parts:
            with open_regular(part) as src:
                shutil.copyfileobj(src, out, chunk)
