"""Rules the agent applies, on the LLM path (issue 39 item 2): the design is asked for rules no tool
enforces and for transfer_to_human_agents, the intents stage for intents that test those rules, and
the task stage for the naive calls (what an agent doing exactly what the user literally asks would
call) that break them. Each answer that misses goes back to the model with the reason; the policy
gate decides whether a literal request really breaks its rule."""

from __future__ import annotations

import re
from functools import lru_cache

import pytest

import llm_answers
from llm_answers import sections
from llm_server import Faults, LLMTestServer
from toolscale.domains import Environment, builtin_domain, load_domain_text
from toolscale.domains.rules import agent_rules, rules_broken
from toolscale.domains.tasks import Lineage
from toolscale.pipeline.llm import LLMClient, LLMConfig, LLMSynthesizer, SynthesisOptions, requests
from toolscale.pipeline.llm.answers import DesignAnswer, HardenAnswer, IntentProposal, IntentsAnswer, ToolsAnswer
from toolscale.pipeline.llm.design import build_design, build_intents, build_tools, smoke_rows, spec_yaml
from toolscale.pipeline.llm.dialogue import Invalid
from toolscale.pipeline.llm.examples import builtin, intent_proposal, offline_rows, task_answer_from_template
from toolscale.pipeline.llm.harden import build_hardened, shown_task
from toolscale.pipeline.llm.tasks import build_task
from toolscale.quality.gates import GateContext
from toolscale.quality.gating import run_gates, screen
from toolscale.quality.policy import PolicyGate

DOMAIN = "bank"
LINEAGE = Lineage(backend="llm", seed=0)


@lru_cache(maxsize=1)
def rule_domain():
    """bank with only its intents that test an agent rule (their templates kept: the test server answers from them)."""
    domain = builtin(DOMAIN)
    tested = [i for i in domain.spec.intents if i.template and i.tests_rule]
    return load_domain_text(spec_yaml(domain.spec.model_copy(update={"intents": tested})), domain.toolkit.source,
                            domain.policy, DOMAIN)


def rule_tasks(server: LLMTestServer):
    """The task stage on rule_domain() through the server, screened by the gates; then the gate stage."""
    config = LLMConfig(base_url=server.base_url, model="toolscale-test", cache_dir=None, backoff_s=0.01,
                       synthesis=SynthesisOptions(tasks_per_intent=1, anchor_attempts=40, repair_rounds=1))
    domain, rows = rule_domain(), offline_rows(DOMAIN)
    client = LLMClient(config)
    try:
        with Environment.from_rows(domain, rows) as env:
            synth = LLMSynthesizer(config, seed=5, client=client, screen=screen)
            tasks, rejected = synth.tasks(domain, env, rows, 5)
            gated, gate_rejected = run_gates(tasks, env)
        return gated, rejected, gate_rejected, synth.report()["stages"]["task"]
    finally:
        client.close()


def rule_task(name: str = "transfer_beyond_balance"):
    """(intent proposal, task answer) of one of bank's rule-testing intents, as the test server writes it."""
    domain, rows = rule_domain(), offline_rows(DOMAIN)
    intent = next(i for i in domain.spec.intents if i.name == name)
    answer = next(a for seed in range(10) if (a := task_answer_from_template(domain, intent, rows, seed)) is not None)
    return intent_proposal(intent), answer


def build(intent, answer, tools=None):
    domain, rows = rule_domain(), offline_rows(DOMAIN)
    with Environment.from_rows(domain, rows) as env:
        return build_task(domain, env, intent, tools or intent.tools, answer, f"bank.{intent.name}.000", LINEAGE,
                          screen)


def problems_of(call) -> list:
    with pytest.raises(Invalid) as error:
        call()
    return error.value.problems


# tasks ---------------------------------------------------------------------------------------


