"""The Hugging Face dataset repo folder (`OUT/hf/`), in `datasets`' parquet layout: the two configs'
files (their rows are made in pipeline/rows.py, in the publishing workers), typed with `datasets`
Features, how to find them, and the card with DuckDB statistics over them. Tasks are split
train/test per domain with a seeded shuffle: the same run and seed give byte-identical files.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from datasets import Features, List, Value

from toolscale.domains.splits import SPLITS
from toolscale.quality.stats import dataset_stats

from ..card import render_card
from ..export import atomic_write
from ..publication import Collector, Exported, Exporter, Part
from ..rows import DatasetRows, PublishError, Run, dataset_rows, stable_report

_TEXT = Value("string")
_ACTIONS = List({"action_id": _TEXT, "requestor": _TEXT, "name": _TEXT, "arguments": _TEXT, "info": _TEXT,
                 "compare_args": List(_TEXT)})
TASK_FEATURES = Features({
    "id": _TEXT, "domain": _TEXT, "intent": _TEXT, "kind": _TEXT, "difficulty": _TEXT, "hardening": List(_TEXT),
    "hardened_from": _TEXT,
    "description": {"purpose": _TEXT, "relevant_policies": _TEXT, "notes": _TEXT},
    "persona": _TEXT, "reason_for_call": _TEXT, "known_info": _TEXT, "unknown_info": _TEXT,
    "task_instructions": _TEXT,
    "initial_state": _TEXT,
    "actions": _ACTIONS,
    "env_assertions": _TEXT,
    "communicate_info": List(_TEXT), "nl_assertions": List(_TEXT), "reward_basis": List(_TEXT),
    "lineage": {"backend": _TEXT, "model": _TEXT, "seed": Value("int64"), "prompt_digest": _TEXT},
    "expected_outputs": List(_TEXT),
    "final_state_hash": _TEXT,
    "judged_answers": List(_TEXT),
    "gates": List({"gate": _TEXT, "passed": Value("bool"), "reason": _TEXT}),
    "reference": _TEXT,
    "tests_rule": _TEXT, "naive_actions": _ACTIONS,
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
        self.closed = False

    def add(self, row: dict[str, Any]) -> None:
        self.pending.append(row)
        if len(self.pending) == ROW_GROUP:
            self._flush()

    def _flush(self) -> None:
        if self.pending:
            self.writer.write_table(pa.Table.from_pylist(self.pending, schema=self.schema))
            self.rows += len(self.pending)
            self.pending = []

    def finish(self) -> int:
        self._flush()
        self.close()
        return self.rows

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.writer.close()


class DatasetFolder(Collector):
    """Streams each domain's rows (dataset_rows) into data/tasks/{train,test}-*.parquet and
    data/domains/train-*.parquet: memory holds a row group, not the dataset. Finished, the files
    are named with the run's fingerprint, and the card and the run's stable report go beside them."""

    def __init__(self, run: Run, folder: Path) -> None:
        self.run, self.folder = run, folder
        self.unsigned = {(config, split): folder / data_path(config, split, "unsigned")
                         for config, split in [*(("tasks", s) for s in SPLITS), ("domains", "train")]}
        self.streams = {key: _ParquetStream(path, TASK_FEATURES if key[0] == "tasks" else DOMAIN_FEATURES)
                        for key, path in self.unsigned.items()}

    def add(self, part: DatasetRows) -> None:
        tasks, domain = part
        for split, rows in tasks.items():
            for row in rows:
                self.streams["tasks", split].add(row)
        self.streams["domains", "train"].add(domain)

    def finish(self) -> Exported:
        rows = {key: stream.finish() for key, stream in self.streams.items()}
        counts = {"tasks": {split: rows["tasks", split] for split in SPLITS},
                  "domains": {"train": rows["domains", "train"]}}
        fingerprint = _fingerprint(list(self.unsigned.values()))
        for (config, split), path in self.unsigned.items():
            path.rename(self.folder / data_path(config, split, fingerprint))
        stats = dataset_stats(self.folder)
        atomic_write(self.folder / "README.md", render_card(self.run, counts, stats, fingerprint))
        atomic_write(self.folder / "report.json",
                     json.dumps(stable_report(self.run.report), indent=1, sort_keys=True) + "\n")
        return Exported(report={"dataset": {"rows": counts, "fingerprint": fingerprint, **stats}},
                        summary={"tasks": counts["tasks"]})

    def close(self) -> None:
        for stream in self.streams.values():
            stream.close()


class HFDataset(Exporter):
    """The dataset repo folder, pushed at the repo's root."""

    repo_folder = ""

    def part(self, folder: Path) -> Part:
        return dataset_rows  # the parent writes the rows: a worker need not import pyarrow or datasets

    def collector(self, run: Run, folder: Path) -> DatasetFolder:
        return DatasetFolder(run, folder)


EXPORTER = HFDataset

__all__ = ["DOMAIN_FEATURES", "EXPORTER", "TASK_FEATURES", "DatasetFolder", "HFDataset", "data_file", "data_path"]
