"""Regressions for what a capable model met on the LLM path's later stages (notes/audit-2026-12-01/
llm_real2.md): anchors that ignore the intent's premise, per-task tool lists without the lookup a
record's state calls for, populate batches that see neither the rows their keys point at nor each
other's positions, a rejected hardened variant that took its verified base with it, a wrapped
docstring summary cut in two, and a tools compiler that reported one error per repair round."""

from __future__ import annotations

import json
import random
from datetime import timedelta

import pytest

from llm_answers import sections
from llm_server import Faults, LLMTestServer
from toolscale.domains import DomainError, Environment, ToolCompileError, load_domain_text
from toolscale.domains.answers import answer_form
from toolscale.domains.matching import appears_in, normalize_text
from toolscale.domains.tasks import Lineage
from toolscale.domains.toolkit import build_toolkit
from toolscale.pipeline.llm import LLMClient, LLMConfig, LLMSynthesizer, SynthesisOptions
from toolscale.pipeline.llm import requests
from toolscale.pipeline.llm.answers import HardenAnswer, IntentProposal, IntentsAnswer, TaskAnswer
from toolscale.pipeline.llm.design import build_intents, spec_yaml, subset_of_tools, with_intents
from toolscale.pipeline.llm.dialogue import Invalid
from toolscale.pipeline.llm.examples import builtin, intent_proposal, offline_rows
from toolscale.pipeline.llm.rows import Batch, choices, plan
from toolscale.pipeline.llm.slices import db_slice
from toolscale.pipeline.llm.synthesizer import anchor_pool
from toolscale.pipeline.llm.harden import anchor_record, build_hardened
from toolscale.pipeline.llm.tasks import build_task, unbuilt_task
from toolscale.quality import gating
from toolscale.quality.gating import run_gates, screen

DOMAIN = "bank"


def proposal(**fields) -> IntentProposal:
    base = {"name": "close_account", "description": "A customer closes one of their accounts.", "kind": "write",
            "anchor_table": "customers", "tools": ["find_customer_by_email", "list_accounts", "close_account"]}
    return IntentProposal.model_validate({**base, **fields})


# premises ------------------------------------------------------------------------------------


def test_a_premise_naming_a_missing_column_or_an_unknown_name_is_listed_for_repair():
    domain = builtin(DOMAIN)
    answer = IntentsAnswer(intents=[proposal(premise="row.state == 'open' and plan"),
                                    proposal(name="other", premise="row.status == 'open' and",
                                             tests_rule="large_disputes", tools=["dispute_transaction"])])
    with pytest.raises(Invalid) as error:
        build_intents(domain, answer, 4, final=False)
    messages = [p.message for p in error.value.problems]
    assert {p.category for p in error.value.problems} == {"bad_premise"}
    assert any("no column 'state'" in m for m in messages)
    assert any("names 'plan'" in m for m in messages)
    assert any("is not an expression" in m for m in messages)


def test_the_loader_refuses_a_premise_on_a_column_the_anchor_table_lacks():
    domain = builtin(DOMAIN)
    good = with_intents(domain, [proposal(premise="row.status == 'active'")])
    assert good.spec.intents[0].premise == "row.status == 'active'"
    assert "premise: row.status == 'active'" in spec_yaml(good.spec)  # stored with the design
    text = spec_yaml(good.spec).replace("premise: row.status == 'active'", "premise: row.colour == 'red'")
    with pytest.raises(DomainError, match="intent 'close_account': premise .row.colour == 'red'.: table customers "
                                          "has no column 'colour'"):
        load_domain_text(text, domain.toolkit.source, domain.policy, DOMAIN)


def test_candidates_are_anchored_only_on_records_that_meet_the_premise():
    domain, rows = builtin(DOMAIN), offline_rows(DOMAIN)
    customers = rows["customers"]
    kept = anchor_pool(domain, proposal(premise="row.segment == 'business' and row.status == 'active'"), rows)
    assert kept == [r for r in customers if r["segment"] == "business" and r["status"] == "active"]
    assert 0 < len(kept) < len(customers)
    year_ago = (domain.spec.clock - timedelta(days=365)).date().isoformat()
    recent = anchor_pool(domain, proposal(premise="row.joined_on >= add_days(today, -365)"), rows)
    assert recent == [r for r in customers if r["joined_on"] >= year_ago] and 0 < len(recent) < len(customers)
    assert anchor_pool(domain, proposal(premise="row.joined_on > 3"), rows) == []  # cannot compare: not met


