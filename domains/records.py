"""The record API tools see (`db`) and the fixed clock (`clock`).

Every write goes through `Records`, so it can keep values typed exactly as the schema says,
refuse writes from read tools, make new keys deterministic (prefix + next counter), and keep
an order-independent digest of the whole database up to date: the sum of one hash per row.
Uniqueness and foreign keys are left to the database; its refusals come back as ToolError.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from datetime import date, datetime, timedelta
from typing import Any

import sqlalchemy as sa

from .sandbox import ToolError
from .spec import Column, DomainSpec, Table
from .sql import SharedReads, Statements

DIGEST_MOD = 1 << 128
ID_WIDTH = 6
_PLAIN = (str, int, float, bool, type(None))
MAX_ROWS = (1 << 31) - 1  # a find's limit past this is no limit (sqlite3's fetchmany takes a C int)


def row_hash(table: str, row: dict[str, Any]) -> int:
    blob = json.dumps([table, row], sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return int.from_bytes(hashlib.blake2b(blob.encode(), digest_size=16).digest(), "big")


def coerce(table: Table, col: Column, value: Any) -> Any:
    """The value as the schema types it, or ToolError saying why it does not fit."""
    where = f"{table.name}.{col.name}"
    if value is None:
        if col.nullable:
            return None
        raise ToolError(f"{where} may not be empty")
    kind = col.type
    if kind == "boolean":
        if not isinstance(value, bool):
            raise ToolError(f"{where} must be true or false, got {value!r}")
    elif kind == "integer":
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value != int(value):
            raise ToolError(f"{where} must be a whole number, got {value!r}")
        value = int(value)
    elif kind == "number":
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise ToolError(f"{where} must be a finite number, got {value!r}")
        value = float(value) + 0.0  # -0.0 is stored as 0.0 by SQLite: hash what is stored
    elif not isinstance(value, str):
        raise ToolError(f"{where} must be text, got {value!r}")
    elif kind == "date":
        _parse_date(value, where)
    elif kind == "datetime":
        _parse_datetime(value, where)
    if col.enum and value not in col.enum:
        raise ToolError(f"{where} must be one of {', '.join(col.enum)}; got {value!r}")
    return value


def _parse_date(value: str, where: str = "date") -> date:
    try:
        return date.fromisoformat(value)
    except (TypeError, ValueError):
        raise ToolError(f"{where} must be a date like 2026-01-31, got {value!r}") from None


def _parse_datetime(value: str, where: str = "datetime") -> datetime:
    try:
        return datetime.fromisoformat(value)
    except (TypeError, ValueError):
        raise ToolError(f"{where} must be a date and time like 2026-01-31T09:30:00, got {value!r}") from None


class Clock:
    """The domain's fixed 'now', and date arithmetic on ISO strings."""

    TOOL_API = frozenset({"now", "today", "add_days", "days_between", "date_of"})

    def __init__(self, now: datetime) -> None:
        self._now = now.replace(microsecond=0)

    def now(self) -> str:
        return self._now.isoformat()

    def today(self) -> str:
        return self._now.date().isoformat()

    def add_days(self, day: str, days: int) -> str:
        return (_parse_date(day[:10]) + timedelta(days=days)).isoformat()

    def days_between(self, start: str, end: str) -> int:
        return (_parse_date(end[:10]) - _parse_date(start[:10])).days

    def date_of(self, moment: str) -> str:
        return _parse_datetime(moment).date().isoformat()


def _singular(name: str) -> str:
    """"ticket_orders" -> "ticket order", "deliveries" -> "delivery": a table named in a message."""
    words = name.replace("_", " ")
    if words.endswith("ies"):
        return words[:-3] + "y"
    return words[:-1] if words.endswith("s") and not words.endswith("ss") else words


