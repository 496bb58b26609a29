"""Answers a grader can check: every natural correct reply contains the expected value under
τ²-bench's rule, a wrong or echoing reply does not, and the gate catches what synthesis missed."""

from __future__ import annotations

import pytest

from toolscale.domains.answers import (Judged, answer_form, contains, raw_label, shape_answers, weakness,
                                       with_checkable_answers)
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
    assert weakness("7500", "", ["17500", "7500"]) == "contained"
    assert weakness("17500", "", ["17500", "7500"]) is None


def test_a_value_another_number_the_gold_shows_contains_is_weak():
    """'3480' is the booking total the agent reads out: a reply that says it holds '348' too."""
    outputs = [{"booking_id": "BK-1", "total": 3480.0, "voucher": 3481.5, "payee": "Ramsey, White and Dunn"}]
    assert weakness("3481.5", "", outputs=outputs) is None  # the value itself, shown as it is
    assert weakness("481.5", "", outputs=outputs) == "contained"
    assert weakness("Ramsey", "", outputs=outputs) == "contained"
    assert weakness("Ramsey White and Dunn", "", outputs=outputs) is None  # said without its commas, as τ² reads


@pytest.mark.parametrize("value,kind", [("348", "short"), ("0.5", "short"), ("1-0", "short"), ("DPD", None)])
def test_three_characters_go_to_the_judge_when_anything_said_can_hold_them(value, kind):
    assert weakness(value, "", outputs=[{"parcel_id": "P-1", "carrier": "DPD", "fee": 0.5}]) == kind
    assert weakness("DPD", "", outputs=[{"parcel_id": "P-1", "carrier": "DPD", "tracking": "DPD0150"}]) == "short"


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
    assert shaped.assertions() == ["The agent tells the user there is no deposit.",
                                   "The agent tells the user the fee is 0."]


def test_a_judged_fact_is_named_after_the_latest_output_that_holds_it():
    """A plan listing read on the way holds the same 4.00 as the refill's copay the user asked for."""
    outputs = [[{"plan_id": "PLN-1", "tier3_copay": 4.0}], {"fill_id": "FIL-9", "copay": 4.0}]
    shaped = shape_answers(["4.00"], "You want your refill.", outputs)
    assert shaped.assertions() == ["The agent tells the user the copay is 4."]


@pytest.mark.parametrize("field,value,record,said", [
    ("valid_to", "2027-04-16", "railcard_id", "the railcard is valid until 16 April 2027"),
    ("graded_credits", "10", "student_id", "the number of graded credits is 10"),
    ("balance_due", "0", "booking_id", "the balance due is 0"),
    ("expires_on", "2029-06-18", "subscription_id", "the subscription expires on 18 June 2029"),
    ("departs_at", "9:30", "service_id", "the service departs at 9:30"),
    ("wind_gust_kmh", "42", None, "the wind gust is 42 km/h"),
    ("precip_probability_pct", "70", None, "the precipitation probability is 70%"),
    ("pickup_by", "2026-04-24", "fill_id", "the pickup deadline is 24 April 2026"),
    ("max_subscriptions", "3", None, "the maximum number of subscriptions is 3"),
    ("dishes[]", "potato salad", "menu_id", "potato salad is among the dishes"),
])
def test_a_judged_fact_is_said_in_words_not_with_its_field_label(field, value, record, said):
    assertion = Judged(value, "short", field, record).assertion()
    assert assertion == f"The agent tells the user {said}." and not raw_label(assertion, [{field.strip("[]"): value}])


@pytest.mark.parametrize("assertion,raw", [
    ("The agent tells the user the valid to: 2027-04-16.", True),
    ("The agent tells the user the graded credits: 10.", True),
    ("The agent does not act on the record with departs at 2026-07-15T20:30:00.", True),
    ("The agent says: the railcard is valid until 16 April 2027.", False),
    ("The agent tells the user the railcard is valid until 16 April 2027.", False),
    ("The agent tells the user the showing departs at 20:30.", False),
])
def test_raw_field_labels_are_told_from_words(assertion, raw):
    assert raw_label(assertion, [{"showing_id": "S-1", "valid_to": "x", "departs_at": "y"}]) == raw


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
        assert all(a.endswith(" 16 March 2026.") for a in shaped.nl_assertions[1:])
        assert shaped.communicate_info == tasks[0].evaluation_criteria.communicate_info


def test_the_gate_fails_an_nl_assertion_listed_twice(library_tasks):
    env, tasks = library_tasks
    said = "The agent tells the user the deposit is 0."
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
    assert shaped.evaluation_criteria.nl_assertions[-1].endswith("16 March 2026.")
    assert with_checkable_answers(shaped) == shaped


def test_the_gate_fails_an_answer_the_user_never_asks_for(library_tasks):
    env, tasks = library_tasks
    task = tasks[0]
    silent = task.user_scenario.instructions.model_copy(update={"task_instructions": "Borrow the book.",
                                                                "reason_for_call": "You want to borrow a book."})
    unasked = task.model_copy(update={"user_scenario": task.user_scenario.model_copy(update={"instructions": silent})})
    assert CheckabilityGate().check(GateContext(env, task)).passed
    assert "asks to be told nothing" in CheckabilityGate().check(GateContext(env, unasked)).reason


def test_the_gate_fails_an_nl_assertion_that_gives_a_raw_field_label(library_tasks):
    env, tasks = library_tasks
    for said, passes in (("The agent tells the user the due date: 2026-03-16.", False),
                         ("The agent tells the user the loan is due on 16 March 2026.", True)):
        criteria = tasks[0].evaluation_criteria.model_copy(update={"nl_assertions": [said]})
        verdict = CheckabilityGate().check(GateContext(env, tasks[0].model_copy(update={"evaluation_criteria": criteria})))
        assert verdict.passed == passes and (passes or "raw label" in verdict.reason)


def test_the_gate_fails_an_answer_another_shown_number_contains(library_tasks):
    env, tasks = library_tasks
    task = tasks[0]
    loan = task.evaluation_criteria.communicate_info[0]
    assert CheckabilityGate().check(GateContext(env, task)).passed
    part = _with_communicate(task, [loan[:-1]])  # "LN-00001" is in the loan id "LN-000012" the gold shows
    assert "another value the conversation shows" in CheckabilityGate().check(GateContext(env, part)).reason
