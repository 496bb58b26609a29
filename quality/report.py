"""The funnel report: candidates, rejections by gate and acceptances, per domain and per intent,
with the difficulty mix, hardening and tool coverage; as JSON, and as markdown with plots.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from toolscale.domains.tasks import Rejection, Task

from .difficulty import add_tallies, markdown_columns, markdown_rows, profile, tally, task_reasoning
from .gating import GATE_ORDER
from .task_quality import combined, task_quality


def _funnel(accepted: Sequence[Task], rejected: Sequence[Rejection]) -> dict[str, Any]:
    return {"candidates": len(accepted) + len(rejected),
            "accepted": len(accepted),
            "rejected": dict(sorted(Counter(r.gate for r in rejected).items(), key=lambda kv: _gate_rank(kv[0])))}


NOT_REACHED = "not reached"  # a gate no task got to: not configured (the LLM gates), or every task fell before it


def gate_counts(accepted: Sequence[Task], rejected: Sequence[Rejection]) -> dict[str, Any]:
    """Every gate, in order: how many candidates it passed and rejected (zeros included), or
    NOT_REACHED, so "passed everything" and "never checked" read differently."""
    passed = Counter(gate for task in [*accepted, *(r.task for r in rejected)]
                     for gate, verdict in task.meta.gates.items() if verdict.passed)
    by_gate = Counter(r.gate for r in rejected)
    passed["synthesis"] = len(accepted) + len(rejected) - by_gate["synthesis"]  # every candidate meets it
    return {gate: {"passed": passed[gate], "rejected": by_gate[gate]} if passed[gate] or by_gate[gate] else NOT_REACHED
            for gate in sorted({*GATE_ORDER, *by_gate}, key=_gate_rank)}


def _sum_gates(funnels: Sequence[dict[str, Any]]) -> dict[str, Any]:
    total: dict[str, Any] = {}
    for funnel in funnels:
        for gate, count in funnel.get("gates", {}).items():
            if count == NOT_REACHED:
                total.setdefault(gate, NOT_REACHED)
                continue
            now = total.get(gate)
            now = {"passed": 0, "rejected": 0} if now in (None, NOT_REACHED) else now
            total[gate] = {"passed": now["passed"] + count["passed"], "rejected": now["rejected"] + count["rejected"]}
    return total


def _gate_rank(gate: str) -> int:
    return GATE_ORDER.index(gate) if gate in GATE_ORDER else len(GATE_ORDER)


def domain_funnel(accepted: Sequence[Task], rejected: Sequence[Rejection], tools: Sequence[str] = (),
                  writes: frozenset[str] = frozenset()) -> dict[str, Any]:
    """The funnel of one domain: by intent, difficulty, the reasoning asked for (`writes`: the tools
    that change what a user wants), hardening, tool coverage and top reasons."""
    by_intent: dict[str, tuple[list[Task], list[Rejection]]] = defaultdict(lambda: ([], []))
    for task in accepted:  # grouped once: filtering the whole domain per intent cost 2 s a domain at 16x
        by_intent[task.meta.intent][0].append(task)
    for rejection in rejected:
        by_intent[rejection.task.meta.intent][1].append(rejection)
    reasons = Counter(f"{r.gate}: {r.reason}" for r in rejected)
    used = Counter(a.name for t in accepted for a in t.evaluation_criteria.actions)
    hardened = [t for t in accepted if t.meta.hardening]
    return {
        **_funnel(accepted, rejected),
        "gates": gate_counts(accepted, rejected),
        "difficulty": dict(sorted(Counter(t.meta.difficulty for t in accepted).items())),
        "reasoning": {**_reasoning(tally(task_reasoning(t, writes) for t in accepted)),
                      "rules_tested": dict(sorted(Counter(t.meta.tests_rule for t in accepted if t.meta.tests_rule).items()))},
        "hardened": {"accepted": len(hardened),
                     "share": round(len(hardened) / len(accepted), 3) if accepted else 0.0,
                     "operators": dict(sorted(Counter(op for t in hardened for op in t.meta.hardening).items()))},
        "coverage": {"tools": len(tools), "used": sum(1 for t in tools if used[t]),
                     "share": round(sum(1 for t in tools if used[t]) / len(tools), 3) if tools else 0.0,
                     "calls": {t: used[t] for t in tools}, "unused": [t for t in tools if not used[t]]},
        "intents": {name: _funnel(*by_intent[name]) for name in sorted(by_intent)},
        "top_rejection_reasons": [{"reason": reason, "count": n} for reason, n in reasons.most_common(10)],
        "task_quality": task_quality(accepted, rejected),
        **_reference_summary([*accepted, *(r.task for r in rejected)]),
    }


def _reasoning(counts: dict[str, int]) -> dict[str, Any]:
    """The reasoning block: counts that add up across domains, and the shares the table shows."""
    return {"counts": counts, "shares": profile(counts)}


def _reference_summary(tasks: Sequence[Task]) -> dict[str, Any]:
    """The reference agent's mean pass^k over the tasks it tried (nothing when it tried none)."""
    records = [t.meta.reference for t in tasks if t.meta.reference is not None]
    if not records:
        return {}
    keys = sorted({k for r in records for k in r.pass_hat}, key=lambda k: int(k.split("^")[1]))
    return {"reference": {"model": records[0].model, "tasks": len(records),
                          **{k: round(sum(r.pass_hat.get(k, 0.0) for r in records) / len(records), 3) for k in keys},
                          "solved_without_tools": sum(bool(r.solved_without_tools) for r in records)}}


