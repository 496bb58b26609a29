"""Answers a grader can check: every natural correct reply contains the expected value under
τ²-bench's rule, a wrong or echoing reply does not, and the gate catches what synthesis missed."""

from __future__ import annotations

import pytest

from toolscale.domains.answers import answer_form, contains, shape_answers, weakness, with_checkable_answers
from toolscale.quality.checkability import CheckabilityGate
from toolscale.quality.gates import GateContext

# (value as a tool or template writes it, replies a correct agent might give)
CORRECT_REPLIES = [
    ("17000000.00", ["The contract is 17,000,000 USD.", "17000000.00", "$17,000,000 a year", "17,000,000.00 dollars"]),
    ("4500.50", ["£4,500.50", "4500.5 GBP", "a minimum spend of 4,500.50"]),
    ("2500.00", ["2,500", "EUR 2500.00", "2500 euros"]),
    ("-45.20", ["you are overdrawn by 45.20", "-45.2 EUR", "minus 45.20"]),
    ("06:00:00", ["it leaves at 06:00", "at 6:00 in the morning", "6:00 am"]),
    ("18:30", ["your table is at 18:30", "18:30:00"]),
    ("partly_cloudy", ["It will be partly cloudy.", "Partly cloudy skies"]),
    ("TKT-000245", ["Your ticket is tkt-000245.", "ticket TKT-000245"]),
    ("(503) 555-0165", ["call them on 503-555-0165", "(503) 555-0165", "+1 503 555 0165"]),
]


@pytest.mark.parametrize("value,replies", CORRECT_REPLIES)
def test_every_natural_correct_reply_contains_the_answer_form(value, replies):
    form = answer_form(value)
    assert all(contains(reply, form) for reply in replies), (form, [r for r in replies if not contains(r, form)])


@pytest.mark.parametrize("value", ["17000000.00", "4500.50", "-45.20", "06:00:00"])
def test_the_raw_spelling_misses_some_correct_reply(value):
    """The defect the answer form fixes: the raw value fails a correct reply."""
    replies = dict(CORRECT_REPLIES)[value]
    assert not all(contains(reply, value) for reply in replies)


@pytest.mark.parametrize("value,kind", [
    ("0", "short"), ("12", "short"), ("W", "short"), ("none", "absence"), ("yes", "absence"),
    ("2026-10-14", "date"), ("2026-10-14T18:00:00", "timestamp"), ("000", "zero"),
])
def test_vacuous_or_unsayable_values_are_weak(value, kind):
    assert weakness(value, "") == kind


def test_a_value_the_user_said_or_another_value_contains_is_weak():
    assert weakness("500", "Only pay if the limit is above 1500 EUR.") == "echo"
    assert weakness("750", "", ["1750", "750"]) == "contained"
    assert weakness("1750", "", ["1750", "750"]) is None


def test_a_status_word_is_weak_only_when_it_is_a_status():
    outputs = [{"train_id": "TR-1", "status": "scheduled", "platform_name": "harbour"}]
    assert weakness("scheduled", "", outputs=outputs) == "status"
    assert weakness("harbour", "", outputs=outputs) is None


def test_shaping_splits_lists_drops_duplicates_and_judges_the_rest():
    outputs = [{"booking_id": "BKG-7", "starts_at": "2026-10-14T18:00:00", "deposit_status": "none", "fee": 0.0}]
    shaped = shape_answers(["Tagliatelle al ragu; Risotto ai funghi", "2026-10-14T18:00:00", "none", "0.00",
                            "Risotto ai funghi"], "You booked a table for 2026-10-14.", outputs)
    assert shaped.communicate == ["Tagliatelle al ragu", "Risotto ai funghi", "18:00"]
    assert [j.value for j in shaped.judged] == ["none", "0"]
    assert shaped.assertions() == ["The agent tells the user the deposit status: none.",
                                   "The agent tells the user the fee: 0."]


def test_a_timestamp_whose_date_the_user_lacks_is_judged():
    shaped = shape_answers(["2026-10-14T18:00:00"], "You want your booking moved.")
    assert shaped.communicate == [] and shaped.judged[0].kind == "timestamp"


def _with_communicate(task, values):
    criteria = task.evaluation_criteria.model_copy(update={"communicate_info": values})
    return task.model_copy(update={"evaluation_criteria": criteria})


