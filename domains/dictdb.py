"""The record API over plain dicts, and a domain's restricted tools run on it.

`DictRecords` is what `db` is inside an exported τ²-bench package. It shares `records.RecordStore`
(the API, coercion by the schema, new keys from the same counters, insert/update/delete) with
`records.Records`, which runs over SQLite, and stores like it: `find` in the same order, and the
database's refusals (NOT NULL, unique keys, foreign keys, unbindable values) raised with the same
messages. So the same tool source gives the same
outputs and final states over either store. Where SQLite's own rules decide (type affinity when
comparing, the order it checks unique indexes in, LIKE ignoring ASCII case, `fetchmany(0)`
returning every row), they are reproduced here, and tests run both stores side by side.

`DictTools` runs a tools module over `DictRecords` the way `Environment.call` runs it over SQL.

This module is copied verbatim into every exported package, beside sandbox.py, spec.py and the
SQL-free part of records.py: it may import only those, the standard library and pydantic.
"""

from __future__ import annotations

import math
import re
import sqlite3
import weakref
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, ValidationError

from .records import DIGEST_MOD, Clock, RecordStore, row_hash
from .limits import StepBudget, run_tool
from .sandbox import ToolError, compile_tools, run_module, sandbox_globals
from .spec import DomainSpec, Table

Rows = dict[str, list[dict[str, Any]]]
_NUMERIC_TEXT = re.compile(r"\s*[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?\s*")
_INT64 = (-(1 << 63), (1 << 63) - 1)


def _bound(value: Any, position: int) -> Any:
    """`value` as SQLite binds it: refused as sqlite3 refuses it, NaN as NULL."""
    if isinstance(value, int) and not _INT64[0] <= value <= _INT64[1]:
        raise OverflowError("Python int too large to convert to SQLite INTEGER")
    if isinstance(value, float) and math.isnan(value):
        return None
    if value is not None and not isinstance(value, (int, float, str, bytes)):
        raise sqlite3.ProgrammingError(f"Error binding parameter {position}: type '{type(value).__name__}' "
                                       "is not supported")
    return value


def _sqlite_real_text(value: float) -> str:
    text = f"{value:.15g}"
    mantissa, _, exponent = text.partition("e")
    if mantissa.lstrip("-").isdigit():
        mantissa += ".0"
    return f"{mantissa}e{exponent}" if exponent else mantissa


def _probe(column_type: str, value: Any) -> Any:
    """A bound value as SQLite compares it with a column of this type (the column's affinity)."""
    if isinstance(value, bool):
        value = int(value)
    if column_type in ("integer", "number", "boolean"):
        if isinstance(value, str) and _NUMERIC_TEXT.fullmatch(value):
            number = float(value)
            return int(number) if number.is_integer() and abs(number) < 2 ** 63 else number
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value) if isinstance(value, int) else _sqlite_real_text(value)
    return value


def _equal(stored: Any, probe: Any) -> bool:
    if stored is None or probe is None or isinstance(stored, str) != isinstance(probe, str):
        return False
    return stored == probe


def _sort_key(value: Any) -> tuple[int, Any]:
    """SQLite's order: NULL, then numbers, then text (binary), then blobs."""
    if value is None:
        return (0, 0)
    if isinstance(value, (int, float)):
        return (1, value)
    return (2, value) if isinstance(value, str) else (3, value)


def _like_prefix(prefix: str) -> re.Pattern[str]:
    """`prefix%` as SQLite's LIKE reads it: `_` any one character, ASCII letters in any case."""
    pattern = "".join(".*" if ch == "%" else "." if ch == "_" else re.escape(ch) for ch in prefix)
    return re.compile(pattern + ".*", re.ASCII | re.IGNORECASE | re.DOTALL)