def stored_design_tasks(server: LLMTestServer, intents: list[IntentProposal]):
    """The task stage on a stored design whose intents are `intents` (the path a rerun takes)."""
    config = LLMConfig(base_url=server.base_url, model="toolscale-test", cache_dir=None, backoff_s=0.01,
                       synthesis=SynthesisOptions(tasks_per_intent=3, anchor_attempts=1))
    domain = with_intents(builtin(DOMAIN), intents)
    rows = offline_rows(DOMAIN)
    client = LLMClient(config)
    try:
        with Environment.from_rows(domain, rows) as env:
            return LLMSynthesizer(config, seed=5, client=client).tasks(domain, env, rows, 5)
    finally:
        client.close()


def test_the_task_stage_asks_only_about_records_meeting_the_premise_and_records_an_unmet_one():
    domain, rows = builtin(DOMAIN), offline_rows(DOMAIN)
    template = next(i for i in domain.spec.intents if i.name == "contact_details_on_file")
    fitting = {r["customer_id"] for r in rows["customers"] if r["segment"] == "business"}
    intents = [proposal(name=template.name, description=template.description, kind=template.kind,
                        tools=list(dict.fromkeys(a.name for a in template.template.actions)),
                        premise="row.segment == 'business'"),
               proposal(name="never", premise="row.customer_id == 'nobody'")]
    with LLMTestServer() as server:
        tasks, rejected = stored_design_tasks(server, intents)
        asked = [sections(b["messages"][-1]["content"])["Request"]["anchor"]["key"] for b in server.bodies]
    assert len(asked) == 3 and set(asked) <= fitting  # three candidates, each about a business customer
    assert len(tasks) == 3 and all(t.meta.intent == template.name for t in tasks)
    unmet = [r for r in rejected if r.task.meta.intent == "never"]
    assert len(unmet) == 1 and "that meets the premise \"row.customer_id == 'nobody'\"" in unmet[0].reason


def test_the_populate_prompt_asks_for_rows_that_meet_the_premises_of_its_table():
    domain = with_intents(builtin(DOMAIN), [proposal(premise="row.segment == 'business'")])
    table = domain.spec.table("customers")
    rows = offline_rows(DOMAIN)
    batch = plan(domain.spec, table, rows, 4, 4, 0.1, random.Random(0))[0]
    text = requests.populate(domain.spec, batch, {}, rows)[-1]["content"]
    assert "- `row.segment == 'business'`" in text


# tool subsets --------------------------------------------------------------------------------


def test_a_task_is_offered_every_read_tool_beside_its_intents_and_a_few_others():
    domain = builtin(DOMAIN)
    specs = domain.toolkit.specs
    needed = ["close_account"]
    offered = subset_of_tools(domain, needed, 2, random.Random(1))
    reads = [t for t, s in specs.items() if s.kind == "read"]
    assert set(reads) <= set(offered) and "close_account" in offered
    assert len(offered) == len(set(reads) | set(needed)) + 2
    assert offered == [t for t in specs if t in offered]  # the toolkit's order


# populate ------------------------------------------------------------------------------------


def test_a_batch_sees_the_rows_its_keys_point_at():
    spec = builtin(DOMAIN).spec
    rows = offline_rows(DOMAIN)
    table = spec.table("disputes")  # each dispute names a transaction, which is not its parent
    offered = choices(spec, table, rows, random.Random(0))
    assert list(offered) == ["transaction_id"]
    batch = Batch(table, 0, count=3, subject="Kenya")
    text = requests.populate(spec, batch, offered, rows)[-1]["content"]
    assert "The rows those keys point at" in text
    by_key = {r["transaction_id"]: r for r in rows["transactions"]}
    for key in offered["transaction_id"]:
        assert json.dumps(by_key[key], ensure_ascii=False) in text  # the whole row: amount, counterparty, date


def test_parallel_root_batches_are_told_their_positions_so_numberings_do_not_restart():
    spec = builtin(DOMAIN).spec
    table = next(t for t in spec.creation_order() if t.per is None and t.rows > 8)
    batches = plan(spec, table, {}, 4, 4, 1.0, random.Random(0))
    assert [b.first for b in batches[:3]] == [len(table.data), len(table.data) + 4, len(table.data) + 8]
    text = requests.populate(spec, batches[1], {}, {})[-1]["content"]
    assert f"rows {len(table.data) + 4} to {len(table.data) + 7}" in text


# hardened variants fall back to their base ---------------------------------------------------


