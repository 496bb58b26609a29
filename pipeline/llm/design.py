"""The stages that make a domain folder: design (schema, rules, policy), tools, intents.

Each `build_*` function turns a parsed answer into the domain's artifact through the same code
that loads a domain folder (`parse_spec`, `load_domain_text`, the RestrictedPython compiler), plus
smoke checks the loader cannot make alone: the design's generation hints fill a small database
with its constraints on, and every tool runs once on it without crashing. The design holds rules
the agent applies (their `breaks` checked while the design can still change) and a handoffs table,
and the tools a transfer_to_human_agents as τ²-bench has it. Whatever fails comes back as
`Invalid` problems for a repair round.
"""

from __future__ import annotations

import random
import re
from typing import Any

import sqlalchemy as sa
import yaml

from toolscale.domains import Domain, DomainError, Environment, load_domain_text
from toolscale.domains.domain import parse_spec
from toolscale.domains.premises import premise_problems
from toolscale.domains.rules import TRANSFER_TOOL, agent_rules, rule_problems
from toolscale.domains.spec import IDENTIFIER, DomainSpec, Intent, PolicyRule
from toolscale.domains.sql import build_metadata, create_schema

from ..populate import PopulateError, Rows, populate
from .answers import DesignAnswer, IntentProposal, IntentsAnswer, ToolsAnswer
from .dialogue import MAX_PROBLEMS, Invalid, Problem

SMOKE_SCALE = 1.0  # the scale the offline backend fills at: reference rows may point at generated ones
_SMOKE_OK = {"ToolError", "InvalidArguments"}


def spec_yaml(spec: DomainSpec) -> str:
    """domain.yaml text for a spec (defaults left out), as the loader reads it back."""
    data = spec.model_dump(mode="json", exclude_defaults=True)
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=110)


_SPEC_LINE = re.compile(r"^[^:]*:(?:\d+|None): (?P<loc>[^:\s]+): ")
_COLUMN_LINE = re.compile(r"^(?P<table>[a-z][a-z0-9_]*)(?:\.[a-z][a-z0-9_]*)?: ")
_NAMED = re.compile(r": (?P<kind>rule|intent) '(?P<name>[^']+)'")


def _tools_field(line: str) -> str:
    """'rule late_fee' for a loader line about a rule's tools; the tools' `source` otherwise."""
    match = _NAMED.search(line)
    return f"{match.group('kind')} {match.group('name')}" if match else "source"


def _spec_field(line: str, spec_tables: list[Any]) -> str:
    """'table rides' for a loader line about tables.3...; the top-level key otherwise."""
    match = _SPEC_LINE.match(line)
    if not match:
        return ""
    loc = match.group("loc").split(".")
    if loc[0] == "tables" and len(loc) > 1 and loc[1].isdigit() and int(loc[1]) < len(spec_tables):
        return f"table {spec_tables[int(loc[1])].name}"
    return ".".join(loc[:2]) if len(loc) > 1 and loc[1].isdigit() else loc[0]


def _table_field(line: str) -> str:
    """'table rides' for a populate line such as 'rides.time_fee: ...'."""
    match = _COLUMN_LINE.match(line)
    return f"table {match.group('table')}" if match else ""


def _insert_problems(spec: DomainSpec, rows: Rows) -> list[Problem]:
    """The constraints the rows break, table by table. A table pointing at one that failed is not tried:
    its foreign keys would fail for the other table's sake."""
    engine = sa.create_engine("sqlite://")  # one connection per thread: the tables outlive each transaction
    sa.event.listen(engine, "connect", lambda conn, _: conn.execute("PRAGMA foreign_keys = ON"))
    metadata = build_metadata(spec)
    problems: list[Problem] = []
    left_out: set[str] = set()  # tables that failed, and those pointing at them (at any depth)
    try:
        with engine.begin() as conn:
            create_schema(metadata, conn)
        for table in spec.creation_order():
            if any(c.references.split(".")[0] in left_out for c in table.columns if c.references):
                left_out.add(table.name)
                continue
            try:
                with engine.begin() as conn:
                    if rows[table.name]:
                        conn.execute(metadata.tables[table.name].insert(), rows[table.name])
            except sa.exc.DBAPIError as exc:
                left_out.add(table.name)
                problems.append(Problem("generation_hint", f"{table.name}: its rows break a constraint: {exc.orig}",
                                        f"table {table.name}"))
    finally:
        engine.dispose()
    return problems


