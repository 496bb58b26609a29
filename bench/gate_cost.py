"""What the quality gate adds to a generation: gate time against the time of everything else.

    python bench/gate_cost.py [--rounds 3] [--domains bank,weather] [--cli]

Runs populate, synthesis, hardening and export-equivalent work per domain, then the gates, and
prints medians over rounds per domain and in total: the gate's compute against the rest of the
compute (Prefect's fixed start-up, ~15 s, and publishing are excluded: they would lower the share).
With --cli it also runs the real `toolscale generate` on one worker thread (stages one after
another, so each stage's recorded seconds are its own) and reports the gate stage against the
command's whole wall time: what the gate adds to the run a user waits for.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from toolscale.domains import Environment, available_domains
from toolscale.pipeline.export import dumps_line
from toolscale.pipeline.synthesizer import OfflineSynthesizer
from toolscale.quality.gating import run_gates


def one_domain(name: str) -> tuple[float, float, int]:
    synth = OfflineSynthesizer()
    start = time.perf_counter()
    domain = synth.design(name)
    rows = synth.populate(domain, seed=0)
    env = Environment.from_rows(domain, rows)
    candidates, _ = synth.tasks(domain, env, rows, seed=0)
    candidates, _ = synth.harden(domain, env, candidates, seed=0)
    before_gate = time.perf_counter()
    accepted, rejected = run_gates(candidates, env)
    after_gate = time.perf_counter()
    for task in accepted:
        dumps_line(task)
    for rejection in rejected:
        dumps_line(rejection)
    env.close()
    end = time.perf_counter()
    return after_gate - before_gate, (before_gate - start) + (end - after_gate), len(accepted)


def cli_run(domains: str) -> None:
    work = Path(tempfile.mkdtemp(prefix="toolscale-gate-cost-"))
    exe = shutil.which("toolscale")
    cmd = [exe] if exe else [sys.executable, "-m", "toolscale.flows.cli"]
    start = time.perf_counter()
    proc = subprocess.run([*cmd, "generate", "--domains", domains, "--runner", "threads:1", "--out", str(work / "out")],
                          cwd=work, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(proc.stderr[-3000:])
    report = json.loads((work / "out" / "report.json").read_text())
    stages: dict[str, float] = {}
    for entry in report["domains"].values():
        for stage, seconds in entry["timings_s"].items():
            stages[stage] = stages.get(stage, 0.0) + seconds
    gate = stages["gate"]
    print(f"toolscale generate (one worker thread): {wall:.1f} s wall; stages: "
          + ", ".join(f"{name} {seconds:.1f} s" for name, seconds in stages.items())
          + f"; publish {report['timings_s'].get('publish', 0.0):.1f} s")
    print(f"the gate stage adds {gate / (wall - gate):.0%} to the rest of the run's wall time "
          f"({gate:.1f} s of {wall:.1f} s; target <= 33%)")
    shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--domains", default=",".join(available_domains()))
    parser.add_argument("--cli", action="store_true", help="also measure a real `toolscale generate`")
    args = parser.parse_args()
    gate_total, rest_total = [], []
    for _ in range(args.rounds):
        gates, rests = 0.0, 0.0
        for name in args.domains.split(","):
            gate, rest, accepted = one_domain(name)
            gates, rests = gates + gate, rests + rest
        gate_total.append(gates)
        rest_total.append(rests)
    gate, rest = statistics.median(gate_total), statistics.median(rest_total)
    print(f"domains: {args.domains}")
    print(f"gate: {gate:.2f} s   everything else: {rest:.2f} s   gate adds {gate / rest:.0%} (target <= 33%)"
          f"   (medians of {args.rounds} rounds)")
    if args.cli:
        cli_run(args.domains)


if __name__ == "__main__":
    main()
