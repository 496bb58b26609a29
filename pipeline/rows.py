"""A finished `toolscale generate` folder read back one domain at a time, and the rows the
published dataset is made of (OUT/hf's two configs, pipeline/exporters/hf.py).

`tasks`: one row per accepted task, every τ²-bench field and our meta, lossless
(`task_from_row(task_row(t)) == t`): action arguments and tool outputs are JSON strings, not a
union struct of every argument name. `domains`: one row per domain with everything needed to run
its tasks (spec, tool source, policy, tool schemas, the initial database as JSON), so a task can be
replayed from the rows alone. Nothing here imports `datasets` or pyarrow: the worker processes
that build rows do not pay for them.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from toolscale.domains import Domain, DomainError, Environment, ToolResult, load_domain, load_domain_text, replay
from toolscale.domains.splits import SPLITS, TEST_FRACTION, assign_splits
from toolscale.domains.tasks import Task


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


_RUN_ONLY = ("timings_s", "stages", "dataset")  # report fields that differ between runs of the same data


def stable_report(report: dict[str, Any]) -> dict[str, Any]:
    """The run's report without what differs between runs of the same data (timings): the copy
    published beside the data, and part of the publication's key."""
    stable = {k: v for k, v in report.items() if k not in _RUN_ONLY}
    stable["domains"] = {name: {k: v for k, v in entry.items() if k not in _RUN_ONLY}
                         for name, entry in stable.get("domains", {}).items()}
    return stable


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
        "tests_rule": meta.tests_rule,
        "naive_actions": [{**a.model_dump(exclude={"arguments"}), "arguments": _json(a.arguments)}
                          for a in meta.naive_actions],
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
            "reference": json.loads(row["reference"]) if row.get("reference") is not None else None,
            "tests_rule": row.get("tests_rule"),
            "naive_actions": [{**a, "arguments": json.loads(a["arguments"])} for a in row.get("naive_actions") or []]},
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


class RowError(DomainError):
    """A dataset row that cannot be rebuilt or replayed (a database that does not fit the domain's
    schema, a field that is not the JSON it should be); the message names the row and says why in
    one line. A DomainError, so whoever catches those (trainer/data.py) catches these."""


# what a hostile or damaged row raises on the way in: bad or too deeply nested JSON, values SQLite
# cannot bind or store, rows the schema refuses (SQLAlchemy's errors carry the SQL: one line is kept)
_ROW_FAULTS = (ValueError, TypeError, KeyError, OverflowError, RecursionError, sa.exc.SQLAlchemyError, sqlite3.Error)


def _row_error(where: str, exc: BaseException) -> RowError:
    lines = str(exc).strip().splitlines()
    return RowError(f"{where}: {type(exc).__name__}" + (f": {lines[0][:300]}" if lines else ""))


def environment_from_row(row: dict[str, Any]) -> Environment:
    """The domain's environment in its initial state, from its `domains` row alone. A row that
    cannot give one raises DomainError (RowError for its database)."""
    origin = f"hf:{row.get('domain')}"
    try:
        sources = row["domain_yaml"], row["tools_source"], row["policy"]
    except (KeyError, TypeError) as exc:
        raise _row_error(origin, exc) from None
    domain = load_domain_text(*sources, origin=origin)
    try:
        rows = json.loads(row["database"])
        if not isinstance(rows, dict) or not all(isinstance(table, list) and all(isinstance(r, dict) for r in table)
                                                 for table in rows.values()):
            raise ValueError("not a mapping of table name to a list of rows")
        columns = {t.name: {c.name for c in t.columns} for t in domain.spec.tables}
        for table, table_rows in rows.items():
            if table not in columns:
                raise ValueError(f"the domain has no table {table[:80]!r}")
            unknown = sorted({name for r in table_rows for name in r} - columns[table])
            if unknown:
                raise ValueError(f"table {table!r} has no column(s) {', '.join(n[:80] for n in unknown[:5])}")
        return Environment.from_rows(domain, rows)
    except _ROW_FAULTS as exc:
        raise _row_error(f"{origin}: database", exc) from None


def replay_row(env: Environment, row: dict[str, Any]) -> tuple[list[ToolResult], str]:
    """Replay a `tasks` row's gold actions on a fork of `env`: (results, final state hash).
    RowError when the row's actions are not the JSON they should be."""
    try:
        calls = [(a["name"], json.loads(a["arguments"])) for a in row["actions"]]
    except _ROW_FAULTS as exc:
        raise _row_error(f"task {row.get('id')}: actions", exc) from None
    with env.fork() as fork:
        try:
            results = replay(fork, calls)
        except _ROW_FAULTS as exc:  # arguments the tools' schemas cannot even read (nested past pydantic's limit)
            raise _row_error(f"task {row.get('id')}: actions", exc) from None
        return results, fork.state_hash()


DatasetRows = tuple[dict[str, list[dict[str, Any]]], dict[str, Any]]  # one domain's task rows by split, its domain row


def dataset_rows(built: BuiltDomain, splits: dict[str, str]) -> DatasetRows:
    """One domain's rows of both configs: its tasks' rows by split (`splits`: {task id: split}), in
    task order, and its `domains` row."""
    tasks: dict[str, list[dict[str, Any]]] = {split: [] for split in SPLITS}
    for task in built.tasks:
        tasks[splits[task.id]].append(task_row(task))
    return tasks, domain_row(built)


__all__ = ["BuiltDomain", "DatasetRows", "PublishError", "RowError", "Run", "dataset_rows", "domain_row",
           "environment_from_row", "read_run", "replay_row", "stable_report", "task_from_row", "task_row"]
