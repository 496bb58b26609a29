"""The record API tools see (`db`), its SQLAlchemy Core tables, and the fixed clock (`clock`).

Every write goes through `Records`, so it can keep values typed exactly as the schema says,
refuse writes from read tools, make new keys deterministic (prefix + next counter), and keep
an order-independent digest of the whole database up to date: the sum of one hash per row.
"""

from __future__ import annotations

import hashlib
import json
import re
from datetime import date, datetime, timedelta
from typing import Any

import sqlalchemy as sa

from .sandbox import ToolError
from .spec import Column, DomainSpec, Table

DIGEST_MOD = 1 << 128
_SQL_TYPES = {"string": sa.String, "integer": sa.Integer, "number": sa.Float, "boolean": sa.Boolean,
              "date": sa.String, "datetime": sa.String}
ID_WIDTH = 6


def build_metadata(spec: DomainSpec) -> sa.MetaData:
    """SQLAlchemy tables for a spec: keys, uniqueness, NOT NULL, enums as CHECK constraints."""
    metadata = sa.MetaData()
    for table in spec.creation_order():
        columns = []
        for col in table.columns:
            args: list[Any] = [col.name, _SQL_TYPES[col.type]()]
            if col.references:
                args.append(sa.ForeignKey(col.references))
            kwargs = {"primary_key": col.primary_key, "nullable": col.nullable and not col.primary_key,
                      "unique": col.unique and not col.primary_key}
            columns.append(sa.Column(*args, **kwargs))
            if col.enum:
                allowed = ", ".join("'" + v.replace("'", "''") + "'" for v in col.enum)
                columns.append(sa.CheckConstraint(f"{col.name} IN ({allowed})", name=f"ck_{table.name}_{col.name}"))
        sa.Table(table.name, metadata, *columns)
    return metadata


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
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ToolError(f"{where} must be a number, got {value!r}")
        value = float(value)
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