def test_a_variant_a_gate_rejects_gives_way_to_the_verified_task_it_replaced(library_tasks):
    env, tasks = library_tasks
    base = tasks[0]
    leaky = base.model_copy(update={
        "id": f"{base.id}.hard",
        "user_scenario": base.user_scenario.model_copy(update={"persona": ""}),  # the wording gate wants one
        "meta": base.meta.model_copy(update={"hardened_from": base.id, "hardening": ["distractor"]})})
    accepted, rejected = run_gates([leaky, *tasks[1:3]], env)
    assert [r.task.id for r in rejected] == [leaky.id]
    assert base.id not in {t.id for t in accepted}
    accepted, rejected = run_gates([leaky, *tasks[1:3]], env, fallbacks={base.id: base})
    assert [r.task.id for r in rejected] == [leaky.id] and rejected[0].gate == "wording"
    assert sorted(t.id for t in accepted) == sorted([base.id, tasks[1].id, tasks[2].id])
    assert all(t.meta.gates and all(v.passed for v in t.meta.gates.values()) for t in accepted)


def test_only_the_bases_of_rejected_variants_are_replayed_in_the_second_interpreter(library_tasks, monkeypatch):
    """Of a default run's ~1,250 bases only ~36 stand in for a rejected variant: replaying them all there
    was a fifth of the second interpreter's work for nothing."""
    env, tasks = library_tasks
    variants = [t.model_copy(update={"id": f"{t.id}.hard", "meta": t.meta.model_copy(update={
        "hardened_from": t.id, "hardening": ["partial"]})}) for t in tasks[:3]]
    leaky = variants[0].model_copy(update={
        "user_scenario": variants[0].user_scenario.model_copy(update={"persona": ""})})
    sent: list[list[str]] = []
    replay_elsewhere = gating.OtherInterpreter
    monkeypatch.setattr(gating, "OtherInterpreter",
                        lambda env, tasks: sent.append([t.id for t in tasks]) or replay_elsewhere(env, tasks))
    accepted, rejected = run_gates([leaky, *variants[1:]], env, fallbacks={t.id: t for t in tasks[:3]})
    assert sent == [[leaky.id, variants[1].id, variants[2].id], [tasks[0].id]]
    assert sorted(t.id for t in accepted) == sorted([tasks[0].id, variants[1].id, variants[2].id])
    assert accepted[[t.id for t in accepted].index(tasks[0].id)].meta.gates["determinism"].passed


# tool source ---------------------------------------------------------------------------------

TOOLS = '''
@tool("read")
def get_member(member_id: str) -> dict:
    """Look up a member with their unpaid balance,
    account status and plan.

    Args:
        member_id: the member's id
    """
    return db.get("members", member_id)


@tool("read")
def list_loans(member_id) -> list:
    """List a member's loans.

    Args:
        member_id: the member's id
    """
    return db.find("loans", member_id=member_id)


@tool("write")
def renew_loan(loan_id: str, days: int) -> dict:
    """Renew a loan.

    Args:
        loan_id: the loan
    """
    return {}

import os
'''


def test_the_tools_compiler_reports_every_problem_at_once():
    with pytest.raises(ToolCompileError) as error:
        build_toolkit(TOOLS)
    lines = str(error.value).splitlines()
    assert len(lines) == 2  # the structure: a missing hint and a top-level import
    assert "list_loans" in lines[0] and "type hint" in lines[0] and "module level" in lines[1]
    fixed = TOOLS.replace("def list_loans(member_id)", "def list_loans(member_id: str)").replace("import os", "")
    with pytest.raises(ToolCompileError, match="'days' is not described"):
        build_toolkit(fixed)


def test_a_wrapped_docstring_summary_is_one_line():
    fixed = (TOOLS.replace("def list_loans(member_id)", "def list_loans(member_id: str)").replace("import os", "")
             .replace("        loan_id: the loan\n", "        loan_id: the loan\n        days: how long\n"))
    spec = build_toolkit(fixed).specs["get_member"]
    assert spec.description == "Look up a member with their unpaid balance, account status and plan."


def test_a_model_whose_tools_have_several_errors_hears_of_all_of_them():
    domain = builtin(DOMAIN)
    broken = "import os\n\n" + domain.toolkit.source.replace('@tool("read")', '@tool("reed")', 2)
    with pytest.raises(DomainError) as error:
        load_domain_text(spec_yaml(domain.spec), broken, domain.policy, DOMAIN)
    assert len(str(error.value).splitlines()) == 3


# leakage -------------------------------------------------------------------------------------


