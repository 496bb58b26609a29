"""A new Prefect home's SQLite database, copied from a template instead of migrated afresh.

A new database goes through all of Prefect's migrations (116 for SQLite) and then registers its
block types: ~10 s of CPU on an idle core, paid by every run in a new folder (its home is
`.toolscale/prefect`), every test worker, and, on 2 busy cores, taken from the stages. The first
server start that finds no template builds one the way Prefect's start would build the database
(its migrations, then its block registration), in the user's cache and keyed by Prefect's version
and migration files; every new database after it starts as a copy. Prefect's own start then runs as
usual on the copy: it finds the database at its head and the blocks registered.

Runs in the local server's process (flows/server_app.py). A template that is not a whole SQLite
database stamped with a migration (a disk error, a hand edit) is built again.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sqlite3
from collections.abc import Callable
from pathlib import Path


def database_file(url: str) -> Path | None:
    """The SQLite file a database URL names; None for another database, one in memory or a `file:` URI.
    (Also read by the process that launches the server, to set a database aside: flows/local_server.py.)"""
    from sqlalchemy.engine import make_url

    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite" or not parsed.database or parsed.database == ":memory:" \
            or parsed.database.startswith("file:"):
        return None
    return Path(parsed.database)


def template_path() -> Path:
    """This Prefect's template, in the user's cache: keyed by its version and migration files."""
    import prefect

    migrations = sorted(os.listdir(prefect.__module_path__ / "server" / "database" / "_migrations" / "versions" /
                                   "sqlite"))
    key = hashlib.sha256("\n".join([prefect.__version__, *migrations]).encode()).hexdigest()[:16]
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "toolscale" / "prefect" / f"prefect-{prefect.__version__}-{key}.db"


async def seed_new_database(database: Path) -> bool:
    """Copy the template to `database` if no file is there yet, building the template first when
    there is none; False when it could not (Prefect then builds the database itself)."""
    if database.exists():
        return False
    template = template_path()
    try:
        if not _is_sound(template):
            template.unlink(missing_ok=True)
            await _build(template)
        _publish(template, database, shutil.copyfile)
    except Exception:  # a read-only cache, a home that is not there, a migration that fails: Prefect's
        return False   # own start then does what it would have done, and says what is wrong
    return True


def _is_sound(template: Path) -> bool:
    """A whole SQLite database that a migration stamped."""
    if not template.is_file():
        return False
    try:
        db = sqlite3.connect(f"{template.as_uri()}?mode=ro", uri=True)
        try:
            return db.execute("PRAGMA quick_check").fetchone() == ("ok",) and \
                bool(db.execute("SELECT version_num FROM alembic_version").fetchall())
        finally:
            db.close()
    except sqlite3.Error:
        return False


async def _build(template: Path) -> None:
    """Migrate and register block types in a new database beside `template`, as Prefect's start
    would, then publish a standalone copy of it as the template."""
    from prefect.server.database.dependencies import MODELS_DEPENDENCIES, provide_database_interface
    from prefect.server.models.block_registration import run_block_auto_registration

    template.parent.mkdir(parents=True, exist_ok=True)
    scratch = template.with_name(f".{template.stem}-{os.getpid()}.building.db")
    configured = MODELS_DEPENDENCIES["database_config"]
    MODELS_DEPENDENCIES["database_config"] = type(configured)(connection_url=f"sqlite+aiosqlite:///{scratch}")
    try:
        db = provide_database_interface()
        await db.create_db()
        async with await db.session() as session:
            await run_block_auto_registration(session=session)
        await (await db.engine()).dispose()
        _publish(scratch, template, _backup)
    finally:
        MODELS_DEPENDENCIES["database_config"] = configured
        for suffix in ("", "-wal", "-shm", "-journal"):
            Path(f"{scratch}{suffix}").unlink(missing_ok=True)


def _backup(source: Path, target: Path) -> None:
    """A consistent copy of an SQLite database, its write-ahead log folded in, in rollback-journal
    mode: a copy of one file is then the whole database (Prefect turns it to WAL when it connects)."""
    src, dst = sqlite3.connect(source), sqlite3.connect(target)
    try:
        src.backup(dst)
        dst.execute("PRAGMA journal_mode=DELETE")
    finally:
        src.close()
        dst.close()


def _publish(source: Path, target: Path, copy: Callable[[Path, Path], object]) -> None:
    """Copy `source` to `target` whole or not at all, and never over a file another process put
    there first (two runs starting on one new home share the first one's database)."""
    partial = target.with_name(f".{target.name}-{os.getpid()}.partial")
    try:
        copy(source, partial)
        os.link(partial, target)
    except FileExistsError:
        pass
    finally:
        partial.unlink(missing_ok=True)
