"""Prefect's local server as toolscale launches it (flows/local_server.py): Prefect's own app under
uvicorn, reached through the settings of the process that launched it, which never imports the server
package; it ends with that process however that process ends. Each case runs in a fresh interpreter,
since launching changes the process's Prefect settings."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import ssl
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from pathlib import Path

import httpx
import psutil
import pytest

SCRIPT = textwrap.dedent("""
    import json, os, sys
    from toolscale.flows.settings import configure_prefect
    configure_prefect()
    from prefect import flow, task
    from toolscale.flows import local_server

    from prefect.settings import get_current_settings

    @task
    def double(x):
        return 2 * x, get_current_settings().flows.heartbeat_frequency

    @flow
    def doubled(x):
        return double(x)

    local_server.ensure_started(lambda line: print(line, file=sys.stderr))
    with local_server.flow_settings():
        result, heartbeat = doubled(21)
    from prefect.client.orchestration import get_client
    import time
    with get_client(sync_client=True) as client:
        for _ in range(100):  # the server records task runs from their events, a moment later
            runs = [r.name for r in client.read_task_runs()]
            if runs:
                break
            time.sleep(0.1)
    print(json.dumps({"result": result, "heartbeat": heartbeat, "server": local_server._server.process.pid, "api": client.api_url.host,
                      "ca_file": get_current_settings().api.ssl_cert_file,
                      "server_imported": "prefect.server.api.server" in sys.modules, "task_runs": runs}), flush=True)
    if sys.argv[1:] == ["hang"]:
        import time
        time.sleep(600)
""")


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    """One Prefect home for the module's servers: only the first migrates its database."""
    return tmp_path_factory.mktemp("prefect")


def _env(home) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
    return {**env, "PREFECT_HOME": str(home)}