def test_a_value_the_user_must_say_is_not_a_leak_but_a_judged_fact_and_the_task_is_kept():
    """The audit's 'Annual' when upgrading to Annual: the model listed it to communicate, and the
    leakage gate rejected the task. Now it goes to nl_assertions (an echo passes a substring check)."""
    domain, rows = builtin(DOMAIN), offline_rows(DOMAIN)
    customer = rows["customers"][3]
    account = next(a for a in rows["accounts"] if a["customer_id"] == customer["customer_id"])
    tools = ["find_customer_by_email", "verify_identity", "list_accounts"]
    answer = TaskAnswer(
        reason_for_call=f"You want the balance of your {account['account_type']} account.",
        known_info=f"You are {customer['first_name']} {customer['last_name']}; your email is {customer['email']}, "
                   f"you were born on {customer['date_of_birth']} and your phone number ends in "
                   f"{customer['phone'][-4:]}.",
        task_instructions=f"Ask for the balance of your {account['account_type']} account.",
        actions=[{"name": "find_customer_by_email", "arguments": {"email": customer["email"]}},
                 {"name": "verify_identity", "arguments": {"customer_id": "{{ out[0].customer_id }}",
                                                           "date_of_birth": customer["date_of_birth"],
                                                           "phone_last4": customer["phone"][-4:]}},
                 {"name": "list_accounts", "arguments": {"customer_id": "{{ out[0].customer_id }}"}}],
        communicate=["{{ out[2][0].account_type }}", "{{ out[2][0].balance|money }}"])
    intent = proposal(name="balance_check", kind="read", tools=tools)
    with Environment.from_rows(domain, rows) as env:
        task = build_task(domain, env, intent, tools, answer, "bank.balance_check.000", Lineage(backend="llm", seed=0))
        accepted, rejected = run_gates([task], env)
    assert task.evaluation_criteria.communicate_info == [answer_form(f"{account['balance']:.2f}")]
    assert task.meta.judged_answers == ["echo"]
    assert f"the account type is {account['account_type']}" in task.evaluation_criteria.nl_assertions[-1]
    assert [t.id for t in accepted] == [task.id] and not rejected


def test_leakage_matches_whole_tokens_not_digits_inside_a_longer_number():
    assert not appears_in("5.00", normalize_text("Top up at least 25.00 today."))
    assert appears_in("5.00", normalize_text("Top up 5.00 today."))


# task slices ---------------------------------------------------------------------------------


def test_a_slice_shows_the_other_rows_of_the_records_its_anchor_belongs_to():
    """Run A's model had a tool as anchor and could not see that the tool's borrower had an overdue
    loan: the slice held the loan's member but not the member's other loans."""
    spec, rows = builtin(DOMAIN).spec, offline_rows(DOMAIN)
    card = rows["cards"][0]
    account = next(a for a in rows["accounts"] if a["account_id"] == card["account_id"])
    part = db_slice(spec, rows, "cards", card["card_id"], random.Random(0), 30)
    own = {t["transaction_id"] for t in rows["transactions"] if t["account_id"] == account["account_id"]}
    siblings = {a["account_id"] for a in rows["accounts"] if a["customer_id"] == account["customer_id"]}
    assert own <= {t["transaction_id"] for t in part["transactions"]}  # the card's account's transactions
    assert siblings <= {a["account_id"] for a in part["accounts"]}  # and its holder's other accounts
    keys = {t: {r[spec.table(t).primary_key.name] for r in part[t]} for t in part}
    for table in spec.tables:  # still closed under foreign keys
        for column in (c for c in table.columns if c.references):
            target = column.references.split(".")[0]
            assert all(r[column.name] is None or r[column.name] in keys[target] for r in part[table.name])


# the gates screen a task while the model can still repair it -------------------------------


def screened_tasks(server: LLMTestServer, screen):
    config = LLMConfig(base_url=server.base_url, model="toolscale-test", cache_dir=None, backoff_s=0.01,
                       synthesis=SynthesisOptions(tasks_per_intent=2, anchor_attempts=1, repair_rounds=1))
    domain, rows = builtin(DOMAIN), offline_rows(DOMAIN)
    intents = [intent_proposal(i) for i in domain.spec.intents if i.name in ("contact_details_on_file", "change_email")]
    client = LLMClient(config)
    try:
        with Environment.from_rows(with_intents(domain, intents), rows) as env:
            synth = LLMSynthesizer(config, seed=5, client=client, screen=screen)
            tasks, rejected = synth.tasks(with_intents(domain, intents), env, rows, 5)
            gated, gate_rejected = run_gates(tasks, env)
        return gated, rejected, gate_rejected, synth.report()["stages"]["task"]
    finally:
        client.close()