def totals(domains: dict[str, dict[str, Any]]) -> dict[str, Any]:
    rejected: Counter[str] = Counter()
    difficulty: Counter[str] = Counter()
    for funnel in domains.values():
        rejected.update(funnel["rejected"])
        difficulty.update(funnel.get("difficulty", {}))
    accepted = sum(f["accepted"] for f in domains.values())
    hardened = sum(f.get("hardened", {}).get("accepted", 0) for f in domains.values())
    return {"domains": len(domains),
            "candidates": sum(f["candidates"] for f in domains.values()),
            "accepted": accepted,
            "hardened": hardened,
            "hardened_share": round(hardened / accepted, 3) if accepted else 0.0,
            "rejected": dict(sorted(rejected.items(), key=lambda kv: _gate_rank(kv[0]))),
            "gates": _sum_gates(list(domains.values())),
            "difficulty": dict(sorted(difficulty.items())),
            "reasoning": _reasoning(add_tallies(f["reasoning"]["counts"] for f in domains.values() if "reasoning" in f)),
            "tools": sum(f.get("tools", 0) for f in domains.values()),
            "rows": sum(f.get("rows", 0) for f in domains.values()),
            "task_quality": combined([f["task_quality"] for f in domains.values() if "task_quality" in f])}


def funnel_steps(funnel: dict[str, Any]) -> list[tuple[str, int]]:
    """(gate, candidates still standing after it), in gate order."""
    standing = funnel["candidates"]
    steps = [("candidates", standing)]
    for gate in sorted(funnel["rejected"], key=_gate_rank):
        standing -= funnel["rejected"][gate]
        steps.append((gate, standing))
    return steps