def smoke_rows(spec: DomainSpec, seed: int) -> Rows:
    """Rows from the design's generation hints, inserted with every constraint on; Invalid lists every
    column the hints cannot fill, or every table whose rows break a constraint."""
    try:
        rows = populate(spec, seed, SMOKE_SCALE)
    except PopulateError as exc:
        raise Invalid([Problem("generation_hint", f"the gen hints cannot fill the tables: {line}", _table_field(line))
                       for line in str(exc).splitlines()][:MAX_PROBLEMS]) from None
    except Exception as exc:  # a hint can still fail in a way populate does not name (a KeyError...)
        raise Invalid([Problem("generation_hint", f"the gen hints cannot fill the tables: "
                                                  f"{type(exc).__name__}: {exc}")]) from None
    problems = _insert_problems(spec, rows)
    if problems:
        raise Invalid(problems[:MAX_PROBLEMS])
    return rows


def _design_problems(spec: DomainSpec) -> list[Problem]:
    """What the loader accepts but a designed domain cannot use."""
    problems = []
    if not any(t.rows > 0 or t.per is not None for t in spec.tables):
        problems.append(Problem("spec", "no table gets rows: give the main tables `rows` or `per`", "tables"))
    for table in spec.tables:
        for col in table.columns:
            if col.references and col.gen is not None:
                problems.append(Problem("spec", f"{table.name}.{col.name} references {col.references}, so its "
                                                f"value is a key of that table: remove its gen", f"table {table.name}"))
    for rule in spec.rules:
        bad = [t for t in rule.enforced_by if not re.fullmatch(IDENTIFIER, t)]
        if bad:
            problems.append(Problem("spec", f"rule {rule.id!r}: {', '.join(map(repr, bad))} are not tool names",
                                    f"rule {rule.id}"))
    return problems + _agent_rule_problems(spec)


MIN_AGENT_RULES = 3  # rules the agent must apply, so that tasks can test judgement and not only tool calls
HANDOFFS = "handoffs"  # the table transfer_to_human_agents writes to


def _agent_rule_problems(spec: DomainSpec) -> list[Problem]:
    """The rules the agent applies: enough of them, none also enforced by a tool, each `breaks` an
    expression the loader will accept (checked now, while the design can still change; the tools it
    names are written next), and a handoffs table for the transfers the policy calls for."""
    rules = agent_rules(spec)
    problems = []
    if len(rules) < MIN_AGENT_RULES:
        problems.append(Problem("agent_rules", f"the rules hold {len(rules)} rule(s) with an `agent` check; give at "
                                               f"least {MIN_AGENT_RULES} rules the agent applies and no tool enforces",
                                "rules"))
    for rule in rules:
        if rule.enforced_by:
            problems.append(Problem("agent_rules", f"rule {rule.id!r} has an `agent` check and `enforced_by` tools: a "
                                                   "rule the agent applies is enforced by no tool; drop one of them",
                                    f"rule {rule.id}"))
        problems += [Problem("agent_rules", message, f"rule {rule.id}")
                     for message in rule_problems(rule, spec, rule.agent.calls)]
    if not any(t.name == HANDOFFS for t in spec.tables):
        problems.append(Problem("agent_rules", f"no `{HANDOFFS}` table: {TRANSFER_TOOL} stores each transfer to a "
                                               "human there (its reason and when), a table with no rows", "tables"))
    return problems


def build_design(name: str, answer: DesignAnswer, seed: int) -> tuple[DomainSpec, str, Rows]:
    """(spec, policy, smoke rows) from a design answer, or Invalid with every problem found."""
    data = {"name": name, "description": answer.description, "clock": answer.clock.isoformat(),
            "tables": [t.model_dump(mode="json", exclude_defaults=True) for t in answer.tables],
            "rules": [r.model_dump(mode="json") for r in answer.rules]}
    text = yaml.safe_dump(data, sort_keys=False, allow_unicode=True)
    try:
        spec = parse_spec(text, f"{name}/domain.yaml")
    except DomainError as exc:
        raise Invalid([Problem("spec", line, _spec_field(line, answer.tables))
                       for line in str(exc).splitlines() if line.strip()][:MAX_PROBLEMS]) from None
    problems = _design_problems(spec)
    if TRANSFER_TOOL not in answer.policy:
        problems.append(Problem("agent_rules", f"the policy never names `{TRANSFER_TOOL}`: say when the agent "
                                               "transfers a user to a human, and with which reason", "policy"))
    try:
        rows = smoke_rows(spec, seed)
    except Invalid as exc:
        problems += exc.problems
    if problems:
        raise Invalid(problems[:MAX_PROBLEMS])
    return spec, answer.policy, rows