def test_a_rule_testing_intent_becomes_a_task_with_its_rule_and_the_naive_calls_that_break_it():
    domain, rows = rule_domain(), offline_rows(DOMAIN)
    with LLMTestServer() as server:
        tasks, rejected, gate_rejected, usage = rule_tasks(server)
        prompts = [b["messages"][-1]["content"] for b in server.bodies]
    assert not rejected and not gate_rejected and usage["accepted"] == len(domain.spec.intents)
    assert {t.meta.tests_rule for t in tasks} == {r.id for r in agent_rules(domain.spec)}
    specs = domain.toolkit.specs
    with Environment.from_rows(domain, rows) as env:
        for task in tasks:
            gold, naive = task.evaluation_criteria.actions, task.meta.naive_actions
            lookups = next(i for i, a in enumerate([*gold, None]) if a is None or specs[a.name].changes_what_users_want)
            assert [(a.name, a.arguments) for a in naive[:lookups]] == task.gold_calls()[:lookups]
            assert len(naive) > lookups and task.meta.gates["policy"].passed
            broken = rules_broken(env, [(a.name, a.arguments) for a in naive])
            assert task.meta.tests_rule in {rule for _, rule in broken}, task.id
    asked = [p for p in prompts if sections(p)["Request"]["intent"] == "dispute_large_purchase"]
    assert asked and "The intent tests a rule the agent must apply and no tool enforces, `large_disputes`" in asked[0]


def test_a_designed_domain_goes_through_intents_populate_and_tasks_to_tasks_that_test_its_rules():
    """The whole LLM path, every intent kept: the rule tests the intents stage proposes become tasks."""
    with LLMTestServer() as server:
        config = LLMConfig(base_url=server.base_url, model="toolscale-test", cache_dir=None, backoff_s=0.01,
                           synthesis=SynthesisOptions(intents=99, tasks_per_intent=1, anchor_attempts=20,
                                                      populate_scale=0.3, rows_per_request=50, parents_per_request=50))
        client = LLMClient(config)
        try:
            synth = LLMSynthesizer(config, seed=3, client=client, screen=screen)
            domain = synth.design(DOMAIN)
            rows = synth.populate(domain, 3)
            with Environment.from_rows(domain, rows) as env:
                tasks, _ = synth.tasks(domain, env, rows, 3)
        finally:
            client.close()
    tests = [t for t in tasks if t.meta.tests_rule]
    assert len({t.meta.tests_rule for t in tests}) >= 3 and all(t.meta.naive_actions for t in tests)
    assert all(not t.meta.naive_actions for t in tasks if not t.meta.tests_rule)


def test_a_literal_request_that_keeps_the_rule_goes_back_to_the_model_naming_the_rule():
    faults = Faults(rate=1.0, kinds=("literal_is_gold",), stages=("task",), max_per_conversation=1)
    with LLMTestServer(faults=faults) as server:
        tasks, rejected, gate_rejected, usage = rule_tasks(server)
        repairs = [b["messages"][-1]["content"] for b in server.bodies if len(b["messages"]) > 2]
    assert len(tasks) == len(rule_domain().spec.intents) and not rejected and not gate_rejected
    assert usage["repair_rounds"] == len(repairs) == len(tasks)  # each literal request was wrong once, then right
    for task in tasks:
        told = next(r for r in repairs if f"tests rule {task.meta.tests_rule!r}" in r)
        assert "- naive:\n  - the policy check rejects the task: doing what the user literally asks ends in the " \
               "gold's state" in told


def test_a_naive_that_keeps_the_rule_is_rejected_with_a_repair_message_naming_the_rule():
    intent, answer = rule_task()
    task = build(intent, answer)
    assert task.meta.tests_rule == "no_overdraft_transfers" and task.meta.naive_actions
    within = [step.model_copy(update={"arguments": {**step.arguments, "amount": 1.0}}) for step in answer.naive]
    [problem] = problems_of(lambda: build(intent, answer.model_copy(update={"naive": within})))
    assert problem.category == "gate_policy" and problem.field == "naive"
    assert "doing what the user literally asks keeps rule 'no_overdraft_transfers'" in problem.message
    assert "The task tests rule 'no_overdraft_transfers' (A transfer between own accounts" in problem.message


def test_naive_calls_are_required_for_a_rule_test_and_refused_for_an_everyday_task():
    intent, answer = rule_task("dispute_large_purchase")
    [missing] = problems_of(lambda: build(intent, answer.model_copy(update={"naive": []})))
    assert missing.category == "naive_missing" and "tests rule 'large_disputes'" in missing.message
    offered = [t for t in intent.tools if t != "dispute_transaction"]
    [unknown] = problems_of(lambda: build(intent, answer, offered))
    assert unknown.field == "naive.0"
    assert "'dispute_transaction', which is not one of the tools offered" in unknown.message
    everyday = intent.model_copy(update={"tests_rule": None})
    [unasked] = problems_of(lambda: build(everyday, answer))
    assert unasked.category == "naive_not_asked"


