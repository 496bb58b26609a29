"""Agent-enforced policy rules: what a call may not do that no tool refuses.

A rule's `agent` check names the tools it is about and an expression, `breaks`, that says whether
making one of those calls now breaks the rule ("a dispute over 500.00 goes to a human":
`record('transactions', args.transaction_id).amount > 500`). It sees the call's `args` and the state
before the call, read through `record(table, key)` (a row or none) and `rows(table, column=value...)`,
and the clock's `today`, `now`, `add_days(day, n)` and `days_between(a, b)`.

The expression comes from domain.yaml, which a stranger or a model may have written: it is parsed
once by the loader (`rule_problems`), may name only those helpers, and runs in the bounded jinja
environment domain.yaml's templates run in (template_limits.py), with a rule's own tighter `*` and `**`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from functools import lru_cache
from typing import Any

from jinja2 import StrictUndefined, TemplateError, TemplateSyntaxError, nodes

from .records import Clock
from .sandbox import ToolError
from .spec import DomainSpec, PolicyRule
from .template_limits import BoundedEnvironment, bounded_render

TRANSFER_TOOL = "transfer_to_human_agents"  # τ²-bench's name for the tool that hands the user to a person
HELPERS = ("args", "record", "rows", "today", "now", "add_days", "days_between")
_MAX_TEXT = 10_000       # characters a `*` in an expression may build
_MAX_EXPONENT = 64       # the largest power an expression may take


class _RuleEnvironment(BoundedEnvironment):
    """The templates' bounded sandbox, with `*` and `**` held tighter: a rule is a comparison, not a computation."""

    def call_binop(self, context: Any, op: str, left: Any, right: Any) -> Any:
        if op == "**" and (not isinstance(right, (int, float)) or abs(right) > _MAX_EXPONENT):
            raise ValueError(f"a power of {right!r} is past what a rule may compute")
        if op == "*":
            for text, times in ((left, right), (right, left)):
                if isinstance(text, (str, list, tuple)) and isinstance(times, int) and len(text) * times > _MAX_TEXT:
                    raise ValueError("a rule may not build a text or list that long")
        return super().call_binop(context, op, left, right)


_ENV = _RuleEnvironment(undefined=StrictUndefined)


def rule_problems(rule: PolicyRule, spec: DomainSpec, tools: Iterable[str]) -> list[str]:
    """What is wrong with a rule's agent check, one message each (none: it is fine)."""
    check = rule.agent
    if check is None:
        return []
    problems = [f"rule {rule.id!r}: agent check names unknown tool {name!r}" for name in check.calls
                if name not in set(tools)]
    try:
        tree = _ENV.parse("{{ (" + check.breaks + ") }}")
    except TemplateSyntaxError as exc:
        return [*problems, f"rule {rule.id!r}: `breaks` is not an expression: {exc.message}"]
    for name in tree.find_all(nodes.Name):
        if name.ctx == "load" and name.name not in HELPERS:
            problems.append(f"rule {rule.id!r}: `breaks` names {name.name!r}; it may use {', '.join(HELPERS)}")
    tables = {t.name for t in spec.tables}
    for call in tree.find_all(nodes.Call):
        if isinstance(call.node, nodes.Name) and call.node.name in ("record", "rows") and call.args:
            table = call.args[0]
            if not (isinstance(table, nodes.Const) and table.value in tables):
                problems.append(f"rule {rule.id!r}: {call.node.name}() takes a table name first "
                                f"(one of {', '.join(sorted(tables))})")
    return list(dict.fromkeys(problems))


@lru_cache(maxsize=1024)
def _compiled(source: str) -> Callable[..., Any]:
    return _ENV.compile_expression(source, undefined_to_none=False)


class RuleError(ValueError):
    """A rule's expression could not be evaluated on a state (a missing record, a wrong type)."""


def _helpers(read: Callable[[str, dict[str, Any]], list[dict[str, Any]]], spec: DomainSpec) -> dict[str, Any]:
    keys = {t.name: t.primary_key.name for t in spec.tables}
    clock = Clock(spec.clock)

    def record(table: str, key: Any) -> dict[str, Any] | None:
        found = read(table, {keys[table]: key})
        return found[0] if found else None

    return {"record": record, "rows": lambda table, **where: read(table, where),
            "today": clock.today(), "now": clock.now(), "add_days": clock.add_days,
            "days_between": clock.days_between}


def breaks(rule: PolicyRule, name: str, args: dict[str, Any],
           read: Callable[[str, dict[str, Any]], list[dict[str, Any]]], spec: DomainSpec) -> bool:
    """Whether calling `name` with `args` now breaks `rule`, the state read through `read(table, where)`."""
    if rule.agent is None or name not in rule.agent.calls:
        return False
    try:
        with bounded_render():
            return bool(_compiled(rule.agent.breaks)(**_helpers(read, spec), args=args))
    except (ToolError, TemplateError, ArithmeticError, LookupError, TypeError, ValueError, AttributeError) as exc:
        raise RuleError(f"rule {rule.id!r} on {name}: {type(exc).__name__}: {exc}") from None


def agent_rules(spec: DomainSpec) -> list[PolicyRule]:
    return [rule for rule in spec.rules if rule.agent is not None]


def replay_watched(env: Any, calls: Sequence[tuple[str, dict[str, Any]]],
                   rules: Sequence[PolicyRule]) -> tuple[list[Any], list[tuple[int, str]], str]:
    """Replay `calls` on a fork of `env` (an Environment), checking `rules` before each call: the
    results (up to and including the first the tools refuse), (index, rule id) of every call that
    breaks a rule, and the state the replay ends in."""
    results, found = [], []
    with env.fork() as fork:
        for i, (name, args) in enumerate(calls):
            try:
                found += [(i, rule.id) for rule in rules if breaks(rule, name, args, fork.rows, fork.domain.spec)]
                unchecked = None
            except RuleError as exc:
                unchecked = exc
            results.append(fork.call(name, args))
            if not results[-1].ok:  # a call the tools refuse is that, whatever a rule made of its arguments
                break
            if unchecked is not None:
                raise unchecked
        return results, found, fork.state_hash()


def rules_broken(env: Any, calls: Sequence[tuple[str, dict[str, Any]]],
                 rules: Sequence[PolicyRule] | None = None) -> list[tuple[int, str]]:
    """(index, rule id) of every call that breaks an agent rule (replay_watched; none is replayed when no
    call is one a rule is about)."""
    rules = agent_rules(env.domain.spec) if rules is None else rules
    watched = {name for rule in rules for name in rule.agent.calls}
    if not any(name in watched for name, _ in calls):
        return []
    return replay_watched(env, calls, rules)[1]
