"""How much reasoning a task asks of the agent, measured the same way on toolscale's tasks and on
τ²-bench's hand-written ones: the writes it must plan, the write arguments it must look up or derive,
a change the user asks for that the gold does not make (a refusal, or an alternative instead), a
condition in the user's instructions, and a transfer to a human. `difficulty_of` labels a task from
these, not from its length; `profile` gives a set of tasks' shares, the table report.json carries
beside τ²-bench's retail and airline tasks (`tau2_reference`).

The measures read only what a τ²-bench `Task` record holds (the user's instructions and the gold
actions) and which tools write, so the same code runs on both corpora. Refusal is a heuristic there:
the user's text asks for a change in a sentence without a negation, and the gold changes nothing.
"""

from __future__ import annotations

import ast
import json
import os
import re
import tarfile
from collections.abc import Container, Iterable, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from toolscale.domains import Domain
from toolscale.domains.matching import leaves
from toolscale.domains.rules import TRANSFER_TOOL
from toolscale.domains.tasks import Action, Difficulty, Task, UserScenario

_CONDITION = re.compile(r"\b(?:if|unless|otherwise)\b", re.IGNORECASE)
_CHANGE_VERBS = (r"cancel|change|modify|update|refund|return|exchange|book|upgrade|downgrade|add|remove|replace|pay|"
                 r"order|buy|purchase|reschedule|move|enrol|enroll|register|subscribe|apply|claim|compensate|"
                 r"transfer|switch|renew|redeem|report|dispute|block|freeze|open|close|sign|release|withdraw|drop|send")
# a change asked for: "you want to cancel", "ask the agent to refund", "you'd like to be moved"
_REQUEST = re.compile(r"\b(?:want|wants|would like|'d like|need|needs|wish|wishes|hope|hoping|trying|try|tries|"
                      r"ask(?:s|ing)?(?: the agent| them)?|going|plan|planning|decided|mean) to (?:be |get )?"
                      rf"(?:{_CHANGE_VERBS})", re.IGNORECASE)
_NEGATION = re.compile(r"\b(?:not|never|no|nothing)\b|n't\b", re.IGNORECASE)
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
LEVELS = ("easy", "medium", "hard")


