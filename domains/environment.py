"""An Environment: one database plus a domain's compiled tools, and gold-action replay.

`call` validates arguments against the tool's schema and runs the tool inside a savepoint, so
a failed call changes nothing. `fork` copies the initial state of an in-memory SQLite template
with SQLite's backup API, cheap enough for thousands of replays a second.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from pydantic import BaseModel, ConfigDict
from sqlalchemy.pool import NullPool, StaticPool

from .domain import Domain
from .records import DIGEST_MOD, Clock, Records, build_metadata, row_hash
from .sandbox import StepBudget, ToolError, sandbox_globals


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


def _memory_connection() -> sqlite3.Connection:
    return sqlite3.connect(":memory:", check_same_thread=False)


class Environment:
    """A database and the tools that act on it. Not thread-safe: fork one per worker."""

    def __init__(self, domain: Domain, engine: sa.Engine, conn: sa.Connection, digest: int) -> None:
        self.domain = domain
        self._engine = engine
        self._conn = conn
        self._metadata = domain.metadata
        self._records = Records(domain.spec, self._metadata, conn, digest)
        self._budget = StepBudget()
        namespace = sandbox_globals(self._budget, db=self._records, clock=Clock(domain.spec.clock))
        exec(domain.toolkit.code, namespace)  # compiled under the sandbox policy, see sandbox.py
        self._functions = {name: namespace[name] for name in domain.toolkit.specs}
        self._fork_engine: sa.Engine | None = None

    # construction -------------------------------------------------------------------------
    @classmethod
    def from_rows(cls, domain: Domain, rows: dict[str, list[dict[str, Any]]], url: str = "sqlite://") -> Environment:
        """A new database at `url` (in-memory SQLite by default) holding `rows`."""
        if url == "sqlite://":
            engine = sa.create_engine(url, creator=_memory_connection, poolclass=StaticPool)
        else:
            engine = sa.create_engine(url)
        conn = engine.connect().execution_options(isolation_level="AUTOCOMMIT")
        domain.metadata.create_all(conn)
        for table in domain.spec.creation_order():
            if rows.get(table.name):
                conn.execute(domain.metadata.tables[table.name].insert(), rows[table.name])
        env = cls(domain, engine, conn, 0)
        env._records.digest = env._full_digest()
        return env

    @classmethod
    def from_sqlite(cls, domain: Domain, path: str | Path) -> Environment:
        """An in-memory copy of a saved SQLite database (the file is not changed)."""
        raw = _memory_connection()
        with sqlite3.connect(str(path)) as source:
            source.backup(raw)
        engine = sa.create_engine("sqlite://", creator=lambda: raw, poolclass=StaticPool)
        env = cls(domain, engine, engine.connect().execution_options(isolation_level="AUTOCOMMIT"), 0)
        env._records.digest = env._full_digest()
        return env

    def fork(self) -> Environment:
        """A fresh, independent copy of this environment's current state."""
        if self._engine.dialect.name != "sqlite":
            return Environment.from_rows(self.domain, self.dump())
        if self._fork_engine is None:
            source = self._conn.connection.dbapi_connection

            def clone() -> sqlite3.Connection:
                target = _memory_connection()
                source.backup(target)
                return target

            self._fork_engine = sa.create_engine("sqlite://", creator=clone, poolclass=NullPool)
        conn = self._fork_engine.connect().execution_options(isolation_level="AUTOCOMMIT")
        return Environment(self.domain, self._fork_engine, conn, self._records.digest)

    def close(self) -> None:
        self._conn.close()

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
        digest = self._records.digest
        self._budget.reset()
        self._records.read_only = spec.kind == "read"
        try:
            with self._conn.begin_nested():
                output = json.loads(json.dumps(self._functions[name](**args)))
        except ToolError as exc:
            self._records.digest = digest
            return ToolResult(name=name, error=str(exc), error_type="ToolError")
        except Exception as exc:  # a fault in the tool itself: report it, keep the state
            self._records.digest = digest
            return ToolResult(name=name, error=f"{type(exc).__name__}: {exc}", error_type=type(exc).__name__)
        finally:
            self._records.read_only = False
        return ToolResult(name=name, output=output)

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
        out = {}
        for table in self.domain.spec.creation_order():
            sql = self._metadata.tables[table.name]
            stmt = sa.select(sql).order_by(sql.primary_key.columns[0])
            out[table.name] = [dict(r) for r in self._conn.execute(stmt).mappings()]
        return out

    def save(self, path: str | Path) -> None:
        """Write the current state to a SQLite file (replacing it)."""
        if self._engine.dialect.name != "sqlite":
            Environment.from_rows(self.domain, self.dump()).save(path)
            return
        path = Path(path)
        path.unlink(missing_ok=True)
        target = sqlite3.connect(str(path))
        try:
            self._conn.connection.dbapi_connection.backup(target)
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
