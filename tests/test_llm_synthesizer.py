"""The LLM synthesizer end to end against a real local OpenAI-compatible server: every answer is
validated like the offline path's artifacts, broken answers are repaired or end as recorded
rejections, faults lose nothing, and a warm cache sends nothing."""

from __future__ import annotations

import json

import pytest

from llm_answers import DISTRACTOR
from llm_server import CONTENT_FAULTS, Faults, LLMTestServer
import yaml

from toolscale.domains import DomainError, Environment, load_domain_text, replay
from toolscale.pipeline.llm import prompts
from toolscale.pipeline.llm.answers import HardenAnswer, IntentProposal, TaskAnswer
from toolscale.pipeline.llm import synthesizer
from toolscale.pipeline.llm.dialogue import Invalid, solicit
from toolscale.pipeline.llm.examples import builtin
from toolscale.pipeline.llm.harden import build_hardened, shown_task
from toolscale.pipeline.llm import LLMClient, LLMConfig, LLMStageError, LLMSynthesizer, SynthesisOptions

DOMAIN = "movie"
SMALL = SynthesisOptions(intents=4, tasks_per_intent=2, populate_scale=0.1, rows_per_request=4, parents_per_request=4)


def synthesize(server: LLMTestServer, cache_dir=None, name: str = DOMAIN, **options):
    """design, populate and tasks for one domain; (domain, rows, tasks, rejected, usage report)."""
    config = LLMConfig(base_url=server.base_url, model="toolscale-test", cache_dir=cache_dir, backoff_s=0.01,
                       timeout_s=options.pop("timeout_s", 10.0), max_in_flight=options.pop("max_in_flight", 16),
                       synthesis=SMALL.model_copy(update=options))
    client = LLMClient(config)
    try:
        synth = LLMSynthesizer(config, seed=3, client=client)
        domain = synth.design(name)
        rows = synth.populate(domain, 3)
        with Environment.from_rows(domain, rows) as env:
            tasks, rejected = synth.tasks(domain, env, rows, 3)
        return domain, rows, tasks, rejected, synth.report()
    finally:
        client.close()


def dumps(records) -> list[str]:
    return [json.dumps(r.model_dump(mode="json"), sort_keys=True) for r in records]


@pytest.fixture(scope="module")
def clean_run():
    with LLMTestServer() as server:
        return synthesize(server), server.stats


def test_a_domain_is_designed_populated_and_tasked_through_the_server(clean_run):
    (domain, rows, tasks, rejected, usage), stats = clean_run
    assert domain.name == DOMAIN and len(domain.spec.intents) == 4 and domain.toolkit.specs
    assert sum(len(r) for r in rows.values()) > 50
    assert tasks, [r.reason for r in rejected]
    with Environment.from_rows(domain, rows) as env:
        for task in tasks:
            assert task.meta.lineage.backend == "llm" and task.meta.lineage.prompt_digest
            with env.fork() as fork:
                results = replay(fork, task.gold_calls())
                assert all(r.ok for r in results)
                assert [r.output for r in results] == task.meta.expected_outputs
                assert fork.state_hash() == task.meta.final_state_hash
    assert all(r.gate == "synthesis" and r.reason.startswith("llm ") for r in rejected)
    assert set(usage["stages"]) == {"design", "tools", "intents", "populate", "task"}
    assert usage["totals"]["requests"] == stats.requests
    assert usage["totals"]["prompt_tokens"] > 0


def test_every_broken_answer_is_repaired_and_the_result_is_the_same(clean_run):
    faults = Faults(rate=1.0, kinds=("malformed_json", "schema_invalid", "hallucinated_tool", "bad_tool_source"),
                    max_per_conversation=1)
    with LLMTestServer(faults=faults) as server:
        domain, rows, tasks, rejected, usage = synthesize(server)
    _, clean_rows, clean_tasks, clean_rejected, _ = clean_run[0]
    faulted = sum(server.stats.faults.values())
    assert faulted > 10 and usage["totals"]["repair_rounds"] >= faulted  # each broken first answer: a repair
    assert rows == clean_rows
    assert dumps(tasks) == dumps(clean_tasks)
    assert [r.task.id for r in rejected] == [r.task.id for r in clean_rejected]


def test_thirty_percent_faulted_requests_finish_and_lose_nothing(clean_run):
    # the client's timeout must outlast the server's queue (it answers one request at a time)
    with LLMTestServer(faults=Faults(rate=0.3, timeout_s=1.5, seed=5)) as server:
        _, rows, tasks, rejected, usage = synthesize(server, timeout_s=1.0, max_in_flight=4)
    _, clean_rows, clean_tasks, clean_rejected, _ = clean_run[0]
    kinds = set(server.stats.faults)
    assert {"429", "500", "timeout"} & kinds and {"malformed_json", "schema_invalid"} & kinds
    assert usage["totals"]["retries"] > 0 and usage["totals"]["repair_rounds"] > 0
    assert rows == clean_rows and dumps(tasks) == dumps(clean_tasks)
    assert [r.task.id for r in rejected] == [r.task.id for r in clean_rejected]


