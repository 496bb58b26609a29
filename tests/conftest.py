"""Shared fixtures: the tiny `library` test domain, the built-in bank, a quiet Prefect home and one Prefect
server per test worker for the CLI runs; the order test files are handed out in (longest first); and the
security suite's summary line."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

# Before anything imports Prefect: a private, quiet, offline Prefect home for the whole session.
os.environ.setdefault("PREFECT_HOME", tempfile.mkdtemp(prefix="toolscale-prefect-"))
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("DO_NOT_TRACK", "1")
# the per-worker server below migrates a new database: past Prefect's 20 s default on 2 busy cores
os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "120")
os.environ.pop("PREFECT_API_URL", None)

import pytest

from toolscale.domains import Environment, load_domain
from toolscale.pipeline.populate import populate
from toolscale.pipeline.synthesizer import OfflineSynthesizer
from toolscale.quality.gating import run_gates

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture(scope="session")
def library():
    return load_domain(FIXTURES / "library")


@pytest.fixture(scope="session")
def library_rows(library):
    return populate(library.spec, seed=0)


@pytest.fixture
def library_env(library, library_rows):
    with Environment.from_rows(library, library_rows) as env:
        yield env


@pytest.fixture(scope="module")
def library_tasks(library, library_rows):
    """(env, tasks): the library's synthesized candidates, before the gates."""
    env = Environment.from_rows(library, library_rows)
    tasks, _ = OfflineSynthesizer().tasks(library, env, library_rows, seed=0)
    yield env, tasks
    env.close()


@pytest.fixture(scope="module")
def bank_run():
    """(domain, env, accepted, rejected): the built-in bank synthesized at seed 0 and gated."""
    synth = OfflineSynthesizer()
    domain = synth.design("bank")
    rows = synth.populate(domain, seed=0)
    env = Environment.from_rows(domain, rows)
    candidates, rejected = synth.tasks(domain, env, rows, seed=0)
    accepted, gate_rejected = run_gates(candidates, env)
    yield domain, env, accepted, rejected + gate_rejected
    env.close()


@pytest.fixture(scope="session")
def library_source():
    return {name: (FIXTURES / "library" / name).read_text() for name in ("domain.yaml", "tools.py", "policy.md")}


@pytest.fixture(scope="session")
def cli_prefect_server():
    """One Prefect server per test worker for the `toolscale` processes the tests start (through
    PREFECT_API_URL): each would otherwise start and migrate a local server of its own (6-14 s on 2
    cores). It is Prefect's local server of this session, on the PREFECT_HOME above, so tests read the
    runs from its database. Tests of a run's own local server drop the variable for their process."""
    from toolscale.flows.local_server import LocalServer

    server = LocalServer()
    server.wait_healthy(timeout_s=300)
    os.environ["PREFECT_API_URL"] = server.api_url
    yield server.api_url
    os.environ.pop("PREFECT_API_URL", None)
    server.stop()


# The files that take longest (seconds on 2 cores, 2026-12-04: 127, 99, 92, 83, 73, 66, 47, 58, 45, 38, 34)
# start first, the rest after in collection order: test workers take whole files in this order
# (--dist loadfile --no-loadscope-reorder), so the suite does not end on one long file while the other
# workers are done. The two trainer files are apart: they wait on one shared generated output.
LONGEST_FIRST = ("tests/e2e/test_resume_cli.py", "tests/e2e/test_publish.py", "tests/test_local_server.py",
                 "tests/e2e/test_llm_cli.py", "tests/e2e/test_stop_cli.py", "tests/e2e/test_train_smoke.py",
                 "tests/e2e/test_generate.py", "tests/test_user_simulator_training.py", "tests/e2e/test_tau2_real.py",
                 "tests/e2e/test_domain_dir.py", "tests/e2e/test_eval.py")


def pytest_collection_modifyitems(items) -> None:
    rank = {path: i for i, path in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::")[0], len(LONGEST_FIRST)))


def pytest_terminal_summary(terminalreporter) -> None:
    """Every test in tests/security is an attack (or a guard of one): say how many were stopped, so a
    run shows the sandbox's coverage at a glance. Here, not in tests/security: with test workers
    (xdist) only this conftest is loaded where the summary is written."""
    outcomes = {kind: [r for r in terminalreporter.stats.get(kind, [])
                       if r.nodeid.startswith("tests/security/") and r.when == "call"] for kind in ("passed", "failed")}
    tried = len(outcomes["passed"]) + len(outcomes["failed"])
    if tried:
        terminalreporter.write_line(f"security: {tried} attacks tried, {len(outcomes['passed'])} stopped, "
                                    f"{len(outcomes['failed'])} got through")
