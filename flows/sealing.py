"""Keyed digests for the stage store's seals: HMAC-SHA256 under a secret kept outside every output folder.

A public digest only detects accidents: whoever can change an artifact can recompute its SHA-256 and re-seal
it, and the next run trusted it (red-team 2026-12-06 R9: one balance changed in rows.json, both digests
recomputed, the forged balance published). Under a key the writer of OUT does not hold, a re-sealed artifact
fails its check and is recomputed. The key is per user, in the cache folder
($XDG_CACHE_HOME/toolscale/digest.key, else ~/.cache/...), made 0600 on first use; it never enters an output
(only .toolscale/'s meta.json records keyed digests), so outputs stay byte-identical for a seed.
"""

from __future__ import annotations

import errno
import hashlib
import hmac
import json
import os
import secrets
import threading
from functools import lru_cache
from pathlib import Path
from typing import Any

from toolscale.pipeline.outdir import open_regular

KEY_BYTES = 32
_lock = threading.Lock()


def key_path() -> Path:
    """Where this user's key lives (the cache folder, as flows/database_template.py finds it)."""
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "toolscale" / "digest.key"


def _read(path: Path) -> bytes | None:
    try:
        with open_regular(path) as fh:
            text = fh.read(4 * KEY_BYTES).decode("ascii", "replace").strip()
        key = bytes.fromhex(text)
    except (OSError, ValueError):
        return None
    return key if len(key) == KEY_BYTES else None


def _create(path: Path) -> bytes | None:
    """A new key written 0600 beside `path` and linked into place: of two processes making one at once, the
    first link wins and both read it. None when the cache folder cannot be written."""
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "w") as fh:
            fh.write(secrets.token_hex(KEY_BYTES) + "\n")
        try:
            os.link(tmp, path)
        except OSError as exc:
            if exc.errno != errno.EEXIST:
                raise
        finally:
            os.unlink(tmp)
    except OSError:
        return None
    return _read(path)


@lru_cache(maxsize=4)
def _key(path: Path) -> bytes:
    with _lock:
        key = _read(path) or _create(path)
    # No writable cache folder (a read-only home): a key of this process only. Artifacts of other processes
    # then fail their check and are recomputed: slower, never trusted wrongly.
    return key if key is not None else secrets.token_bytes(KEY_BYTES)


def sealing_key() -> bytes:
    return _key(key_path())


def keyed_file_digest(path: Path) -> str:
    """The HMAC-SHA256 of a regular file's bytes, under this user's key."""
    mac = hmac.new(sealing_key(), digestmod=hashlib.sha256)
    with open_regular(path) as fh:
        while chunk := fh.read(1 << 20):
            mac.update(chunk)
    return mac.hexdigest()


def keyed_json_digest(data: Any) -> str:
    """The HMAC-SHA256 of JSON-like data (keys sorted; anything else as its str), under this user's key."""
    text = json.dumps(data, sort_keys=True, default=str)
    return hmac.new(sealing_key(), text.encode("utf-8"), hashlib.sha256).hexdigest()
