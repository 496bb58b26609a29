"""The red-team report's F1 route, end to end through the real CLI: a payload in a tool's return
annotation, planted in a finished run's cached design (as anyone who can write the output folder
can), must never run: not during `toolscale generate` (which imports the package it publishes),
not when a τ²-bench user imports the package the way its README shows.

The plain edit is caught by the stage digests and recomputed; an attacker who also reseals the
artifact's digests (they are no secret) meets the loader as soon as a later stage loads the design,
which refuses the hint with one line.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from toolscale.flows.store import FILES, META, _seal

DOMAIN = "weather"
ARGS = ["generate", "--domains", DOMAIN, "--seed", "3", "--scale", "0.3"]


def toolscale(env: dict, cwd: Path, *args: str) -> subprocess.CompletedProcess:
    exe = shutil.which("toolscale")
    command = [exe, *args] if exe else [sys.executable, "-m", "toolscale.flows.cli", *args]
    proc = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    proc.said = " ".join(proc.stderr.split())
    return proc


def import_as_readme_says(out: Path, mark: Path) -> subprocess.CompletedProcess:
    """The package README's snippet, in a fresh interpreter."""
    snippet = (f"import sys\nsys.path.insert(0, {str(out / 'tau2')!r})\nfrom {DOMAIN} import get_environment, get_tasks\n"
               "tools = get_environment().tools\nprint(len(get_tasks()))\n")
    return subprocess.run([sys.executable, "-c", snippet], capture_output=True, text=True, timeout=300)


def plant(out: Path, mark: Path, reseal: bool) -> None:
    """Put the payload on the first tool's return hint in the cached design."""
    (design,) = (out / ".toolscale" / "stages" / DOMAIN).glob("design-*")
    sources = json.loads((design / "sources.json").read_text())
    payload = f'__import__("os").system("id > {mark}") or dict'
    sources["tools.py"] = sources["tools.py"].replace("-> dict:", f"-> {payload}:", 1)
    assert payload in sources["tools.py"]
    (design / "sources.json").write_text(json.dumps(sources))
    if reseal:  # recompute the digests exactly as the store does
        meta = json.loads((design / META).read_text())
        meta.pop(FILES)
        (design / META).write_text(json.dumps(meta))
        _seal(design)


@pytest.fixture(scope="module")
def env(cli_prefect_server):
    """The environment for CLI runs: this test worker's Prefect server (tests/conftest.py), not one of their own."""
    return {**os.environ, "PREFECT_API_URL": cli_prefect_server}


@pytest.fixture(scope="module")
def finished(env, tmp_path_factory):
    cwd = tmp_path_factory.mktemp("payload")
    first = toolscale(env, cwd, *ARGS)
    assert first.returncode == 0, first.stderr[-2000:]
    return cwd


def test_a_planted_return_annotation_is_recomputed_away(env, finished, tmp_path):
    cwd, out, mark = finished, finished / "output", tmp_path / "pwned"
    plant(out, mark, reseal=False)
    rerun = toolscale(env, cwd, *ARGS)
    assert rerun.returncode == 0, rerun.stderr[-2000:]
    assert "sources.json changed" in rerun.said
    assert "__import__" not in (out / "tau2" / DOMAIN / "tools.py").read_text()
    imported = import_as_readme_says(out, mark)
    assert imported.returncode == 0, imported.stderr[-2000:]
    assert not mark.exists()


def test_a_resealed_payload_is_refused_by_the_loader_in_one_line(env, finished, tmp_path):
    cwd, out, mark = finished, finished / "output", tmp_path / "pwned"
    plant(out, mark, reseal=True)
    (export,) = (out / ".toolscale" / "stages" / DOMAIN).glob("export-*")
    shutil.rmtree(export)  # so that the export is recomputed from the (reused) design
    rerun = toolscale(env, cwd, *ARGS)
    assert rerun.returncode == 1
    # the run's own verdict is one line (Prefect's log of the failed task above it is issue 16's)
    assert re.search(rf"{DOMAIN} failed: DomainError: {DOMAIN}/tools.py:\d+: tool '\w+', return hint: "
                     "unsupported type hint", rerun.said), rerun.stderr[-1500:]
    assert not mark.exists()
    imported = import_as_readme_says(out, mark)  # the package published before is still the clean one
    assert imported.returncode == 0, imported.stderr[-2000:]
    assert "__import__" not in (out / "tau2" / DOMAIN / "tools.py").read_text()
    assert not mark.exists()
