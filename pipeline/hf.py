"""The Hugging Face dataset repo folder (`OUT/hf/`), in `datasets`' parquet layout, and how to read it back.

Two configs. `tasks`: one row per accepted task, every τ²-bench field and our meta, lossless
(`task_from_row(task_row(t)) == t`): action arguments and tool outputs are JSON strings, not a
union struct of every argument name. `domains`: one row per domain with everything needed to run
its tasks (spec, tool source, policy, tool schemas, the initial database as JSON), so a task can be
replayed from the parquet files alone. Tasks are split train/test per domain with a seeded shuffle:
the same run and seed give byte-identical files.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from datasets import Features, List, Value

from toolscale.domains import Domain, Environment, ToolResult, load_domain, load_domain_text, replay
from toolscale.domains.splits import SPLITS, TEST_FRACTION, assign_splits
from toolscale.domains.tasks import Task

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


class PublishError(ValueError):
    """A run folder that cannot be published; the message names the file and the problem."""


@dataclass(frozen=True)
class BuiltDomain:
    """One finished domain of a run: its spec and tools, initial rows and accepted tasks."""

    domain: Domain
    rows: dict[str, list[dict[str, Any]]]
    state_hash: str
    tasks: list[Task]


@dataclass(frozen=True)
class Run:
    """A finished `toolscale generate` output folder. Domains are read on demand, one at a time,
    so publishing holds one domain in memory, never the whole dataset."""

    out: Path
    report: dict[str, Any]
    names: tuple[str, ...]  # the finished domains, sorted

    @property
    def seed(self) -> int:
        return int(self.report.get("seed", 0))

    def load(self, name: str) -> BuiltDomain:
        """One finished domain: its spec and tools, initial rows and accepted tasks."""
        folder = self.out / name
        domain = load_domain(folder)
        with Environment.from_sqlite(domain, folder / "db.sqlite") as env:
            rows, state_hash = env.dump(), env.state_hash()
        with open(folder / "tasks.jsonl", encoding="utf-8") as lines:
            tasks = [Task.model_validate_json(line) for line in lines if line.strip()]
        return BuiltDomain(domain, rows, state_hash, tasks)

    def each(self) -> Iterator[BuiltDomain]:
        """The finished domains in name order, each loaded when the previous one is done with."""
        for name in self.names:
            yield self.load(name)

    def splits(self, built: BuiltDomain, test_fraction: float = TEST_FRACTION) -> dict[str, str]:
        """{task id: split} for one domain's tasks (splits are stratified by domain)."""
        return assign_splits({built.domain.name: [t.id for t in built.tasks]}, self.seed, test_fraction)


def read_run(out: Path) -> Run:
    """The run in `out` and its finished domains (a domain's tasks.jsonl is written last)."""
    out = Path(out)
    try:
        report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise PublishError(f"{out / 'report.json'}: missing; run `toolscale generate --out {out}` first") from None
    names = tuple(name for name in sorted(report.get("domains", {})) if (out / name / "tasks.jsonl").exists())
    if not names:
        raise PublishError(f"{out}: no finished domain (no <domain>/tasks.jsonl)")
    return Run(out, report, names)


def _json(value: Any) -> str | None:
    return None if value is None else json.dumps(value, ensure_ascii=False)


def task_row(task: Task) -> dict[str, Any]:
    """The `tasks` row of a task: the τ²-bench fields flattened, arguments and outputs as JSON."""
    instructions, criteria, meta = task.user_scenario.instructions, task.evaluation_criteria, task.meta
    return {
        "id": task.id, "domain": instructions.domain, "intent": meta.intent, "kind": meta.kind,
        "difficulty": meta.difficulty, "hardening": list(meta.hardening),
        "description": task.description.model_dump() if task.description is not None else None,
        "persona": task.user_scenario.persona, "reason_for_call": instructions.reason_for_call,
        "known_info": instructions.known_info, "unknown_info": instructions.unknown_info,
        "task_instructions": instructions.task_instructions,
        "initial_state": _json(task.initial_state),
        "actions": [{**a.model_dump(exclude={"arguments"}), "arguments": _json(a.arguments)} for a in criteria.actions],
        "env_assertions": _json(criteria.env_assertions),
        "communicate_info": list(criteria.communicate_info), "nl_assertions": list(criteria.nl_assertions),
        "reward_basis": list(criteria.reward_basis),
        "hardened_from": meta.hardened_from,
        "lineage": meta.lineage.model_dump(),
        "expected_outputs": [json.dumps(o, ensure_ascii=False) for o in meta.expected_outputs],
        "final_state_hash": meta.final_state_hash,
        "judged_answers": list(meta.judged_answers),
        "gates": [{"gate": name, **verdict.model_dump()} for name, verdict in meta.gates.items()],
        "reference": _json(meta.reference.model_dump()) if meta.reference is not None else None,
    }


