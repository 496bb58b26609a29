"""Asking for a validated answer: parsing, repair rounds, and what is kept when repairs fail."""

from __future__ import annotations

import json

import pytest

from llm_server import LLMTestServer
from toolscale.pipeline.llm import LLMClient, LLMConfig, Usage
from toolscale.pipeline.llm.answers import RowsAnswer, TaskAnswer
from toolscale.pipeline.llm.dialogue import MAX_PROBLEMS, Invalid, Problem, parse_answer, repair_prompt, solicit


def test_an_answer_in_a_code_fence_parses():
    answer = parse_answer('```json\n{"rows": [{"a": 1}]}\n```', RowsAnswer)
    assert answer.rows == [{"a": 1}]


@pytest.mark.parametrize("text, category, words", [
    ("", "empty_answer", "empty"),
    ('{"rows": [', "invalid_json", "not valid JSON"),
    ('{"rows": 3}', "schema", "rows: Input should be a valid list"),
    ('{"reason_for_call": "x"}', "schema", "a feasible task needs task_instructions, actions"),
])
def test_a_broken_answer_names_its_problem(text, category, words):
    answer_type = TaskAnswer if "reason_for_call" in text else RowsAnswer
    with pytest.raises(Invalid) as error:
        parse_answer(text, answer_type)
    assert error.value.problems[0].category == category
    assert words in error.value.problems[0].message


def scripted(body):
    """First answer: one good row and one bad; every repair: not JSON at all."""
    if len(body["messages"]) == 1:
        return {"content": json.dumps({"rows": [{"x": 1}, {"x": "bad"}]})}
    return {"content": "Sorry, here you go: {rows: oops"}


def keep_integers(answer: RowsAnswer, final: bool) -> list[dict]:
    good = [r for r in answer.rows if isinstance(r["x"], int)]
    if len(good) < len(answer.rows) and not final:
        raise Invalid([Problem("row_invalid", "x must be a whole number")])
    return good


def test_a_repair_that_makes_things_worse_falls_back_to_the_valid_part_of_an_earlier_answer():
    with LLMTestServer(fallback=scripted) as server:
        client = LLMClient(LLMConfig(base_url=server.base_url, model="m", cache_dir=None))
        usage = Usage("m", None)
        try:
            outcome = client.run(solicit(client, usage, "populate", [{"role": "user", "content": "rows please"}],
                                         RowsAnswer, keep_integers, rounds=2))
        finally:
            client.close()
    assert outcome.value == [{"x": 1}] and outcome.repairs == 2
    assert server.stats.requests == 3
    assert usage.report()["stages"]["populate"]["repair_rounds"] == 2


def test_the_repair_prompt_carries_the_validation_errors_back():
    seen = []

    def record(body):
        seen.append(body["messages"])
        return {"content": json.dumps({"rows": [{"x": "bad"}]})}

    with LLMTestServer(fallback=record) as server:
        client = LLMClient(LLMConfig(base_url=server.base_url, model="m", cache_dir=None))
        try:
            outcome = client.run(solicit(client, Usage("m", None), "populate", [{"role": "user", "content": "rows"}],
                                         RowsAnswer, keep_integers, rounds=1))
        finally:
            client.close()
    assert outcome.value == []  # the last round keeps what is valid: nothing
    assert [m["role"] for m in seen[1]] == ["user", "assistant", "user"]
    assert "x must be a whole number" in seen[1][-1]["content"]


def test_the_repair_prompt_groups_every_problem_by_field_and_counts_what_it_leaves_out():
    problems = [Problem("row_invalid", f"row {i}: x must be a whole number", f"rows.{i % 2}") for i in range(14)]
    text = repair_prompt([Problem("row_invalid", "3 rows given, 4 wanted", "rows"), *problems])
    assert text.count("- rows.0:") == 1 and text.count("- rows.1:") == 1 and text.count("- rows:") == 1
    assert text.index("- rows:") < text.index("3 rows given") < text.index("- rows.0:")
    assert text.count("x must be a whole number") == MAX_PROBLEMS - 1
    assert f"and {15 - MAX_PROBLEMS} more problems" in text


def test_a_schema_error_is_filed_under_the_list_item_it_is_in():
    with pytest.raises(Invalid) as error:
        parse_answer('{"reason_for_call": "r", "task_instructions": "t", "actions": [{"name": 3}, {"arguments": 1}]}',
                     TaskAnswer)
    assert {p.field for p in error.value.problems} == {"actions.0", "actions.1"}
