"""The Hugging Face dataset repo folder (`OUT/hf/`), in `datasets`' parquet layout: the two configs'
files (their rows are made in pipeline/rows.py), typed with `datasets` Features, and how to find
them. Tasks are split train/test per domain with a seeded shuffle: the same run and seed give
byte-identical files.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from datasets import Features, List, Value

from toolscale.domains.splits import SPLITS

from .rows import DatasetRows, PublishError

_TEXT = Value("string")
TASK_FEATURES = Features({
    "id": _TEXT, "domain": _TEXT, "intent": _TEXT, "kind": _TEXT, "difficulty": _TEXT, "hardening": List(_TEXT),
    "hardened_from": _TEXT,
    "description": {"purpose": _TEXT, "relevant_policies": _TEXT, "notes": _TEXT},
    "persona": _TEXT, "reason_for_call": _TEXT, "known_info": _TEXT, "unknown_info": _TEXT,
    "task_instructions": _TEXT,
    "initial_state": _TEXT,
    "actions": List({"action_id": _TEXT, "requestor": _TEXT, "name": _TEXT, "arguments": _TEXT, "info": _TEXT,
                     "compare_args": List(_TEXT)}),
    "env_assertions": _TEXT,
    "communicate_info": List(_TEXT), "nl_assertions": List(_TEXT), "reward_basis": List(_TEXT),
    "lineage": {"backend": _TEXT, "model": _TEXT, "seed": Value("int64"), "prompt_digest": _TEXT},
    "expected_outputs": List(_TEXT),
    "final_state_hash": _TEXT,
    "judged_answers": List(_TEXT),
    "gates": List({"gate": _TEXT, "passed": Value("bool"), "reason": _TEXT}),
    "reference": _TEXT,
})
DOMAIN_FEATURES = Features({
    "domain": _TEXT, "description": _TEXT, "clock": _TEXT, "policy": _TEXT,
    "domain_yaml": _TEXT, "tools_source": _TEXT,
    "tools": List({"name": _TEXT, "kind": _TEXT, "description": _TEXT, "parameters": _TEXT}),
    "tables": List({"name": _TEXT, "description": _TEXT, "rows": Value("int64"), "columns": List(_TEXT)}),
    "database": _TEXT, "database_hash": _TEXT, "tasks": Value("int64"),
})


def data_path(config: str, split: str, fingerprint: str) -> str:
    """Where a config's split lives. The run's fingerprint is in the name because `datasets` keys
    its cache by the folder's name and the unresolved `data_files` patterns: every run writes to a
    folder named `hf`, so without it `load_dataset("OUT/hf")` returns whichever run was loaded first."""
    return f"data/{config}/{split}-{fingerprint}-00000-of-00001.parquet"


def data_file(folder: Path, config: str, split: str) -> Path:
    """The parquet file of a config's split in a dataset folder toolscale wrote."""
    found = sorted((Path(folder) / "data" / config).glob(f"{split}-*.parquet"))
    if len(found) != 1:
        raise PublishError(f"{folder}: expected one data/{config}/{split}-*.parquet, found {len(found)}")
    return found[0]


def _fingerprint(paths: list[Path]) -> str:
    """A digest of the data files' bytes: the same rows give the same name (the output stays
    byte-identical for a seed), other rows another."""
    digest = hashlib.sha256()
    for path in paths:
        digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


ROW_GROUP = 1000  # rows per parquet row group, as `datasets` writes them


class _ParquetStream:
    """A parquet file written a row group at a time: memory holds one group, not the file. The
    schema carries the Features in its metadata, as `datasets` writes it, so load_dataset reads
    the columns back with their types."""

    def __init__(self, path: Path, features: Features) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.schema = features.arrow_schema
        self.writer = pq.ParquetWriter(str(path), self.schema)
        self.pending: list[dict[str, Any]] = []
        self.rows = 0

    def add(self, row: dict[str, Any]) -> None:
        self.pending.append(row)
        if len(self.pending) == ROW_GROUP:
            self._flush()

    def _flush(self) -> None:
        if self.pending:
            self.writer.write_table(pa.Table.from_pylist(self.pending, schema=self.schema))
            self.rows += len(self.pending)
            self.pending = []

    def close(self) -> int:
        self._flush()
        self.writer.close()
        return self.rows


def write_dataset(domains: Iterable[DatasetRows], folder: Path) -> tuple[dict[str, dict[str, int]], str]:
    """Write data/tasks/{train,test}-*.parquet and data/domains/train-*.parquet into `folder` (a
    fresh folder the caller swaps in) from the rows of each domain in turn (dataset_rows), streaming:
    memory holds a row group, not the dataset. The files are named with the run's fingerprint.

    Returns the row count per config and split, and the fingerprint. The card (README.md) is
    written by the caller.
    """
    unsigned = {(config, split): folder / data_path(config, split, "unsigned")
                for config, split in [*(("tasks", s) for s in SPLITS), ("domains", "train")]}
    streams = {split: _ParquetStream(unsigned["tasks", split], TASK_FEATURES) for split in SPLITS}
    domain_stream = _ParquetStream(unsigned["domains", "train"], DOMAIN_FEATURES)
    try:
        for tasks, domain in domains:
            for split, rows in tasks.items():
                for row in rows:
                    streams[split].add(row)
            domain_stream.add(domain)
    finally:
        counts = {split: stream.close() for split, stream in streams.items()}
        domain_count = domain_stream.close()
    fingerprint = _fingerprint(list(unsigned.values()))
    for (config, split), path in unsigned.items():
        path.rename(folder / data_path(config, split, fingerprint))
    return {"tasks": counts, "domains": {"train": domain_count}}, fingerprint


__all__ = ["DOMAIN_FEATURES", "TASK_FEATURES", "data_file", "data_path", "write_dataset"]
