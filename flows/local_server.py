"""Prefect's local (ephemeral) server, started with a line that says so.

With no PREFECT_API_URL, Prefect starts a server in a subprocess on its first API call and stops it
at exit. That start takes 10-50 s on 2 cores (its database is migrated on first use), in which a
run would only show "waiting"; starting it here first lets the CLI say what is happening and how long
it took. It is Prefect's own singleton, so the flows then use this very server.
"""

from __future__ import annotations

import time
from collections.abc import Callable


def is_ephemeral() -> bool:
    """True when runs go to a server this process starts (no PREFECT_API_URL in the environment or
    the Prefect profile)."""
    from prefect.settings import PREFECT_API_URL

    return not PREFECT_API_URL.value()


def ensure_started(say: Callable[[str], None]) -> None:
    """Start Prefect's local server unless it is up or a server is configured; `say` what happens."""
    if not is_ephemeral():
        return
    from prefect.server.api.server import SubprocessASGIServer

    server = SubprocessASGIServer()
    if server.running:
        return
    say("starting Prefect's local server (set PREFECT_API_URL to use a running one)")
    started = time.perf_counter()
    server.start()
    say(f"Prefect's local server is up after {time.perf_counter() - started:.1f}s at {server.api_url}")

