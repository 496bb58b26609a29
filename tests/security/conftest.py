"""tests/security: every test here is an attack (or a guard of one); the suite says how many were
stopped, so a run shows the sandbox's coverage at a glance."""

from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).parent


def _here(report) -> bool:
    return Path(report.fspath).resolve().is_relative_to(HERE) if getattr(report, "fspath", None) else False


def pytest_terminal_summary(terminalreporter) -> None:
    outcomes = {kind: [r for r in terminalreporter.stats.get(kind, []) if _here(r) and r.when == "call"]
                for kind in ("passed", "failed")}
    tried = len(outcomes["passed"]) + len(outcomes["failed"])
    if tried:
        terminalreporter.write_line(f"security: {tried} attacks tried, {len(outcomes['passed'])} stopped, "
                                    f"{len(outcomes['failed'])} got through")