def plotting() -> Any:
    """matplotlib's pyplot, drawing off-screen."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _plots(report: dict[str, Any], out: Path) -> list[str]:
    """The funnel as shares (each gate's rejections, % of a domain's candidates: accepted tasks would
    dwarf them) and the mix of what was kept (difficulty and hardening, % of accepted)."""
    plt = plotting()
    domains = list(report["domains"])
    fig, ax = plt.subplots(figsize=(9, 4.5))
    bottom = [0.0] * len(domains)
    for gate in GATE_ORDER:
        shares = [100 * report["domains"][d]["rejected"].get(gate, 0) / max(report["domains"][d]["candidates"], 1)
                  for d in domains]
        if any(shares):
            ax.bar(domains, shares, bottom=bottom, label=gate)
            bottom = [b + s for b, s in zip(bottom, shares)]
    ax.set_ylabel("% of candidates rejected")
    ax.set_title("Rejections by gate" if any(bottom) else "Rejections by gate: none")
    if any(bottom):
        ax.legend(fontsize=7, ncol=3, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    ax.tick_params(axis="x", rotation=30)
    fig.tight_layout()
    fig.savefig(out / "report_funnel.png", dpi=110, metadata={"Software": None})
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(9, 3.5))
    bottom = [0.0] * len(domains)
    for level, colour in (("easy", "tab:green"), ("medium", "tab:orange"), ("hard", "tab:red")):
        shares = [100 * report["domains"][d]["difficulty"].get(level, 0) / max(report["domains"][d]["accepted"], 1)
                  for d in domains]
        ax.bar(domains, shares, bottom=bottom, label=level, color=colour)
        bottom = [b + s for b, s in zip(bottom, shares)]
    hardened = [100 * report["domains"][d]["hardened"]["share"] for d in domains]
    ax.plot(domains, hardened, "k_", markersize=18, markeredgewidth=2, label="hardened")
    ax.set_ylim(0, 105)
    ax.set_ylabel("% of accepted tasks")
    ax.set_title("What was kept: difficulty, and the share hardened")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    ax.tick_params(axis="x", rotation=30)
    fig.tight_layout()
    fig.savefig(out / "report_mix.png", dpi=110, metadata={"Software": None})
    plt.close(fig)
    return ["report_funnel.png", "report_mix.png"]


def markdown(report: dict[str, Any], out: Path) -> str:
    """report.md for people: totals, the funnel per domain and gate, difficulty, coverage, plots."""
    t = report["totals"]
    lines = [f"# toolscale report (backend {report['backend']}, seed {report['seed']}, scale {report['scale']})", "",
             f"{t['accepted']:,} accepted tasks of {t['candidates']:,} candidates across {t['domains']} domains; "
             f"{t['hardened']:,} hardened ({t['hardened_share']:.0%}); {t['tools']} tools, {t['rows']:,} rows.", ""]
    for name in _plots(report, out):
        lines += [f"![{name[7:-4]}]({name})", ""]
    reached = report["totals"].get("gates", {})
    gates = [g for g in GATE_ORDER if reached.get(g, NOT_REACHED) != NOT_REACHED]
    lines += ["## Funnel", "", "Rejections per gate (every gate that ran, zeros included).", "",
              "| domain | candidates | " + " | ".join(gates) + " | accepted | hardened | coverage |",
              "|---|" + "---:|" * (len(gates) + 4)]
    for name, d in report["domains"].items():
        lines.append(f"| {name} | {d['candidates']} | " + " | ".join(str(d["rejected"].get(g, 0)) for g in gates)
                     + f" | {d['accepted']} | {d['hardened']['share']:.0%} | {d['coverage']['used']}/{d['coverage']['tools']} |")
    skipped = [g for g in GATE_ORDER if reached.get(g, NOT_REACHED) == NOT_REACHED]
    if skipped:
        lines += ["", f"Not reached by any task: {', '.join(skipped)} (the LLM gates run with `--reference-model`)."]
    lines += ["", "## Difficulty", "", "| domain | " + " | ".join(("easy", "medium", "hard")) + " |", "|---|---:|---:|---:|"]
    for name, d in report["domains"].items():
        lines.append(f"| {name} | " + " | ".join(str(d["difficulty"].get(k, 0)) for k in ("easy", "medium", "hard")) + " |")
    lines += _reasoning_lines(report)
    lines += ["", "## Top rejection reasons", ""]
    for name, d in report["domains"].items():
        for item in d["top_rejection_reasons"][:3]:
            lines.append(f"- {name}: {item['count']} × {item['reason']}")
    if report.get("failed"):
        lines += ["", "## Failed domains", ""] + [f"- {n}: {why}" for n, why in report["failed"].items()]
    unused = {n: d["coverage"]["unused"] for n, d in report["domains"].items() if d["coverage"]["unused"]}
    if unused:
        lines += ["", "## Tools in no accepted gold path", ""] + [f"- {n}: {', '.join(u)}" for n, u in unused.items()]
    return "\n".join(lines + _quality_lines(report) + _reference_lines(report) + _llm_lines(report.get("llm"))) + "\n"


def _reasoning_lines(report: dict[str, Any]) -> list[str]:
    """What the tasks ask the agent to work out, beside τ²-bench's hand-written tasks measured the same way."""
    if "reasoning" not in report["totals"]:  # a report.json from before it was measured
        return []
    columns = {**report.get("reasoning_reference", {}), "this run": report["totals"]["reasoning"]["shares"]}
    tested = {n: d["reasoning"].get("rules_tested", {}) for n, d in report["domains"].items() if "reasoning" in d}
    domains = {n: {**report["domains"][n]["reasoning"]["shares"],
                   "rules_tested": f"{len(rules)} ({sum(rules.values()):,} tasks)"} for n, rules in tested.items()}
    tests, tasks = sum(sum(r.values()) for r in tested.values()), report["totals"]["reasoning"]["shares"]["tasks"]
    lines = ["", "## Reasoning asked of the agent", "",
             "Measured by quality/difficulty.py on this run's accepted tasks and, where they are at hand, on "
             "τ²-bench's own retail and airline tasks (their figures only); `meta.difficulty` is labelled from "
             "these measures, not from a task's length. A refusal is found from the text (a change asked for, "
             "none made), the same way for both; an allowed alternative is not.", ""]
    exact = (f"Built to test a rule the agent must apply (the literal request runs in the tools and breaks it: a "
             f"refusal, an alternative or a transfer; from `meta.tests_rule`): {tests:,} of {tasks:,} tasks "
             f"({tests / max(tasks, 1):.1%}).")
    return lines + markdown_rows(columns) + ["", exact, ""] + markdown_columns(domains)


