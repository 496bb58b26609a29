"""The last check before anything is published: no public file holds a secret of this machine.

A hostile domain folder got the machine's HF_TOKEN and LLM key into the dataset through its policy
(red-team 2026-12-06 R1); the loader now refuses that route, and this scan catches any other one (a
policy that quotes a token, a tool docstring, a task, a database row). The secrets are the values of
the process's secret-looking environment variables (`*_TOKEN`, `*_KEY`, `*_SECRET`) and the Hugging Face
token `hf auth login` stored. Each public file is searched as a reader sees it: a parquet file's string
values (its pages are compressed, so its raw bytes hide a secret), a SQLite database's text values (a long
value spans overflow pages), every other file's bytes. A hit names the file and the variable, never the
value (`SecretFound`).
"""

from __future__ import annotations

import os
import re
import sqlite3
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path

from .outdir import open_regular

SECRET_NAME = re.compile(r".+_(TOKEN|KEY|SECRET)", re.IGNORECASE)
# A value shorter than this is not searched for: real tokens and keys are 20+ characters, while short
# values of such variables ("1", "true", "EMPTY", a locale) occur in any text and would stop every publish.
MIN_SECRET_CHARS = 8
MAX_TOKEN_FILE = 64_000  # HF's token file holds one token: anything larger is not read
CHUNK = 1 << 20


class SecretFound(ValueError):
    """A public file holds the value of a secret; the message names both, not the value."""


def secrets(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """{where it comes from: value} of this machine's secrets worth searching for: the secret-looking
    environment variables, HF's stored token (huggingface_hub's token path) and the token
    huggingface_hub would use; values under MIN_SECRET_CHARS are left out."""
    environ = os.environ if environ is None else environ
    found = {f"${name}": value.strip() for name, value in sorted(environ.items()) if SECRET_NAME.fullmatch(name)}
    from huggingface_hub import constants, get_token

    try:
        with open_regular(Path(constants.HF_TOKEN_PATH)) as fh:
            found["the Hugging Face token file"] = fh.read(MAX_TOKEN_FILE).decode("utf-8", "replace").strip()
    except OSError:
        pass
    try:
        token = get_token()
    except Exception:  # a broken login is not this scan's business
        token = None
    if token and token not in found.values():
        found["the Hugging Face token"] = token.strip()
    return {where: value for where, value in found.items() if len(value) >= MIN_SECRET_CHARS}


def _forms(value: str) -> list[bytes]:
    """The value as UTF-8 and as JSON writes it inside a string (a token with a `/` or a quote)."""
    import json

    forms = [value.encode("utf-8")]
    escaped = json.dumps(value, ensure_ascii=False)[1:-1].encode("utf-8")
    return forms + ([escaped] if escaped != forms[0] else [])


def _texts_of_parquet(path: Path) -> Iterator[str]:
    """Every string value of a parquet file, nested lists and structs included, one row group at a time."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    def strings(array: pa.Array) -> Iterator[str]:
        kind = array.type
        if pa.types.is_string(kind) or pa.types.is_large_string(kind):
            yield from (v for v in array.to_pylist() if v)
        elif pa.types.is_binary(kind) or pa.types.is_large_binary(kind):
            yield from (v.decode("utf-8", "replace") for v in array.to_pylist() if v)
        elif pa.types.is_list(kind) or pa.types.is_large_list(kind) or pa.types.is_fixed_size_list(kind):
            yield from strings(array.flatten())
        elif pa.types.is_struct(kind):
            for i in range(kind.num_fields):
                yield from strings(array.field(i))
        elif pa.types.is_map(kind):
            yield from strings(array.keys)
            yield from strings(array.items)
        elif pa.types.is_dictionary(kind):
            yield from strings(array.dictionary)

    with open_regular(path) as fh:
        reader = pq.ParquetFile(fh)
        for group in range(reader.num_row_groups):
            table = reader.read_row_group(group)
            for column in table.columns:
                for chunk in column.chunks:
                    yield from strings(chunk)


def _texts_of_sqlite(path: Path) -> Iterator[str]:
    """Every text and blob value of a SQLite database (and its schema), read-only."""
    with open_regular(path):  # a regular file, or NotRegularFile: sqlite opens it by name next
        pass
    db = sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True)
    try:
        tables = [row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        yield from (sql for (sql,) in db.execute("SELECT sql FROM sqlite_master") if sql)
        for table in tables:
            quoted = '"' + table.replace('"', '""') + '"'
            for row in db.execute(f"SELECT * FROM {quoted}"):
                for value in row:
                    if isinstance(value, str):
                        yield value
                    elif isinstance(value, bytes):
                        yield value.decode("utf-8", "replace")
    finally:
        db.close()


def _hit_in_texts(texts: Iterable[str], wanted: dict[str, str]) -> str | None:
    for text in texts:
        for where, value in wanted.items():
            if value in text:
                return where
    return None


def _hit_in_bytes(path: Path, wanted: dict[str, list[bytes]]) -> str | None:
    """Search the file in chunks, each overlapping the one before by the longest form, so a secret across
    a chunk boundary is found too."""
    overlap = max((len(f) for forms in wanted.values() for f in forms), default=0)
    tail = b""
    with open_regular(path) as fh:
        while chunk := fh.read(CHUNK):
            window = tail + chunk
            for where, forms in wanted.items():
                if any(form in window for form in forms):
                    return where
            tail = window[-overlap:] if overlap else b""
    return None


def find_secret(path: Path, found: dict[str, str]) -> str | None:
    """Where the secret the file `path` holds comes from (e.g. "$HF_TOKEN"), or None."""
    if not found:
        return None
    where = _hit_in_bytes(path, {w: _forms(v) for w, v in found.items()})
    if where is None and path.suffix == ".parquet":
        try:
            where = _hit_in_texts(_texts_of_parquet(path), found)
        except (OSError, ValueError):  # not parquet after all (pyarrow's errors are both): no reader sees more
            pass                       # than its bytes, which were searched
    elif where is None and path.suffix in (".sqlite", ".db"):
        where = _hit_in_texts(_texts_of_sqlite(path), found)
    return where


def public_files(folder: Path) -> list[Path]:
    """Every file under `folder`, not through a symlink, sorted."""
    return sorted(p for p in Path(folder).rglob("*") if p.is_file() and not p.is_symlink())


def check_no_secrets(paths: Iterable[Path], shown: Mapping[Path, Path] | None = None,
                     environ: Mapping[str, str] | None = None) -> None:
    """SecretFound naming the first file of `paths` that holds one of this machine's secrets (`shown`
    maps a file's path to the one to name, e.g. a folder built beside its final place)."""
    found = secrets(environ)
    for path in paths:
        where = find_secret(Path(path), found)
        if where is not None:
            name = (shown or {}).get(Path(path), path)
            raise SecretFound(f"{name} holds the value of {where}: nothing was published (remove it from the "
                              "domain's files, or unset the variable if that value is not secret)")
