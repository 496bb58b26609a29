"""What the quality gate adds to a generation: gate time against the time of everything else.

    python bench/gate_cost.py [--rounds 3] [--domains bank,weather]

Runs populate, synthesis, hardening and export-equivalent work per domain, then the gates, and
prints medians over rounds per domain and in total: the gate's share must stay under a third of
the rest (Prefect's fixed start-up, ~15 s, is excluded and would only lower the share).
"""

from __future__ import annotations

import argparse
import statistics
import time

from toolscale.domains import Environment, available_domains
from toolscale.pipeline.export import dumps_line
from toolscale.pipeline.synthesizer import OfflineSynthesizer
from toolscale.quality.gates import run_gates


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--domains", default=",".join(available_domains()))
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


if __name__ == "__main__":
    main()