class RecordStore:
    """The record API's contract, whatever stores the rows: table lookup, coercion by the schema,
    read-only refusal, deterministic new keys, and insert / update / delete in terms of a store's
    `_fetch`, `find`, `_top_key`, `_store` and `_remove` (Records over SQL; dictdb.DictRecords over
    dicts, in exported packages). No SQL here: this class is vendored with dictdb."""

    TOOL_API = frozenset({"get", "find", "count", "one", "owned", "ensure", "insert", "update", "delete"})

    def __init__(self, spec: DomainSpec) -> None:
        self._spec = spec
        self._tables = {t.name: t for t in spec.tables}
        self.next_keys: dict[str, int] = {}
        self.read_only = False
        self.digest = 0

    # what a store provides ----------------------------------------------------------------
    def _fetch(self, table: str, key: Any) -> dict[str, Any] | None:
        raise NotImplementedError

    def find(self, table: str, where: dict[str, Any] | None = None, order_by: str | None = None,
             limit: int | None = None) -> list[dict[str, Any]]:
        raise NotImplementedError

    @staticmethod
    def _conditions(where: Any) -> dict[str, Any]:
        """`where` as find reads it: a mapping of column to value (or nothing). Anything else is
        refused before a dict is made of it, which would hash what the tool passed."""
        where = where or {}
        if type(where) is not dict:
            raise ToolError(f"where must be a mapping of column to value, got a {type(where).__name__}")
        return dict(where)

    @staticmethod
    def _row_count(limit: Any) -> int:
        """`limit` as a number of rows; 0 (or less) means every row, as sqlite3's fetchmany(0) does,
        and so does a limit past MAX_ROWS (which fetchmany could not take: OverflowError)."""
        return min(max(int(limit), 0), MAX_ROWS)

    @staticmethod
    def _ordering(order_by: Any) -> tuple[str | None, bool]:
        """(column, descending) for `order_by` ('col' or '-col'); the caller checks the column."""
        if order_by is None:
            return None, False
        if not isinstance(order_by, str):
            raise ToolError(f"order_by must be a column name (with '-' before it to descend), got {order_by!r}")
        descending = order_by.startswith("-")
        return (order_by[1:] if descending else order_by), descending

    def _top_key(self, spec: Table) -> Any:
        """The largest key of `spec`'s table (of those with its id prefix, for text keys), or None."""
        raise NotImplementedError

    def _store(self, spec: Table, row: dict[str, Any], changed: list[str], old: dict[str, Any] | None) -> None:
        """Write `row` (a new one when `old` is None), keep the digest, or raise the ToolError for
        the database's refusal."""
        raise NotImplementedError

    def _remove(self, spec: Table, old: dict[str, Any]) -> None:
        raise NotImplementedError

    # reading ----------------------------------------------------------------------------
    def _table(self, name: str) -> Table:
        table = self._tables.get(name) if isinstance(name, str) else None
        if table is None:
            raise ToolError(f"there is no table {name!r}")
        return table

    def get(self, table: str, key: Any) -> dict[str, Any]:
        """The row with this primary key; ToolError if there is none."""
        self._table(table)
        row = self._fetch(table, key)
        if row is None:
            raise ToolError(f"no {table} record with id {key!r}")
        return row

    def count(self, table: str, where: dict[str, Any] | None = None) -> int:
        return len(self.find(table, where))

    # the shapes tools repeat --------------------------------------------------------------
    def one(self, table: str, where: dict[str, Any], what: str | None = None) -> dict[str, Any]:
        """The one row matching `where` (a lookup by something a user knows, such as an email);
        ToolError when none does, or several do: "no customer with email a@b.c"."""
        rows = self.find(table, where, limit=2)
        if len(rows) == 1:
            return rows[0]
        described = (" and ".join(f"{column.replace('_', ' ')} {value}" for column, value in where.items())
                     if isinstance(where, dict) else where)
        what = what or _singular(table)
        raise ToolError(f"no {what} with {described}" if not rows else f"more than one {what} with {described}")

    def owned(self, table: str, key: Any, owner_column: str, owner: Any, what: str | None = None) -> dict[str, Any]:
        """The row `key`, which must belong to `owner` (its `owner_column` equals it); ToolError otherwise:
        "account ACC-000001 does not belong to customer CUS-000002"."""
        row = self.get(table, key)
        if not isinstance(owner_column, str) or owner_column not in row:
            raise ToolError(f"table {table!r} has no column {owner_column!r}")
        if type(owner) not in _PLAIN:  # it is shown in the message: a value a column can hold
            raise ToolError(f"the owner must be a text or a number, got a {type(owner).__name__}")
        if row[owner_column] != owner:
            raise ToolError(f"{what or _singular(table)} {key} does not belong to "
                            f"{_singular(owner_column.removesuffix('_id'))} {owner}")
        return row

    def ensure(self, table: str, where: dict[str, Any], message: str) -> None:
        """Raise ToolError(message) unless some row matches `where` (a check done once before, such as
        a verified identity)."""
        if not self.find(table, where, limit=1):
            raise ToolError(message)

    def dump(self) -> dict[str, list[dict[str, Any]]]:
        """Every table's rows, ordered by primary key."""
        return {t.name: self.find(t.name) for t in self._spec.creation_order()}

    # writing ----------------------------------------------------------------------------
    def _writable(self, table: str) -> Table:
        if self.read_only:
            raise PermissionError(f"a read tool tried to write to {table!r}")
        return self._table(table)

    def _check(self, spec: Table, values: dict[str, Any]) -> dict[str, Any]:
        if not isinstance(values, dict):
            raise ToolError(f"values for {spec.name!r} must be a mapping of column to value")
        unknown = sorted(set(values) - {c.name for c in spec.columns})
        if unknown:
            raise ToolError(f"table {spec.name!r} has no column(s) {', '.join(unknown)}")
        return {c.name: coerce(spec, c, values[c.name]) for c in spec.columns if c.name in values}

    def _explain(self, spec: Table, row: dict[str, Any], message: str) -> str:
        """What a refused write did wrong, in words a model can act on, from the database's message."""
        for col in spec.columns:
            if (col.unique or col.primary_key) and f"{spec.name}.{col.name}" in message:
                return f"{spec.name}.{col.name} {row.get(col.name)!r} is already taken"
        for col in spec.columns:
            if col.references and row.get(col.name) is not None:
                target = col.references.split(".")[0]
                if self._fetch(target, row[col.name]) is None:
                    return f"{spec.name}.{col.name}: no {target} record with id {row[col.name]!r}"
        return f"{spec.name}: the database refused the change ({message})"

    def next_key(self, table: str) -> Any:
        """The key the next insert into `table` gets: deterministic, one past the largest so far."""
        spec = self._table(table)
        if table not in self.next_keys:
            if spec.primary_key.type == "integer":
                self.next_keys[table] = (self._top_key(spec) or 0) + 1
            elif not spec.id_prefix:
                raise ToolError(f"a new {table} record needs its {spec.primary_key.name}")
            else:
                top = self._top_key(spec)
                digits = re.sub(r"\D", "", top[len(spec.id_prefix):]) if top else ""
                self.next_keys[table] = int(digits or 0) + 1
        n = self.next_keys[table]
        return n if spec.primary_key.type == "integer" else f"{spec.id_prefix}{n:0{ID_WIDTH}d}"

    def insert(self, table: str, values: dict[str, Any]) -> dict[str, Any]:
        """Add a row; its key is made for it when not given. Returns the stored row."""
        spec = self._writable(table)
        row = self._check(spec, values)
        pk = spec.primary_key.name
        made_key = row.get(pk) is None
        if made_key:
            row[pk] = self.next_key(table)
        missing = [c.name for c in spec.columns if c.name not in row and not c.nullable]
        if missing:
            raise ToolError(f"a new {table} record needs {', '.join(missing)}")
        row = {c.name: row.get(c.name) for c in spec.columns}
        self._store(spec, row, [c.name for c in spec.columns], None)
        if made_key:
            self.next_keys[table] += 1
        return dict(row)

    def update(self, table: str, key: Any, values: dict[str, Any]) -> dict[str, Any]:
        """Change some columns of one row (never its key). Returns the stored row."""
        spec = self._writable(table)
        old = self.get(table, key)
        changes = self._check(spec, values)
        if spec.primary_key.name in changes and changes[spec.primary_key.name] != key:
            raise ToolError(f"the id of a {table} record cannot change")
        changes.pop(spec.primary_key.name, None)
        new = {**old, **changes}
        if changes:
            self._store(spec, new, sorted(changes), old)
        return dict(new)

    def delete(self, table: str, key: Any) -> dict[str, Any]:
        """Remove one row; refused while other rows point at it. Returns the removed row."""
        spec = self._writable(table)
        old = self.get(table, key)
        for other in self._spec.tables:
            for col in other.columns:
                if col.references == f"{table}.{spec.primary_key.name}" and self.find(other.name, {col.name: key}, limit=1):
                    raise ToolError(f"{table} {key!r} is still referenced by {other.name}")
        self._remove(spec, old)
        return old


