"""Rules the agent must apply: domain.yaml marks them (an `agent` check no tool enforces), the policy
gate checks every gold keeps them, and a task built to test one is a real test: doing what the user
literally asks runs in the tools, breaks the rule and ends in another state."""

from __future__ import annotations

import pytest

from toolscale.domains import DomainError, Environment, Task, available_domains, builtin_domain, load_domain, load_domain_text
from toolscale.domains.environment import replay
from toolscale.domains.rules import RuleError, agent_rules, breaks, rules_broken
from toolscale.domains.tasks import Action
from toolscale.quality.gates import GateContext
from toolscale.quality.policy import PolicyGate

from published_run import published_run

BANK = builtin_domain("bank")


def with_rule(rule_yaml: str) -> str:
    text = BANK.sources["domain.yaml"]
    return text.replace("\nintents:\n", "\n" + rule_yaml.rstrip("\n") + "\n\nintents:\n", 1)


def load_with(rule_yaml: str):
    return load_domain_text(with_rule(rule_yaml), BANK.sources["tools.py"], BANK.policy)


@pytest.mark.parametrize("breaks_expr, message", [
    ("args.amount > limit", "names 'limit'"),
    ("record('nope', args.x).amount > 1", "takes a table name first"),
    ("args.amount >", "is not an expression"),
    ("range(10**9)|list|length > 0", "names 'range'"),
])
def test_a_bad_agent_check_is_refused_when_the_domain_loads(breaks_expr, message):
    rule = f'''  - id: probe
    rule: A probe.
    agent:
      calls: [pay_payee]
      breaks: "{breaks_expr}"'''
    with pytest.raises(DomainError, match=message):
        load_with(rule)


def test_an_agent_check_on_an_unknown_tool_is_refused():
    rule = '''  - id: probe
    rule: A probe.
    agent:
      calls: [launder_money]
      breaks: "args.amount > 1"'''
    with pytest.raises(DomainError, match="unknown tool 'launder_money'"):
        load_with(rule)


@pytest.mark.parametrize("breaks_expr", [
    "'a' * 10**9",                    # a huge text
    "2 ** 100000",                    # a huge number
    "args.__class__.__mro__",         # an attribute escape
    "record('accounts', 'ACC-999999').balance > 0",  # no such record: a clean error, not a traceback
])
def test_a_hostile_or_broken_agent_check_fails_cleanly_when_evaluated(breaks_expr, bank_run):
    _, env, _, _ = bank_run
    domain = load_with(f'''  - id: probe
    rule: A probe.
    agent:
      calls: [pay_payee]
      breaks: "{breaks_expr}"''')
    (rule,) = [r for r in agent_rules(domain.spec) if r.id == "probe"]
    with pytest.raises(RuleError, match="rule 'probe' on pay_payee"):
        breaks(rule, "pay_payee", {"amount": 1}, env.rows, domain.spec)


def test_the_bank_marks_which_rules_the_agent_applies():
    agent = {r.id for r in agent_rules(BANK.spec)}
    assert agent >= {"large_disputes", "no_overdraft_transfers", "savings_withdrawal_cap"}
    assert all(not r.enforced_by for r in BANK.spec.rules if r.id in agent)
    assert any(r.enforced_by for r in BANK.spec.rules)  # and some stay the tools' to enforce
    for rule in ("1,000.00", "500.00", "below zero"):
        assert rule in BANK.policy  # the agent reads the rule in policy.md


def test_every_agent_rule_is_tested_by_accepted_tasks_whose_literal_request_breaks_it(bank_run):
    domain, env, accepted, _ = bank_run
    tested = [t for t in accepted if t.meta.tests_rule]
    assert {t.meta.tests_rule for t in tested} == {r.id for r in agent_rules(domain.spec)}
    for task in tested:
        naive = [(a.name, a.arguments) for a in task.meta.naive_actions]
        with env.fork() as fork:
            results = replay(fork, naive)
            assert all(r.ok for r in results), task.id  # the tools accept the literal request...
            assert fork.state_hash() != task.meta.final_state_hash, task.id  # ...which ends elsewhere
        assert task.meta.tests_rule in {rule for _, rule in rules_broken(env, naive)}, task.id
        assert rules_broken(env, task.gold_calls()) == [], task.id  # and the gold keeps every rule
        assert task.meta.gates["policy"].passed


def _verdict(env, task):
    return PolicyGate().check(GateContext(env, task))


def test_the_policy_gate_rejects_a_gold_that_does_what_the_user_literally_asks(bank_run):
    _, env, accepted, _ = bank_run
    task = next(t for t in accepted if t.meta.intent == "transfer_beyond_balance")
    literal = task.model_copy(update={"evaluation_criteria": task.evaluation_criteria.model_copy(
        update={"actions": task.meta.naive_actions})})
    verdict = _verdict(env, literal)
    assert not verdict.passed and "no_overdraft_transfers" in verdict.reason


def test_the_policy_gate_rejects_a_rule_test_the_tools_refuse_or_that_ends_in_the_gold_state(bank_run):
    _, env, accepted, _ = bank_run
    task = next(t for t in accepted if t.meta.intent == "dispute_large_purchase")

    def with_naive(actions):
        return task.model_copy(update={"meta": task.meta.model_copy(update={"naive_actions": actions})})

    refused = [*task.meta.naive_actions[:-1], Action(action_id="x", name="dispute_transaction",
                                                      arguments={**task.meta.naive_actions[-1].arguments,
                                                                 "transaction_id": "TXN-999999"})]
    assert "refused by the tools" in _verdict(env, with_naive(refused)).reason
    assert "ends in the gold's state" in _verdict(env, with_naive(task.evaluation_criteria.actions)).reason
    unrelated = task.model_copy(update={"meta": task.meta.model_copy(update={"tests_rule": "no_overdraft_transfers"})})
    assert "keeps rule 'no_overdraft_transfers'" in _verdict(env, unrelated).reason


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return published_run(tmp_path_factory)


@pytest.mark.parametrize("name", available_domains())
def test_every_published_rule_test_is_sound_and_every_gold_keeps_the_agent_rules(run, name):
    """In every domain of a published run: each task that tests a rule has a literal request the tools
    accept, that breaks that rule and ends elsewhere; no gold breaks any agent rule."""
    folder = run / name
    domain = load_domain(folder)
    tasks = [Task.model_validate_json(line) for line in (folder / "tasks.jsonl").read_text().splitlines()]
    with Environment.from_sqlite(domain, folder / "db.sqlite") as env:
        for task in tasks:
            assert rules_broken(env, task.gold_calls()) == [], task.id
            if task.meta.tests_rule is None:
                assert task.meta.naive_actions == [], task.id
                continue
            naive = [(a.name, a.arguments) for a in task.meta.naive_actions]
            with env.fork() as fork:
                assert all(r.ok for r in replay(fork, naive)), task.id
                assert fork.state_hash() != task.meta.final_state_hash, task.id
            assert task.meta.tests_rule in {rule for _, rule in rules_broken(env, naive)}, task.id


def test_no_operator_rewrites_a_task_built_to_test_a_rule(run):
    """Its literal request (meta.naive_actions) is the base task's own: a variant would ask for something else."""
    for folder in run.iterdir():
        if (folder / "tasks.jsonl").exists():
            for line in (folder / "tasks.jsonl").read_text().splitlines():
                task = Task.model_validate_json(line)
                assert not (task.meta.tests_rule and task.meta.hardening), task.id
