"""A finished run folder for the publishing tests, built once per test session and then published.

It is written the way `toolscale generate` writes one (the offline synthesizer's stages, the gates,
the exporters, report.json), without starting Prefect, for the given domains at a reduced scale
(TOOLSCALE_TEST_SCALE, default 0.3; 1.0 gives the full-size run). `shared_folder` builds such an
output once for all test workers of a session; tests read it, or copy it to change it.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path

from filelock import FileLock

from toolscale.domains import Environment, available_domains
from toolscale.pipeline.publication import build_publication
from toolscale.pipeline.export import atomic_write, write_domain_files, write_jsonl
from toolscale.pipeline.rows import read_run
from toolscale.pipeline.synthesizer import OfflineSynthesizer
from toolscale.quality.gating import run_gates
from toolscale.quality.report import domain_funnel, totals

SCALE = float(os.environ.get("TOOLSCALE_TEST_SCALE", "0.3"))
SEED = 5


def build_run(out: Path, domains: list[str], seed: int = SEED, scale: float = SCALE) -> Path:
    synth = OfflineSynthesizer(scale=scale)
    funnels = {}
    for name in domains:
        domain = synth.design(name)
        rows = synth.populate(domain, seed)
        with Environment.from_rows(domain, rows) as env:
            candidates, synthesis_rejections = synth.tasks(domain, env, rows, seed)
            accepted, gate_rejections = run_gates(candidates, env)
            write_domain_files(out / name, domain, env)
        rejected = synthesis_rejections + gate_rejections
        write_jsonl(out / name / "rejected.jsonl", rejected)
        write_jsonl(out / name / "tasks.jsonl", accepted)
        funnels[name] = {**domain_funnel(accepted, rejected), "tools": len(domain.toolkit.specs),
                         "rows": sum(len(r) for r in rows.values())}
    report = {"backend": "offline", "seed": seed, "scale": scale, "totals": totals(funnels), "domains": funnels,
              "failed": {}}
    atomic_write(out / "report.json", json.dumps(report, indent=2) + "\n")
    return out


def publish(out: Path) -> None:
    """The publish flow's stages, called directly: OUT/hf (data and card) and OUT/tau2."""
    build_publication(read_run(out))


def shared_folder(tmp_path_factory, name: str, build: Callable[[Path], None]) -> Path:
    """The folder `build(folder)` fills, built once per test session whichever worker asks first: in
    the session's temporary root, which pytest-xdist's workers share, under a lock the others wait on.
    A folder a failed build left behind is built again."""
    base = tmp_path_factory.getbasetemp()
    root = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    folder, done = root / f"shared-{name}", root / f"shared-{name}.done"
    with FileLock(str(root / f"shared-{name}.lock")):
        if not done.exists():
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir()
            build(folder)
            done.touch()
    return folder


def published_run(tmp_path_factory, domains: tuple[str, ...] | None = None) -> Path:
    """A published run of `domains` (all built-in ones by default) at SCALE, built on first use."""
    domains = tuple(domains or available_domains())
    return shared_folder(tmp_path_factory, f"published-{'+'.join(domains)}-{SCALE:g}",
                         lambda folder: publish(build_run(folder / "out", list(domains)))) / "out"