class Records(RecordStore):
    """`db` inside tools: get / find / count / insert / update / delete over one DBAPI connection."""

    def __init__(self, spec: DomainSpec, statements: Statements, connection: Any, digest: int,
                 shared_reads: SharedReads | None = None) -> None:
        super().__init__(spec)
        self._sql = statements
        self._sa = statements.metadata.tables
        self._cursor = connection.cursor()
        self.digest = digest
        # a fork's: the reads of the state it was forked from; a table it wrote to is read from SQL
        # again (writes all go through _write, and no cascade or trigger changes another table)
        self._shared_reads = shared_reads
        self._written: set[str] = set()

    def _shared(self, table: str) -> SharedReads | None:
        """The reads shared with the other forks of this state, if this fork has not written `table`."""
        return self._shared_reads if table not in self._written else None

    # reading ----------------------------------------------------------------------------
    def _execute(self, key: tuple[Any, ...], build, params: dict[str, Any]) -> Any:
        sql, bind = self._sql.get(key, build)
        return self._cursor.execute(sql, bind(params))

    def _fetch(self, table: str, key: Any) -> dict[str, Any] | None:
        sa_table = self._sa[table]
        pk = sa_table.primary_key.columns[0]
        row = self._execute(("get", table), lambda: sa.select(sa_table).where(pk == sa.bindparam("key")),
                            {"key": key}).fetchone()
        return self._sql.decode(table, row) if row is not None else None

    def find(self, table: str, where: dict[str, Any] | None = None, order_by: str | None = None,
             limit: int | None = None) -> list[dict[str, Any]]:
        """Rows whose columns equal `where`, ordered by `order_by` ('-col' descends) then key."""
        self._table(table)
        sa_table = self._sa[table]
        where = self._conditions(where)
        order, descending = self._ordering(order_by)
        for name in [*where, *([order] if order else [])]:
            if name not in sa_table.c:
                raise ToolError(f"table {table!r} has no column {name!r}")
        columns = tuple(sorted(where))
        nulls = tuple(c for c in columns if where[c] is None)

        def build() -> sa.Select:
            stmt = sa.select(sa_table)
            for c in columns:
                stmt = stmt.where(sa_table.c[c].is_(None) if c in nulls else sa_table.c[c] == sa.bindparam(f"w_{c}"))
            if order:
                stmt = stmt.order_by(sa_table.c[order].desc() if descending else sa_table.c[order])
            return stmt.order_by(sa_table.primary_key.columns[0])

        params = {f"w_{c}": where[c] for c in columns if c not in nulls}
        key = ("find", table, columns, nulls, order, descending)
        shared = self._shared(table) if not columns else None
        if shared is not None:
            rows = shared.get(key)
            if rows is None:
                rows = tuple(self._sql.decode(table, r) for r in self._execute(key, build, params).fetchall())
                shared.keep(key, rows)
            count = None if limit is None else self._row_count(limit)
            return [dict(r) for r in (rows[:count] if count else rows)]  # callers may edit theirs
        cursor = self._execute(key, build, params)
        found = cursor.fetchall() if limit is None else cursor.fetchmany(self._row_count(limit))
        return [self._sql.decode(table, r) for r in found]

    # writing ----------------------------------------------------------------------------
    def _top_key(self, spec: Table) -> Any:
        table = spec.name
        shared = self._shared(table)
        if shared is not None and table in shared.tops:
            return shared.tops[table]
        pk = self._sa[table].primary_key.columns[0]
        if spec.primary_key.type == "integer":
            top = self._execute(("max", table), lambda: sa.select(sa.func.max(pk)), {}).fetchone()[0]
        else:
            top = self._execute(("max", table), lambda: sa.select(sa.func.max(pk)).where(
                pk.like(sa.bindparam("prefix"))), {"prefix": f"{spec.id_prefix}%"}).fetchone()[0]
        if shared is not None:
            shared.tops[table] = top
        return top

    def _store(self, spec: Table, row: dict[str, Any], changed: list[str], old: dict[str, Any] | None) -> None:
        sa_table = self._sa[spec.name]
        if old is None:
            self._write(spec, ("insert", spec.name), lambda: sa_table.insert(), row, row)
            self.digest = (self.digest + row_hash(spec.name, row)) % DIGEST_MOD
            return
        pk = sa_table.primary_key.columns[0]
        names = tuple(changed)
        build = lambda: sa_table.update().where(pk == sa.bindparam("key")).values(  # noqa: E731
            {n: sa.bindparam(f"v_{n}") for n in names})
        params = {"key": old[spec.primary_key.name], **{f"v_{n}": row[n] for n in names}}
        self._write(spec, ("update", spec.name, names), build, params, row)
        self.digest = (self.digest - row_hash(spec.name, old) + row_hash(spec.name, row)) % DIGEST_MOD

    def _remove(self, spec: Table, old: dict[str, Any]) -> None:
        sa_table = self._sa[spec.name]
        pk = sa_table.primary_key.columns[0]
        self._write(spec, ("delete", spec.name), lambda: sa_table.delete().where(pk == sa.bindparam("key")),
                    {"key": old[spec.primary_key.name]}, old)
        self.digest = (self.digest - row_hash(spec.name, old)) % DIGEST_MOD

    def _write(self, spec: Table, key: tuple[Any, ...], build, params: dict[str, Any], row: dict[str, Any]) -> None:
        """Run a write; turn the database's integrity refusals into ToolErrors that say why."""
        self._written.add(spec.name)
        try:
            self._execute(key, build, params)
        except Exception as exc:
            if "IntegrityError" not in type(exc).__name__:
                raise
            raise ToolError(self._explain(spec, row, str(exc))) from None
