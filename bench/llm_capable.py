"""The LLM path with a capable model: what each run asked, repaired and kept.

    python bench/llm_capable.py OUT[:QUEUE] [OUT[:QUEUE] ...]

OUT is a run's output folder (`toolscale new-domain ... --out OUT` or `generate --backend llm`), QUEUE
the ../shared/tools/llm-bridge queue its requests went through (optional: it holds the repair
messages, which report.json only counts). For each domain of each run it prints requests per stage,
repair rounds and what they complained about, task candidates and kept, the domain's tools used by
kept tasks, and tokens; bench/llm_capable.md records the runs and how they were made.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

REPAIR_HEADING = "Your answer was not accepted."


def _stage_of(body: dict) -> str:
    """The stage a bridge request was for, read from the `## Request` block every prompt ends with."""
    text = body["messages"][1]["content"] if len(body["messages"]) > 1 else body["messages"][0]["content"]
    marker = text.rfind('"stage": "')
    return text[marker + 10:text.index('"', marker + 10)] if marker >= 0 else "?"


def complaints(queue: Path) -> list[tuple[str, str]]:
    """(stage, problem line) for every problem a repair round sent back through the bridge."""
    found = []
    for path in sorted(queue.glob("*.req.json")):
        body = json.loads(path.read_text(encoding="utf-8"))
        last = body["messages"][-1]
        if last["role"] != "user" or not last["content"].startswith(REPAIR_HEADING):
            continue
        stage = _stage_of(body)
        found += [(stage, line.strip()[2:]) for line in last["content"].splitlines() if line.startswith("  - ")]
    return found


def _tools_used(domain_dir: Path) -> tuple[set[str], int]:
    tools = json.loads((domain_dir / "tools.json").read_text(encoding="utf-8"))
    used = set()
    for line in (domain_dir / "tasks.jsonl").read_text(encoding="utf-8").splitlines():
        if line.strip():
            used |= {a["name"] for a in json.loads(line)["evaluation_criteria"]["actions"]}
    return used, len(tools)


def _gates(domain_dir: Path) -> Counter:
    rejected = Counter()
    for line in (domain_dir / "rejected.jsonl").read_text(encoding="utf-8").splitlines():
        if line.strip():
            record = json.loads(line)
            rejected[record["gate"]] += 1
    return rejected


def summary(out: Path, queue: Path | None) -> list[str]:
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    lines = []
    for name, domain in report["domains"].items():
        usage = (domain.get("llm") or {}).get("stages", {})
        asked = ", ".join(f"{stage} {s['requests']}" + (f" ({s['repair_rounds']} repairs)" if s["repair_rounds"] else "")
                          for stage, s in usage.items())
        tokens = sum(s["prompt_tokens"] + s["completion_tokens"] for s in usage.values())
        candidates = domain["candidates"]
        kept = domain["accepted"]
        used, total = _tools_used(out / name)
        lines += [f"## {name}  ({out})",
                  f"- requests: {asked}; tokens {tokens:,}",
                  f"- design repair rounds: {usage.get('design', {}).get('repair_rounds', 0)}",
                  f"- candidates {candidates}, kept {kept} ({kept / max(candidates, 1):.0%}); rejected by gate: "
                  f"{dict(_gates(out / name)) or 'none'}",
                  f"- tools used by kept tasks: {len(used)} of {total} ({len(used) / max(total, 1):.0%})"]
    if queue is not None:
        problems = complaints(queue)
        lines.append(f"- repair complaints ({len(problems)}):" if problems else "- repair complaints: none")
        lines += [f"  - [{stage}] {text[:160]}" for stage, text in problems]
    return lines


def main(argv: list[str]) -> None:
    if not argv:
        sys.exit(__doc__)
    for arg in argv:
        out, _, queue = arg.partition(":")
        print("\n".join(summary(Path(out), Path(queue) if queue else None)) + "\n")


if __name__ == "__main__":
    main(sys.argv[1:])
