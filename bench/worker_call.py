"""What a killable worker process per tool call would cost (issue 38, item 2, option b), on one core.

    python bench/worker_call.py [--domain bank] [--rounds 5]

Option (b) runs tool calls in a worker process with rlimits and a SIGKILL at the deadline. Its
cheapest form keeps one worker per environment and sends each call over a pipe; each call then pays
at least one round trip. This prints, as medians over rounds: one tool call in-process
(Environment.call, what generate and replay do today), the same call made in a persistent worker over
a multiprocessing Pipe, a bare pipe round trip (an echo worker), and a fork + exit + wait per call
(a fresh process per call, the form that needs no state shipped back). Then it puts the round trip
and the fork against the per-call time of bench/replay.py's replay (fork, every gold action, state
hash) to give the replay rate each form would leave. A worker killed at a deadline must also be
replaced and handed the state again (not measured here: it only adds).
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import statistics
import time

from toolscale.domains import Environment
from toolscale.pipeline.synthesizer import OfflineSynthesizer
from toolscale.quality.gating import run_gates


def median_seconds(function, times: int, rounds: int) -> float:
    """The median over `rounds` of the mean time of `function()`, called `times` times a round."""
    results = []
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(times):
            function()
        results.append((time.perf_counter() - start) / times)
    return statistics.median(results)


def _serve(connection, domain, rows) -> None:
    """A worker: one environment, one call per message, its result sent back."""
    env = Environment.from_rows(domain, rows)
    while (message := connection.recv()) is not None:
        connection.send(env.call(*message).model_dump())


def _echo(connection) -> None:
    while (message := connection.recv()) is not None:
        connection.send(message)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--domain", default="bank")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})

    synth = OfflineSynthesizer()
    domain = synth.design(args.domain)
    rows = synth.populate(domain, seed=0)
    env = Environment.from_rows(domain, rows)
    tasks, _ = run_gates(synth.tasks(domain, env, rows, seed=0)[0], env)
    name, arguments = tasks[0].gold_calls()[0]
    context = multiprocessing.get_context("fork")

    with env.fork() as fork:
        in_process = median_seconds(lambda: fork.call(name, arguments), 2000, args.rounds)
    here, there = context.Pipe()
    worker = context.Process(target=_serve, args=(there, domain, rows))
    worker.start()

    def remote() -> None:
        here.send((name, arguments))
        here.recv()
    remote()
    in_worker = median_seconds(remote, 2000, args.rounds)
    here.send(None)
    worker.join()

    here, there = context.Pipe()
    echo = context.Process(target=_echo, args=(there,))
    echo.start()

    def round_trip() -> None:
        here.send((name, arguments))
        here.recv()
    round_trip()
    pipe = median_seconds(round_trip, 2000, args.rounds)
    here.send(None)
    echo.join()

    def fork_exit_wait() -> None:
        pid = os.fork()
        if pid == 0:
            os._exit(0)
        os.waitpid(pid, 0)
    process = median_seconds(fork_exit_wait, 100, args.rounds)

    calls = sum(len(t.gold_calls()) for t in tasks)

    def replay_round() -> None:
        for task in tasks:
            with env.fork() as forked:
                for call_name, call_arguments in task.gold_calls():
                    forked.call(call_name, call_arguments)
    per_call = median_seconds(replay_round, 1, args.rounds) / calls
    print(f"{args.domain}: {len(tasks)} tasks, {calls} gold calls; one call of {name}:")
    print(f"  in-process           {in_process * 1e6:8.1f} µs")
    print(f"  persistent worker    {in_worker * 1e6:8.1f} µs  (pipe round trip alone {pipe * 1e6:.1f} µs)")
    print(f"  process per call     {process * 1e6:8.1f} µs  (fork + exit + wait alone)")
    print(f"replay today: {per_call * 1e6:.1f} µs a call (fork, call, state hash); the replay rate would be")
    print(f"  x{per_call / (per_call + in_worker - in_process):.2f} with a persistent worker, "
          f"x{per_call / (per_call + process):.3f} with a process per call")


if __name__ == "__main__":
    main()
