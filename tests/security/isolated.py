"""Attacks run in a child process: an attack that crashes the interpreter (a C stack overflow) or
runs one C call for minutes must fail its own test, not kill or stall the pytest worker.

One child per test worker serves every attack of a module, each with test_tool_attacks.attack under
the short wall-clock limit (1 s); a child that dies or passes DEADLINE on an attack is recorded as
that attack's outcome ("crashed" / "hung") and replaced for the next one.
"""

from __future__ import annotations

import json
import os
import selectors
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).parent
# seconds an attack may take in the child before it counts as hung (the limit is 1 s); lower it to try
# the attacks on a checkout without the checks, where most run for minutes
DEADLINE = float(os.environ.get("TOOLSCALE_ATTACK_DEADLINE", "20"))

_CHILD = r'''
import json, sys, time
sys.path.insert(0, sys.argv[1])
from test_tool_attacks import SHORT_TIME_LIMIT, attack, probe_source
from toolscale.domains import limits, load_domain
from toolscale.pipeline.populate import populate

limits.Watchdog.enter.__defaults__ = (SHORT_TIME_LIMIT,)
library = load_domain(sys.argv[2])
rows = populate(library.spec, seed=0)
print(json.dumps({"ready": True}), flush=True)
for line in sys.stdin:
    request = json.loads(line)
    start = time.monotonic()
    try:
        outcome = attack(request["runtime"], library, rows, probe_source(request["body"], kind=request["kind"],
                                                                         before=request["before"]),
                         request.get("arguments"))
        record = {"result": outcome.result, "state_changed": outcome.state_changed,
                  "digest_consistent": outcome.digest_consistent}
    except Exception as exc:  # refused at load: the domain never runs
        record = {"result": {"error_type": type(exc).__name__, "error": str(exc)[:2000], "output": None},
                  "state_changed": False, "digest_consistent": True}
    record["seconds"] = time.monotonic() - start
    output = record["result"].get("output")
    if len(json.dumps(output)) > 2000:
        record["result"]["output"] = "(long output)"
    print(json.dumps(record), flush=True)
'''


class AttackChild:
    """A child interpreter that runs attacks one at a time (`run`), replaced when one kills it."""

    def __init__(self) -> None:
        self._proc: subprocess.Popen | None = None

    def _start(self) -> subprocess.Popen:
        env = {**os.environ, "PYTHONFAULTHANDLER": ""}
        proc = subprocess.Popen([sys.executable, "-c", _CHILD, str(HERE), str(HERE.parent / "fixtures" / "library")],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                                env=env)
        line = proc.stdout.readline()
        if not line:
            raise RuntimeError("the attack child did not start")
        return proc

    def run(self, runtime: str, body: str, before: str = "", kind: str = "read",
            arguments: dict | None = None) -> dict:
        """{"result", "state_changed", "digest_consistent", "seconds"}, or {"crashed": exit status}
        or {"hung": seconds} when the attack killed or stalled the child."""
        if self._proc is None or self._proc.poll() is not None:
            self._proc = self._start()
        proc = self._proc
        request = {"runtime": runtime, "body": body, "before": before, "kind": kind, "arguments": arguments}
        start = time.monotonic()
        try:
            proc.stdin.write(json.dumps(request) + "\n")
            proc.stdin.flush()
        except BrokenPipeError:
            pass
        with selectors.DefaultSelector() as selector:
            selector.register(proc.stdout, selectors.EVENT_READ)
            if not selector.select(DEADLINE):
                self.close()
                return {"hung": time.monotonic() - start}
        line = proc.stdout.readline()
        if not line:
            status = proc.wait()
            self._proc = None
            return {"crashed": status}
        return json.loads(line)

    def close(self) -> None:
        if self._proc is not None:
            self._proc.kill()
            self._proc.wait()
            self._proc = None


def assert_stopped_in_child(record: dict, expected: set[str], seconds: float) -> None:
    """The attack ended within `seconds` in one of the `expected` errors, with the state as it was; its
    child neither crashed nor hung."""
    assert "crashed" not in record, f"the attack killed the interpreter (exit status {record.get('crashed')})"
    assert "hung" not in record, f"the attack ran past {record['hung']:.0f} s"
    assert record["result"]["error_type"] in expected, record["result"]
    assert not record["state_changed"] and record["digest_consistent"]
    assert record["seconds"] < seconds, record