class DictRecords(RecordStore):
    """`db` inside tools: get / find / count / insert / update / delete over {table: {key: row}}."""

    def __init__(self, spec: DomainSpec, rows: Rows) -> None:
        super().__init__(spec)
        self._rows: dict[str, dict[Any, dict[str, Any]]] = {}
        for table in spec.tables:
            pk = table.primary_key.name
            self._rows[table.name] = {r[pk]: {c.name: r.get(c.name) for c in table.columns}
                                      for r in rows.get(table.name, [])}
        self.journal: list[tuple[str, Any, dict[str, Any] | None]] = []  # (table, key, row before) per write
        self.digest = self.full_digest()
        # (table, column) -> {stored value: keys}, the index `find` filters by, and (table, None) -> its
        # largest key like its prefix: built when first asked for, dropped when the table is written;
        # never changed once built, so copies share them
        self._lookups: dict[tuple[str, str | None], Any] = {}
        self._writes: dict[str, int] = {}  # table -> writes to it so far
        # the store this one was copied from (held weakly: a chain of copies of copies keeps no state
        # alive), and its writes then: while a table is unwritten in both since, its lookups there hold
        # here, so every copy of one state builds each once, there
        self._origin: weakref.ref[DictRecords] | None = None
        self._copied_at: dict[str, int] = {}

    def _shares(self, table: str) -> DictRecords | None:
        """The store this one was copied from, if `table` has the same rows there as here."""
        origin, at = self._origin and self._origin(), self._copied_at.get(table, 0)
        if origin is not None and self._writes.get(table, 0) == at == origin._writes.get(table, 0):
            return origin
        return None

    def _lookup(self, table: str, column: str | None, build: Callable[[DictRecords], Any]) -> Any:
        """`build(store)` over `table`'s rows, kept: made once per state, in the store this one was
        copied from while the table has the same rows there."""
        key = (table, column)
        if key not in self._lookups:
            origin = self._shares(table)
            self._lookups[key] = origin._lookup(table, column, build) if origin is not None else build(self)
        return self._lookups[key]

    def _index(self, table: str, column: str) -> dict[Any, list[Any]]:
        def build(store: DictRecords) -> dict[Any, list[Any]]:
            index: dict[Any, list[Any]] = {}
            for key, row in store._rows[table].items():
                if row[column] is not None:
                    index.setdefault(row[column], []).append(key)
            return index
        return self._lookup(table, column, build)

    def _written(self, table: str) -> None:
        for name in [k for k in self._lookups if k[0] == table]:
            del self._lookups[name]
        self._writes[table] = self._writes.get(table, 0) + 1

    # reading ----------------------------------------------------------------------------
    def _fetch(self, table: str, key: Any) -> dict[str, Any] | None:
        probe = _probe(self._tables[table].primary_key.type, _bound(key, 1))
        row = self._rows[table].get(probe) if probe is not None else None
        return dict(row) if row is not None and _equal(row[self._tables[table].primary_key.name], probe) else None

    def find(self, table: str, where: dict[str, Any] | None = None, order_by: str | None = None,
             limit: int | None = None) -> list[dict[str, Any]]:
        """Rows whose columns equal `where`, ordered by `order_by` ('-col' descends) then key."""
        spec = self._table(table)
        types = {c.name: c.type for c in spec.columns}
        where = self._conditions(where)
        order, descending = self._ordering(order_by)
        for name in [*where, *([order] if order else [])]:
            if name not in types:
                raise ToolError(f"table {table!r} has no column {name!r}")
        columns = tuple(sorted(where))
        nulls = tuple(c for c in columns if where[c] is None)
        bound = [c for c in columns if c not in nulls]
        probes = {c: _probe(types[c], _bound(where[c], i + 1)) for i, c in enumerate(bound)}
        rows = self._rows[table]
        if bound:  # the rows holding the first column's value, by its index (a dict equals as _equal does)
            first = bound[0]
            pool = [rows[k] for k in self._index(table, first).get(probes[first], ())]
        else:
            pool = rows.values()
        found = [r for r in pool if all(r[c] is None for c in nulls) and all(_equal(r[c], probes[c]) for c in bound)]
        pk = spec.primary_key.name
        found.sort(key=lambda r: _sort_key(r[pk]))
        if order:
            found.sort(key=lambda r: _sort_key(r[order]), reverse=descending)
        if limit is not None:
            size = self._row_count(limit)
            found = found[:size] if size else found  # sqlite3's fetchmany(0) returns every row
        return [dict(r) for r in found]

    # writing ----------------------------------------------------------------------------
    def _refusal(self, spec: Table, stored: dict[str, Any], changed: list[str], key: Any) -> str | None:
        """The message SQLite's IntegrityError would carry for writing `stored`, or None."""
        for col in spec.columns:
            if col.name in changed and stored[col.name] is None and (col.primary_key or not col.nullable):
                return f"NOT NULL constraint failed: {spec.name}.{col.name}"
        pk = spec.primary_key
        # a rowid (INTEGER) key is checked first; unique indexes newest first, the key's own index last
        unique = [c for c in reversed(spec.columns) if c.unique and not c.primary_key]
        order = [pk, *unique] if pk.type == "integer" else [*unique, pk]
        rows = self._rows[spec.name]
        for col in order:
            value = stored[col.name]
            if col.name not in changed or value is None:
                continue
            if value in rows if col is pk else any(
                    k != key and _equal(rows[k][col.name], value) for k in self._index(spec.name, col.name).get(value, ())):
                return f"UNIQUE constraint failed: {spec.name}.{col.name}"
        for col in spec.columns:
            if col.references and col.name in changed and stored[col.name] is not None:
                target = col.references.split(".")[0]
                if self._fetch(target, stored[col.name]) is None and not (
                        target == spec.name and _equal(stored[pk.name], _probe(pk.type, stored[col.name]))):
                    return "FOREIGN KEY constraint failed"
        return None

    def _store(self, spec: Table, row: dict[str, Any], changed: list[str], old: dict[str, Any] | None) -> None:
        """Store `row` as the database would, or raise the ToolError Records raises for its refusal."""
        stored = dict(row)
        for position, name in enumerate(changed, 1):
            stored[name] = _bound(row[name], position)
        key = stored[spec.primary_key.name]
        message = self._refusal(spec, stored, changed, key if old is not None else object())
        if message is not None:
            raise ToolError(self._explain(spec, row, message))
        self.journal.append((spec.name, key, old))
        self._rows[spec.name][key] = stored
        self._written(spec.name)
        self.digest = (self.digest + row_hash(spec.name, stored) - (row_hash(spec.name, old) if old else 0)) % DIGEST_MOD

    def _remove(self, spec: Table, old: dict[str, Any]) -> None:
        pk = old[spec.primary_key.name]
        self.journal.append((spec.name, pk, self._rows[spec.name].pop(pk)))
        self._written(spec.name)
        self.digest = (self.digest - row_hash(spec.name, old)) % DIGEST_MOD

    def _top_key(self, spec: Table) -> Any:
        def build(store: DictRecords) -> Any:
            keys = store._rows[spec.name]
            if spec.primary_key.type == "integer":
                return max(keys, default=None)
            like = _like_prefix(spec.id_prefix)  # as Records' `LIKE 'prefix%'`
            return max((k for k in keys if isinstance(k, str) and like.fullmatch(k)), default=None)
        return self._lookup(spec.name, None, build)

    def changes(self) -> list[tuple[str, Any, dict[str, Any] | None]]:
        """(table, key, the row now or None when deleted) for each row the journal's writes touched."""
        touched = dict.fromkeys((table, key) for table, key, _ in self.journal)
        return [(t, k, dict(self._rows[t][k]) if k in self._rows[t] else None) for t, k in touched]

    def copy(self) -> DictRecords:
        """An independent copy; rows are replaced on write, never changed in place, so they are shared."""
        twin = object.__new__(DictRecords)
        twin._spec, twin._tables = self._spec, self._tables
        twin._rows = {table: dict(rows) for table, rows in self._rows.items()}
        twin.next_keys, twin.read_only, twin.journal = dict(self.next_keys), False, []
        twin.digest, twin._lookups = self.digest, dict(self._lookups)
        twin._origin, twin._copied_at, twin._writes = weakref.ref(self), dict(self._writes), dict(self._writes)
        return twin

    def undo(self) -> None:
        """Put back every row the writes in `journal` changed, newest first, and empty it (not the digest)."""
        for table, key, before in reversed(self.journal):
            if before is None:
                self._rows[table].pop(key, None)
            else:
                self._rows[table][key] = before
            self._written(table)
        self.journal.clear()

    def full_digest(self) -> int:
        """Records' order-independent digest (the sum of one hash per row), computed from every row."""
        return sum(row_hash(t, r) for t, rows in self._rows.items() for r in rows.values()) % DIGEST_MOD