def _quality_lines(report: dict[str, Any]) -> list[str]:
    """Answers a grader can check, text variety and personas per domain; each operator's yield."""
    domains = {n: d["task_quality"] for n, d in report["domains"].items() if "task_quality" in d}
    if not domains:
        return []
    lines = ["", "## Task quality", "",
             "| domain | answers checkable | facts left to the judge | skeletons per intent (median) "
             "| base tasks in intents with < 2 | personas |", "|---|---:|---|---:|---:|---:|"]
    for name, q in domains.items():
        a, k = q["answers"], q["skeletons"]
        judged = ", ".join(f"{kind} {n}" for kind, n in a["judged"].items()) or "–"
        lines.append(f"| {name} | {a['checkable']}/{a['values']} | {judged} | {k['median']} "
                     f"| {k['base_tasks_below_2']}/{k['base_tasks']} | {q['personas']}/{q['tasks']} |")
    operators = report["totals"].get("task_quality", {}).get("operators", {})
    if operators:
        lines += ["", "| operator | accepted | rejected | yield |", "|---|---:|---:|---:|"]
        lines += [f"| {op} | {m['accepted']} | {m['rejected']} | {m['yield']:.0%} |" for op, m in operators.items()]
    return lines


def _reference_lines(report: dict[str, Any]) -> list[str]:
    """The reference agent's mean pass^k per domain (the LLM gates), when it ran."""
    tried = {n: d["reference"] for n, d in report["domains"].items() if "reference" in d}
    if not tried:
        return []
    ks = sorted({k for r in tried.values() for k in r if k.startswith("pass^")}, key=lambda k: int(k[5:]))
    lines = ["", "## Reference agent", "",
             "| domain | model | tasks tried | " + " | ".join(ks) + " | solved without tools |",
             "|---|---|---:|" + "---:|" * (len(ks) + 1)]
    for name, r in tried.items():
        lines.append(f"| {name} | {r['model']} | {r['tasks']} | " + " | ".join(f"{r.get(k, 0.0):.2f}" for k in ks)
                     + f" | {r['solved_without_tools']} |")
    return lines


def _llm_lines(usage: dict[str, Any] | None) -> list[str]:
    """Requests, tokens and cost of the llm backend per stage, when it ran."""
    if not usage:
        return []
    lines = ["", f"## LLM usage ({usage['model']})", "",
             "| stage | requests | cache hits | request retries | repair rounds | stage retries | prompt tokens "
             "| completion tokens | cost ($) |", "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for name, s in [*usage["stages"].items(), ("**total**", usage["totals"])]:
        lines.append(f"| {name} | {s['requests']:,} | {s['cache_hits']:,} | {s['retries']:,} "
                     f"| {s.get('repair_rounds', 0):,} | {s.get('stage_retries', 0):,} | {s['prompt_tokens']:,} "
                     f"| {s['completion_tokens']:,} | {s['cost_usd']:.4f} |")
    return lines
