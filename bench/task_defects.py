"""Counts the hardening and grading defects of issue 39 (items 3 and 4) over a whole run.

    python bench/task_defects.py OUT [--json FILE]

OUT is a `toolscale generate --out OUT` folder (one sub-folder per domain with tasks.jsonl, domain.yaml,
tools.py, policy.md and db.sqlite). Replays each task's gold on a copy of the domain's database. Classes:

- distractor: a distractor whose wrong record the tools refuse or that ends in the gold's state (D3), or
  whose text before the correction gives a detail the wrong record does not have (D4), by replay;
- order twins: compositions A+B and B+A of the same user both kept (counted as tasks);
- stale gold: a gold argument equal to a value that a read of the same record made again just before
  the call no longer returns, by replay (D12);
- repeated unknown_info: tasks whose unknown_info lists one thing twice, exactly or nearly (D1);
- raw-label nl_assertions: an assertion that gives an output field's raw label ("the valid to: ...",
  "the record with departs at ...") (D9);
- values of <= 3 characters among communicate_info values (D6);
- values contained in another number or value the conversation shows: the user's text, the gold's
  outputs, the task's other values (D6b).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

from toolscale.domains import Environment, Task, load_domain
from toolscale.domains.answers import raw_label, shown_containing
from toolscale.quality.soundness import distractor_defect, repeated_unknowns, stale_arguments, twin_key

CLASSES = ("tasks", "distractors", "distractor defects", "order twins", "stale golds", "repeated unknown_info",
           "nl_assertions", "raw-label nl_assertions", "communicate values", "values <= 3 chars",
           "values contained in another shown")


def scan_domain(folder: Path, examples: dict[str, list[str]]) -> Counter[str]:
    domain = load_domain(folder)
    env = Environment.from_sqlite(domain, folder / "db.sqlite")
    tasks = [Task.model_validate_json(line) for line in (folder / "tasks.jsonl").read_text().splitlines() if line]
    counts: Counter[str] = Counter(tasks=len(tasks))

    def note(cls: str, task: Task, why: str) -> None:
        counts[cls] += 1
        if len(examples.setdefault(cls, [])) < 6:
            examples[cls].append(f"{task.id}: {why}")

    twins: dict[object, list[str]] = {}
    for task in tasks:
        criteria = task.evaluation_criteria
        if "distractor" in task.meta.hardening:
            counts["distractors"] += 1
            if why := distractor_defect(env, task):
                note("distractor defects", task, why)
        if (key := twin_key(task)) is not None:
            twins.setdefault(key, []).append(task.id)
        if stale := stale_arguments(env, task):
            note("stale golds", task, stale[0])
        if pairs := repeated_unknowns(task.user_scenario.instructions.unknown_info):
            note("repeated unknown_info", task, f"{pairs[0][0]!r} and {pairs[0][1]!r}")
        outputs = task.meta.expected_outputs
        for assertion in criteria.nl_assertions:
            counts["nl_assertions"] += 1
            if raw_label(assertion, outputs):
                note("raw-label nl_assertions", task, assertion)
        text = task.user_scenario.text()
        for value in criteria.communicate_info:
            counts["communicate values"] += 1
            if len(value) <= 3:
                note("values <= 3 chars", task, value)
            if (holder := shown_containing(value, text, outputs, criteria.communicate_info)) is not None:
                note("values contained in another shown", task, f"{value!r} in {holder!r}")
    for ids in twins.values():
        if len(ids) > 1:
            counts["order twins"] += len(ids)
            if len(examples.setdefault("order twins", [])) < 6:
                examples["order twins"].append(f"{domain.name}: {' / '.join(ids)}")
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    per_domain: dict[str, Counter[str]] = {}
    examples: dict[str, list[str]] = {}
    for folder in sorted(p for p in args.out.iterdir() if (p / "tasks.jsonl").is_file() and (p / "db.sqlite").is_file()):
        per_domain[folder.name] = scan_domain(folder, examples)
    total: Counter[str] = sum(per_domain.values(), Counter())
    width = max(len(c) for c in CLASSES)
    print(f"{'class':<{width}}  " + " ".join(f"{d[:10]:>10}" for d in per_domain) + f" {'all':>7}  share")
    shares = {"distractor defects": "distractors", "raw-label nl_assertions": "nl_assertions",
              "values <= 3 chars": "communicate values", "values contained in another shown": "communicate values",
              "order twins": "tasks", "stale golds": "tasks", "repeated unknown_info": "tasks"}
    for cls in CLASSES:
        base = shares.get(cls)
        share = f"{total[cls] / total[base]:.2%}" if base and total[base] else ""
        print(f"{cls:<{width}}  " + " ".join(f"{c[cls]:>10}" for c in per_domain.values()) + f" {total[cls]:>7}  {share}")
    for cls, found in examples.items():
        print(f"\n{cls}, e.g.:")
        for line in found:
            print(f"  {line}")
    if args.json:
        args.json.write_text(json.dumps({"per_domain": per_domain, "total": total, "examples": examples}, indent=1))


if __name__ == "__main__":
    sys.exit(main())