def test_runs_go_to_the_launched_server_without_importing_prefects_server_and_it_ends_with_the_run(tmp_path, home):
    done = subprocess.run([sys.executable, "-c", SCRIPT], env=_env(home), cwd=tmp_path, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    seen = json.loads(done.stdout.splitlines()[-1])
    assert seen["result"] == 42 and seen["api"] == "127.0.0.1"
    assert seen["heartbeat"] is None  # nobody watches a server that ends with the run for crashed runs
    assert seen["ca_file"] == str(home / "loopback-ca.pem")  # each task run's client loads it: one certificate
    assert any(name.startswith("double") for name in seen["task_runs"])
    assert not seen["server_imported"]
    assert "starting Prefect's local server" in done.stderr and "is up after" in done.stderr
    assert not psutil.pid_exists(seen["server"]) or psutil.Process(seen["server"]).status() == psutil.STATUS_ZOMBIE


def test_the_server_ends_when_the_process_that_launched_it_is_killed_outright(tmp_path, home):
    proc = subprocess.Popen([sys.executable, "-c", SCRIPT, "hang"], env=_env(home), cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        seen = json.loads(proc.stdout.readline())
        server = psutil.Process(seen["server"])
        assert server.is_running()
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        server.wait(timeout=30)  # raises TimeoutExpired if it outlives its parent
    finally:
        proc.kill()


def test_a_server_that_cannot_start_is_one_clear_error(tmp_path):
    script = textwrap.dedent("""
        from toolscale.flows.settings import configure_prefect
        configure_prefect()
        from toolscale.flows import local_server
        starts = []
        spawn = local_server.LocalServer._spawn
        local_server.LocalServer._spawn = lambda self, *args, **kwargs: starts.append(1) or spawn(self, *args, **kwargs)
        try:
            local_server.ensure_started(lambda line: None)
        except Exception as exc:
            print(type(exc).__name__, exc)
            print("API URL kept:", __import__("os").environ.get("PREFECT_API_URL"))
            print("starts:", len(starts))
    """)
    env = {**_env(tmp_path / "prefect"), "PREFECT_SERVER_DATABASE_CONNECTION_URL": f"sqlite+aiosqlite:///{tmp_path}/no/such/dir/x.db"}
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-c", script], env=env, cwd=tmp_path, capture_output=True, text=True,
                          timeout=300)
    first, second, third = done.stdout.splitlines()[:3]
    assert first == ("LocalServerError Prefect's local server ended while starting (exit status 3): "
                     "sqlalchemy.exc.OperationalError: (sqlite3.OperationalError) unable to open database file") and second == "API URL kept: None"
    assert third == "starts: 1"  # a folder that is not there will not be there on a second start
    assert time.monotonic() - started < 120  # it ended: no wait for the start-up timeout


STARTING = textwrap.dedent("""
    import sys
    from toolscale.flows.settings import configure_prefect
    configure_prefect()
    from toolscale.flows import local_server
    try:
        local_server.ensure_started(lambda line: print(line, flush=True))
        print("up")
    except Exception as exc:
        print(type(exc).__name__, exc)
""")


def test_a_damaged_database_is_set_aside_and_the_server_starts_on_a_new_one(tmp_path):
    """A start killed while it migrated leaves a database no later start gets past: the old reset
    deleted it, and a user's run history with it. It is kept, and said where."""
    home = tmp_path / "prefect"
    home.mkdir()
    damaged = b"SQLite format 3\x00" + bytes(range(256)) * 20
    (home / "prefect.db").write_bytes(damaged)
    done = subprocess.run([sys.executable, "-c", STARTING], env=_env(home), cwd=tmp_path, capture_output=True,
                          text=True, timeout=300)
    lines = done.stdout.splitlines()
    assert lines[-1] == "up", done.stdout + done.stderr[-2000:]
    assert any(line.startswith("Prefect's local server ended while starting") and
               line.endswith(f"trying again on a new database (the old one is in {home / 'unstartable'})")
               for line in lines), lines
    assert (home / "unstartable" / "prefect.db").read_bytes() == damaged
    with sqlite3.connect(home / "prefect.db") as db:  # the new one, migrated
        assert db.execute("select count(*) from block_type").fetchone()[0] > 0


def test_a_start_a_new_database_does_not_help_leaves_the_old_one_where_it_was(tmp_path):
    """A server that cannot answer in time on any database: the run history goes back in place."""
    home = tmp_path / "prefect"
    home.mkdir()
    history = b"SQLite format 3\x00" + b"a user's runs" * 100
    (home / "prefect.db").write_bytes(history)
    (home / "prefect.db-wal").write_bytes(b"wal")
    env = {**_env(home), "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "1"}
    done = subprocess.run([sys.executable, "-c", STARTING], env=env, cwd=tmp_path, capture_output=True,
                          text=True, timeout=300)
    lines = done.stdout.splitlines()
    assert lines[-1].startswith("LocalServerError Prefect's local server did not answer within 1s"), lines
    assert any("trying again on a new database" in line for line in lines), lines
    assert (home / "prefect.db").read_bytes() == history and (home / "prefect.db-wal").read_bytes() == b"wal"
    assert not (home / "prefect.db-shm").exists() and not (home / "unstartable").exists()


@pytest.mark.parametrize(("log", "again"), [
    ("sqlite3.OperationalError: index ix_block_document__block_type_name_name already exists", True),
    ("sqlalchemy.exc.OperationalError: (sqlite3.OperationalError) database is locked", True),
    ("ERROR:    [Errno 98] error while attempting to bind on address ('127.0.0.1', 8001): address already in use", True),
    ("sqlalchemy.exc.OperationalError: (sqlite3.OperationalError) unable to open database file", False),
    ("ModuleNotFoundError: No module named 'aiosqlite'", False),
    ("", False),
])
def test_only_a_start_that_failed_in_passing_is_tried_again(monkeypatch, log, again):
    """Another run migrating the same new database, or the port taken: a second start may succeed.
    Anything else would fail the same way again, after as long."""
    from toolscale.flows import local_server

    monkeypatch.delenv("TOOLSCALE_DEBUG", raising=False)
    server = local_server.LocalServer.__new__(local_server.LocalServer)
    server._log = lambda: f"Traceback (most recent call last):\n{log}\nERROR:    Application startup failed. Exiting.\n"
    assert server._failed_in_passing() is again


def test_the_launched_server_skips_the_block_registration_its_database_already_has(monkeypatch):
    """Each start would check Prefect's block catalog against every installed collection (2-3 s of
    CPU); a new database is a copy of the template, whose blocks are registered. A user's setting wins."""
    from toolscale.flows import local_server

    spawned = []
    monkeypatch.setattr(local_server.subprocess, "Popen", lambda command, env, **kwargs: spawned.append(env))
    monkeypatch.setenv("PREFECT_API_BLOCKS_REGISTER_ON_START", "true")
    server = local_server.LocalServer.__new__(local_server.LocalServer)
    server.log = tempfile.TemporaryFile()
    server._spawn()
    assert spawned[0]["PREFECT_API_BLOCKS_REGISTER_ON_START"] == "true"
    assert spawned[0]["PREFECT_MEMOIZE_BLOCK_AUTO_REGISTRATION"] == "false"
    server.log.close()


def test_two_runs_starting_on_one_new_prefect_home_both_get_a_server(tmp_path):
    """Both servers migrate the same new database at once; the one that loses the race starts again
    (CI runs tests in two workers on one Prefect home)."""
    script = textwrap.dedent("""
        from toolscale.flows.settings import configure_prefect
        configure_prefect()
        from toolscale.flows import local_server
        local_server.ensure_started(lambda line: None)
        print("up")
    """)
    runs = [subprocess.Popen([sys.executable, "-c", script], env=_env(tmp_path / "prefect"), cwd=tmp_path,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outcomes = [run.communicate(timeout=300) for run in runs]
    assert [out for out, _ in outcomes] == ["up\n", "up\n"], [err[-500:] for _, err in outcomes]


@pytest.mark.parametrize("api, loopback", [("http://127.0.0.1:4200/api", True), ("http://localhost:4200/api", True),
                                           ("https://127.0.0.1:4200/api", False),
                                           ("http://prefect.example.com/api", False), ("", False)])
def test_only_a_plain_http_api_on_this_machine_is_loopback(api, loopback):
    from toolscale.flows import settings

    assert bool(settings._LOOPBACK_API.match(api)) is loopback


def test_a_loopback_api_gets_a_ca_file_of_one_certificate_unless_the_user_set_one(tmp_path, monkeypatch):
    """Prefect makes a client per task run, each loading the CA file into a TLS context; over plain
    http on loopback that context is never used, and certifi's whole bundle cost ~20 ms a client."""
    from toolscale.flows import settings

    monkeypatch.setenv("PREFECT_HOME", str(tmp_path))
    monkeypatch.delenv("PREFECT_API_SSL_CERT_FILE", raising=False)
    settings.use_loopback_ca()
    path = os.environ["PREFECT_API_SSL_CERT_FILE"]
    assert open(path).read().count("BEGIN CERTIFICATE") == 1
    ssl.create_default_context(cafile=path)  # a CA file ssl loads
    monkeypatch.setenv("PREFECT_API_SSL_CERT_FILE", "/etc/ssl/mine.pem")
    settings.use_loopback_ca()
    assert os.environ["PREFECT_API_SSL_CERT_FILE"] == "/etc/ssl/mine.pem"


def test_requests_that_read_then_write_at_once_never_find_the_database_locked(cli_prefect_server):
    """Creating a task run reads its flow run, then writes. Prefect's own app begins that transaction
    DEFERRED, so requests racing each other on SQLite got 503 "database is locked" (38 of 60 in one
    try here) and Prefect's client slept 2 s before each retry; the local server's app begins them
    IMMEDIATE and every one succeeds at its first try. Raw requests, so no retry hides a 503."""
    with httpx.Client(base_url=cli_prefect_server, timeout=120) as client:
        flow = client.post("/flows/", json={"name": "read-then-write"}).raise_for_status().json()
        run = client.post("/flow_runs/", json={"flow_id": flow["id"], "name": "racing"}).raise_for_status().json()
    statuses: list[int] = []

    def create(worker: int) -> None:
        with httpx.Client(base_url=cli_prefect_server, timeout=120) as client:
            for i in range(15):
                statuses.append(client.post("/task_runs/", json={
                    "flow_run_id": run["id"], "task_key": f"racer-{worker}", "dynamic_key": str(i),
                    "name": f"racer-{worker}-{i}"}).status_code)

    racers = [threading.Thread(target=create, args=(worker,)) for worker in range(8)]
    for racer in racers:
        racer.start()
    for racer in racers:
        racer.join()
    assert statuses == [201] * 120


def test_a_new_database_starts_as_a_copy_of_the_template_which_a_damaged_one_is_built_again(tmp_path):
    """The first start builds the template in the user's cache (here a damaged one is there); a
    server on another new home then starts on a copy of it: a variable put into the template is there."""
    cache = {"XDG_CACHE_HOME": str(tmp_path / "cache")}
    template = subprocess.run([sys.executable, "-c", "from toolscale.flows.database_template import template_path; "
                               "print(template_path())"], env={**os.environ, **cache}, capture_output=True, text=True,
                              check=True)
    template = Path(template.stdout.strip())
    template.parent.mkdir(parents=True)
    template.write_bytes(b"SQLite format 3\x00" + b"\x00" * 4000)  # cut short by a full disk, say
    script = textwrap.dedent("""
        import json, sys
        from toolscale.flows.settings import configure_prefect
        configure_prefect()
        from toolscale.flows import local_server
        local_server.ensure_started(lambda line: None)
        from prefect.client.orchestration import get_client
        with get_client(sync_client=True) as client:
            variable = client.read_variable_by_name("from-the-template")
        print(json.dumps(variable and variable.value))
    """)

    def start(home: str) -> str:
        done = subprocess.run([sys.executable, "-c", script], env={**_env(tmp_path / home), **cache}, cwd=tmp_path,
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-2000:]
        return done.stdout.splitlines()[-1]

    assert start("first") == "null"
    with sqlite3.connect(template) as db:
        assert db.execute("PRAGMA quick_check").fetchone() == ("ok",)
        assert db.execute("SELECT count(*) FROM block_type").fetchone()[0] > 0  # its blocks are registered
        db.execute("""INSERT INTO variable (name, value) VALUES ('from-the-template', '"yes"')""")
    db.close()
    assert start("second") == '"yes"'
    assert not [p.name for p in template.parent.iterdir() if p != template]  # no scratch copies left behind
