"""Regressions for what a capable model met on the LLM path (notes/audit-2026-12-01/llm_real.md):
one validation error per repair round, template values of the wrong type ('15.0' text in a number
column, 'true' in a boolean one, 3001 in a text one), and stage retries that replayed the cached
conversation that had just failed."""

from __future__ import annotations

import json

import pytest

import llm_answers
from llm_server import Faults, LLMTestServer, corrupt
from toolscale.pipeline.populate import populate
from toolscale.pipeline.llm import LLMClient, LLMConfig, LLMStageError, LLMSynthesizer, SynthesisOptions
from toolscale.pipeline.llm.answers import DesignAnswer
from toolscale.pipeline.llm.design import build_design
from toolscale.pipeline.llm.dialogue import Invalid

DOMAIN = "movie"


def designer(server: LLMTestServer, cache_dir=None, repair_rounds: int = 1) -> tuple[LLMSynthesizer, LLMClient]:
    config = LLMConfig(base_url=server.base_url, model="toolscale-test", cache_dir=cache_dir, backoff_s=0.01,
                       synthesis=SynthesisOptions(intents=4, repair_rounds=repair_rounds))
    client = LLMClient(config)
    return LLMSynthesizer(config, seed=3, client=client), client


def design(server: LLMTestServer, **options):
    """(domain or the LLMStageError, usage report of the design stage)."""
    synth, client = designer(server, **options)
    try:
        try:
            return synth.design(DOMAIN), synth.report()["stages"]["design"]
        except LLMStageError as exc:
            return exc, synth.report()["stages"]["design"]
    finally:
        client.close()


def design_faults(kind: str, per_conversation: int = 1) -> Faults:
    return Faults(rate=1.0, kinds=(kind,), stages=("design",), max_per_conversation=per_conversation)


def test_the_audits_templates_are_accepted_first_time_with_their_values_typed():
    with LLMTestServer(faults=design_faults("typed_templates")) as server:
        domain, usage = design(server)
    assert server.stats.faults["typed_templates"] == 1
    assert usage["repair_rounds"] == 0 and usage["accepted"] == 1
    table = next(t for t in domain.spec.tables if "audit_fee" in {c.name for c in t.columns})
    made = populate(domain.spec, 3)[table.name]  # the offline path: the same conversion
    assert [r["audit_code"] for r in made[:2]] == ["3001", "3008"]
    assert [r["audit_fee"] for r in made[2:4]] == [2.5, 15.0]
    assert [r["audit_renews"] for r in made[:2]] == [False, True]


def test_a_design_with_three_bad_hints_hears_of_all_three_and_is_fixed_in_one_round():
    with LLMTestServer(faults=design_faults("bad_gen_hints")) as server:
        domain, usage = design(server, repair_rounds=1)
    assert not isinstance(domain, Exception), domain
    assert usage["repair_rounds"] == 1 and usage["requests"] == 2
    repair = server.bodies[1]["messages"][-1]["content"]
    for column, words in (("bad_flag", "must be true or false, got 'maybe'"),
                          ("bad_fee", "must be a finite number, got 'about 15'"),
                          ("bad_count", "'unknown_name' is undefined")):
        assert column in repair and words in repair
    tables = [line for line in repair.splitlines() if line.startswith("- table ")]
    assert len(tables) == 3  # grouped: one heading per table


def test_all_gen_hint_problems_come_back_from_one_validation():
    text = corrupt("bad_gen_hints", "design", llm_answers.design({"domain": DOMAIN}))
    with pytest.raises(Invalid) as error:
        build_design(DOMAIN, DesignAnswer.model_validate_json(text), seed=3)
    problems = error.value.problems
    assert len(problems) == 3 and {p.category for p in problems} == {"generation_hint"}
    assert len({p.field for p in problems}) == 3 and all(p.field.startswith("table ") for p in problems)


def test_a_stage_retry_asks_afresh_instead_of_replaying_the_cache(tmp_path):
    with LLMTestServer(faults=design_faults("bad_gen_hints", per_conversation=99)) as server:
        synth, client = designer(server, cache_dir=tmp_path, repair_rounds=0)
        try:
            with pytest.raises(LLMStageError, match="the gen hints cannot fill the tables"):
                synth.design(DOMAIN)
            with pytest.raises(LLMStageError, match="the gen hints cannot fill the tables"):  # the flow's retry: same instance
                synth.design(DOMAIN)
            usage = synth.report()["stages"]["design"]
        finally:
            client.close()
        assert server.stats.requests == 2 and server.bodies[0]["seed"] != server.bodies[1]["seed"]
        assert usage["requests"] == 2 and usage["cache_hits"] == 0 and usage["stage_retries"] == 1
        assert usage["rejected"] == {"generation_hint": 2}
        again, client = designer(server, cache_dir=tmp_path, repair_rounds=0)  # a rerun: a first attempt
        try:
            with pytest.raises(LLMStageError):
                again.design(DOMAIN)
        finally:
            client.close()
        assert server.stats.requests == 2  # the first attempt's request is the one cached
        assert again.report()["stages"]["design"]["cache_hits"] == 1


def test_every_table_whose_rows_break_a_constraint_is_named_and_the_tables_pointing_at_them_are_not_blamed():
    design = llm_answers.design({"domain": DOMAIN})
    for table in design["tables"]:
        if table["name"] in ("movies", "concessions"):  # a fixed row twice: its key and unique title repeat
            table["data"] = [*table["data"], table["data"][0]]
    with pytest.raises(Invalid) as error:
        build_design(DOMAIN, DesignAnswer.model_validate(design), seed=3)
    assert [(p.field, p.message.split(": ", 1)[1]) for p in error.value.problems] == [
        ("table movies", "its rows break a constraint: UNIQUE constraint failed: movies.title"),
        ("table concessions", "its rows break a constraint: UNIQUE constraint failed: concessions.name")]


def test_a_reference_column_with_a_gen_hint_is_refused_with_the_other_problems():
    """The audit's model gave a foreign key a template too, and nothing said the template is never used."""
    design = json.loads(corrupt("bad_gen_hints", "design", llm_answers.design({"domain": DOMAIN})))
    screens = next(t for t in design["tables"] if t["name"] == "screens")
    cinema = next(c for c in screens["columns"] if c["name"] == "cinema_id")
    cinema["gen"] = {"template": "CIN-{{ '%06d' % (seq + 1) }}"}
    with pytest.raises(Invalid) as error:
        build_design(DOMAIN, DesignAnswer.model_validate(design), seed=3)
    messages = [p.message for p in error.value.problems]
    assert messages[0] == ("screens.cinema_id references cinemas.cinema_id, so its value is a key of that table: "
                           "remove its gen")
    assert len(messages) == 4  # and the three bad hints
