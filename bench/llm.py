"""The LLM client's throughput against a server with a fixed latency: achieved rate vs C/L.

    python bench/llm.py [--limits 8,32,64] [--latencies 0.1,0.5] [--rounds 10]

For each latency L a test server (tests/llm_server.py) runs in its own process and answers every
request after sleeping L seconds; for each in-flight limit C the client (pipeline/llm/client.py,
cache off) sends C x rounds distinct requests at once. With C requests always in flight the ideal
rate is C/L requests per second; the script prints the achieved rate and its fraction of C/L
(the aim is at least 0.9), and the client's own CPU time per request (the server is another
process), which caps the rate one client process can reach: about 1 / (CPU per request). With a
fixed L the requests move in lock-step waves, and each wave also pays C x (client + server CPU
per request) on the event loops, so the fraction is about L / (L + C x that): close to 1 for
the latencies of real models (seconds), lower for short L and large C on a busy machine.
"""

from __future__ import annotations

import argparse
import asyncio
import resource
import subprocess
import sys
import time
from pathlib import Path

from toolscale.pipeline.llm import LLMClient, LLMConfig

SERVER = Path(__file__).resolve().parent.parent / "tests" / "llm_server.py"


def start_server(latency: float, port: int) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen([sys.executable, str(SERVER), "--port", str(port), "--latency", str(latency)],
                            stdout=subprocess.PIPE, text=True)
    url = proc.stdout.readline().strip()
    if not url.startswith("http"):
        proc.kill()
        raise SystemExit(f"the test server did not start (latency {latency})")
    return proc, url


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def measure(url: str, limit: int, requests: int) -> tuple[float, float]:
    """(requests per second, client CPU ms per request) for `requests` distinct requests with at
    most `limit` in flight."""
    client = LLMClient(LLMConfig(base_url=url, model="bench", max_in_flight=limit, cache_dir=None, max_retries=0,
                                 timeout_s=60))

    async def run() -> tuple[float, float]:
        await client.complete([{"role": "user", "content": "warm up"}], stage="bench")
        start, cpu = time.perf_counter(), cpu_seconds()
        await asyncio.gather(*(client.complete([{"role": "user", "content": f"request {i}"}], stage="bench")
                               for i in range(requests)))
        return requests / (time.perf_counter() - start), 1000 * (cpu_seconds() - cpu) / requests

    try:
        return client.run(run())
    finally:
        client.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limits", default="8,32,64", help="in-flight limits C")
    parser.add_argument("--latencies", default="0.2,1.0", help="server latencies L, seconds")
    parser.add_argument("--rounds", type=int, default=5, help="requests per run = C x rounds")
    parser.add_argument("--port", type=int, default=8931)
    args = parser.parse_args()
    limits = [int(c) for c in args.limits.split(",")]
    print(f"{'L (s)':>6} {'C':>4} {'requests':>8} {'ideal C/L':>10} {'achieved':>9} {'fraction':>8} "
          f"{'client CPU ms/req':>18}")
    for k, latency in enumerate(float(x) for x in args.latencies.split(",")):
        proc, url = start_server(latency, args.port + k)
        try:
            for limit in limits:
                n = limit * args.rounds
                rate, cpu = measure(url, limit, n)
                ideal = limit / latency
                print(f"{latency:>6.2f} {limit:>4} {n:>8} {ideal:>10.1f} {rate:>9.1f} {rate / ideal:>8.3f} "
                      f"{cpu:>18.2f}", flush=True)
        finally:
            proc.terminate()
            proc.wait()
    proc, url = start_server(0.0, args.port + 99)
    try:
        rate, cpu = measure(url, 32, 1000)
        print(f"L = 0, C = 32: {rate:.0f} requests/s, client CPU {cpu:.2f} ms per request "
              f"(one client process tops out near {1000 / cpu:.0f} requests/s)")
    finally:
        proc.terminate()
        proc.wait()


if __name__ == "__main__":
    main()