@dataclass(frozen=True)
class Reasoning:
    """What one task asks the agent to work out."""

    writes: int           # calls that change what the user wants (an identity check's bookkeeping row aside)
    derived_values: int   # write-argument values the user's text does not hold: looked up or derived
    refusal: bool         # the user asks for a change and the gold makes none
    condition: bool       # the user's instructions hold an if / unless / otherwise
    transfer: bool        # the gold hands the user to a human

    @property
    def points(self) -> int:
        """Writes to plan (up to 3), values to derive (one point per two, up to 2), 3 for a refusal or
        a transfer (judging that the policy says no), 1 for a condition: judgement counts, length does not."""
        return (min(self.writes, 3) + min(self.derived_values // 2, 2) + 3 * self.refusal + 3 * self.transfer
                + self.condition)


def user_text(record: dict[str, Any]) -> str:
    """Everything the user's side of a τ²-bench task record is told, as one text."""
    scenario = record.get("user_scenario") or {}
    instructions = scenario.get("instructions")
    parts = [scenario.get("persona")]
    if isinstance(instructions, dict):
        parts += [instructions.get(k) for k in ("reason_for_call", "known_info", "unknown_info", "task_instructions")]
    else:
        parts.append(instructions)
    return " ".join(p for p in parts if isinstance(p, str))


def _spoken(value: Any) -> str:
    """A value as a user would say it: 230.0 as "230"."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _asks_for_a_change(text: str) -> bool:
    """A sentence that asks for a change and is not negated ("you don't want to cancel unless...")."""
    return any(_REQUEST.search(s) and not _NEGATION.search(s) for s in _SENTENCE.split(text))


def reasoning_of(text: str, calls: Sequence[tuple[str, dict[str, Any]]], writes: Container[str]) -> Reasoning:
    """The reasoning a task asks for, from what its user is told (`text`) and its gold `calls`
    ((tool, arguments)); `writes` holds the tools that change what a user wants."""
    lowered = text.lower()
    wanted = [arguments for name, arguments in calls if name in writes]
    derived = sum(_spoken(v).lower() not in lowered for arguments in wanted for v in leaves(arguments)
                  if v is not None and not isinstance(v, bool))  # a yes/no is a choice, not a value to find
    return Reasoning(writes=len(wanted), derived_values=derived,
                     refusal=not wanted and _asks_for_a_change(text),
                     condition=bool(_CONDITION.search(text)),
                     transfer=any(name == TRANSFER_TOOL for name, _ in calls))


def record_reasoning(record: dict[str, Any], writes: Container[str]) -> Reasoning:
    """The reasoning a τ²-bench task record (a JSON object) asks for."""
    actions = (record.get("evaluation_criteria") or {}).get("actions") or []
    return reasoning_of(user_text(record), [(a["name"], a.get("arguments") or {}) for a in actions], writes)


def task_reasoning(task: Task, writes: Container[str]) -> Reasoning:
    return reasoning_of(task.user_scenario.text(), task.gold_calls(), writes)


def difficulty_of(reasoning: Reasoning) -> Difficulty:
    """easy / medium / hard from the reasoning a task needs (Reasoning.points: ≤ 1, 2–3, ≥ 4)."""
    if reasoning.points >= 4:
        return "hard"
    if reasoning.points >= 2:
        return "medium"
    return "easy"


def user_writes(domain: Domain) -> frozenset[str]:
    """The domain's tools that change what a user wants (its writes, the identity checks aside)."""
    return frozenset(name for name, spec in domain.toolkit.specs.items() if spec.changes_what_users_want)


def task_difficulty(domain: Domain, scenario: UserScenario, actions: Sequence[Action]) -> Difficulty:
    """meta.difficulty of a task whose user is told `scenario` and whose gold is `actions`."""
    calls = [(a.name, a.arguments) for a in actions]
    return difficulty_of(reasoning_of(scenario.text(), calls, user_writes(domain)))


# the table ------------------------------------------------------------------------------------------
def tally(reasonings: Iterable[Reasoning]) -> dict[str, int]:
    """Counts that add up across domains: tasks, and the tasks (or values) of each kind."""
    counts = dict.fromkeys(("tasks", "writes_3_or_more", "derived_values", "refusals", "conditions", "transfers",
                            *LEVELS), 0)
    for r in reasonings:
        counts["tasks"] += 1
        counts["writes_3_or_more"] += r.writes >= 3
        counts["derived_values"] += r.derived_values
        counts["refusals"] += r.refusal
        counts["conditions"] += r.condition
        counts["transfers"] += r.transfer
        counts[difficulty_of(r)] += 1
    return counts


def add_tallies(tallies: Iterable[dict[str, int]]) -> dict[str, int]:
    total: dict[str, int] = {}
    for counts in tallies:
        for key, n in counts.items():
            total[key] = total.get(key, 0) + n
    return total


def profile(counts: dict[str, int]) -> dict[str, float]:
    """A tally as the shares the difficulty table shows (what τ²-bench's tasks are compared on)."""
    n = max(counts.get("tasks", 0), 1)
    return {"tasks": counts.get("tasks", 0),
            "writes_3_or_more": round(counts.get("writes_3_or_more", 0) / n, 4),
            "derived_values_mean": round(counts.get("derived_values", 0) / n, 2),
            "refusals": round(counts.get("refusals", 0) / n, 4),
            "conditions": round(counts.get("conditions", 0) / n, 4),
            "transfers": round(counts.get("transfers", 0) / n, 4),
            **{level: round(counts.get(level, 0) / n, 4) for level in LEVELS}}


ROWS = (("writes_3_or_more", "tasks with ≥ 3 writes", "{:.1%}"),
        ("derived_values_mean", "write-argument values not in the user's text, mean", "{:.2f}"),
        ("refusals", "the user asks for a change the gold does not make", "{:.1%}"),
        ("conditions", "the user's instructions hold a condition (if / unless / otherwise)", "{:.1%}"),
        ("transfers", f"`{TRANSFER_TOOL}` in the gold", "{:.1%}"),
        ("hard", "labelled hard", "{:.1%}"))


def markdown_rows(columns: dict[str, dict[str, float]]) -> list[str]:
    """A few profiles side by side: one row per measure, one column per profile."""
    lines = ["| | " + " | ".join(f"{name} ({p['tasks']:,})" for name, p in columns.items()) + " |",
             "|---|" + "---:|" * len(columns)]
    for key, label, form in ROWS:
        lines.append(f"| {label} | " + " | ".join(form.format(p[key]) for p in columns.values()) + " |")
    return lines


def markdown_columns(rows: dict[str, dict[str, float]]) -> list[str]:
    """Many profiles (one per domain): one row per profile, one column per measure."""
    lines = ["| domain | tasks | ≥ 3 writes | derived values | refusals | conditions | transfers | hard "
             "| agent rules tested |", "|---|" + "---:|" * (len(ROWS) + 2)]
    for name, p in rows.items():
        lines.append(f"| {name} | {p['tasks']:,} | " + " | ".join(form.format(p[key]) for key, _, form in ROWS)
                     + f" | {p.get('rules_tested', 0)} |")
    return lines


# τ²-bench's own tasks, the reference ------------------------------------------------------------------
TAU2_DOMAINS = ("retail", "airline")
TAU2_ENV = "TOOLSCALE_TAU2_VENDOR"  # a folder holding τ²-bench's data/ and its source archive


def tau2_vendor() -> Path | None:
    """Where τ²-bench's hand-written tasks are: $TOOLSCALE_TAU2_VENDOR, or ../shared/vendor/tau2-bench
    beside this checkout; None when neither holds them."""
    named = os.environ.get(TAU2_ENV)
    folder = Path(named) if named else Path(__file__).resolve().parents[2] / "shared" / "vendor" / "tau2-bench"
    return folder if all((folder / "data" / d / "tasks.json").is_file() for d in TAU2_DOMAINS) else None


def _tau2_writes(archive: Path, domain: str) -> frozenset[str]:
    """The tools τ²-bench marks `ToolType.WRITE` in one of its domains, read from its source archive's
    syntax tree (nothing of it runs)."""
    with tarfile.open(archive) as tar:
        member = next(m for m in tar.getmembers() if m.name.endswith(f"src/tau2/domains/{domain}/tools.py"))
        source = tar.extractfile(member).read().decode()
    writes = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef) and any("ToolType.WRITE" in ast.unparse(d) for d in node.decorator_list):
            writes.add(node.name)
    return frozenset(writes)


@cache
def _tau2_profiles(folder: str) -> dict[str, dict[str, float]]:
    vendor = Path(folder)
    archive = next(vendor.glob("tau2-bench-*-src.tar.gz"))
    columns = {}
    for domain in TAU2_DOMAINS:
        writes = _tau2_writes(archive, domain)
        records = json.loads((vendor / "data" / domain / "tasks.json").read_text(encoding="utf-8"))
        columns[f"τ² {domain}"] = profile(tally(record_reasoning(r, writes) for r in records))
    return columns


def tau2_reference() -> dict[str, dict[str, float]]:
    """τ²-bench's retail and airline tasks measured by this module ({} when they are not at hand):
    figures only, nothing of their text goes into a run's outputs."""
    vendor = tau2_vendor()
    if vendor is None or not any(vendor.glob("tau2-bench-*-src.tar.gz")):
        return {}
    return _tau2_profiles(str(vendor))