def test_the_default_repair_budget_saves_all_but_one_in_forty_conversations_at_a_30_percent_fault_rate(monkeypatch):
    """A content fault in 30% of the answers, repairs included (config.py says how the default was
    chosen): at most one conversation in 40 that could succeed still needs more repair rounds."""
    needed = []

    async def recording(*args, **kwargs):
        outcome = await solicit(*args, **kwargs)
        if outcome.ok:
            needed.append(outcome.repairs)
        return outcome

    monkeypatch.setattr(synthesizer, "solicit", recording)
    for seed in range(4):  # four draws of the faults: 120 conversations
        with LLMTestServer(faults=Faults(rate=0.3, kinds=CONTENT_FAULTS, max_per_conversation=99, seed=seed)) as server:
            synthesize(server, repair_rounds=8)
    budget = SynthesisOptions().repair_rounds
    assert len(needed) >= 100 and max(needed) > 1  # the faults did need repairs
    assert sum(n > budget for n in needed) <= len(needed) / 40


def test_tasks_that_stay_broken_end_as_recorded_rejections_with_their_reason():
    faults = Faults(rate=1.0, kinds=("hallucinated_tool",), stages=("task",), max_per_conversation=99)
    with LLMTestServer(faults=faults) as server:
        _, _, tasks, rejected, usage = synthesize(server, repair_rounds=1)
    assert not tasks
    unknown = [r for r in rejected if "unknown_tool" in r.reason]
    assert unknown and all("after 1 repair round" in r.reason and "lookup_everything" in r.reason for r in unknown)
    assert unknown[0].task.evaluation_criteria.actions[0].name == "lookup_everything"  # the answer, kept
    assert usage["stages"]["task"]["rejected"]["unknown_tool"] == len(unknown)


def test_tools_that_never_compile_fail_the_domain_with_the_compiler_message():
    faults = Faults(rate=1.0, kinds=("bad_tool_source",), stages=("tools",), max_per_conversation=99)
    with LLMTestServer(faults=faults) as server:
        message = r"no valid tools: llm tool_compile after 3 repair rounds: .*tools.py:1: only functions"
        with pytest.raises(LLMStageError, match=message):
            synthesize(server)
        assert server.stats.by_stage["tools"] == 4


def test_rows_that_stay_malformed_leave_their_tables_empty_and_the_run_goes_on():
    faults = Faults(rate=1.0, kinds=("malformed_json",), stages=("populate",), max_per_conversation=99)
    with LLMTestServer(faults=faults) as server:
        _, rows, tasks, rejected, usage = synthesize(server, repair_rounds=0)
    assert not any(rows[t] for t in ("members", "screens", "showtimes"))
    assert usage["stages"]["populate"]["rejected"]["invalid_json"] == server.stats.by_stage["populate"]
    assert rows["movies"] and rows["cinemas"]  # reference data comes with the design, not from the model
    assert any("no_rows: table 'members'" in r.reason for r in rejected)


def test_a_rerun_with_a_warm_cache_sends_no_request(tmp_path, clean_run):
    with LLMTestServer() as server:
        first = synthesize(server, cache_dir=tmp_path)
        sent = server.stats.requests
        second = synthesize(server, cache_dir=tmp_path)
        assert server.stats.requests == sent
    assert second[4]["totals"]["requests"] == 0
    assert second[4]["totals"]["cache_hits"] == first[4]["totals"]["requests"]
    assert dumps(second[2]) == dumps(first[2]) == dumps(clean_run[0][2])


def test_a_stored_design_is_tasked_without_asking_for_its_intents_again(clean_run):
    (domain, rows, tasks, _, _), _ = clean_run
    stored = load_domain_text(*(domain.sources[f] for f in ("domain.yaml", "tools.py", "policy.md")), domain.name)
    assert all(i.anchor_table and i.tools for i in stored.spec.intents)  # the design keeps them
    config = LLMConfig(base_url="", model="toolscale-test", cache_dir=None, synthesis=SMALL)
    with LLMTestServer() as server:
        config = config.model_copy(update={"base_url": server.base_url})
        client = LLMClient(config)
        try:
            synth = LLMSynthesizer(config, seed=3, client=client)  # a fresh instance: it remembers nothing
            with Environment.from_rows(stored, rows) as env:
                again, _ = synth.tasks(stored, env, rows, 3)
        finally:
            client.close()
        assert set(synth.report()["stages"]) == {"task"}
    assert dumps(again) == dumps(tasks)


def test_intent_anchors_and_tools_are_checked_when_a_domain_loads():
    domain = builtin("bank")
    spec = yaml.safe_load(domain.sources["domain.yaml"])
    spec["intents"][0].update(anchor_table="nowhere")
    with pytest.raises(DomainError, match="anchor_table 'nowhere' is not a table"):
        load_domain_text(yaml.safe_dump(spec), domain.toolkit.source, domain.policy, "bank")
    spec["intents"][0].update(anchor_table=spec["tables"][0]["name"], tools=["no_such_tool"])
    with pytest.raises(DomainError, match="unknown tool 'no_such_tool'"):
        load_domain_text(yaml.safe_dump(spec), domain.toolkit.source, domain.policy, "bank")