def _smoke_value(name: str, schema: dict[str, Any], rows: Rows) -> Any:
    """An argument value for a smoke call: a real value of a column of that name, else a dummy."""
    for table_rows in rows.values():
        for row in table_rows[:1]:
            if row.get(name) is not None:
                return row[name]
    if "anyOf" in schema:
        return None
    if "enum" in schema:
        return schema["enum"][0]
    return {"string": "x", "integer": 1, "number": 1.0, "boolean": False, "array": []}.get(schema.get("type"), "x")


def _smoke_tools(domain: Domain, rows: Rows) -> list[Problem]:
    problems = []
    with Environment.from_rows(domain, rows) as env:
        for spec in domain.toolkit.specs.values():
            args = {n: _smoke_value(n, s, rows) for n, s in spec.parameters["properties"].items()}
            with env.fork() as fork:
                result = fork.call(spec.name, args)
            if not result.ok and result.error_type not in _SMOKE_OK:
                problems.append(Problem("tool_crash", f"tool {spec.name!r} crashed when called with {args}: "
                                                      f"{result.error_type}: {result.error}", f"tool {spec.name}"))
    return problems


_SUMMARY = "Smoke-test note for the human agent"


def _transfer_problems(domain: Domain, rows: Rows) -> list[Problem]:
    """transfer_to_human_agents as τ²-bench has it: a write with a `reason` from a list and an optional
    `summary` that no table stores (free text would make end states incomparable)."""
    spec = domain.toolkit.specs.get(TRANSFER_TOOL)
    where = f"tool {TRANSFER_TOOL}"
    if spec is None:
        return [Problem("missing_tool", f"no tool {TRANSFER_TOOL!r}: write it (a write with `reason`, one of a list, "
                                        f"and an optional `summary`), storing the handoff in `{HANDOFFS}`", where)]
    params = spec.parameters["properties"]
    problems = []
    if spec.kind != "write":
        problems.append(Problem("transfer_tool", f"{TRANSFER_TOOL} records a handoff: decorate it @tool(\"write\")",
                                where))
    if "enum" not in params.get("reason", {}):
        problems.append(Problem("transfer_tool", f"{TRANSFER_TOOL} needs a `reason` parameter typed Literal[...] with "
                                                 "the reasons the policy names and \"other\"", where))
    if "summary" not in params or "summary" in spec.parameters.get("required", []):
        problems.append(Problem("transfer_tool", f"{TRANSFER_TOOL} needs an optional `summary: str | None = None`",
                                where))
    if problems:
        return problems
    with Environment.from_rows(domain, rows) as env, env.fork() as fork:
        fork.call(TRANSFER_TOOL, {"reason": params["reason"]["enum"][0], "summary": _SUMMARY})
        stored = _SUMMARY in str(fork.dump())
    if stored:
        problems.append(Problem("transfer_tool", f"{TRANSFER_TOOL} stores its `summary`: keep the summary out of "
                                                 "every table (store the reason and when)", where))
    return problems


def build_tools(spec: DomainSpec, policy: str, answer: ToolsAnswer, rows: Rows) -> Domain:
    """The domain with its compiled tools, or Invalid (compile errors, missing tools, crashes, a
    transfer_to_human_agents unlike τ²-bench's)."""
    try:
        domain = load_domain_text(spec_yaml(spec), answer.source, policy, spec.name)
    except DomainError as exc:
        category = "missing_tool" if "unknown tool" in str(exc) else "tool_compile"
        raise Invalid([Problem(category, line, _tools_field(line))
                       for line in str(exc).splitlines() if line.strip()][:MAX_PROBLEMS]) from None
    problems = _smoke_tools(domain, rows) + _transfer_problems(domain, rows)
    if problems:
        raise Invalid(problems[:MAX_PROBLEMS])
    return domain


def _normalized(text: str) -> str:
    return " ".join(re.findall(r"[a-z0-9]+", text.lower()))


