"""Prefect settings for a quiet, offline, project-local run; applied before Prefect is imported.

Measured gotchas (see shared/notes/prefect.md): the ephemeral server's 20 s start-up timeout is
too short on a busy 2-core machine and a killed start leaves a half-migrated database; server
analytics try to reach the internet. A user's own settings (e.g. PREFECT_API_URL pointing at a
real server) always win: we only fill in what is unset.

Flow and task runs log to the Prefect API (flows/prefect_logging.yml), so a server's UI shows each
run's log; the terminal shows them, and Prefect's own INFO lines, only in debug mode
(`toolscale --debug`, or TOOLSCALE_DEBUG=1).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

STATE_DIR = Path(".toolscale")


def prefect_home() -> Path:
    return Path(os.environ.get("PREFECT_HOME", STATE_DIR / "prefect")).resolve()


LOGGING_CONFIG = Path(__file__).with_name("prefect_logging.yml")
DEBUG_VARIABLE = "TOOLSCALE_DEBUG"


def debug_mode() -> bool:
    return os.environ.get(DEBUG_VARIABLE, "") not in ("", "0", "false")


_LOOPBACK_API = re.compile(r"^http://(127\.0\.0\.1|localhost)(:\d+)?/")


def use_loopback_ca() -> None:
    """Point Prefect's clients at a CA file of one certificate (the first of certifi's bundle) when
    the API is plain http on this machine (the local server, or one given as such): every client,
    one per task run, loads that file into a TLS context it never uses over http, and the whole
    bundle costs ~20 ms a client, ~1 s of a default run's CLI CPU. A CA file the user set is kept."""
    if "PREFECT_API_SSL_CERT_FILE" in os.environ:
        return
    import certifi

    from toolscale.pipeline.export import atomic_write

    bundle = Path(certifi.where()).read_text(encoding="ascii")
    end = "-----END CERTIFICATE-----"
    path = prefect_home() / "loopback-ca.pem"
    first = bundle[bundle.index("-----BEGIN CERTIFICATE-----"):bundle.index(end) + len(end)] + "\n"
    if not path.is_file() or path.read_text(encoding="ascii") != first:
        atomic_write(path, first)
    os.environ["PREFECT_API_SSL_CERT_FILE"] = str(path)


def configure_prefect() -> None:
    debug = debug_mode()
    defaults = {
        "PREFECT_HOME": str(prefect_home()),
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        "DO_NOT_TRACK": "1",
        "PREFECT_LOGGING_SETTINGS_PATH": str(LOGGING_CONFIG),
        "PREFECT_LOGGING_LEVEL": "INFO" if debug else "WARNING",
        # the local server logs a traceback per unflushed event when a stopped run stops it
        "PREFECT_SERVER_LOGGING_LEVEL": "ERROR" if debug else "CRITICAL",
        "PREFECT_LOGGING_TO_API_ENABLED": "true",
        "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "120",
        "PREFECT_RESULTS_PERSIST_BY_DEFAULT": "false",
    }
    if debug:  # the runs' own log lines, tracebacks included, in the terminal too
        defaults["PREFECT_LOGGING_LOGGERS_PREFECT_FLOW_RUNS_HANDLERS"] = "api,console"
        defaults["PREFECT_LOGGING_LOGGERS_PREFECT_TASK_RUNS_HANDLERS"] = "api,console"
    for key, value in defaults.items():
        os.environ.setdefault(key, value)
    Path(os.environ["PREFECT_HOME"]).mkdir(parents=True, exist_ok=True)
    if _LOOPBACK_API.match(os.environ.get("PREFECT_API_URL", "")):
        use_loopback_ca()
