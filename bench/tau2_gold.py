"""Every exported task's gold through real τ²-bench's own evaluators: DB and COMMUNICATE, all 1.0?

Run with a Python where τ²-bench and RestrictedPython are installed (not toolscale's):

    python bench/tau2_gold.py OUT/tau2 [--domains bank,movie] [--every 1]

Per task it builds the trajectory an agent following the gold would leave — one assistant tool
call and its tool message per gold action, then one assistant message that says every
communicate_info value, each written the way a person would (thousands separators, two decimals,
a currency code) rather than as stored — and scores it with τ²'s EnvironmentEvaluator and
CommunicateEvaluator, with the package's own `get_environment` as the environment constructor (as
τ²'s registry calls it). Prints one line per domain, with the median cost of a `get_environment()`,
and exits 1 if any task scores below 1.0.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import re
import statistics
import sys
import time
from pathlib import Path


def _said(value: str) -> str:
    """How a person says a value: 17000000 → "17,000,000.00 USD"-style, a time as is."""
    if re.fullmatch(r"(0|[1-9]\d*)(\.\d+)?", value):  # digits with a leading zero are a code (card digits)
        number = float(value)
        return f"{number:,.2f} EUR" if "." in value or number >= 1000 else f"{int(number)}"
    return value


def _load(folder: Path):
    name = f"exported_{folder.name}"
    spec = importlib.util.spec_from_file_location(name, folder / "__init__.py", submodule_search_locations=[str(folder)])
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def check_domain(folder: Path, every: int) -> tuple[int, int, list[str]]:
    from loguru import logger
    from tau2.data_model.message import AssistantMessage, ToolCall, ToolMessage, UserMessage
    from tau2.evaluator.evaluator_communicate import CommunicateEvaluator
    from tau2.evaluator.evaluator_env import EnvironmentEvaluator

    logger.remove()
    package = _load(folder)
    constructor = package.get_environment

    tasks = package.get_tasks(None)[::every]
    failures = []
    for task in tasks:
        env = constructor()
        trajectory = [UserMessage(role="user", content="Hello.")]
        for i, action in enumerate(task.evaluation_criteria.actions):
            call = ToolCall(id=f"call-{i}", name=action.name, arguments=action.arguments, requestor="assistant")
            trajectory.append(AssistantMessage(role="assistant", tool_calls=[call]))
            trajectory.append(env.get_response(call))
        said = "; ".join(_said(v) for v in task.evaluation_criteria.communicate_info) or "Done."
        trajectory.append(AssistantMessage(role="assistant", content=f"Here you are: {said}."))
        db = EnvironmentEvaluator.calculate_reward(constructor, task, trajectory)
        communicate = CommunicateEvaluator.calculate_reward(task, trajectory)
        if db.reward != 1.0 or communicate.reward != 1.0:
            failures.append(f"{task.id}: db {db.reward}, communicate {communicate.reward} ({said!r})")
    costs = []
    for _ in range(21):
        start = time.perf_counter()
        constructor()
        costs.append(time.perf_counter() - start)
    return len(tasks), len(tasks) - len(failures), failures, statistics.median(costs)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("packages", type=Path, help="a run's tau2/ folder")
    parser.add_argument("--domains", default="", help="comma-separated; all by default")
    parser.add_argument("--every", type=int, default=1, help="check every n-th task")
    args = parser.parse_args()
    wanted = {d for d in args.domains.split(",") if d}
    folders = sorted(p for p in args.packages.iterdir() if (p / "__init__.py").exists() and (not wanted or p.name in wanted))
    total = scored = 0
    for folder in folders:
        start = time.perf_counter()
        n, ok, failures, cost = check_domain(folder, args.every)
        total, scored = total + n, scored + ok
        print(f"{folder.name}: {ok}/{n} scored 1.0 in {time.perf_counter() - start:.1f}s; "
              f"get_environment() {cost * 1000:.2f} ms (median of 21)")
        for failure in failures[:5]:
            print(f"  {failure}")
    print(json.dumps({"tasks": total, "scored_1": scored}))
    return 0 if scored == total else 1


if __name__ == "__main__":
    sys.exit(main())