def test_a_new_domain_is_designed_from_its_brief():
    with LLMTestServer() as server:
        domain, rows, tasks, _, _ = synthesize(server, name="pet_grooming_salon")
    assert domain.name == "pet_grooming_salon" and domain.spec.intents
    assert tasks and all(t.id.startswith("pet_grooming_salon.") for t in tasks)


def harden(server: LLMTestServer, domain, rows, tasks, repair_rounds: int = 2):
    config = LLMConfig(base_url=server.base_url, model="toolscale-test", cache_dir=None, backoff_s=0.01,
                       timeout_s=10.0, synthesis=SMALL.model_copy(update={"repair_rounds": repair_rounds}))
    client = LLMClient(config)
    try:
        synth = LLMSynthesizer(config, seed=3, client=client)
        with Environment.from_rows(domain, rows) as env:
            hardened, rejected = synth.harden(domain, env, tasks, 3)
        return hardened, rejected, synth.report()
    finally:
        client.close()


def test_the_model_rewrites_a_share_of_the_tasks_harder_and_every_variant_replays(clean_run):
    (domain, rows, tasks, _, _), _ = clean_run
    with LLMTestServer() as server:
        hardened, rejected, usage = harden(server, domain, rows, tasks)
    variants = [t for t in hardened if t.id.endswith(".hard")]
    assert not rejected and len(variants) == round(len(tasks) * SMALL.harden_share) > 0
    assert len(hardened) == len(tasks)  # each variant replaced its base
    assert {t.id.removesuffix(".hard") for t in variants}.isdisjoint(t.id for t in hardened)
    assert set(usage["stages"]) == {"harden"}
    with Environment.from_rows(domain, rows) as env:
        for task in variants:
            assert task.meta.hardening == ["distractor"]
            assert DISTRACTOR in task.user_scenario.instructions.task_instructions
            assert task.meta.lineage.prompt_digest == prompts.digest("harden")
            with env.fork() as fork:
                results = replay(fork, task.gold_calls())
                assert all(r.ok for r in results) and fork.state_hash() == task.meta.final_state_hash
    with LLMTestServer() as server:
        assert dumps(harden(server, domain, rows, tasks)[0]) == dumps(hardened)  # same seed, same variants


def test_variants_that_stay_broken_are_rejected_with_their_reason_and_their_bases_kept(clean_run):
    (domain, rows, tasks, _, _), _ = clean_run
    faults = Faults(rate=1.0, kinds=("hallucinated_tool",), max_per_conversation=99, stages=("harden",))
    with LLMTestServer(faults=faults) as server:
        hardened, rejected, usage = harden(server, domain, rows, tasks, repair_rounds=1)
    assert dumps(hardened) == dumps(tasks)
    assert len(rejected) == round(len(tasks) * SMALL.harden_share)
    for r in rejected:
        assert r.gate == "synthesis" and r.task.id.endswith(".hard")
        assert r.reason.startswith("hardened variant: llm unknown_tool after 1 repair round: action 0 calls "
                                   "'lookup_everything'")
    assert usage["totals"]["requests"] == 2 * len(rejected)


def test_a_variant_must_change_the_task_and_a_composition_must_add_calls(clean_run):
    (domain, rows, tasks, _, _), _ = clean_run
    base = tasks[0]
    shown = shown_task(base, domain)
    same = TaskAnswer(**{k: shown[k] for k in ("reason_for_call", "known_info", "unknown_info", "task_instructions",
                                               "nl_assertions")},
                      actions=shown["actions"], communicate=base.evaluation_criteria.communicate_info)
    intent = IntentProposal(name=base.meta.intent, description="d", kind=base.meta.kind,
                            anchor_table=domain.spec.tables[0].name, tools=[a["name"] for a in shown["actions"]])
    lineage = base.meta.lineage
    tools = list(domain.toolkit.specs)
    with Environment.from_rows(domain, rows) as env:
        with pytest.raises(Invalid, match="the task is the one given"):
            build_hardened(domain, env, base, intent, tools, HardenAnswer(steps=["distractor"], task=same), lineage)
        longer = same.model_copy(update={"task_instructions": same.task_instructions + " Also, hurry."})
        with pytest.raises(Invalid, match="a composition adds a second request"):
            build_hardened(domain, env, base, intent, tools, HardenAnswer(steps=["composition"], task=longer),
                           lineage)
        variant = build_hardened(domain, env, base, intent, tools, HardenAnswer(steps=["distractor"], task=longer),
                                 lineage)
    assert variant.id == f"{base.id}.hard" and variant.meta.intent == base.meta.intent
    assert variant.meta.expected_outputs == base.meta.expected_outputs
