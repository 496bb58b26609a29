"""Every built-in domain: loads, compiles, smoke-runs each tool, and its policy rules are enforced."""

from __future__ import annotations

import re

import pytest

from toolscale.domains import Environment, available_domains, builtin_domain
from toolscale.domains.dates import WEEKDAYS
from toolscale.pipeline.populate import populate
from toolscale.domains.rules import TRANSFER_TOOL

from domain_checks import example_arguments, raises_tool_error

DOMAINS = available_domains()
TAU2_TABLES = {"airline": {"users", "flights", "reservations"}, "retail": {"users", "orders", "products"}}
TAU2_TOOLS = {
    "airline": {"book_reservation", "cancel_reservation", "get_reservation_details", "get_user_details",
                "list_all_airports", "search_direct_flight", "search_onestop_flight", "send_certificate",
                "update_reservation_baggages", "update_reservation_flights", "update_reservation_passengers"},
    "retail": {"cancel_pending_order", "exchange_delivered_order_items", "find_user_id_by_email",
               "find_user_id_by_name_zip", "get_order_details", "get_product_details", "get_user_details",
               "list_all_product_types", "modify_pending_order_address", "modify_pending_order_items",
               "modify_pending_order_payment", "modify_user_address", "return_delivered_order_items"},
}


@pytest.fixture(scope="module", params=DOMAINS)
def loaded(request):
    domain = builtin_domain(request.param)
    rows = populate(domain.spec, seed=0)
    with Environment.from_rows(domain, rows) as env:
        yield domain, rows, env


def test_schema_has_related_tables(loaded):
    domain, rows, _ = loaded
    tables = domain.spec.tables
    assert len(tables) >= 3
    assert sum(1 for t in tables for c in t.columns if c.references) >= 2
    assert sum(len(r) for r in rows.values()) >= 300


def test_tools_and_intents_meet_the_catalog_bar(loaded):
    domain, _, _ = loaded
    specs = domain.toolkit.specs
    writes = [s for s in specs.values() if s.kind == "write"]
    assert len(specs) >= 15
    assert len(writes) >= (2 if domain.name == "weather" else 5)
    assert len(domain.spec.intents) >= 10
    multi_step = [i for i in domain.spec.intents if i.template and len(i.template.actions) >= 3]
    assert len(multi_step) > len(domain.spec.intents) / 2


def test_every_tool_runs_with_its_documented_examples(loaded):
    domain, _, env = loaded
    for name in domain.toolkit.specs:
        with env.fork() as fork:
            result = fork.call(name, example_arguments(domain, name))
        assert result.ok or result.error_type == "ToolError", f"{domain.name}.{name}: {result.error_type}: {result.error}"


def test_every_rule_is_enforced_by_a_tool_that_raises(loaded):
    domain, _, _ = loaded
    raising = raises_tool_error(domain)
    assert domain.spec.rules, "domain.yaml lists no policy rules"
    for rule in domain.spec.rules:
        if rule.enforced_by:  # the others are the agent's to apply: the policy gate checks golds keep them
            assert any(raising[t] for t in rule.enforced_by), f"{domain.name} rule {rule.id!r}: no tool raises ToolError"
    named = {t for rule in domain.spec.rules for t in rule.enforced_by}
    for name, spec in domain.toolkit.specs.items():
        if spec.kind == "write" and name != TRANSFER_TOOL:  # handing over to a person is always allowed
            assert name in named, f"{domain.name}.{name} is a write that no policy rule names"
            assert raising[name], f"{domain.name}.{name} is a write that never raises ToolError"


def test_the_policy_states_every_figure_of_the_rules(loaded):
    """The agent reads policy.md, not domain.yaml: every limit, fee, count and date a rule names is in it."""
    domain, _, _ = loaded
    assert domain.policy.lstrip().startswith("#")
    policy = domain.policy.replace(",", "")
    figures = [(rule.id, figure.replace(",", "")) for rule in domain.spec.rules
               for figure in re.findall(r"\d[\d,]*(?:\.\d+)?", rule.rule)]
    assert figures, f"{domain.name}: no rule names a figure"
    for rule, figure in figures:
        assert figure in policy, f"{domain.name} rule {rule!r}: {figure} is not in policy.md"


def test_the_policy_says_what_day_of_the_week_today_is(loaded):
    """Users count dates from today ("this coming Friday", "last Friday": domains/dates.py); the agent
    reads policy.md, which names today's date and weekday, so it need not work out the calendar."""
    domain, _, _ = loaded
    today = domain.spec.clock.date()
    said = re.search(r"Today is (.*?)(?:[.;] |$)", " ".join(domain.policy.split()))
    assert said, f"{domain.name}: policy.md does not say what day today is"
    assert today.isoformat() in said[1] and WEEKDAYS[today.weekday()] in said[1], f"{domain.name}: {said[0]!r}"


def test_no_two_domains_share_a_table_layout_or_tool_set():
    layouts, toolsets = {}, {}
    for name in DOMAINS:
        domain = builtin_domain(name)
        layout = frozenset((t.name, frozenset(c.name for c in t.columns)) for t in domain.spec.tables)
        tools = frozenset(domain.toolkit.specs)
        assert layout not in layouts, f"{name} and {layouts.get(layout)} share a table layout"
        assert tools not in toolsets, f"{name} and {toolsets.get(tools)} share a tool set"
        layouts[layout], toolsets[tools] = name, name
        tables = {t.name for t in domain.spec.tables}
        for anchor, anchor_tables in TAU2_TABLES.items():
            assert not anchor_tables <= tables, f"{name} has τ²-bench {anchor}'s tables {anchor_tables}"
        for anchor, anchor_tools in TAU2_TOOLS.items():
            shared = tools & anchor_tools
            assert len(shared) < 3, f"{name} shares {sorted(shared)} with τ²-bench {anchor}"