def validate_arguments(name: str, model: type[BaseModel], arguments: Any) -> dict[str, Any]:
    """Arguments coerced by the tool's model; ValueError in toolkit.ToolSpec's words otherwise."""
    try:
        validated = model.model_validate(arguments)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'arguments'}: {e['msg']}" for e in exc.errors())
        raise ValueError(f"invalid arguments for {name}: {problems}") from None
    return validated.model_dump(exclude_unset=False)


class DictTools:
    """A domain's tools over DictRecords; `call` returns what Environment.call returns, as a dict.

    Not thread-safe. A failed write call is undone, so it changes nothing.
    """

    def __init__(self, spec: DomainSpec, source: str, rows: Rows, args_models: dict[str, type[BaseModel]],
                 filename: str = "tools.py") -> None:
        self._spec = spec
        self._code, self.kinds = compile_tools(source, filename)
        self._models = args_models
        self._bind(DictRecords(spec, rows))

    def _bind(self, records: DictRecords) -> None:
        self.records = records
        self._budget = StepBudget()
        namespace = sandbox_globals(self._budget, db=records, clock=Clock(self._spec.clock))
        run_module(self._code, namespace)
        self._functions = {name: namespace[name] for name in self.kinds}

    def fork(self) -> DictTools:
        """An independent copy of the current state, sharing the compiled code (cheap)."""
        return self._twin(self.records.copy())

    def with_rows(self, rows: Rows) -> DictTools:
        """The same tools, compiled once, over other rows."""
        return self._twin(DictRecords(self._spec, rows))

    def _twin(self, records: DictRecords) -> DictTools:
        twin = object.__new__(DictTools)
        twin._spec, twin._code, twin.kinds, twin._models = self._spec, self._code, self.kinds, self._models
        twin._bind(records)
        return twin

    def call(self, name: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
        """{name, output, error, error_type}: an output, or an error and the state unchanged."""
        if name not in self._functions:
            return _result(name, error=f"unknown tool {name!r}", error_type="UnknownTool")
        try:
            args = validate_arguments(name, self._models[name], arguments or {})
        except ValueError as exc:
            return _result(name, error=str(exc), error_type="InvalidArguments")
        self.records.journal.clear()
        if self.kinds[name] == "read":
            self.records.read_only = True
            try:
                return self._run(name, args)
            finally:
                self.records.read_only = False
        digest, next_keys = self.records.digest, dict(self.records.next_keys)
        result = self._run(name, args)
        if result["error"] is not None:
            self.records.undo()
            self.records.digest, self.records.next_keys = digest, next_keys
        return result

    def _run(self, name: str, args: dict[str, Any]) -> dict[str, Any]:
        output, error, error_type = run_tool(self._budget, self._functions[name], args)
        return _result(name, output=output, error=error, error_type=error_type)

    def dump(self) -> Rows:
        return self.records.dump()

    def state_hash(self) -> str:
        """The digest Environment.state_hash gives for the same rows, kept up to date by each write."""
        return f"{self.records.digest:032x}"

    def recomputed_state_hash(self) -> str:
        """The same digest computed from scratch by reading every row (for checks)."""
        return f"{self.records.full_digest():032x}"


def _result(name: str, output: Any = None, error: str | None = None, error_type: str | None = None) -> dict[str, Any]:
    return {"name": name, "output": output, "error": error, "error_type": error_type}


__all__ = ["DictRecords", "DictTools", "validate_arguments"]
