"""Writing a domain's artifacts into the run directory, atomically.

Each file is written beside its final name and renamed into place, so an interrupted run never
leaves a half-written file that a later run would trust.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, BinaryIO

from pydantic import BaseModel

from toolscale.domains import Domain, Environment


@contextmanager
def atomic_file(path: Path) -> Iterator[BinaryIO]:
    """A binary file handle whose content appears at `path` only when the block returns. Writers
    racing for one path (threads, processes sharing a cache) each write their own file; the last
    rename wins whole."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        with open(tmp, "wb") as fh:
            yield fh
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    os.replace(tmp, path)


def atomic_write(path: Path, data: str | bytes) -> None:
    with atomic_file(path) as fh:
        fh.write(data.encode("utf-8") if isinstance(data, str) else data)


def dumps_line(record: BaseModel | dict[str, Any]) -> str:
    """One compact JSON line. A model is written by pydantic's own serializer, a third of the cost of
    json.dumps over its model_dump; the text is the same but for floats under 1e-4, which it writes
    in its own notation (0.00001 for 1e-05: the same number read back)."""
    if isinstance(record, BaseModel):
        return record.model_dump_json()
    return json.dumps(record, ensure_ascii=False, separators=(",", ":"))


def write_jsonl(path: Path, records: Iterable[BaseModel | dict[str, Any]]) -> int:
    """Stream records to `path`, one per line, atomically; returns how many."""
    n = 0
    with atomic_file(path) as fh:
        for record in records:
            fh.write((dumps_line(record) + "\n").encode("utf-8"))
            n += 1
    return n


def write_domain_files(out: Path, domain: Domain, env: Environment) -> None:
    """domain.yaml, tools.py, policy.md as loaded; tools.json; db.sqlite with the initial state."""
    for name, text in domain.sources.items():
        atomic_write(out / name, text)
    atomic_write(out / "tools.json", json.dumps(domain.tool_schemas(), indent=2, ensure_ascii=False) + "\n")
    tmp = out / ".db.sqlite.tmp"
    env.save(tmp)
    os.replace(tmp, out / "db.sqlite")
