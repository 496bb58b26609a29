"""Prefect's local server: Prefect's own API app (no UI, SQLite transactions begun IMMEDIATE:
flows/server_app.py) under uvicorn, a child of this process.

With no PREFECT_API_URL configured, Prefect would start this server itself on its first API call,
after importing the whole server package into the calling process just to launch it (about 4 s of
CPU on 2 cores, taken from the stages). `ensure_started` starts the same command without that import,
with a line that says so (its start takes 5-50 s on 2 cores: its database is migrated on first use),
and once it answers points this process's Prefect settings (and its children's environment) at it.
A server started here ends with this process, or with the kernel's parent-death signal if this
process is killed outright.
"""

from __future__ import annotations

import atexit
import ctypes
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from .settings import debug_mode, use_loopback_ca

_PR_SET_PDEATHSIG = 1
_prctl = ctypes.CDLL(None, use_errno=True).prctl if sys.platform.startswith("linux") else None  # looked up
# here: a forked child of a threaded process must not load libraries
_STARTUP_FAILED = 3  # uvicorn's exit status when the app did not start or its port was taken after our check
_STARTS = 3  # a start that failed for a passing reason is tried again
# what a start can fail on and not again: another run on the same Prefect home migrating it at the same
# moment, or the free port found taken before the server bound it; any other failure is said at once
_TRANSIENT = re.compile(r"already exists|database is locked|address already in use")
_EXCEPTION = re.compile(r"[\w.]+(Error|Exception|Exit)\b.*:")  # "sqlite3.OperationalError: unable to ..."
_server: "LocalServer | None" = None  # the one started here, once it answered
# Prefect's start checks its block catalog against every installed collection (importing them: Dask's
# too), ~2-3 s of CPU a start. A new database is a copy of the template, whose blocks are registered,
# and a Prefect server a user starts on this home registers its own: this server needs none of it.
# A user's own setting of either wins.
_NO_BLOCK_REGISTRATION = {"PREFECT_API_BLOCKS_REGISTER_ON_START": "false",
                          "PREFECT_MEMOIZE_BLOCK_AUTO_REGISTRATION": "false"}


class LocalServerError(RuntimeError):
    """The local server did not answer its health check in time, or ended while starting."""


class LocalServer:
    """One uvicorn process serving Prefect's API app (toolscale.flows.server_app) on a free loopback
    port, as Prefect's ephemeral mode runs it (no UI, ephemeral services)."""

    def __init__(self) -> None:
        self.log = tempfile.TemporaryFile()  # its start-up errors, for the message if it fails
        self.process = self._spawn()
        atexit.register(self.stop)

    @property
    def api_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/api"

    def _spawn(self, new_port: bool = True) -> subprocess.Popen:
        import prefect

        self._log_start = self.log.seek(0, os.SEEK_END)
        if new_port:
            with socket.socket() as probe:
                probe.bind(("127.0.0.1", 0))
                self.port = probe.getsockname()[1]
        command = [sys.executable, "-m", "uvicorn", "--app-dir", str(prefect.__module_path__.parent), "--factory",
                   "toolscale.flows.server_app:create_app", "--host", "127.0.0.1", "--port", str(self.port),
                   "--log-level", "error", "--lifespan", "on"]
        env = {**_NO_BLOCK_REGISTRATION, **os.environ, "PREFECT_UI_ENABLED": "0", "PREFECT__SERVER_EPHEMERAL": "1",
               "PREFECT__SERVER_FINAL": "1"}
        env.pop("PREFECT_API_URL", None)
        if not debug_mode():  # its errors go to a file read only when it fails: keep them there
            env["PREFECT_SERVER_LOGGING_LEVEL"] = "ERROR"
        return subprocess.Popen(command, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=None if debug_mode() else self.log, preexec_fn=_end_with_parent(os.getpid()))

    def wait_healthy(self, timeout_s: float) -> None:
        """Return once /api/health answers 200; LocalServerError after `timeout_s`, or when it ends."""
        import httpx

        deadline = time.monotonic() + timeout_s
        starts = 1
        with httpx.Client(timeout=5) as client:
            while time.monotonic() < deadline:
                status = self.process.poll()
                if status == _STARTUP_FAILED and starts < _STARTS and self._failed_in_passing():
                    starts += 1
                    self.process = self._spawn(new_port="address already in use" in self._log())
                    continue
                if status is not None:
                    raise LocalServerError(f"Prefect's local server ended while starting (exit status {status}): "
                                           f"{self._errors()}")
                try:
                    if client.get(f"{self.api_url}/health").status_code == 200:
                        return
                except httpx.TransportError:
                    pass
                time.sleep(0.1)
        errors = self._errors()
        self.stop()
        raise LocalServerError(f"Prefect's local server did not answer within {timeout_s:g}s: {errors}")

    def _log(self) -> str:
        """What its latest start printed."""
        self.log.seek(self._log_start)
        return self.log.read().decode(errors="replace")

    def _errors(self) -> str:
        """The last exception its latest start printed, else its last line."""
        if debug_mode():
            return "its log is above"
        lines = self._log().strip().splitlines()
        raised = [line for line in lines if _EXCEPTION.match(line)]
        return (raised or lines or ["it printed nothing"])[-1]

    def _failed_in_passing(self) -> bool:
        """Whether its latest start failed for a reason another start may not meet (in debug mode its log
        went to the terminal: it may have)."""
        return debug_mode() or bool(_TRANSIENT.search(self._log()))

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.log.close()


