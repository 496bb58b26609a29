"""Where a toolscale run's CPU goes: the CPU seconds of each kind of process in its tree (the CLI,
Prefect's local server, the stage workers, the determinism gate's second interpreters), its wall
time, and how many of the machine's cores it kept busy on average. Medians over --runs runs, each
in a fresh folder (the Prefect home is shared and warm after the first run, as a user's is).

    python bench/cpu_split.py                          # toolscale generate, 3 runs
    python bench/cpu_split.py --runs 5 -- generate --domains bank,weather
    python bench/cpu_split.py --runs 1 --timeline 3    # and how busy each kind kept the cores, every 3 s

A timeline shows where cores sat idle: a run whose stages had finished while its flow still waited on
Prefect showed seconds of ~0 busy cores before report.json. Processes are sampled every 0.2 s, so one that lives less than that (none of toolscale's do) is missed.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

try:
    import psutil  # installed with the test and dask extras (distributed needs it)
except ImportError:
    raise SystemExit("bench/cpu_split.py needs psutil: pip install -e '.[test]'") from None


def kind(cmdline: list[str]) -> str:
    text = " ".join(cmdline)
    if "uvicorn" in text:
        return "prefect server"
    if "toolscale.quality.elsewhere" in text:
        return "second interpreters"
    if "multiprocessing" in text:
        return "workers"
    return "cli" if "toolscale" in text else "other"


def measure(args: list[str], cwd: Path,
            timeline: list[tuple[float, dict[str, float]]] | None = None) -> tuple[float, dict[str, float]]:
    """Wall seconds and CPU seconds by kind; `timeline` gets (seconds since start, CPU by kind so far)
    at every sample."""
    exe = shutil.which("toolscale")
    cmd = [exe, *args] if exe else [sys.executable, "-m", "toolscale.flows.cli", *args]
    start = time.perf_counter()
    proc = psutil.Popen(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    seen: dict[int, tuple[str, float]] = {}
    while proc.poll() is None:
        try:
            procs = [proc, *proc.children(recursive=True)]
        except psutil.Error:
            continue
        for p in procs:
            try:
                with p.oneshot():
                    name = seen[p.pid][0] if p.pid in seen else kind(p.cmdline())
                    times = p.cpu_times()
                    seen[p.pid] = (name, times.user + times.system)
            except psutil.Error:  # ended between listing and reading: its last sample stands
                pass
        if timeline is not None:
            timeline.append((time.perf_counter() - start, _by_kind(seen)))
        time.sleep(0.2)
    wall = time.perf_counter() - start
    if proc.returncode != 0:  # said, and measured all the same: a failed domain is part of the run
        print(f"{' '.join(cmd)} exited {proc.returncode}: {proc.stderr.read().strip().splitlines()[-1:]}")
    return wall, _by_kind(seen)


def _by_kind(seen: dict[int, tuple[str, float]]) -> dict[str, float]:
    split: dict[str, float] = defaultdict(float)
    for name, cpu in seen.values():
        split[name] += cpu
    return split


def print_timeline(timeline: list[tuple[float, dict[str, float]]], step: float) -> None:
    """Cores kept busy in each `step` seconds, in all and by kind of process."""
    print(f"\ncores busy, every {step:g} s (last run):")
    last_t, last = 0.0, {}
    for t, cpu in timeline:
        if t - last_t >= step or (t, cpu) == timeline[-1]:
            busy = {k: (v - last.get(k, 0.0)) / (t - last_t) for k, v in cpu.items()}
            kinds = "  ".join(f"{k} {b:.2f}" for k, b in busy.items() if b >= 0.05)
            print(f"  {last_t:6.1f}-{t:6.1f} s  {sum(busy.values()):4.2f}  {kinds}")
            last_t, last = t, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--timeline", type=float, default=0, metavar="SECONDS",
                        help="also print the last run's busy cores every SECONDS")
    parser.add_argument("args", nargs="*", default=["generate"], help="the toolscale command (after --)")
    options = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="toolscale-cpu-"))
    os.environ.setdefault("PREFECT_HOME", str(work / "prefect"))
    walls, splits = [], defaultdict(list)
    for i in range(options.runs):
        (work / f"run{i}").mkdir()
        timeline: list[tuple[float, dict[str, float]]] = []
        wall, split = measure(options.args, work / f"run{i}", timeline)
        walls.append(wall)
        for name in ("cli", "prefect server", "workers", "second interpreters", "other"):
            splits[name].append(split.get(name, 0.0))
        print(f"run {i + 1}: {wall:.1f} s wall, {sum(split.values()):.1f} s CPU", flush=True)
    cores = os.cpu_count() or 1
    total = [sum(s[i] for s in splits.values()) for i in range(options.runs)]
    print(f"\ntoolscale {' '.join(options.args)}: medians of {options.runs} runs on {cores} cores")
    print(f"  wall {statistics.median(walls):.1f} s (min {min(walls):.1f}, max {max(walls):.1f})")
    print(f"  CPU  {statistics.median(total):.1f} s: {statistics.median(t / w for t, w in zip(total, walls)):.2f} "
          f"cores busy on average")
    for name, values in splits.items():
        print(f"    {name:20} {statistics.median(values):6.1f} s")
    if options.timeline > 0:
        print_timeline(timeline, options.timeline)
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