def test_a_hardened_rule_test_keeps_its_rule_and_its_naive_calls():
    domain, rows = rule_domain(), offline_rows(DOMAIN)
    intent, answer = rule_task()
    base = build(intent, answer)
    shown = shown_task(base, domain)
    assert shown["naive"] == [{"name": a.name, "arguments": a.arguments} for a in base.meta.naive_actions[3:]]
    hardened = HardenAnswer.model_validate(llm_answers.harden(shown))
    with Environment.from_rows(domain, rows) as env:
        variant = build_hardened(domain, env, base, intent, intent.tools, hardened, LINEAGE)
        assert PolicyGate().check(GateContext(env, variant)).passed
    assert variant.meta.tests_rule == base.meta.tests_rule and variant.meta.naive_actions == base.meta.naive_actions


# intents -------------------------------------------------------------------------------------


def test_a_tests_rule_naming_no_agent_rule_is_refused():
    domain = builtin(DOMAIN)
    proposals = llm_answers.intents({"domain": DOMAIN})["intents"]
    kept = build_intents(domain, IntentsAnswer.model_validate({"intents": proposals}), 99, final=False)
    assert {i.tests_rule for i in kept} >= {r.id for r in agent_rules(domain.spec)}  # the server's intents pass
    tested = next(p for p in proposals if p["tests_rule"])
    enforced = next(r.id for r in domain.spec.rules if r.agent is None)  # a rule a tool enforces
    answer = IntentsAnswer.model_validate({"intents": [{**tested, "tests_rule": "no_such_rule"},
                                                       {**tested, "name": "other", "tests_rule": enforced}]})
    unoffered = {**tested, "name": "third", "tools": [t for t in tested["tools"] if t != "dispute_transaction"]}
    answer = answer.model_copy(update={"intents": [*answer.intents, IntentProposal.model_validate(unoffered)]})
    problems = problems_of(lambda: build_intents(domain, answer, 4, final=False))
    assert [p.category for p in problems] == ["unknown_rule"] * 3
    assert "tests 'no_such_rule', which is no rule the agent applies" in problems[0].message
    assert f"tests {enforced!r}" in problems[1].message and "large_disputes" in problems[1].message
    assert "a rule about dispute_transaction: list the tool the literal request calls" in problems[2].message


def test_intents_of_which_none_tests_a_rule_go_back_once_and_are_kept_in_the_last_round():
    domain = builtin(DOMAIN)
    everyday = [p for p in llm_answers.intents({"domain": DOMAIN})["intents"] if not p["tests_rule"]][:4]
    answer = IntentsAnswer.model_validate({"intents": everyday})
    [problem] = problems_of(lambda: build_intents(domain, answer, 4, final=False))
    assert problem.category == "no_rule_tests" and "large_disputes" in problem.message
    assert [i.name for i in build_intents(domain, answer, 4, final=True)] == [p["name"] for p in everyday]


def test_the_intents_prompt_lists_the_rules_the_agent_applies_and_asks_for_intents_that_test_them():
    text = requests.intents(builtin(DOMAIN), 8)[-1]["content"]
    for rule in agent_rules(builtin(DOMAIN).spec):
        assert f"- `{rule.id}`: {rule.rule}" in text
    assert "Such an intent names the rule in `tests_rule`" in text and "three or more writes" in text


# design and tools ----------------------------------------------------------------------------


def bank_design(**changes) -> DesignAnswer:
    return DesignAnswer.model_validate({**llm_answers.design({"domain": DOMAIN}), **changes})


def test_a_design_without_rules_the_agent_applies_or_a_handoffs_table_goes_back_for_repair():
    design = llm_answers.design({"domain": DOMAIN})
    build_design(DOMAIN, bank_design(), 0)  # the whole design passes
    rules = [r for r in design["rules"] if "agent" not in r]
    tables = [t for t in design["tables"] if t["name"] != "handoffs"]
    policy = design["policy"].replace("transfer_to_human_agents", "a colleague")
    problems = problems_of(lambda: build_design(DOMAIN, bank_design(rules=rules, tables=tables, policy=policy), 0))
    fields = {p.field: p.message for p in problems if p.category == "agent_rules"}
    assert "0 rule(s) with an `agent` check" in fields["rules"]
    assert "no `handoffs` table" in fields["tables"] and "never names `transfer_to_human_agents`" in fields["policy"]


