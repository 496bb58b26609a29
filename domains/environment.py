"""An Environment: one database plus a domain's compiled tools, and gold-action replay.

`call` validates arguments against the tool's schema and runs a write tool inside a savepoint,
so a failed call changes nothing. `fork` copies an in-memory SQLite state with SQLite's
serialize/deserialize (a memory copy, ~50 µs for a few thousand rows), so thousands of replays a
second are possible. Databases are created with SQLAlchemy at any URL; other dialects fork into
in-memory SQLite copies.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from pydantic import BaseModel, ConfigDict
from sqlalchemy.pool import StaticPool

from .domain import Domain
from .records import DIGEST_MOD, Clock, Records, row_hash
from .limits import StepBudget, run_tool
from .sandbox import ToolError, run_module, sandbox_globals
from .sql import SharedReads, Statements, create_schema


class ToolResult(BaseModel):
    """The outcome of one call: an output, or an error with its kind and message."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    name: str
    output: Any = None
    error: str | None = None
    error_type: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


POOL_SIZE = 8


def _sqlite_memory() -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None)
    conn.execute("PRAGMA foreign_keys = ON")
    return conn


class Environment:
    """A database and the tools that act on it. Not thread-safe: fork one per worker."""

    def __init__(self, domain: Domain, connection: Any, statements: Statements, digest: int,
                 engine: sa.Engine | None = None, shared_reads: SharedReads | None = None) -> None:
        self.domain = domain
        self._connection = connection
        self._engine = engine  # keeps a non-SQLite database's engine (and pool) alive
        self._statements = statements
        self._is_sqlite = isinstance(connection, sqlite3.Connection)
        self._records = Records(domain.spec, statements, connection, digest, shared_reads)
        self._budget = StepBudget()
        namespace = sandbox_globals(self._budget, db=self._records, clock=Clock(domain.spec.clock))
        run_module(domain.toolkit.code, namespace)
        self._functions = {name: namespace[name] for name in domain.toolkit.specs}
        self._snapshot: tuple[int, bytes] | None = None
        self._shared_reads = SharedReads()  # the snapshot's whole-table reads, made by its forks
        self._writes = 0
        self._pool: list[sqlite3.Connection] = []  # forks' connections, back at this state, for reuse
        self._parent: Environment | None = None

    # construction -------------------------------------------------------------------------
    @classmethod
    def from_rows(cls, domain: Domain, rows: dict[str, list[dict[str, Any]]], url: str = "sqlite://") -> Environment:
        """A new database at `url` (in-memory SQLite by default) holding `rows`."""
        memory = url == "sqlite://"
        raw = _sqlite_memory() if memory else None
        engine = sa.create_engine(url, creator=lambda: raw, poolclass=StaticPool) if memory else sa.create_engine(url)
        with engine.begin() as conn:
            create_schema(domain.metadata, conn)
            for table in domain.spec.creation_order():
                if rows.get(table.name):
                    conn.execute(domain.metadata.tables[table.name].insert(), rows[table.name])
        connection = raw if memory else engine.raw_connection().dbapi_connection
        if isinstance(connection, sqlite3.Connection):
            connection.isolation_level = None
            connection.execute("PRAGMA foreign_keys = ON")
        env = cls(domain, connection, Statements(domain.metadata, engine.dialect), 0, engine)
        env._records.digest = env._full_digest()
        return env

    @classmethod
    def from_sqlite(cls, domain: Domain, path: str | Path) -> Environment:
        """An in-memory copy of a saved SQLite database (the file is not changed)."""
        connection = _sqlite_memory()
        with sqlite3.connect(str(path)) as source:
            source.backup(connection)
        env = cls(domain, connection, Statements(domain.metadata, sa.create_engine("sqlite://").dialect), 0)
        env._records.digest = env._full_digest()
        return env

    def fork(self) -> Environment:
        """A fresh, independent copy of this environment's current state.

        A fork runs inside a savepoint on a pooled connection that already holds this state;
        closing it rolls back and returns the connection. Reusing connections keeps SQLite's
        prepared statements warm, which halves the cost of a replay.
        """
        if not self._is_sqlite or self._connection.in_transaction:
            # other dialects, and forks of forks (SQLite's serialize skips uncommitted pages): copy rows
            return Environment.from_rows(self.domain, self.dump())
        if self._snapshot is None or self._snapshot[0] != self._writes:
            for stale in self._pool:
                stale.close()
            self._pool.clear()
            self._snapshot = (self._writes, self._connection.serialize())
            self._shared_reads = SharedReads()
        if self._pool:
            connection = self._pool.pop()
        else:
            connection = sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None)
            connection.deserialize(self._snapshot[1])
            connection.execute("PRAGMA foreign_keys = ON")
        connection.execute("SAVEPOINT fork")
        child = Environment(self.domain, connection, self._statements, self._records.digest,
                            shared_reads=self._shared_reads)
        child._parent = self
        child._origin = self._snapshot[0]
        return child

    def close(self) -> None:
        parent = self._parent
        if parent is None:
            self._connection.close()
            if self._engine is not None:
                self._engine.dispose()
            return
        self._connection.execute("ROLLBACK TO SAVEPOINT fork")
        self._connection.execute("RELEASE SAVEPOINT fork")
        self._parent = None
        if parent._snapshot is not None and parent._snapshot[0] == self._origin and len(parent._pool) < POOL_SIZE:
            parent._pool.append(self._connection)
        else:
            self._connection.close()

    def __enter__(self) -> Environment:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # tools ---------------------------------------------------------------------------------
    def call(self, name: str, arguments: dict[str, Any] | None = None) -> ToolResult:
        """Run one tool call. Errors come back in the result; the state is then unchanged."""
        spec = self.domain.toolkit.specs.get(name)
        if spec is None:
            return ToolResult(name=name, error=f"unknown tool {name!r}", error_type="UnknownTool")
        try:
            args = spec.validate_arguments(arguments or {})
        except ValueError as exc:
            return ToolResult(name=name, error=str(exc), error_type="InvalidArguments")
        if spec.kind == "read":  # read tools cannot write (Records refuses), so no savepoint is needed
            self._records.read_only = True
            try:
                return self._run(name, args)
            finally:
                self._records.read_only = False
        digest, next_keys = self._records.digest, dict(self._records.next_keys)
        cursor = self._connection.cursor()
        cursor.execute("SAVEPOINT tool_call")
        result = self._run(name, args)
        if result.ok:
            cursor.execute("RELEASE SAVEPOINT tool_call")
            self._writes += 1
        else:
            cursor.execute("ROLLBACK TO SAVEPOINT tool_call")
            cursor.execute("RELEASE SAVEPOINT tool_call")
            self._records.digest, self._records.next_keys = digest, next_keys
        return result

    def _run(self, name: str, args: dict[str, Any]) -> ToolResult:
        output, error, error_type = run_tool(self._budget, self._functions[name], args)
        return ToolResult(name=name, output=output, error=error, error_type=error_type)

    # state ---------------------------------------------------------------------------------
    def state_hash(self) -> str:
        """A canonical digest of every table, kept up to date by each write."""
        return f"{self._records.digest:032x}"

    def _full_digest(self) -> int:
        return sum(row_hash(t, r) for t, rows in self.dump().items() for r in rows) % DIGEST_MOD

    def recomputed_state_hash(self) -> str:
        """The same digest computed from scratch by reading every row (for checks)."""
        return f"{self._full_digest():032x}"

    def dump(self) -> dict[str, list[dict[str, Any]]]:
        """Every table's rows, ordered by primary key."""
        return self._records.dump()

    def rows(self, table: str, where: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        """Copies of the rows of `table` matching `where`, read without a tool (the checks of domains/rules.py)."""
        return self._records.find(table, where)

    def save(self, path: str | Path) -> None:
        """Write the current state to a SQLite file (replacing it)."""
        if not self._is_sqlite or self._connection.in_transaction:
            # other dialects, and forks (SQLite's backup waits on open transactions): save a copy
            with Environment.from_rows(self.domain, self.dump()) as copy:
                copy.save(path)
            return
        path = Path(path)
        path.unlink(missing_ok=True)
        target = sqlite3.connect(str(path))
        try:
            self._connection.backup(target)
        finally:
            target.close()


def replay(env: Environment, actions: Iterable[tuple[str, dict[str, Any]]]) -> list[ToolResult]:
    """Call each (name, arguments) in order; stop at the first error, which ends the list."""
    results = []
    for name, arguments in actions:
        result = env.call(name, arguments)
        results.append(result)
        if not result.ok:
            break
    return results


__all__ = ["Environment", "ToolResult", "ToolError", "replay"]
