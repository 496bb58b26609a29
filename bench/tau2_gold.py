"""Every exported task's gold through real τ²-bench's own evaluators: DB and COMMUNICATE, all 1.0?

Run with a Python where τ²-bench and RestrictedPython are installed (not toolscale's):

    python bench/tau2_gold.py OUT/tau2 [--domains bank,movie] [--every 1] [--split test]
    python bench/tau2_gold.py --registered bank,movie [--split test] [--rewards FILE]

Per task it builds the trajectory an agent following the gold would leave — one assistant tool
call and its tool message per gold action, then one assistant message that says every
communicate_info value, each written the way a person would (thousands separators, two decimals,
a currency code) rather than as stored — and scores it with τ²'s EnvironmentEvaluator and
CommunicateEvaluator, with the package's own `get_environment` as the environment constructor (as
τ²'s registry calls it). The packages are loaded from their folders, or with `--registered` taken
from τ²'s registry (packages copied into τ² and registered as their README says). Prints one line
per domain, with the median cost of a `get_environment()`, and exits 1 if any task scores below 1.0;
`--rewards FILE` writes {task id: reward} as JSON.

`gold_turns(task)` is the assistant's side of that trajectory, for an agent that replays it
(tests/tau2_real.py runs it through `tau2 run`).
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


def gold_turns(task) -> list:
    """The assistant messages of an agent following the gold: one tool call per gold action, in order,
    then one message that says every communicate_info value as a person would."""
    from tau2.data_model.message import AssistantMessage, ToolCall

    turns = [AssistantMessage(role="assistant", tool_calls=[
        ToolCall(id=f"call-{i}", name=action.name, arguments=action.arguments, requestor="assistant")])
        for i, action in enumerate(task.evaluation_criteria.actions)]
    said = "; ".join(_said(v) for v in task.evaluation_criteria.communicate_info) or "Done."
    return turns + [AssistantMessage(role="assistant", content=f"Here you are: {said}.")]


def check_tasks(constructor, tasks: list) -> tuple[dict, list[str]]:
    """Score each task's gold trajectory with τ²'s DB and COMMUNICATE evaluators, each over a fresh
    environment from `constructor`: ({task id: reward}, failures)."""
    from loguru import logger
    from tau2.data_model.message import UserMessage
    from tau2.evaluator.evaluator_communicate import CommunicateEvaluator
    from tau2.evaluator.evaluator_env import EnvironmentEvaluator

    logger.remove()
    rewards, failures = {}, []
    for task in tasks:
        env = constructor()
        trajectory = [UserMessage(role="user", content="Hello.")]
        for message in gold_turns(task):
            trajectory.append(message)
            trajectory.extend(env.get_response(call) for call in message.tool_calls or [])
        db = EnvironmentEvaluator.calculate_reward(constructor, task, trajectory)
        communicate = CommunicateEvaluator.calculate_reward(task, trajectory)
        rewards[task.id] = db.reward * communicate.reward
        if db.reward != 1.0 or communicate.reward != 1.0:
            failures.append(f"{task.id}: db {db.reward}, communicate {communicate.reward} "
                            f"({trajectory[-1].content!r})")
    return rewards, failures


def _cost(constructor) -> float:
    costs = []
    for _ in range(21):
        start = time.perf_counter()
        constructor()
        costs.append(time.perf_counter() - start)
    return statistics.median(costs)


def check_domain(folder: Path, every: int, split: str | None = None) -> tuple[dict, list[str], float]:
    """A package loaded from its folder: ({task id: reward}, failures, median get_environment() cost)."""
    package = _load(folder)
    rewards, failures = check_tasks(package.get_environment, package.get_tasks(split)[::every])
    return rewards, failures, _cost(package.get_environment)


def check_registered(name: str, every: int, split: str | None = None) -> tuple[dict, list[str], float]:
    """A domain as τ²'s registry has it (tau2.registry), as check_domain."""
    from tau2.registry import registry

    constructor = registry.get_env_constructor(name)
    rewards, failures = check_tasks(constructor, registry.get_tasks_loader(name)(split)[::every])
    return rewards, failures, _cost(constructor)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("packages", type=Path, nargs="?", help="a run's tau2/ folder")
    parser.add_argument("--domains", default="", help="comma-separated; all by default")
    parser.add_argument("--registered", default="", help="comma-separated domains from τ²'s registry instead")
    parser.add_argument("--split", default=None, help="one split's tasks (train, test, base); all by default")
    parser.add_argument("--every", type=int, default=1, help="check every n-th task")
    parser.add_argument("--rewards", type=Path, help="write {task id: reward} here as JSON")
    args = parser.parse_args()
    if args.registered:
        checks = {name: (check_registered, name) for name in args.registered.split(",")}
    elif args.packages is not None:
        wanted = {d for d in args.domains.split(",") if d}
        checks = {p.name: (check_domain, p) for p in sorted(args.packages.iterdir())
                  if (p / "__init__.py").exists() and (not wanted or p.name in wanted)}
    else:
        parser.error("give a tau2/ folder or --registered")
    scores = {}
    for name, (check, where) in checks.items():
        start = time.perf_counter()
        rewards, failures, cost = check(where, args.every, args.split)
        scores.update(rewards)
        print(f"{name}: {len(rewards) - len(failures)}/{len(rewards)} scored 1.0 in "
              f"{time.perf_counter() - start:.1f}s; get_environment() {cost * 1000:.2f} ms (median of 21)")
        for failure in failures[:5]:
            print(f"  {failure}")
    if args.rewards:
        args.rewards.write_text(json.dumps(scores, indent=1) + "\n", encoding="utf-8")
    scored = sum(r == 1.0 for r in scores.values())
    print(json.dumps({"tasks": len(scores), "scored_1": scored}))
    return 0 if scored == len(scores) else 1


if __name__ == "__main__":
    sys.exit(main())
