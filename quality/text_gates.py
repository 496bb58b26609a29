"""Gates on what the user says: every gold argument is knowable, the right row is identifiable,
and what the agent must find out is not given away.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from toolscale.domains.dates import SAID_FORMS
from toolscale.domains.tasks import GateVerdict

from .gates import GateContext, failed, passed
from toolscale.domains.matching import appears_in, leaves, normalize_text, same_value, value_key


def _leaves(value: Any) -> list[Any]:
    return [leaf for leaf in leaves(value) if leaf is not None and not isinstance(leaf, bool)]


def _allowed_literals(ctx: GateContext, tool: str, argument: str) -> list[Any]:
    """Values an agent needs no information for: the schema's enum options and the default."""
    spec = ctx.env.domain.toolkit.specs[tool]
    schema = spec.parameters["properties"].get(argument, {})
    options = schema.get("enum") or next((s.get("enum") for s in schema.get("anyOf", []) if "enum" in s), None)
    field = spec.args_model.model_fields.get(argument)
    default = [] if field is None or field.is_required() else [field.default]
    return list(options or []) + default


@lru_cache(maxsize=64)
def _policy_text(policy: str) -> str:
    return normalize_text(policy)


def _policy_number(ctx: GateContext, leaf: Any) -> bool:
    """A number the policy states (a cap, a fee): the agent knows it from the policy."""
    return (isinstance(leaf, (int, float)) and not isinstance(leaf, bool)
            and appears_in(leaf, _policy_text(ctx.env.domain.policy)))


class RealizabilityGate:
    """Each gold argument is in the user's instructions, in an earlier gold output, a number the
    policy states, or a schema literal.

    This is what rejects ids no agent could know (τ²-bench #370): the gold was written with the
    database open, but the agent only sees the user and the tools.
    """

    name = "realizability"

    def check(self, ctx: GateContext) -> GateVerdict:
        for i, action in enumerate(ctx.task.evaluation_criteria.actions):
            for argument, value in action.arguments.items():
                for leaf in _leaves(value):  # cheapest test first
                    if (appears_in(leaf, ctx.text) or ctx.returned_before(i, leaf) or leaf in ctx.told_dates
                            or _told_moment(ctx, leaf) or leaf in _allowed_literals(ctx, action.name, argument)
                            or _policy_number(ctx, leaf)):
                        continue
                    hint = (f"; a date the user does not give as it is must be said in one of these forms: {SAID_FORMS}"
                            if isinstance(leaf, str) and _ISO_DATE.fullmatch(leaf) else "")
                    return failed(f"action {i} ({action.name}): {argument}={leaf!r} is neither told by the user "
                                  f"nor returned by an earlier action{hint}")
        return passed()


def _told_moment(ctx: GateContext, leaf: Any) -> bool:
    """A date and time the user gives in two parts ("on 2026-10-24 at 10:00", "tomorrow at 10:00"): the agent
    writes them as one ISO value."""
    moment = _MOMENT.fullmatch(leaf) if isinstance(leaf, str) else None
    if moment is None:
        return False
    day, time_of_day = moment.groups()
    return (appears_in(day, ctx.text) or day in ctx.told_dates) and appears_in(time_of_day, ctx.text)


def _element_lists(output: Any) -> list[list[dict[str, Any]]]:
    """The lists of records in an output: the output itself, or lists one level inside a record."""
    candidates = [output] if isinstance(output, list) else list(output.values()) if isinstance(output, dict) else []
    return [c for c in candidates if isinstance(c, list) and len(c) > 1 and all(isinstance(e, dict) for e in c)]


_ISO_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_DATETIME = re.compile(r"(\d{4}-\d{2}-\d{2})T(\d{2}:\d{2})")
_MOMENT = re.compile(_DATETIME.pattern + "(?::00)?")  # a whole date and time, to the minute


def _phrases(value: str) -> list[str]:
    """Sub-phrases of a text value a user might say: 2-4 word runs, distinctive single words, and
    the date and the time of day of a timestamp."""
    moment = _DATETIME.fullmatch(value[:16])
    if moment:
        return [moment.group(1), moment.group(2)]
    words = value.split()
    runs = [" ".join(words[i:i + n]) for n in (4, 3, 2) for i in range(len(words) - n + 1)]
    return runs + [w for w in words if len(w) >= 4 and w.isalpha()]