def _end_with_parent(parent: int) -> Callable[[], None]:
    """The child's set-up: SIGTERM when the thread that launched it ends (launch from the main thread),
    and Ctrl-C, which reaches the whole process group, left to the run's own stop."""
    def preexec() -> None:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        if _prctl is not None:
            _prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
            if os.getppid() != parent:
                os._exit(1)
    return preexec


def is_ephemeral() -> bool:
    """True when runs go to a local server this process starts: one started here, or none configured
    (PREFECT_API_URL in the environment, the Prefect profile or its settings files)."""
    from prefect.settings import PREFECT_API_URL

    return _server is not None or not PREFECT_API_URL.value()


def ensure_started(say: Callable[[str], None], meanwhile: Callable[[], None] = lambda: None) -> None:
    """Start the local server unless one is configured or already started, wait until it answers, and
    point this process's Prefect settings at it; `say` what happens. `meanwhile` runs once the server
    is launched, before the wait (at once when there is none to start). A server that does not start on
    its database gets one more start on a new one, the old one set aside (and put back if that fails too)."""
    global _server
    if _server is not None or not is_ephemeral():
        meanwhile()
        return
    from prefect.context import refresh_global_settings_context
    from prefect.settings import PREFECT_API_DATABASE_CONNECTION_URL, PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS

    from .database_template import database_file

    say("starting Prefect's local server (set PREFECT_API_URL to use a running one)")
    started = time.perf_counter()
    timeout = PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS.value()
    try:
        server = _answering(timeout, meanwhile)
    except LocalServerError as exc:
        database = database_file(PREFECT_API_DATABASE_CONNECTION_URL.value())
        if database is None or not database.exists():
            raise
        # a start killed while migrating leaves a half-migrated database, which no later start gets past
        try:
            aside, put_back = _set_aside(database)
        except OSError:
            raise exc from None
        say(f"{exc}; trying again on a new database (the old one is in {aside})")
        try:
            server = _answering(timeout)
        except LocalServerError:
            put_back()  # not the database's fault: the run history stays where it was
            raise
    _server = server
    os.environ["PREFECT_API_URL"] = server.api_url
    use_loopback_ca()
    refresh_global_settings_context()
    say(f"Prefect's local server is up after {time.perf_counter() - started:.1f}s at {server.api_url}")


def _answering(timeout_s: float, meanwhile: Callable[[], None] = lambda: None) -> LocalServer:
    """A started local server, once it answers, `meanwhile` run while it starts; LocalServerError (and
    nothing left running) if it does not."""
    server = LocalServer()
    try:
        meanwhile()
        server.wait_healthy(timeout_s)
    except LocalServerError:
        server.stop()
        raise
    return server


def _set_aside(database: Path) -> tuple[Path, Callable[[], None]]:
    """Move `database` (and its -wal and -shm files) into unstartable/ beside it, replacing what an
    earlier failure left there; returns that folder and the function that puts it back."""
    aside = database.parent / "unstartable"
    shutil.rmtree(aside, ignore_errors=True)
    aside.mkdir()
    files = [database.with_name(database.name + suffix) for suffix in ("", "-wal", "-shm")]
    moved = [path for path in files if path.exists()]
    for path in moved:
        path.rename(aside / path.name)

    def put_back() -> None:
        for path in files:
            path.unlink(missing_ok=True)  # what the failed start made of a new one
        for path in moved:
            (aside / path.name).rename(path)
        shutil.rmtree(aside, ignore_errors=True)

    return aside, put_back


@contextmanager
def flow_settings() -> Iterator[None]:
    """Prefect's settings for the flows run here, on the launched local server: no flow-run heartbeats.
    They let a server that outlives a run find it crashed; this one ends with the run, and each flow
    waits up to a second at its end for its heartbeat thread to wake."""
    if _server is None:
        yield
        return
    from prefect.settings import temporary_settings

    with temporary_settings(updates={"flows.heartbeat_frequency": None}):
        yield

