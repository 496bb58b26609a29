"""Gold-replay throughput and the cost of fork(), on one core.

    python bench/replay.py [--domain bank] [--rounds 5] [--profile]

Prints medians over rounds: tasks/s and actions/s for "fork + replay every gold action + state
hash", the cost of one fork(), and of one tool call. With --profile, where the time goes.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import statistics
import time

from toolscale.domains import Environment, replay
from toolscale.pipeline.synthesizer import OfflineSynthesizer
from toolscale.quality.gates import run_gates


def replay_all(env, tasks) -> None:
    for task in tasks:
        with env.fork() as fork:
            results = replay(fork, task.gold_calls())
            if not all(r.ok for r in results) or fork.state_hash() != task.meta.final_state_hash:
                raise SystemExit(f"{task.id} did not replay cleanly")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--domain", default="bank")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})  # one core, as the target says

    synth = OfflineSynthesizer()
    domain = synth.design(args.domain)
    rows = synth.populate(domain, seed=0)
    env = Environment.from_rows(domain, rows)
    tasks, _ = run_gates(synth.tasks(domain, env, rows, seed=0)[0], env)
    actions = sum(len(t.evaluation_criteria.actions) for t in tasks)
    print(f"{args.domain}: {sum(map(len, rows.values())):,} rows, {len(tasks)} tasks, {actions} gold actions")

    rounds = []
    for _ in range(args.rounds):
        start = time.perf_counter()
        replay_all(env, tasks)
        rounds.append(time.perf_counter() - start)
    median = statistics.median(rounds)
    print(f"replay:  {len(tasks) / median:8.0f} tasks/s  {actions / median:8.0f} actions/s  "
          f"(median of {args.rounds} rounds, {median * 1000:.0f} ms per round)")

    fork_times = []
    for _ in range(args.rounds):
        start = time.perf_counter()
        for _ in range(500):
            env.fork().close()
        fork_times.append((time.perf_counter() - start) / 500)
    print(f"fork():  {statistics.median(fork_times) * 1e6:8.0f} µs  (median of {args.rounds} × 500)")

    task = tasks[0]
    with env.fork() as fork:
        name, arguments = task.gold_calls()[0]
        call_times = []
        for _ in range(args.rounds):
            start = time.perf_counter()
            for _ in range(500):
                fork.call(name, arguments)
            call_times.append((time.perf_counter() - start) / 500)
    print(f"call():  {statistics.median(call_times) * 1e6:8.0f} µs  ({name}, median of {args.rounds} × 500)")

    if args.profile:
        profiler = cProfile.Profile()
        profiler.runcall(replay_all, env, tasks)
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(25)


if __name__ == "__main__":
    main()
