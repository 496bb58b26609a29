"""Gold-replay throughput and the cost of fork(), on one core.

    python bench/replay.py [--domain bank] [--rounds 5] [--profile] [--vs OTHER/domains]

Prints medians over rounds: tasks/s and actions/s for "fork + replay every gold action + state
hash", the cost of one fork(), and of one tool call; and the same replay over the exported τ²-bench
package's runtime (DictTools, the dict store vendored into every package), paired round by round
with the SQL one. With --profile, where the time goes. With
--vs, the `domains/` folder of another checkout (say, main before a change) replays the same tasks
in the same process, its rounds alternating with these, and the median paired ratio is printed.
"""

from __future__ import annotations

import argparse
import cProfile
import importlib
import os
import pstats
import statistics
import sys
import tempfile
import time
from pathlib import Path

from toolscale.domains import Environment, replay
from toolscale.domains.dictdb import DictTools
from toolscale.pipeline.synthesizer import OfflineSynthesizer
from toolscale.quality.gating import run_gates


def replay_all(env, tasks, replay=replay) -> None:
    for task in tasks:
        with env.fork() as fork:
            results = replay(fork, task.gold_calls())
            if not all(r.ok for r in results) or fork.state_hash() != task.meta.final_state_hash:
                raise SystemExit(f"{task.id} did not replay cleanly")


def replay_all_dict(tools, tasks) -> None:
    """replay_all over the exported packages' runtime: the same tools over plain dicts."""
    for task in tasks:
        fork = tools.fork()
        if any(fork.call(name, args)["error"] is not None for name, args in task.gold_calls()) \
                or fork.state_hash() != task.meta.final_state_hash:
            raise SystemExit(f"{task.id} did not replay cleanly over dicts")


def other_environment(folder: Path, domain, rows):
    """The same domain and rows in another checkout's domains package (imported under another
    name: it imports nothing else of toolscale), with that package's replay as `.replay`."""
    link = Path(tempfile.mkdtemp(prefix="toolscale-bench-")) / "other_domains"
    link.symlink_to(folder.resolve(), target_is_directory=True)
    sys.path.insert(0, str(link.parent))
    package = importlib.import_module("other_domains")
    loaded = package.load_domain_text(domain.sources["domain.yaml"], domain.sources["tools.py"], domain.policy)
    env = package.Environment.from_rows(loaded, rows)
    env.replay = package.replay
    return env


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--domain", default="bank")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--vs", type=Path, help="another checkout's domains/ folder to pair rounds with")
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

    other = other_environment(args.vs, domain, rows) if args.vs else None
    models = {name: spec.args_model for name, spec in domain.toolkit.specs.items()}
    dict_tools = DictTools(domain.spec, domain.toolkit.source, rows, models)
    rounds, other_rounds, dict_rounds = [], [], []
    for _ in range(args.rounds):
        start = time.perf_counter()
        replay_all_dict(dict_tools, tasks)
        dict_rounds.append(time.perf_counter() - start)
        if other is not None:
            start = time.perf_counter()
            replay_all(other, tasks, other.replay)
            other_rounds.append(time.perf_counter() - start)
        start = time.perf_counter()
        replay_all(env, tasks)
        rounds.append(time.perf_counter() - start)
    if other_rounds:
        ratios = [b / a for a, b in zip(rounds, other_rounds)]
        print(f"vs {args.vs}: {len(tasks) / statistics.median(other_rounds):8.0f} tasks/s there; this / that, "
              f"median of {len(ratios)} paired rounds: {statistics.median(ratios):.3f} "
              f"(min {min(ratios):.3f}, max {max(ratios):.3f})")
    median = statistics.median(rounds)
    print(f"replay:  {len(tasks) / median:8.0f} tasks/s  {actions / median:8.0f} actions/s  "
          f"(median of {args.rounds} rounds, {median * 1000:.0f} ms per round)")
    ratios = [d / s for s, d in zip(rounds, dict_rounds)]
    print(f"package: {len(tasks) / statistics.median(dict_rounds):8.0f} tasks/s over dicts; dicts / SQL, median of "
          f"{len(ratios)} paired rounds: {statistics.median(ratios):.2f} (min {min(ratios):.2f}, max {max(ratios):.2f})")

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
