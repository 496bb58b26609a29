"""A naive agent on a whole run: it does exactly what the user asks, in order, with the tools, and no
policy reasoning. How many tasks it passes says how much of the data rewards judgement.

For a task built to test an agent rule, what the user literally asks is `meta.naive_actions` (the
gold's lookups, then the literal request); for every other task it is the gold itself (literal
compliance is right there). Each sequence is replayed on a fresh copy of the domain's database and
scored by τ²-bench's rule: the final state equals the gold's, and every `communicate_info` value is
in the agent's reply (here: everything the tools returned, relayed as it came). nl_assertions are
not judged (a scripted agent cannot be), so a pass is an upper bound for this agent.

    python bench/naive_agent.py OUT [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

from toolscale.agents.scoring import communicated
from toolscale.domains import Environment, Task, load_domain
from toolscale.domains.environment import replay


def score(env: Environment, task: Task) -> tuple[bool, bool]:
    """(passed, literal): does the naive agent pass the task, and is the task one where doing what the user
    literally asks is the gold."""
    literal = not task.meta.naive_actions
    calls = task.gold_calls() if literal else [(a.name, a.arguments) for a in task.meta.naive_actions]
    with env.fork() as fork:
        results = replay(fork, calls)
        end = fork.state_hash()
    reply = " ".join(json.dumps(r.output if r.ok else r.error, ensure_ascii=False) for r in results)
    told = all(communicated(info, [reply]) for info in task.evaluation_criteria.communicate_info)
    return end == task.meta.final_state_hash and told, literal


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path, help="a toolscale output folder")
    parser.add_argument("--json", type=Path, help="write the figures here too")
    args = parser.parse_args()
    folders = sorted(p.parent for p in args.out.glob("*/tasks.jsonl"))
    if not folders:
        print(f"error: no OUT/<domain>/tasks.jsonl under {args.out}", file=sys.stderr)
        return 2
    figures: dict[str, dict[str, int]] = {}
    total: Counter[str] = Counter()
    for folder in folders:
        domain = load_domain(folder)
        counts: Counter[str] = Counter()
        with Environment.from_sqlite(domain, folder / "db.sqlite") as env:
            for line in (folder / "tasks.jsonl").open(encoding="utf-8"):
                passed, literal = score(env, Task.model_validate_json(line))
                kind = "literal" if literal else "judgement"
                counts[kind] += 1
                counts[f"{kind}_passed"] += passed
        figures[folder.name] = dict(counts)
        total.update(counts)
    figures["all"] = dict(total)
    print("| domain | tasks | naive agent passes | where the literal request is right | where judgement is needed |")
    print("|---|---:|---:|---:|---:|")
    for name, c in figures.items():
        tasks = c.get("literal", 0) + c.get("judgement", 0)
        passed = c.get("literal_passed", 0) + c.get("judgement_passed", 0)
        print(f"| {name} | {tasks:,} | {passed / max(tasks, 1):.1%} | {c.get('literal_passed', 0):,}/{c.get('literal', 0):,} "
              f"| {c.get('judgement_passed', 0):,}/{c.get('judgement', 0):,} |")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