class Records:
    """`db` inside tools: get / find / count / insert / update / delete over one connection."""

    TOOL_API = frozenset({"get", "find", "count", "insert", "update", "delete"})

    def __init__(self, spec: DomainSpec, metadata: sa.MetaData, conn: sa.Connection, digest: int) -> None:
        self._spec = spec
        self._tables = {t.name: t for t in spec.tables}
        self._sql = metadata.tables
        self._conn = conn
        self.digest = digest
        self.read_only = False
        self._by_key = {name: sa.select(t).where(t.primary_key.columns[0] == sa.bindparam("key"))
                        for name, t in self._sql.items()}

    def _table(self, name: str) -> tuple[Table, sa.Table]:
        if name not in self._tables:
            raise ToolError(f"there is no table {name!r}")
        return self._tables[name], self._sql[name]

    def _fetch(self, table: str, key: Any) -> dict[str, Any] | None:
        row = self._conn.execute(self._by_key[table], {"key": key}).mappings().first()
        return dict(row) if row is not None else None

    def get(self, table: str, key: Any) -> dict[str, Any]:
        """The row with this primary key; ToolError if there is none."""
        self._table(table)
        row = self._fetch(table, key)
        if row is None:
            raise ToolError(f"no {table} record with id {key!r}")
        return row

    def find(self, table: str, where: dict[str, Any] | None = None, order_by: str | None = None,
             limit: int | None = None) -> list[dict[str, Any]]:
        """Rows whose columns equal `where`, ordered by `order_by` ('-col' descends) then key."""
        _, sql = self._table(table)
        stmt = sa.select(sql)
        for name, value in (where or {}).items():
            if name not in sql.c:
                self._unknown_column(table, name)
            stmt = stmt.where(sql.c[name] == value)
        if order_by:
            name = order_by.lstrip("-")
            if name not in sql.c:
                self._unknown_column(table, name)
            stmt = stmt.order_by(sql.c[name].desc() if order_by.startswith("-") else sql.c[name])
        stmt = stmt.order_by(sql.primary_key.columns[0])
        if limit is not None:
            stmt = stmt.limit(int(limit))
        return [dict(r) for r in self._conn.execute(stmt).mappings()]

    def count(self, table: str, where: dict[str, Any] | None = None) -> int:
        return len(self.find(table, where))

    @staticmethod
    def _unknown_column(table: str, name: str) -> None:
        raise ToolError(f"table {table!r} has no column {name!r}")

    def _writable(self, table: str) -> tuple[Table, sa.Table]:
        if self.read_only:
            raise PermissionError(f"a read tool tried to write to {table!r}")
        return self._table(table)

    def _check(self, spec: Table, values: dict[str, Any]) -> dict[str, Any]:
        names = {c.name for c in spec.columns}
        unknown = sorted(set(values) - names)
        if unknown:
            raise ToolError(f"table {spec.name!r} has no column(s) {', '.join(unknown)}")
        return {c.name: coerce(spec, c, values[c.name]) for c in spec.columns if c.name in values}

    def _references_exist(self, spec: Table, row: dict[str, Any]) -> None:
        for col in spec.columns:
            if col.references and row.get(col.name) is not None:
                target = col.references.split(".")[0]
                if self._fetch(target, row[col.name]) is None:
                    raise ToolError(f"{spec.name}.{col.name}: no {target} record with id {row[col.name]!r}")

    def _unique_free(self, spec: Table, sql: sa.Table, row: dict[str, Any], key: Any = None) -> None:
        for col in spec.columns:
            if (col.unique or col.primary_key) and row.get(col.name) is not None:
                clash = self._conn.execute(sa.select(sql.primary_key.columns[0])
                                           .where(sql.c[col.name] == row[col.name])).first()
                if clash is not None and clash[0] != key:
                    raise ToolError(f"{spec.name}.{col.name} {row[col.name]!r} is already taken")

    def next_key(self, table: str) -> Any:
        """The key the next insert into `table` gets: deterministic, from the largest key so far."""
        spec, sql = self._table(table)
        pk = sql.primary_key.columns[0]
        if spec.primary_key.type == "integer":
            top = self._conn.execute(sa.select(sa.func.max(pk))).scalar()
            return (top or 0) + 1
        prefix = spec.id_prefix
        if not prefix:
            raise ToolError(f"a new {table} record needs its {spec.primary_key.name}")
        top = self._conn.execute(sa.select(sa.func.max(pk)).where(pk.like(f"{prefix}%"))).scalar()
        digits = re.sub(r"\D", "", top[len(prefix):]) if top else ""
        return f"{prefix}{int(digits or 0) + 1:0{ID_WIDTH}d}"

    def insert(self, table: str, values: dict[str, Any]) -> dict[str, Any]:
        """Add a row; its key is made for it when not given. Returns the stored row."""
        spec, sql = self._writable(table)
        row = self._check(spec, values)
        pk = spec.primary_key.name
        if row.get(pk) is None:
            row[pk] = self.next_key(table)
        missing = [c.name for c in spec.columns if c.name not in row and not c.nullable]
        if missing:
            raise ToolError(f"a new {table} record needs {', '.join(missing)}")
        row = {c.name: row.get(c.name) for c in spec.columns}
        self._unique_free(spec, sql, row)
        self._references_exist(spec, row)
        self._conn.execute(sql.insert().values(**row))
        self.digest = (self.digest + row_hash(table, row)) % DIGEST_MOD
        return dict(row)

    def update(self, table: str, key: Any, values: dict[str, Any]) -> dict[str, Any]:
        """Change some columns of one row (never its key). Returns the stored row."""
        spec, sql = self._writable(table)
        old = self.get(table, key)
        changes = self._check(spec, values)
        if spec.primary_key.name in changes and changes[spec.primary_key.name] != key:
            raise ToolError(f"the id of a {table} record cannot change")
        new = {**old, **changes}
        self._unique_free(spec, sql, new, key)
        self._references_exist(spec, new)
        pk = sql.primary_key.columns[0]
        self._conn.execute(sql.update().where(pk == key).values(**changes))
        self.digest = (self.digest - row_hash(table, old) + row_hash(table, new)) % DIGEST_MOD
        return dict(new)

    def delete(self, table: str, key: Any) -> dict[str, Any]:
        """Remove one row; refused while other rows point at it. Returns the removed row."""
        spec, sql = self._writable(table)
        old = self.get(table, key)
        for other in self._spec.tables:
            for col in other.columns:
                if col.references == f"{table}.{spec.primary_key.name}":
                    if self._conn.execute(sa.select(sa.literal(1)).select_from(self._sql[other.name])
                                          .where(self._sql[other.name].c[col.name] == key)).first():
                        raise ToolError(f"{table} {key!r} is still referenced by {other.name}")
        pk = sql.primary_key.columns[0]
        self._conn.execute(sql.delete().where(pk == key))
        self.digest = (self.digest - row_hash(table, old)) % DIGEST_MOD
        return old
