"""SQLAlchemy Core tables for a spec, and the record API's statements compiled once per dialect.

The hot path (thousands of replays a second) runs these compiled statements on the DBAPI
connection: SQLAlchemy's `Connection.execute` costs about 100 µs per statement here, five to ten
times the query itself, while every statement still comes from SQLAlchemy Core.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from typing import Any

import sqlalchemy as sa

from .spec import DomainSpec

_SQL_TYPES = {"string": sa.String, "integer": sa.Integer, "number": sa.Float, "boolean": sa.Boolean,
              "date": sa.String, "datetime": sa.String}


def build_metadata(spec: DomainSpec) -> sa.MetaData:
    """Tables for a spec: keys, uniqueness, NOT NULL, enums as CHECK constraints, and the foreign
    keys' indexes noted in `table.info` (create_schema makes them, in name order)."""
    metadata = sa.MetaData()
    for table in spec.creation_order():
        items: list[Any] = []
        for col in table.columns:
            args: list[Any] = [col.name, _SQL_TYPES[col.type]()]
            if col.references:
                args.append(sa.ForeignKey(col.references))
            items.append(sa.Column(*args, primary_key=col.primary_key,
                                   nullable=col.nullable and not col.primary_key,
                                   unique=col.unique and not col.primary_key))
            if col.enum:  # an expression, not text: the dialect quotes the name (a column may be called `order`)
                items.append(sa.CheckConstraint(sa.column(col.name).in_(col.enum), name=f"ck_{table.name}_{col.name}"))
        indexes = sorted((f"ix_{table.name}_{col.name}", col.name) for col in table.columns if col.references)
        sa.Table(table.name, metadata, *items, info={"indexes": indexes})
    return metadata


def create_schema(metadata: sa.MetaData, conn: sa.Connection) -> None:
    """Create the tables, then their indexes in name order. (SQLAlchemy creates a table's indexes
    in set order, which differs from one MetaData to the next, and with it a saved file's bytes.)"""
    metadata.create_all(conn)
    for table in metadata.sorted_tables:
        for name, column in table.info.get("indexes", []):
            # an Index on a stand-in table, so the shared metadata stays free of indexes
            stand_in = sa.Table(table.name, sa.MetaData(), sa.Column(column))
            conn.execute(sa.schema.CreateIndex(sa.Index(name, stand_in.c[column])))


Binder = Callable[[dict[str, Any]], Any]


STATEMENT_CACHE_SIZE = 4096


class Statements:
    """Compiled SQL for one metadata and dialect, built on first use and shared by forks."""

    def __init__(self, metadata: sa.MetaData, dialect: sa.Dialect) -> None:
        self.metadata = metadata
        self.dialect = dialect
        self._cache: dict[tuple[Any, ...], tuple[str, Binder]] = {}
        self.columns = {name: [c.name for c in t.columns] for name, t in metadata.tables.items()}
        self._booleans = {name: [i for i, c in enumerate(t.columns) if isinstance(c.type, sa.Boolean)]
                          for name, t in metadata.tables.items()}

    def get(self, key: tuple[Any, ...], build: Callable[[], sa.ClauseElement]) -> tuple[str, Binder]:
        """(SQL text, a function from named parameters to what the DBAPI takes) for a statement."""
        compiled = self._cache.get(key)
        if compiled is None:
            stmt = build().compile(dialect=self.dialect)
            compiled = (stmt.string, _binder(stmt.positiontup if self.dialect.positional else None))
            if len(self._cache) >= STATEMENT_CACHE_SIZE:  # tool code can ask for endless shapes of query
                try:
                    del self._cache[next(iter(self._cache))]
                except (KeyError, RuntimeError, StopIteration):  # another thread's fork got there first
                    pass
            self._cache[key] = compiled
        return compiled

    def decode(self, table: str, row: Sequence[Any]) -> dict[str, Any]:
        """A DBAPI row as a dict with the schema's Python types (SQLite stores booleans as 0/1)."""
        booleans = self._booleans[table]
        if not booleans:
            return dict(zip(self.columns[table], row))
        values = list(row)
        for i in booleans:
            if values[i] is not None:
                values[i] = bool(values[i])
        return dict(zip(self.columns[table], values))


# Rows the forks of one database state keep of their whole-table reads, in all: they outlive the call
# that read them, so past its memory limit (a tool could read every table in every order).
SHARED_READ_ROWS = 50_000


class SharedReads:
    """The whole-table reads of one database state, shared by the forks made of it: tools that filter
    a whole table in Python (a phone number compared digit by digit) read it once per state instead of
    once per call, a cost that grew with the table times the tasks. Reads past SHARED_READ_ROWS are
    not kept. Each table's largest key, which every fork's first insert scanned the table for, is kept
    too (one per table)."""

    def __init__(self) -> None:
        self._reads: dict[tuple[Any, ...], tuple[dict[str, Any], ...]] = {}
        self.rows = 0
        self.tops: dict[str, Any] = {}  # table -> its largest key like its prefix: a scan of the table

    def get(self, key: tuple[Any, ...]) -> tuple[dict[str, Any], ...] | None:
        return self._reads.get(key)

    def keep(self, key: tuple[Any, ...], rows: tuple[dict[str, Any], ...]) -> None:
        if self.rows + len(rows) <= SHARED_READ_ROWS:
            self._reads[key] = rows
            self.rows += len(rows)


def _binder(order: Sequence[str] | None) -> Binder:
    """Named parameters as the dialect takes them: the dict itself, or a tuple in `order` (an
    itemgetter, since this runs for every statement of every replay)."""
    if order is None:
        return lambda params: params
    if len(order) == 0:
        return lambda params: ()
    if len(order) == 1:
        name = order[0]
        return lambda params: (params[name],)
    return operator.itemgetter(*order)