def test_synthesized_answers_pass_the_gate(library_tasks):
    env, tasks = library_tasks
    assert tasks and all(t.evaluation_criteria.communicate_info for t in tasks)
    assert all(CheckabilityGate().check(GateContext(env, t)).passed for t in tasks)


@pytest.mark.parametrize("values,reason", [
    (lambda loan: [loan, loan], "listed twice"),
    (lambda loan: ["0"], "two characters or fewer"),
    (lambda loan: ["14.00"], "not in answer form"),
    (lambda loan: ["2026-03-16"], "a date"),
])
def test_the_gate_fails_brittle_vacuous_and_duplicated_answers(library_tasks, values, reason):
    env, tasks = library_tasks
    task = tasks[0]
    loan = task.evaluation_criteria.communicate_info[0]
    verdict = CheckabilityGate().check(GateContext(env, _with_communicate(task, values(loan))))
    assert not verdict.passed and reason in verdict.reason


def test_a_fact_an_assertion_of_the_task_already_states_is_not_asked_of_the_judge_again(library_tasks):
    _, tasks = library_tasks
    for own, judged in (("The agent gives the due date 2026-03-16.", 0),  # said whole: not asked again
                        ("The agent says the loan is due on 2026-03-160.", 1)):  # not this date
        task = _with_communicate(tasks[0], [*tasks[0].evaluation_criteria.communicate_info, "2026-03-16"])
        task = task.model_copy(update={"evaluation_criteria": task.evaluation_criteria.model_copy(
            update={"nl_assertions": [own]})})
        shaped = with_checkable_answers(task).evaluation_criteria
        assert shaped.nl_assertions[0] == own and len(shaped.nl_assertions) == 1 + judged, shaped.nl_assertions
        assert all(a.endswith(": 2026-03-16.") or a.endswith(" 2026-03-16.") for a in shaped.nl_assertions[1:])
        assert shaped.communicate_info == tasks[0].evaluation_criteria.communicate_info


def test_the_gate_fails_an_nl_assertion_listed_twice(library_tasks):
    env, tasks = library_tasks
    said = "The agent tells the user the deposit: 0."
    for assertions, passes in (([said], True), ([said, said], False)):
        criteria = tasks[0].evaluation_criteria.model_copy(update={"nl_assertions": assertions})
        verdict = CheckabilityGate().check(GateContext(env, tasks[0].model_copy(update={"evaluation_criteria": criteria})))
        assert verdict.passed == passes and (passes or "listed twice" in verdict.reason)


def test_the_gate_fails_an_answer_the_user_already_says(library_tasks):
    env, tasks = library_tasks
    task = tasks[0]
    loan = task.evaluation_criteria.communicate_info[0]
    told = task.user_scenario.instructions.model_copy(update={"known_info": f"Your last loan was {loan}."})
    echoed = task.model_copy(update={"user_scenario": task.user_scenario.model_copy(update={"instructions": told})})
    assert "user's own words" in CheckabilityGate().check(GateContext(env, echoed)).reason


def test_reshaping_a_task_moves_what_cannot_be_graded_to_nl_assertions(library_tasks):
    env, tasks = library_tasks
    task = _with_communicate(tasks[0], [*tasks[0].evaluation_criteria.communicate_info, "2026-03-16"])
    shaped = with_checkable_answers(task)
    assert shaped.evaluation_criteria.communicate_info == tasks[0].evaluation_criteria.communicate_info
    assert shaped.evaluation_criteria.nl_assertions[-1].endswith("2026-03-16.")
    assert with_checkable_answers(shaped) == shaped


def test_the_gate_fails_an_answer_the_user_never_asks_for(library_tasks):
    env, tasks = library_tasks
    task = tasks[0]
    silent = task.user_scenario.instructions.model_copy(update={"task_instructions": "Borrow the book.",
                                                                "reason_for_call": "You want to borrow a book."})
    unasked = task.model_copy(update={"user_scenario": task.user_scenario.model_copy(update={"instructions": silent})})
    assert CheckabilityGate().check(GateContext(env, task)).passed
    assert "asks to be told nothing" in CheckabilityGate().check(GateContext(env, unasked)).reason
