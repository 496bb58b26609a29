"""SQLAlchemy Core tables for a spec, and the record API's statements compiled once per dialect.

The hot path (thousands of replays a second) runs these compiled statements on the DBAPI
connection: SQLAlchemy's `Connection.execute` costs about 100 µs per statement here, five to ten
times the query itself, while every statement still comes from SQLAlchemy Core.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import sqlalchemy as sa

from .spec import DomainSpec

_SQL_TYPES = {"string": sa.String, "integer": sa.Integer, "number": sa.Float, "boolean": sa.Boolean,
              "date": sa.String, "datetime": sa.String}


def build_metadata(spec: DomainSpec) -> sa.MetaData:
    """Tables for a spec: keys, uniqueness, NOT NULL, enums as CHECK constraints, indexed FKs."""
    metadata = sa.MetaData()
    for table in spec.creation_order():
        items: list[Any] = []
        for col in table.columns:
            args: list[Any] = [col.name, _SQL_TYPES[col.type]()]
            if col.references:
                args.append(sa.ForeignKey(col.references))
            items.append(sa.Column(*args, primary_key=col.primary_key,
                                   nullable=col.nullable and not col.primary_key,
                                   unique=col.unique and not col.primary_key,
                                   index=bool(col.references)))
            if col.enum:
                allowed = ", ".join("'" + v.replace("'", "''") + "'" for v in col.enum)
                items.append(sa.CheckConstraint(f"{col.name} IN ({allowed})", name=f"ck_{table.name}_{col.name}"))
        sa.Table(table.name, metadata, *items)
    return metadata


class Statements:
    """Compiled SQL for one metadata and dialect, built on first use and shared by forks."""

    def __init__(self, metadata: sa.MetaData, dialect: sa.Dialect) -> None:
        self.metadata = metadata
        self.dialect = dialect
        self._cache: dict[tuple[Any, ...], tuple[str, Sequence[str] | None]] = {}
        self.columns = {name: [c.name for c in t.columns] for name, t in metadata.tables.items()}
        self._booleans = {name: [i for i, c in enumerate(t.columns) if isinstance(c.type, sa.Boolean)]
                          for name, t in metadata.tables.items()}

    def get(self, key: tuple[Any, ...], build: Callable[[], sa.ClauseElement]) -> tuple[str, Sequence[str] | None]:
        """(SQL text, order of parameter names for positional paramstyles) for a statement."""
        compiled = self._cache.get(key)
        if compiled is None:
            stmt = build().compile(dialect=self.dialect)
            order = stmt.positiontup if self.dialect.positional else None
            compiled = (stmt.string, order)
            self._cache[key] = compiled
        return compiled

    def decode(self, table: str, row: Sequence[Any]) -> dict[str, Any]:
        """A DBAPI row as a dict with the schema's Python types (SQLite stores booleans as 0/1)."""
        values = list(row)
        for i in self._booleans[table]:
            if values[i] is not None:
                values[i] = bool(values[i])
        return dict(zip(self.columns[table], values))


def bind(order: Sequence[str] | None, params: dict[str, Any]) -> Any:
    return tuple(params[name] for name in order) if order is not None else params
