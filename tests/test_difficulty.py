"""A task's difficulty is the reasoning it asks for — writes to plan, values to derive, a refusal, a
condition, a transfer — not its length; the run's report measures it the same way on τ²-bench's own
hand-written tasks, so the two can be read side by side."""

from __future__ import annotations

import json

import pytest

from toolscale.quality.difficulty import (Reasoning, difficulty_of, reasoning_of, record_reasoning, tau2_reference,
                                          tau2_vendor, task_difficulty, task_reasoning, user_writes)
from toolscale.quality.report import domain_funnel, markdown, totals

WRITES = {"cancel_order", "refund_order", "pay_bill"}


def reasoning(text: str, *calls: tuple[str, dict]) -> Reasoning:
    return reasoning_of(text, list(calls), WRITES)


def test_a_long_read_only_task_is_easy_and_a_short_refusal_with_a_condition_is_hard():
    reads = [("get_order", {"order_id": f"O-{i}"}) for i in range(8)]
    assert difficulty_of(reasoning("Ask for the status of orders O-0 to O-7.", *reads)) == "easy"
    refusal = reasoning("You want to cancel order O-1. If the agent says no, ask for a refund instead.",
                        ("get_order", {"order_id": "O-1"}))
    assert refusal.refusal and refusal.condition and refusal.writes == 0
    assert difficulty_of(refusal) == "hard"


def test_values_the_user_never_says_count_as_derived_and_numbers_match_as_spoken():
    found = reasoning("Pay 230 to Acme from your checking account.",
                      ("pay_bill", {"amount": 230.0, "payee": "Acme", "account_id": "ACC-7", "express": True}))
    assert found.writes == 1
    assert found.derived_values == 1  # the account id; 230.0 is said as "230" and a yes/no is a choice


def test_a_change_asked_for_in_a_negated_or_past_sentence_is_no_refusal():
    assert not reasoning("You don't want to cancel unless you get a refund.").refusal
    assert not reasoning("You booked a table last week and want to know its time.").refusal
    assert not reasoning("Do not buy anything.").refusal
    assert reasoning("You'd like to be refunded for order O-2.").refusal
    assert not reasoning("You want to cancel order O-1.", ("cancel_order", {"order_id": "O-1"})).refusal


def test_a_transfer_to_a_human_is_counted():
    assert reasoning("You want a person.", ("transfer_to_human_agents", {"summary": "x"})).transfer


@pytest.mark.skipif(tau2_vendor() is None, reason="τ²-bench's hand-written tasks are not beside this checkout")
def test_tau2_bench_tasks_measure_as_the_audit_counted_them_by_hand():
    """The figures the 2026-12-06 audit computed with its own script (writes from τ²'s ToolType.WRITE)."""
    reference = tau2_reference()
    retail, airline = reference["τ² retail"], reference["τ² airline"]
    assert (retail["tasks"], airline["tasks"]) == (114, 50)
    assert (retail["writes_3_or_more"], airline["writes_3_or_more"]) == (0.1842, 0.14)
    assert (retail["derived_values_mean"], airline["derived_values_mean"]) == (5.89, 5.44)
    assert (retail["conditions"], airline["conditions"]) == (0.6579, 0.74)
    assert (retail["transfers"], airline["transfers"]) == (0.0351, 0.02)
    assert 0.3 <= airline["refusals"] <= 0.45 and retail["refusals"] < 0.1  # a heuristic: the audit's gave 34% and 7%
    records = json.loads((tau2_vendor() / "data" / "airline" / "tasks.json").read_text())
    refuses = next(r for r in records if r["id"] == "0")  # "agent refuses to proceed with a cancellation"
    assert record_reasoning(refuses, {"cancel_reservation"}).refusal


def test_meta_difficulty_is_the_measured_one_and_the_report_adds_domains_up(bank_run, tmp_path):
    domain, _, accepted, rejected = bank_run
    writes = user_writes(domain)
    assert "verify_identity" not in writes and writes
    for task in accepted:
        assert task.meta.difficulty == task_difficulty(domain, task.user_scenario, task.evaluation_criteria.actions)
    funnel = {**domain_funnel(accepted, rejected, tools=list(domain.toolkit.specs), writes=writes), "tools": 1, "rows": 1}
    counts = funnel["reasoning"]["counts"]
    assert counts["tasks"] == len(accepted) == counts["easy"] + counts["medium"] + counts["hard"]
    assert counts["derived_values"] == sum(task_reasoning(t, writes).derived_values for t in accepted)
    both = totals({"bank": funnel, "copy": funnel})
    assert both["reasoning"]["counts"]["tasks"] == 2 * len(accepted)
    assert {**both["reasoning"]["shares"], "tasks": len(accepted)} == funnel["reasoning"]["shares"]
    report = {"backend": "offline", "seed": 0, "scale": 1.0, "domains": {"bank": funnel}, "totals": totals({"bank": funnel}),
              "reasoning_reference": tau2_reference()}
    text = markdown(report, tmp_path)
    assert "## Reasoning asked of the agent" in text
    assert f"| this run ({len(accepted):,}) |" in text.replace(" | this run", "| this run")
    section = text[text.index("## Reasoning"):]
    bank_row = next(line for line in section.splitlines() if line.startswith("| bank | "))
    rules = funnel["reasoning"]["rules_tested"]
    assert bank_row.endswith(f"| {len(rules)} ({sum(rules.values()):,} tasks) |")
    assert f"{sum(rules.values()):,} of {len(accepted):,} tasks" in section
    assert set(funnel["reasoning"]["rules_tested"]) == {r.id for r in domain.spec.rules if r.agent is not None}
