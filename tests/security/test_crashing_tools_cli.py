"""R2 and R3 through the real CLI (red team 2026-12-06): a domain folder whose read tools segfault
the interpreter (a deep tuple hashed), sort ten million characters a hundred thousand times, or
round to -10**8 digits. `generate` died with BrokenProcessPool naming no tool, or ran for minutes.
Each call must now end within seconds as a recorded rejection that names the tool, and the run go on.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import toolscale.domains

PAYLOADS = {  # read tool -> code put at the top of its body
    "find_customer_by_email": "t = ()\n    for i in range(200000):\n        t = (t,)\n    n = len({t})\n",
    "get_customer_profile": 's = "a" * 10**7\n    n = len(sorted([s] * 10**5))\n',
    "list_accounts": "n = round(5, -10**8)\n",
}
EXPECTED = {"find_customer_by_email": "ToolSizeExceeded: tool tried to use a value nested more than 100 levels deep",
            "get_customer_profile": "StepBudgetExceeded",
            "list_accounts": "ToolSizeExceeded: tool tried to round to -100,000,000 digits"}


def hostile_bank(folder: Path) -> Path:
    """The built-in bank as `hbank`, with each payload at the top of its tool."""
    shutil.copytree(Path(toolscale.domains.__file__).parent / "bank", folder)
    yaml = folder / "domain.yaml"
    yaml.write_text(yaml.read_text().replace("name: bank", "name: hbank", 1))
    source = (folder / "tools.py").read_text()
    for name, code in PAYLOADS.items():
        start = source.index(f"def {name}(")
        body = source.index('    """\n', source.index('"""', start) + 3) + len('    """\n')
        source = source[:body] + "    " + code + source[body:]
    (folder / "tools.py").write_text(source)
    return folder


def test_crashing_and_endless_tools_are_rejections_naming_the_tool(tmp_path, cli_prefect_server):
    domain, out = hostile_bank(tmp_path / "hbank"), tmp_path / "out"
    exe = shutil.which("toolscale")
    command = [exe] if exe else [sys.executable, "-m", "toolscale.flows.cli"]
    env = {**os.environ, "PREFECT_API_URL": cli_prefect_server}
    start = time.monotonic()
    proc = subprocess.run([*command, "generate", "--domain-dir", str(domain), "--out", str(out), "--scale", "0.3"],
                          env=env, capture_output=True, text=True, timeout=600)
    elapsed = time.monotonic() - start
    assert "BrokenProcessPool" not in proc.stderr and proc.returncode in (0, 1), proc.stderr[-2000:]
    (rejected,) = (out / ".toolscale" / "stages" / "hbank").glob("tasks-*/rejected.jsonl")
    reasons = [json.loads(line)["reason"] for line in rejected.read_text().splitlines()]
    for tool, expected in EXPECTED.items():
        named = [r for r in reasons if f"({tool}) failed: {expected}" in r]
        assert named, (tool, sorted(set(r[:160] for r in reasons))[:10])
    calls = len(reasons)
    assert elapsed < 10 * calls, (elapsed, calls)  # every call ended in seconds: a hung one took minutes