def _intent_problems(intent: IntentProposal, tools: dict[str, Any], tables: dict[str, Any],
                     populated: set[str], rules: dict[str, PolicyRule]) -> list[Problem]:
    problems = []
    unknown = [t for t in intent.tools if t not in tools]
    if unknown:
        problems.append(Problem("unknown_tool", f"intent {intent.name!r} names unknown tool(s) "
                                                f"{', '.join(unknown)}; the tools are: {', '.join(tools)}",
                                f"intent {intent.name}"))
    if intent.anchor_table not in populated:
        choose = ", ".join(sorted(populated))
        problems.append(Problem("unknown_table", f"intent {intent.name!r}: anchor_table {intent.anchor_table!r} "
                                                 f"is not a table with rows; choose from {choose}",
                                f"intent {intent.name}"))
    elif intent.premise is not None:
        problems += [Problem("bad_premise", f"intent {intent.name!r}: {p}", f"intent {intent.name}")
                     for p in premise_problems(intent.premise, tables[intent.anchor_table])]
    if intent.tests_rule is not None and intent.tests_rule not in rules:
        known = ", ".join(rules) or "none"
        problems.append(Problem("unknown_rule", f"intent {intent.name!r} tests {intent.tests_rule!r}, which is no rule "
                                                f"the agent applies; `tests_rule` names one of: {known} (or is null)",
                                f"intent {intent.name}"))
    elif intent.tests_rule is not None and not set(rules[intent.tests_rule].agent.calls) & set(intent.tools):
        calls = ", ".join(rules[intent.tests_rule].agent.calls)
        problems.append(Problem("unknown_rule", f"intent {intent.name!r} tests {intent.tests_rule!r}, a rule about "
                                                f"{calls}: list the tool the literal request calls among its `tools` "
                                                "(a task is offered only those and the read tools)",
                                f"intent {intent.name}"))
    return problems


def build_intents(domain: Domain, answer: IntentsAnswer, count: int, final: bool) -> list[IntentProposal]:
    """Valid, distinct intents (at most `count`); Invalid lists the rest, or asks for intents that test
    the agent's rules when none does, unless this is the last round."""
    tools = domain.toolkit.specs
    tables = {t.name: t for t in domain.spec.tables}
    populated = {t.name for t in domain.spec.tables if t.rows > 0 or t.per is not None or t.data}
    rules = {rule.id: rule for rule in agent_rules(domain.spec)}
    kept: list[IntentProposal] = []
    seen: set[str] = set()
    problems: list[Problem] = []
    for intent in answer.intents:
        wrong = _intent_problems(intent, tools, tables, populated, rules)
        problems += wrong
        if not wrong and intent.name not in seen and _normalized(intent.description) not in seen:
            seen.update((intent.name, _normalized(intent.description)))
            kept.append(intent)
    if rules and not any(intent.tests_rule for intent in answer.intents):
        problems.append(Problem("no_rule_tests", f"no intent tests a rule the agent applies: make about a third of "
                                                 f"them such tests, each naming its rule in `tests_rule` (one of "
                                                 f"{', '.join(rules)})", "intents"))
    if problems and not final:
        raise Invalid(problems[:MAX_PROBLEMS])
    if not kept:
        raise Invalid(problems or [Problem("no_intents", "no usable intent was proposed")])
    return kept[:count]


def with_intents(domain: Domain, intents: list[IntentProposal]) -> Domain:
    """The domain reloaded with the intents in its spec, anchors and tools included, so a later run
    writes tasks from the stored design alone (no templates: the LLM writes the tasks)."""
    spec = domain.spec.model_copy(update={"intents": [
        Intent(name=i.name, description=i.description, kind=i.kind, anchor_table=i.anchor_table, tools=i.tools,
               premise=i.premise, tests_rule=i.tests_rule)
        for i in intents]})
    return load_domain_text(spec_yaml(spec), domain.toolkit.source, domain.policy, domain.name)


def subset_of_tools(domain: Domain, needed: list[str], extra: int, rng: random.Random) -> list[str]:
    """The tools a task is written with: the intent's, every read tool (an intent's list can miss the
    lookup a record's state calls for, and an agent is never short of a way to find a record), and
    `extra` other tools drawn at random, in the toolkit's order."""
    specs = domain.toolkit.specs
    given = set(needed) | {name for name, spec in specs.items() if spec.kind == "read"}
    others = [t for t in specs if t not in given]
    chosen = given | set(rng.sample(others, min(extra, len(others))))
    return [t for t in specs if t in chosen]