def _mentioned(chosen: dict[str, Any], records: list[dict[str, Any]], text: str) -> list[str]:
    """Fields of `chosen` the user's text refers to: the whole value, or a phrase only it contains."""
    fields = []
    for field, value in chosen.items():
        if isinstance(value, bool) or not isinstance(value, (str, int, float)) or len(str(value)) < 2:
            continue
        if appears_in(value, text):
            fields.append(field)
        elif isinstance(value, str):
            others = [str(r.get(field, "")).lower() for r in records if r is not chosen]
            if any(appears_in(p, text) and not any(p.lower() in o for o in others) for p in _phrases(value)):
                fields.append(field)
    return fields


SUPERLATIVES = ("cheapest", "lowest", "highest", "largest", "smallest", "biggest", "earliest", "latest", "first",
                "last", "next", "soonest", "most", "least", "best", "worst", "warmest", "coldest", "wettest",
                "driest", "hottest", "newest", "oldest", "longest", "shortest", "closest", "nearest")
_SUPERLATIVE = re.compile(r"\b(?:" + "|".join(SUPERLATIVES) + r")\b")


def _extreme(chosen: dict[str, Any], records: list[dict[str, Any]]) -> bool:
    """Is `chosen` the only record holding the minimum or maximum of some field?"""
    for field, value in chosen.items():
        if isinstance(value, bool) or not isinstance(value, (int, float, str)):
            continue
        values = [r.get(field) for r in records]
        if any(type(v) is not type(value) for v in values):
            continue
        if value in (min(values), max(values)) and values.count(value) == 1:
            return True
    return False


class AmbiguityGate:
    """When the gold picks one record out of a listed few, the user's words single it out.

    Goals that admit several end states (τ²-bench #463) fail here: an argument taken from a
    list must belong to the only record that matches every detail the user gives about it.
    """

    name = "ambiguity"

    def check(self, ctx: GateContext) -> GateVerdict:
        outputs = ctx.first_replay.outputs
        keys: dict[int, list[set[Any]]] = {}  # per listed record, the keys of its values, made once per list
        for i, action in enumerate(ctx.task.evaluation_criteria.actions):
            for argument, value in action.arguments.items():
                for leaf in _leaves(value):
                    if appears_in(leaf, ctx.text):
                        continue
                    problem = self._unidentifiable(leaf, outputs[:i], ctx.text, keys)
                    if problem:
                        return failed(f"action {i} ({action.name}): {argument}={leaf!r} {problem}")
        return passed()

    @staticmethod
    def _unidentifiable(value: Any, earlier: list[Any], text: str, keys: dict[int, list[set[Any]]]) -> str | None:
        wanted = value_key(value)
        for output in earlier:
            if isinstance(output, dict) and any(value_key(v) == wanted for v in output.values()):
                return None  # a single record names it
            for records in _element_lists(output):
                if id(records) not in keys:
                    keys[id(records)] = [{value_key(v) for v in r.values()} for r in records]
                holders = [r for r, held in zip(records, keys[id(records)]) if wanted in held]
                if not holders or len(holders) == len(records):
                    continue  # not from this list, or shared by every record (e.g. the owner's id)
                superlative = _SUPERLATIVE.search(text) is not None
                best = len(records)
                for chosen in holders:  # any record the user can single out that gives this value will do
                    fields = _mentioned(chosen, records, text)
                    matching = [r for r in records if fields and all(same_value(r.get(f), chosen[f]) for f in fields)]
                    if matching and all(r in holders for r in matching):
                        return None  # every record the user's details fit gives this same value
                    if superlative and _extreme(chosen, matching or records):
                        return None  # "the cheapest", "the next one": the user picks it by an order
                    best = min(best, len(matching) or len(records))
                return f"is picked from {len(records)} listed records, but the user's details match {best} of them"
        return None


class LeakageGate:
    """What the agent must find out and report (communicate_info) is not already in the instructions."""

    name = "leakage"

    def check(self, ctx: GateContext) -> GateVerdict:
        for info in ctx.task.evaluation_criteria.communicate_info:
            if appears_in(info, ctx.text):
                return failed(f"communicate_info {info!r} already appears in the user's instructions")
        return passed()
