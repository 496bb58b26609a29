"""The populate stage: rows for every table, asked for in batches and checked like tool writes.

Tables are filled in creation order (parents first). A root table's rows come `rows_per_request`
at a time, each batch set in a different country (diversity conditioning); a child table's come
for `parents_per_request` parent rows at a time, consistent with those parents. The first
requests of a table go out together; the answers are then checked in batch order, so keys and
uniqueness do not depend on which answer came back first. Each value is coerced exactly as the
record API coerces a tool's write, foreign keys must name existing rows and unique values must
be free; the keys of tables with an id prefix (or integer keys) are assigned here, in order.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from toolscale.domains import ToolError
from toolscale.domains.records import ID_WIDTH, coerce
from toolscale.domains.spec import DomainSpec, Table

from ..populate import Rows
from ..templating import derive_seed
from .answers import RowsAnswer
from .dialogue import Invalid, Problem

SUBJECTS = ("Germany", "Japan", "Brazil", "India", "Nigeria", "Canada", "France", "Mexico", "Spain", "Italy",
            "the Netherlands", "Poland", "Sweden", "Turkey", "South Korea", "Australia", "Argentina", "Egypt",
            "Kenya", "Vietnam", "Ireland", "Portugal", "Chile", "the United States")
MAX_CHOICES = 40


@dataclass
class Batch:
    """One populate request: `count` rows of a root table, or children for `parents`."""

    table: Table
    index: int
    count: int = 0
    first: int = 0  # a root batch's first row's position in its table (`seq`), after the table's `data`
    parents: list[dict[str, Any]] = field(default_factory=list)
    subject: str | None = None


def auto_key(table: Table) -> bool:
    """Whether keys are made on insert (an id prefix or an integer key) rather than given."""
    return table.id_prefix is not None or table.primary_key.type == "integer"


def plan(spec: DomainSpec, table: Table, rows: Rows, rows_per_request: int, parents_per_request: int,
         scale: float, rng: random.Random) -> list[Batch]:
    """The batches that fill `table`, given the rows of the tables before it."""
    if table.per is not None:
        parent_table = table.column(table.per.column).references.split(".")[0]
        parents = rows[parent_table]
        return [Batch(table, k, parents=parents[i:i + parents_per_request])
                for k, i in enumerate(range(0, len(parents), parents_per_request))]
    if table.rows == 0:
        return []
    # never fewer rows than the design's fixed rows point at ("RSV-1 is MEM-000009's"): they would be dropped
    pointed_at = spec.referenced_by_fixed_rows().get(table.name, 0) - len(table.data)
    total = max(1, round(table.rows * scale), pointed_at)
    return [Batch(table, k, count=min(rows_per_request, total - i), first=len(table.data) + i,
                  subject=rng.choice(SUBJECTS))
            for k, i in enumerate(range(0, total, rows_per_request))]


def fixed_rows(spec: DomainSpec, table: Table, rows: Rows) -> tuple[list[dict[str, Any]], int]:
    """A table's reference `data`, typed as the schema says (the design stage checked it), without
    the rows that point at rows this smaller population does not have; and how many were left out."""
    typed = [{c.name: coerce(table, c, row.get(c.name)) for c in table.columns} for row in table.data]
    own = {r[table.primary_key.name] for r in typed}
    keys = {}
    for col in table.columns:
        if col.references:
            target = col.references.split(".")[0]
            keys[col.name] = own if target == table.name else {
                r[spec.table(target).primary_key.name] for r in rows.get(target, [])}
    kept = [r for r in typed if all(r[c] is None or r[c] in k for c, k in keys.items())]
    return kept, len(typed) - len(kept)


def choices(spec: DomainSpec, table: Table, rows: Rows, rng: random.Random) -> dict[str, list[Any]]:
    """For each foreign key (but the parent column), keys a model may use: all, or a sample."""
    offered = {}
    for col in table.columns:
        if not col.references or (table.per is not None and col.name == table.per.column):
            continue
        target = spec.table(col.references.split(".")[0])
        keys = [r[target.primary_key.name] for r in rows.get(target.name, [])]
        offered[col.name] = keys if len(keys) <= MAX_CHOICES else sorted(rng.sample(keys, MAX_CHOICES))
    return offered


def referenced(spec: DomainSpec, table: Table, offered: dict[str, list[Any]],
               rows: Rows) -> dict[str, list[dict[str, Any]]]:
    """The rows the offered keys point at, by table: a model writes values consistent with them (a
    ride's bike type is its bike's)."""
    shown: dict[str, list[dict[str, Any]]] = {}
    for column, keys in offered.items():
        target = spec.table(table.column(column).references.split(".")[0])
        wanted = set(keys)
        shown.setdefault(target.name, [])
        have = {r[target.primary_key.name] for r in shown[target.name]}
        shown[target.name] += [r for r in rows.get(target.name, [])
                               if r[target.primary_key.name] in wanted - have]
    return shown


def premises(spec: DomainSpec, table: Table) -> list[str]:
    """The premises of the intents anchored on `table`: some of its rows should meet each."""
    return list(dict.fromkeys(i.premise for i in spec.intents if i.anchor_table == table.name and i.premise))


class TableFill:
    """The accepted rows of one table so far, and the checks a new batch must pass."""

    def __init__(self, spec: DomainSpec, table: Table, rows: Rows) -> None:
        self.spec, self.table, self.rows = spec, table, rows
        self.accepted: list[dict[str, Any]] = list(rows.get(table.name, []))
        self.pk = table.primary_key.name
        self.taken = {c.name: {r[c.name] for r in self.accepted}
                      for c in table.columns if c.unique or c.primary_key}
        self.keys = {c.name: {r[self.spec.table(c.references.split('.')[0]).primary_key.name]
                              for r in rows.get(c.references.split(".")[0], [])}
                     for c in table.columns if c.references and c.references.split(".")[0] != table.name}
        self.next_number = 1 + max((self._number(r[self.pk]) for r in self.accepted), default=0)
        self.dropped = 0  # rows given but left out: invalid after the last repair round, or surplus

    def _number(self, key: Any) -> int:
        """The counter a key holds (as Records.next_key reads it: the digits after the prefix)."""
        if isinstance(key, int):
            return key
        prefix = self.table.id_prefix or ""
        digits = "".join(c for c in str(key)[len(prefix):] if c.isdigit()) if str(key).startswith(prefix) else ""
        return int(digits or 0)

    def _key(self, n: int) -> Any:
        return n if self.table.primary_key.type == "integer" else f"{self.table.id_prefix}{n:0{ID_WIDTH}d}"

    def _row(self, i: int, raw: dict[str, Any], batch: Batch, taken: dict[str, set]) -> tuple[dict, list[str]]:
        table, errors, row = self.table, [], {}
        allowed = {c.name for c in table.columns}
        unknown = sorted(set(raw) - allowed)
        if unknown:
            errors.append(f"row {i}: {table.name} has no column(s) {', '.join(unknown)}")
        parent_keys = None
        if batch.parents:
            parent_pk = self.spec.table(table.column(table.per.column).references.split(".")[0]).primary_key.name
            parent_keys = {p[parent_pk] for p in batch.parents}
        for col in table.columns:
            if col.primary_key and auto_key(table):
                continue
            if col.name not in raw and not col.nullable:
                errors.append(f"row {i}: column {col.name} is missing")
                continue
            try:
                value = coerce(table, col, raw.get(col.name))
            except ToolError as exc:
                errors.append(f"row {i}: {exc}")
                continue
            if value is not None and col.references:
                is_parent = parent_keys is not None and col.name == table.per.column
                pool = parent_keys if is_parent else self.keys.get(col.name)
                if pool is not None and value not in pool:
                    errors.append(f"row {i}: {col.name} {value!r} is not one of the keys offered for it")
            if value is not None and col.name in taken and value in taken[col.name]:
                errors.append(f"row {i}: {table.name}.{col.name} {value!r} is already taken")
            row[col.name] = value
        return row, errors

    def check(self, answer: RowsAnswer, batch: Batch, final: bool) -> list[dict[str, Any]]:
        """The batch's valid rows, keyed; Invalid (all problems) unless `final`, which keeps the valid."""
        taken = {name: set(values) for name, values in self.taken.items()}
        good, problems = [], []
        for i, raw in enumerate(answer.rows):
            row, errors = self._row(i, raw, batch, taken)
            if errors:
                problems.extend(Problem("row_invalid", e, f"rows.{i}") for e in errors)
                continue
            for name in taken:
                if row.get(name) is not None:
                    taken[name].add(row[name])
            good.append(row)
        if not batch.parents and len(answer.rows) < batch.count:
            problems.append(Problem("row_invalid", f"{len(answer.rows)} rows given, {batch.count} wanted", "rows"))
        if problems and (not final or not good):
            raise Invalid(problems)
        good = good[:batch.count] if not batch.parents else good
        self.dropped += len(answer.rows) - len(good)
        return good

    def accept(self, rows: list[dict[str, Any]]) -> None:
        for row in rows:
            if auto_key(self.table):
                row[self.pk] = self._key(self.next_number)
                self.next_number += 1
            full = {c.name: row.get(c.name) for c in self.table.columns}
            for name in self.taken:
                self.taken[name].add(full[name])
            self.accepted.append(full)


def batch_seed(seed: int, domain: str, table: str, index: int) -> int:
    return derive_seed(seed, domain, "populate", table, index) % (2 ** 31)
