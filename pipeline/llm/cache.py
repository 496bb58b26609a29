"""A content-addressed cache of LLM answers: same request, same answer, no second request.

The key is a digest of everything that shapes the answer (model, messages, response format,
sampling parameters and seed); the endpoint's URL is left out so a cache survives moving a
model between servers. Only complete answers are stored: a request that failed (429, 5xx,
timeout, a refused request) never reaches `put`, so a rerun retries it instead of replaying the
failure. Entries are written to a temporary name and renamed into place, so an interrupted run
leaves no half-written entry and concurrent runs may share one cache directory.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from ..export import atomic_write


class CachedAnswer(BaseModel):
    """What is kept of one answered request."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    content: str
    prompt_tokens: int
    completion_tokens: int
    tokens_estimated: bool = False
    finish_reason: str | None = None


def request_key(request: dict[str, Any]) -> str:
    """The cache key of a request body (canonical JSON, so key order does not matter)."""
    blob = json.dumps(request, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()


class ResponseCache:
    """Answers on disk under `root/<first two hex digits>/<key>.json`."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    def _path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> CachedAnswer | None:
        """The stored answer, or None; an unreadable entry counts as absent (and is overwritten)."""
        try:
            return CachedAnswer.model_validate_json(self._path(key).read_bytes())
        except (OSError, ValidationError, ValueError):
            return None

    def put(self, key: str, answer: CachedAnswer) -> None:
        atomic_write(self._path(key), answer.model_dump_json())

    def __len__(self) -> int:
        return sum(1 for _ in self.root.glob("*/*.json")) if self.root.exists() else 0
