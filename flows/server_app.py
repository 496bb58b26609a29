"""The app toolscale's local Prefect server serves: Prefect's own API app, with each of its SQLite
transactions begun IMMEDIATE.

Prefect begins most of its API's SQLite transactions DEFERRED: a request that reads, then writes
(creating a task run reads its flow run first) fails at once with "database is locked" when another
writer committed in between, since SQLite cannot upgrade that stale snapshot to a write. The API
answers 503 and the client sleeps 2 s, then 4 s, before it retries, while the run's stages wait on
it: 18 such sleeps in a default run on 2 cores, the run's flow trailing its finished stages by about
8 s. An IMMEDIATE transaction takes the write lock when it begins, waiting for it under SQLite's busy
timeout (60 s), so none fails. One local user's requests lose nothing by taking turns.

A new SQLite database starts as a copy of a migrated template (flows/database_template.py), before
Prefect's start, which then finds it at its head.

Runs in the server's process (uvicorn --factory toolscale.flows.server_app:create_app), so it imports
nothing of toolscale but its database template, and only there.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from prefect.server.api.server import create_app as prefect_app
from prefect.server.database.configurations import AioSqliteConfiguration
from prefect.server.database.dependencies import MODELS_DEPENDENCIES
from prefect.server.utilities.database import get_dialect
from prefect.settings import PREFECT_API_DATABASE_CONNECTION_URL

from .database_template import database_file, seed_new_database


class ImmediateSqliteConfiguration(AioSqliteConfiguration):
    """Prefect's SQLite configuration, each transaction begun as Prefect begins a locking one."""

    def begin_transaction(self, session: Any, with_for_update: bool = False) -> Any:
        return super().begin_transaction(session, with_for_update=True)


def create_app() -> Any:
    """Prefect's app, with the database configuration Prefect would make for a SQLite URL
    (database/dependencies.py, a dependency callers may set) begun IMMEDIATE and a new database file
    seeded from the template before Prefect's start; Prefect's own otherwise."""
    url = PREFECT_API_DATABASE_CONNECTION_URL.value()
    if get_dialect(url).name != "sqlite":
        return prefect_app()
    MODELS_DEPENDENCIES["database_config"] = ImmediateSqliteConfiguration(connection_url=url)
    app = prefect_app()
    database = database_file(url)
    if database is not None:
        prefects_start = app.router.lifespan_context

        @asynccontextmanager
        async def seeded_start(app: Any) -> AsyncIterator[None]:
            await seed_new_database(database)
            async with prefects_start(app):
                yield

        app.router.lifespan_context = seeded_start
    return app