def test_a_task_a_gate_would_reject_goes_back_to_the_model_and_is_repaired():
    """Run B's six realizability rejections got no repair round: the gates ran after synthesis."""
    faults = Faults(rate=1.0, kinds=("unsaid_argument",), stages=("task",), max_per_conversation=1)
    with LLMTestServer(faults=faults) as server:
        unscreened = screened_tasks(server, None)
    with LLMTestServer(faults=faults) as server:
        gated, rejected, gate_rejected, usage = screened_tasks(server, screen)
        repairs = [b["messages"][-1]["content"] for b in server.bodies if len(b["messages"]) > 2]
    assert unscreened[0] == [] and {r.gate for r in unscreened[2]} == {"realizability"}  # lost at the gate stage
    assert len(gated) == len(unscreened[2]) == 4 and not gate_rejected and not rejected  # each repaired in one round
    assert usage["repair_rounds"] == usage["accepted"] == 4 and usage["rejected"] == {}
    assert all("the realizability check rejects the task: action" in text for text in repairs)


def test_a_harden_slice_is_built_around_a_stored_record_the_task_names():
    """Run C's hardening of a task about a new vaccination got an empty slice: its gold named the
    pet, not a stored vaccination."""
    domain, rows = builtin(DOMAIN), offline_rows(DOMAIN)
    customer = rows["customers"][3]
    account = next(a for a in rows["accounts"] if a["customer_id"] == customer["customer_id"])
    task = unbuilt_task(domain, proposal(), "bank.close_account.000", Lineage(backend="llm", seed=0), TaskAnswer(
        reason_for_call="r", task_instructions="t",
        actions=[{"name": "find_customer_by_email", "arguments": {"email": customer["email"]}},
                 {"name": "close_account", "arguments": {"account_id": account["account_id"]}}]))
    assert anchor_record(task, domain.spec, rows, "customers") == ("accounts", account["account_id"])
    assert anchor_record(task, domain.spec, rows, "accounts") == ("accounts", account["account_id"])
    created = task.model_copy(update={"evaluation_criteria": task.evaluation_criteria.model_copy(
        update={"actions": task.evaluation_criteria.actions[:1]})})
    assert anchor_record(created, domain.spec, rows, "payees") is None  # an email is no key


def test_a_scaled_down_population_still_has_the_rows_the_designs_fixed_rows_point_at():
    """Run E's six fixed reservations named members 7 to 12 and were dropped: only six members were asked for."""
    spec = builtin(DOMAIN).spec
    customers = spec.table("customers")
    assert sum(b.count for b in plan(spec, customers, {}, 8, 8, 0.05, random.Random(0))) < 40
    payees = spec.table("payees")  # a fixed payee of customer 40
    payee = {**{c.name: None for c in payees.columns}, "customer_id": f"{customers.id_prefix}{40:06d}"}
    patched = spec.model_copy(update={"tables": [t.model_copy(update={"data": [*t.data, payee]}) if t is payees else t
                                                 for t in spec.tables]})
    batches = plan(patched, patched.table("customers"), {}, 8, 8, 0.05, random.Random(0))
    assert len(customers.data) + sum(b.count for b in batches) == 40


def test_a_hardened_variant_is_screened_as_the_variant_it_becomes(library_tasks):
    """Run G: a read task composed with a write was refused for 'meta.kind is read but the gold changes
    the state', a kind the variant takes only after the screen had run."""
    seen = []

    def record(task, env):
        seen.append(task.meta.kind)
        return None

    env, tasks = library_tasks
    writes = tasks[0]
    base = writes.model_copy(update={"meta": writes.meta.model_copy(update={"kind": "read"})})  # as its intent says
    text = base.user_scenario.instructions
    answer = HardenAnswer(steps=["distractor"], task=TaskAnswer(
        reason_for_call=text.reason_for_call, known_info=text.known_info or "",
        task_instructions=f"{text.task_instructions} You mention the weather first.",
        actions=[{"name": n, "arguments": a} for n, a in base.gold_calls()]))
    domain = env.domain
    intent = IntentProposal(name=base.meta.intent, description="d", kind="read",
                            anchor_table=domain.spec.tables[0].name, tools=list(domain.toolkit.specs))
    variant = build_hardened(domain, env, base, intent, list(domain.toolkit.specs), answer,
                             Lineage(backend="llm", seed=0), record)
    assert variant.meta.kind == "write" and seen == ["write"]