def task_from_row(row: dict[str, Any]) -> Task:
    """The Task a `tasks` row holds (the inverse of task_row)."""
    return Task.model_validate({
        "id": row["id"],
        "description": row["description"],
        "user_scenario": {"persona": row["persona"], "instructions": {
            "domain": row["domain"], "reason_for_call": row["reason_for_call"], "known_info": row["known_info"],
            "unknown_info": row["unknown_info"], "task_instructions": row["task_instructions"]}},
        "initial_state": json.loads(row["initial_state"]) if row["initial_state"] is not None else None,
        "evaluation_criteria": {
            "actions": [{**a, "arguments": json.loads(a["arguments"])} for a in row["actions"]],
            "env_assertions": json.loads(row["env_assertions"]) if row["env_assertions"] is not None else None,
            "communicate_info": row["communicate_info"], "nl_assertions": row["nl_assertions"],
            "reward_basis": row["reward_basis"]},
        "meta": {
            "intent": row["intent"], "kind": row["kind"], "difficulty": row["difficulty"],
            "hardening": row["hardening"], "hardened_from": row.get("hardened_from"), "lineage": row["lineage"],
            "expected_outputs": [json.loads(o) for o in row["expected_outputs"]],
            "final_state_hash": row["final_state_hash"],
            "judged_answers": row.get("judged_answers") or [],
            "gates": {g["gate"]: {"passed": g["passed"], "reason": g["reason"]} for g in row["gates"]},
            "reference": json.loads(row["reference"]) if row.get("reference") is not None else None},
    })


def domain_row(built: BuiltDomain) -> dict[str, Any]:
    """The `domains` row: what it takes to rebuild the environment and run every task."""
    domain, spec = built.domain, built.domain.spec
    return {
        "domain": domain.name, "description": spec.description, "clock": spec.clock.isoformat(),
        "policy": domain.policy, "domain_yaml": domain.sources["domain.yaml"],
        "tools_source": domain.sources["tools.py"],
        "tools": [{"name": s.name, "kind": s.kind, "description": s.description, "parameters": _json(s.parameters)}
                  for s in domain.toolkit.specs.values()],
        "tables": [{"name": t.name, "description": t.description, "rows": len(built.rows.get(t.name, [])),
                    "columns": [c.name for c in t.columns]} for t in spec.creation_order()],
        "database": json.dumps(built.rows, ensure_ascii=False), "database_hash": built.state_hash,
        "tasks": len(built.tasks),
    }


def environment_from_row(row: dict[str, Any]) -> Environment:
    """The domain's environment in its initial state, from its `domains` row alone."""
    domain = load_domain_text(row["domain_yaml"], row["tools_source"], row["policy"], origin=f"hf:{row['domain']}")
    return Environment.from_rows(domain, json.loads(row["database"]))


def replay_row(env: Environment, row: dict[str, Any]) -> tuple[list[ToolResult], str]:
    """Replay a `tasks` row's gold actions on a fork of `env`: (results, final state hash)."""
    calls = [(a["name"], json.loads(a["arguments"])) for a in row["actions"]]
    with env.fork() as fork:
        return replay(fork, calls), fork.state_hash()


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


DatasetRows = tuple[dict[str, list[dict[str, Any]]], dict[str, Any]]  # one domain's task rows by split, its domain row


def dataset_rows(built: BuiltDomain, splits: dict[str, str]) -> DatasetRows:
    """One domain's rows of both configs: its tasks' rows by split (`splits`: {task id: split}), in
    task order, and its `domains` row."""
    tasks: dict[str, list[dict[str, Any]]] = {split: [] for split in SPLITS}
    for task in built.tasks:
        tasks[splits[task.id]].append(task_row(task))
    return tasks, domain_row(built)


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


__all__ = ["DOMAIN_FEATURES", "TASK_FEATURES", "BuiltDomain", "DatasetRows", "PublishError", "Run", "assign_splits",
           "data_file", "data_path", "dataset_rows", "domain_row", "environment_from_row", "read_run", "replay_row",
           "task_from_row", "task_row", "write_dataset"]
