"""The app toolscale's local Prefect server serves: Prefect's own API app, with each of its SQLite
transactions begun IMMEDIATE.

Prefect begins most of its API's SQLite transactions DEFERRED: a request that reads, then writes
(creating a task run reads its flow run first) fails at once with "database is locked" when another
writer committed in between, since SQLite cannot upgrade that stale snapshot to a write. The API
answers 503 and the client sleeps 2 s, then 4 s, before it retries, while the run's stages wait on
it: 18 such sleeps in a default run on 2 cores, the run's flow trailing its finished stages by about
8 s. An IMMEDIATE transaction takes the write lock when it begins, waiting for it under SQLite's busy
timeout (60 s), so none fails. One local user's requests lose nothing by taking turns.

Runs in the server's process (uvicorn --factory toolscale.flows.server_app:create_app), so it imports
nothing of toolscale.
"""

from __future__ import annotations

import functools
from typing import Any


def create_app() -> Any:
    from prefect.server.api.server import create_app as prefect_app
    from prefect.server.database.configurations import AioSqliteConfiguration

    begin = getattr(AioSqliteConfiguration, "begin_transaction", None)
    if begin is not None:  # a Prefect without it serves its app as it is
        AioSqliteConfiguration.begin_transaction = _immediate(begin)
    return prefect_app()


def _immediate(begin_transaction: Any) -> Any:
    """`begin_transaction(session, with_for_update=...)` as Prefect begins a locking one: IMMEDIATE."""
    if getattr(begin_transaction, "immediate", False):  # already wrapped (an app made twice in one process)
        return begin_transaction

    @functools.wraps(begin_transaction)
    def begin_immediate(self: Any, session: Any, *args: Any, **kwargs: Any) -> Any:
        return begin_transaction(self, session, with_for_update=True)

    begin_immediate.immediate = True  # type: ignore[attr-defined]
    return begin_immediate
