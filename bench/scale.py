"""Scale benchmark: `toolscale generate` at 1x, 4x and 16x the default size, and Prefect's share.

For each scale it runs the real CLI in a fresh directory and prints wall time, accepted tasks,
candidates, tasks per second, and peak RSS (of the CLI process, and of its whole process tree,
which includes Prefect's ephemeral server). Then, for each scale, it runs the same stages without
Prefect (the run's own worker processes, one per core, and nothing else): the difference is
Prefect's share (with the interpreter, imports and report). For the default size it splits the
CLI's wall time into stage work and everything else (interpreter and imports, Prefect's server
start-up, flow and task-run bookkeeping, shutdown), times a rerun of the finished run, and measures
the CPU Prefect costs before it records anything (its server's start, the client's import): on
cores the stages keep busy, the least share of the wall Prefect can take with a server per run.

    python bench/scale.py                        # 1, 4, 16 (16x takes a while on 2 cores)
    python bench/scale.py --scales 1,4 --domains bank,weather
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

try:
    import psutil  # installed with the test and dask extras (distributed needs it)
except ImportError:
    raise SystemExit("bench/scale.py needs psutil: pip install -e '.[test]'") from None

MB = 1024 * 1024


def toolscale(*args: str) -> list[str]:
    exe = shutil.which("toolscale")
    return [exe, *args] if exe else [sys.executable, "-m", "toolscale.flows.cli", *args]


def run_measured(cmd: list[str], cwd: Path, out: Path) -> dict[str, float]:
    """Run `cmd`; wall seconds, and peak RSS (MB) of the process and of its process tree, split at
    the moment OUT/report.json first appears: generation before it, the publish step after it
    (which may rewrite report.json, so its mtime does not tell)."""
    start = time.perf_counter()
    generated = [None]
    proc = psutil.Popen(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    peak = {"gen": 0, "gen_tree": 0, "pub": 0, "pub_tree": 0}
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            try:
                main = proc.memory_info().rss
                tree = main + sum(c.memory_info().rss for c in proc.children(recursive=True))
            except psutil.Error:  # a child ended between listing and reading it
                time.sleep(0.1)
                continue
            phase = "pub" if (out / "report.json").exists() else "gen"
            if phase == "pub" and generated[0] is None:
                generated[0] = time.perf_counter() - start
            peak[phase], peak[f"{phase}_tree"] = max(peak[phase], main), max(peak[f"{phase}_tree"], tree)
            time.sleep(0.1)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    _, stderr = proc.communicate()
    done.set()
    sampler.join()
    if not (out / "report.json").exists() or not (out / "hf").is_dir():
        raise SystemExit(f"{' '.join(cmd)} failed:\n{stderr[-3000:]}")
    wall = time.perf_counter() - start
    said = re.search(r"wrote \S+ in ([\d.]+)s", " ".join(stderr.split()))  # the CLI's own time for the generation
    return {"wall_s": wall, "gen_s": generated[0] or wall, "cli_gen_s": float(said[1]) if said else wall,
            **{k: v / MB for k, v in peak.items()}}


def plain_stage_seconds(domains: list[str], out: Path, scale: float = 1.0) -> float:
    """The stages of every domain at `scale` without Prefect: the run's own lanes (flows/lanes.py,
    one worker process per core) and nothing else, until the last stage is stored."""
    from toolscale.flows.plan import RunConfig, domain_work, stages_to_run
    from toolscale.flows.lanes import StageLanes
    from toolscale.flows.runners import thread_count

    config = RunConfig(domains=domains, out=out, scale=scale)
    start = time.perf_counter()
    works = {name: (work, stages_to_run(work, refresh=True)) for name in domains
             for work in [domain_work(name, config)]}
    lanes = StageLanes(works, thread_count(config.runner, len(domains)))
    for name, (_, todo) in works.items():
        for stage in todo:
            lanes.seconds(name, stage)
    return time.perf_counter() - start


def prefect_fixed_cpu() -> tuple[float, float]:
    """CPU seconds Prefect costs a run before it records anything, each measured alone on an idle
    machine (so a lower bound under a run's load): its local server's start until /api/health
    answers (on the warm database), and the client's import in a fresh interpreter, less the
    interpreter's own start. Medians of 3."""
    from toolscale.flows.local_server import LocalServer
    from toolscale.flows.settings import configure_prefect

    configure_prefect()
    starts = []
    for _ in range(3):
        server = LocalServer()
        server.wait_healthy(120)
        times = psutil.Process(server.process.pid).cpu_times()
        starts.append(times.user + times.system)
        server.stop()

    def child_cpu(code: str) -> float:
        before = os.times()
        subprocess.run([sys.executable, "-c", code], check=True)
        after = os.times()
        return after.children_user + after.children_system - before.children_user - before.children_system

    imports = [child_cpu("import prefect.flows, prefect.flow_engine, prefect.task_engine") - child_cpu("pass")
               for _ in range(3)]
    return statistics.median(starts), statistics.median(imports)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scales", default="1,4,16")
    parser.add_argument("--domains", default=None, help="comma-separated (default: all built-in)")
    args = parser.parse_args()
    from toolscale.domains import available_domains

    domains = args.domains.split(",") if args.domains else available_domains()
    work = Path(tempfile.mkdtemp(prefix="toolscale-scale-"))
    os.environ.setdefault("PREFECT_HOME", str(work / "prefect"))  # one warm Prefect database for all runs
    base = ["generate", "--domains", ",".join(domains)]
    print(f"{len(domains)} domains, {os.cpu_count()} cores; warming Prefect's database ...", flush=True)
    run_measured(toolscale(*base, "--scale", "0.3", "--out", str(work / "warm")), work, work / "warm")
    print("generation = until report.json is written; publish = OUT/hf and OUT/tau2 after it; RSS = peak MB "
          "of the CLI process (tree: with Prefect's server)")
    print(f"{'scale':>6} {'generate s':>10} {'accepted':>9} {'candidates':>11} {'cand/s':>7} {'RSS':>6} {'tree RSS':>8}"
          f" {'publish s':>9} {'RSS':>6} {'tree RSS':>8}  failed domains")
    results = {}
    for scale in [float(s) for s in args.scales.split(",")]:
        out = work / f"x{scale:g}"
        m = run_measured(toolscale(*base, "--scale", f"{scale:g}", "--out", str(out)), work, out)
        report = json.loads((out / "report.json").read_text())
        results[scale] = (m, report)
        totals = report["totals"]
        print(f"{scale:>5g}x {m['gen_s']:10.1f} {totals['accepted']:9,} {totals['candidates']:11,} "
              f"{totals['candidates'] / m['gen_s']:7.1f} {m['gen']:6.0f} {m['gen_tree']:8.0f} "
              f"{m['wall_s'] - m['gen_s']:9.1f} {m['pub']:6.0f} {m['pub_tree']:8.0f}  {', '.join(report['failed']) or '-'}",
              flush=True)
    print("\nPrefect's share: generation against the same stages in the same worker processes without Prefect "
          "(the difference: interpreter, imports, report, Prefect's start and bookkeeping)")
    plains = {}
    for scale, (m, _) in results.items():
        plains[scale] = plain_stage_seconds(domains, work / f"plain{scale:g}", scale)
        shutil.rmtree(work / f"plain{scale:g}", ignore_errors=True)
        print(f"{scale:>5g}x generation {m['gen_s']:.1f} s, no Prefect {plains[scale]:.1f} s: "
              f"{m['gen_s'] - plains[scale]:.1f} s = {(m['gen_s'] - plains[scale]) / m['gen_s']:.0%}", flush=True)
    if 1.0 not in results:
        return
    m, report = results[1.0]
    rerun = run_measured(toolscale(*base, "--out", str(work / "x1")), work, work / "x1")
    plain = plains[1.0]
    flow = report["timings_s"]["flow"]
    gen = m["gen_s"]
    print(f"\ndefault size: generation {gen:.1f} s (until report.json) = flow {flow:.1f} s + outside the flow "
          f"{gen - flow:.1f} s (interpreter, imports, Prefect's server start-up)")
    print(f"  Prefect's share above, {gen - plain:.1f} s: {gen - flow:.1f} s outside the flow, "
          f"{flow - plain:+.1f} s inside it")
    print(f"  rerun of the finished run (no stage recomputed; Prefect not started for it): generation "
          f"{rerun['cli_gen_s']:.1f} s, whole command (with the publish step) {rerun['wall_s']:.1f} s")
    server, client = prefect_fixed_cpu()
    cores = os.cpu_count() or 1
    floor = (server + client) / cores  # the stages keep every core busy: fixed CPU is wall at 1/cores
    print(f"  Prefect's fixed CPU, alone on an idle machine: its server's start {server:.1f} s + the client's "
          f"import {client:.1f} s; with the stages keeping {cores} cores busy, at least {floor:.1f} s of the "
          f"wall = {floor / (plain + floor):.0%} of a run before it records a single flow or task run")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