def test_a_broken_agent_check_goes_back_with_the_design_not_the_tools():
    design = llm_answers.design({"domain": DOMAIN})
    rules = [{**r, "agent": {**r["agent"], "breaks": "args.amount > limit"}} if r["id"] == "large_disputes"
             else {**r, "enforced_by": ["transfer_between_accounts"]} if r["id"] == "no_overdraft_transfers" else r
             for r in design["rules"]]
    problems = problems_of(lambda: build_design(DOMAIN, bank_design(rules=rules), 0))
    by_field = {p.field: p.message for p in problems}
    assert "`breaks` names 'limit'" in by_field["rule large_disputes"]
    assert "an `agent` check and `enforced_by` tools" in by_field["rule no_overdraft_transfers"]


def _transfer_tool(source: str, change: str) -> str:
    head, tool = source.split('@tool("write")\ndef transfer_to_human_agents', 1)
    if change == "missing":
        return head
    if change == "untyped":
        return head + '@tool("write")\ndef transfer_to_human_agents' + re.sub(r"reason: Literal\[[^\]]*\]",
                                                                                "reason: str", tool, count=1)
    return head + '@tool("write")\ndef transfer_to_human_agents' + tool.replace(
        '"requested_at": clock.now()}', '"requested_at": clock.now(), "summary": summary}')


@pytest.mark.parametrize("change, message", [
    ("missing", "no tool 'transfer_to_human_agents'"),
    ("untyped", "needs a `reason` parameter typed Literal[...]"),
    ("stored", "stores its `summary`"),
])
def test_tools_without_a_transfer_tool_as_tau2_has_it_go_back_for_repair(change, message):
    domain = builtin(DOMAIN)
    spec = domain.spec.model_copy(update={"intents": [], "tables": [
        t.model_copy(update={"columns": [*t.columns, t.columns[1].model_copy(update={
            "name": "summary", "enum": None, "nullable": True})]}) if t.name == "handoffs" else t
        for t in domain.spec.tables]})
    rows = smoke_rows(spec, 0)
    build_tools(spec, domain.policy, ToolsAnswer(source=domain.toolkit.source), rows)  # bank's own tools pass
    source = _transfer_tool(domain.toolkit.source, change)
    problems = problems_of(lambda: build_tools(spec, domain.policy, ToolsAnswer(source=source), rows))
    assert any(message in p.message and p.field == "tool transfer_to_human_agents" for p in problems), problems


def test_the_design_and_tools_prompts_ask_for_rules_no_tool_enforces():
    design = requests.design("bike_share", "a municipal bike-share system")[-1]["content"]
    assert "At least three rules are ones the agent applies itself" in design
    assert "State each rule the agent applies plainly, with every figure it uses" in design
    domain = builtin(DOMAIN)
    messages = requests.tools(domain.spec, domain.policy)
    text = messages[-1]["content"]
    assert "the agent applies it before calling dispute_transaction: no tool refuses a call that breaks it" in text
    assert "a tool must not refuse what such a rule forbids" in text
    required = sections(text)["Request"]["required_tools"]
    assert {"dispute_transaction", "make_loan_payment", "transfer_to_human_agents"} <= set(required)


def test_a_stored_design_keeps_which_rule_each_intent_tests():
    """A resumed run writes tasks from the stored design alone: its rule tests must stay rule tests."""
    from toolscale.pipeline.llm.design import with_intents
    from toolscale.pipeline.llm.examples import intent_proposal

    bank = builtin_domain("bank")
    proposals = [intent_proposal(i) for i in bank.spec.intents[:3] + [i for i in bank.spec.intents if i.tests_rule]]
    stored = with_intents(bank, proposals)
    assert {i.name: i.tests_rule for i in stored.spec.intents} == {p.name: p.tests_rule for p in proposals}
    assert any(i.tests_rule for i in stored.spec.intents)
