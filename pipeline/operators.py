"""The hardening operators: each drafts a harder variant of a task, or None where it cannot apply soundly.

Operators work on any domain's tasks, reading only their text, gold calls and recorded outputs:
- composition: two intents of the same user in one conversation;
- conditional: "if my balance is more than 500, do A; if not, B instead", the branch fixed by the database;
- change_of_mind: the user asks for A and, once told what A costs, asks for B instead;
- indirect: dates the user gives relative to today ("last Tuesday"), to be resolved by the agent;
- distractor: the user first names a sibling record by mistake, then corrects themselves;
- preference: the user asks for the cheapest or earliest of a listing instead of naming the record;
- partial: the user withholds a detail the gold needs until the agent asks for it (pipeline/harden.py verifies each).
"""

from __future__ import annotations

import json
import math
import random
import re
from collections.abc import Callable
from datetime import date
from enum import StrEnum
from typing import Any

from toolscale.domains import Domain, Environment, replay
from toolscale.domains.answers import asks_something
from toolscale.domains.dates import SAID_FORMS, relative_dates
from toolscale.domains.matching import appears_in, leaves, normalize_text, same_value
from toolscale.domains.sayings import spoken_date
from toolscale.domains.tasks import Action, Task
from toolscale.quality.soundness import ends_elsewhere, misfits
from toolscale.quality.wording import without_restraints

from .phrasing import continuing, merge_sentences, unclosed, unframed


class Operator(StrEnum):
    """A way of making a task harder: one name and one meaning for the offline operators below and
    for the steps the LLM backend's model may apply (LLM_STEPS, listed in prompts/harden.j2). The
    names are what `meta.hardening` records."""

    COMPOSITION = "composition"
    CONDITIONAL = "conditional"
    CHANGE_OF_MIND = "change_of_mind"
    INDIRECT = "indirect"
    DISTRACTOR = "distractor"
    PREFERENCE = "preference"
    PARTIAL = "partial"


MEANINGS = {
    Operator.COMPOSITION: "the user wants a second, related thing done in the same conversation (the gold then has "
                          "more actions than the original's; a value used after a write that changes it is read again "
                          "after that write)",
    Operator.CONDITIONAL: "the request depends on something the agent must check first that the user has a reason to "
                          "care about, what the request costs or the balance it spends from (\"only if the price is 80 "
                          "or less\"), asked once",
    Operator.CHANGE_OF_MIND: "the user changes their mind once the agent states what the first request costs",
    Operator.INDIRECT: "the user names a record indirectly (\"my most recent order\", \"the card I use abroad\"), "
                       f"or a date relative to today in one of the forms the checker reads back: {SAID_FORMS} (any "
                       "weekday; up to 99 days)",
    Operator.DISTRACTOR: "the user says something the agent must not act on (a wrong record named first and then "
                         "corrected: one the tools would accept, acting on it ending in another state, and every detail "
                         "said before the correction true of it; an irrelevant or misleading detail)",
    Operator.PREFERENCE: "the user states a preference (\"the cheapest\", \"the earliest\") instead of naming the record",
    Operator.PARTIAL: "the user keeps back a detail the gold needs until the agent asks for it",
}
LLM_STEPS = (Operator.COMPOSITION, Operator.CONDITIONAL, Operator.INDIRECT, Operator.DISTRACTOR)


Draft = tuple[Task, Callable[[list[Any]], str | None]]  # a variant, and a check of its replayed outputs


def calls_of(task: Task) -> list[tuple[str, str]]:
    return [(a.name, json.dumps(a.arguments, sort_keys=True)) for a in task.evaluation_criteria.actions]


def _variant(task: Task, operator: Operator, *, actions: list[Action] | None = None, intent: str | None = None,
             communicate: list[str] | None = None, nl: list[str] | None = None, **text: str | None) -> Task:
    instructions = task.user_scenario.instructions.model_copy(update=text)
    criteria = task.evaluation_criteria.model_copy(update={
        "actions": [Action(action_id=str(i), name=a.name, arguments=a.arguments)
                    for i, a in enumerate(actions if actions is not None else task.evaluation_criteria.actions)],
        "communicate_info": communicate if communicate is not None else task.evaluation_criteria.communicate_info,
        "nl_assertions": nl if nl is not None else task.evaluation_criteria.nl_assertions})
    meta = task.meta.model_copy(update={"hardening": [*task.meta.hardening, operator.value],
                                        "intent": intent or task.meta.intent})
    return task.model_copy(update={"user_scenario": task.user_scenario.model_copy(update={"instructions": instructions}),
                                   "evaluation_criteria": criteria, "meta": meta})


def _same_outputs(expected: list[Any], offset: int) -> Callable[[list[Any]], str | None]:
    def check(outputs: list[Any]) -> str | None:
        if outputs[offset:offset + len(expected)] != expected:
            return "the second request no longer sees what it saw alone (the two requests interfere)"
        return None
    return check


def _no_check(outputs: list[Any]) -> str | None:
    return None


def _beside(task: Task, other: Task) -> str:
    """The task's instructions as one of two requests: a read's "Do not buy anything." does not hold
    beside a request that changes something, nor "do not ask for anything else" beside any."""
    return without_restraints(task.user_scenario.instructions.task_instructions,
                              all_of_them=task.meta.kind == "read" and other.meta.kind == "write")


# ---------------------------------------------------------------------------------- operators
_JOINS = ("Once that is done, {}", "After that, {}", "When that is sorted, {}", "Then {}")


def compose(a: Task, b: Task, rng: random.Random | None = None) -> Draft | None:
    """A then B for the same user: B's repeated lookups are dropped, its outputs must not change."""
    done = set(calls_of(a))
    kept = [(x, o) for x, o, c in zip(b.evaluation_criteria.actions, b.meta.expected_outputs, calls_of(b)) if c not in done]
    if not kept or len(kept) == len(b.evaluation_criteria.actions):
        return None
    ia, ib = a.user_scenario.instructions, b.user_scenario.instructions
    variant = _variant(
        a, Operator.COMPOSITION, actions=[*a.evaluation_criteria.actions, *[x for x, _ in kept]],
        intent=f"{a.meta.intent}+{b.meta.intent}",
        communicate=[*a.evaluation_criteria.communicate_info, *b.evaluation_criteria.communicate_info],
        nl=list(dict.fromkeys([*a.evaluation_criteria.nl_assertions, *b.evaluation_criteria.nl_assertions])),
        reason_for_call=f"{unclosed(ia.reason_for_call)} In the same call, {continuing(unframed(ib.reason_for_call))}",
        known_info=merge_sentences(ia.known_info, ib.known_info), unknown_info=merge_sentences(ia.unknown_info, ib.unknown_info),
        task_instructions=f"{_beside(a, b)} {(rng or random.Random(0)).choice(_JOINS).format(continuing(_beside(b, a)))}")
    variant.meta.hardening[:] = sorted({*a.meta.hardening, *b.meta.hardening}) + [Operator.COMPOSITION.value]
    return variant, _same_outputs([o for _, o in kept], len(a.evaluation_criteria.actions))


def _spell(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:.2f}"


def _nice(value: float, up: bool) -> float:
    step = 10 ** max(math.floor(math.log10(abs(value))) - 1, 0) if value else 1
    return float((math.ceil if up else math.floor)(value / step) * step)


# numbers a customer would make a decision on (money), not ids, years, sizes or limits
_MONEY = re.compile(r"balance|price|fare|fee|cost|total|amount|paid|charge|deposit|refund|copay|due|owed|payment")
_NOT_MONEY = re.compile(r"_id$|year|number|limit|max_|min_|rate|pct|days")


def _told(*tasks: Task) -> str:
    return normalize_text(" ".join(filter(None, [getattr(t.user_scenario.instructions, f) for t in tasks
                                                 for f in ("reason_for_call", "known_info", "task_instructions")])))


def _unknown_amount(task: Task, domain: Domain, told: str,
                    rng: random.Random) -> tuple[int, str, str, dict[str, Any]] | None:
    """(action, id field, amount field, record): an amount on the record the task writes to, read before its
    second write (the first may be the identity check), that the user's text never gives."""
    actions, outputs = task.evaluation_criteria.actions, task.meta.expected_outputs
    writes = [i for i, a in enumerate(actions) if domain.toolkit.specs[a.name].kind == "write"]
    if not writes:
        return None
    target = actions[writes[-1]]
    for j in range(writes[-1]):
        records = outputs[j] if isinstance(outputs[j], list) else [outputs[j]]
        for record in (r for r in records if isinstance(r, dict)):
            key = next((f for f, v in record.items() if f.endswith("_id") and v in target.arguments.values()
                        and sum(r.get(f) == v for r in records if isinstance(r, dict)) == 1), None)
            numbers = [f for f, v in record.items() if isinstance(v, (int, float)) and not isinstance(v, bool)
                       and v > 1 and _MONEY.search(f) and not _NOT_MONEY.search(f) and not appears_in(v, told)]
            if key is not None and numbers and not any(j >= w for w in writes[1:]):
                field = rng.choice(numbers)
                return j, key, field, record
    return None


def _end_state(env: Environment, calls: list[tuple[str, dict[str, Any]]]) -> str | None:
    with env.fork() as fork:
        results = replay(fork, calls)
        return fork.state_hash() if all(r.ok for r in results) else None


def _two_branches(a: Task, b: Task, j: int, env: Environment) -> tuple[list[Action], list[Any]] | None:
    """B's branch (A's lookups up to action j, then B's own calls) and B's outputs there, when both
    A's gold and B's branch replay and end in different states; else None."""
    done = set(calls_of(a)[:j + 1])
    rest = [(x, o) for x, o, c in zip(b.evaluation_criteria.actions, b.meta.expected_outputs, calls_of(b)) if c not in done]
    branch_b = [*a.evaluation_criteria.actions[:j + 1], *[x for x, _ in rest]]
    if not rest or len(rest) == len(b.evaluation_criteria.actions):
        return None  # B must be its own goal, of the same user
    end_a, end_b = (_end_state(env, [(x.name, x.arguments) for x in branch])
                    for branch in (a.evaluation_criteria.actions, branch_b))
    if end_a is None or end_b is None or end_a == end_b:
        return None
    return branch_b, [o for _, o in rest]


def _label(field: str) -> str:
    """An amount's field in words, without its currency suffix ("deposit_eur" is "deposit")."""
    return re.sub(r"_(eur|usd|gbp)$", "", field).replace("_", " ")


def _noun(task: Task, record: dict[str, Any]) -> str:
    """What the user calls the record, by its own id (its first): "account" when it is the user's own
    (the one the first lookup found), else "booking", "ticket"... ("the fare on your passenger" was wrong)."""
    own = next(f for f in record if f.endswith("_id"))
    first = task.meta.expected_outputs[0] if task.meta.expected_outputs else None
    return "account" if isinstance(first, dict) and first.get(own) == record[own] else own[:-3].replace("_", " ")


_COST = re.compile(r"price|fare|fee|cost|charge|deposit|copay")  # what acting on the record costs
_HELD = re.compile(r"balance|points|credit|wallet|allowance")  # what the user pays from
_SPENDS = re.compile(r"amount|points|credit|value|sum|total")  # a write's argument that spends from it


def _stake(a: Task, domain: Domain, field: str, value: Any) -> str | None:
    """Why the user cares about `field` (holding `value`) of the record A writes to: "cost" when it is what
    A costs (the price of the thing bought, a fee: A's write gives the same amount back), "held" when it is a
    balance A's write spends from; else None (the points balance says nothing to whether one wants charity
    mode, nor a ticket's price to whether one moves it)."""
    writes = [i for i, x in enumerate(a.evaluation_criteria.actions) if domain.toolkit.specs[x.name].kind == "write"]
    if _COST.search(field):  # what A's write charges: its output gives the amount (a price paid, a fee)
        charged = [leaf for i in writes for leaf in leaves(a.meta.expected_outputs[i])]
        return "cost" if any(same_value(leaf, value) for leaf in charged) else None
    writes = [a.evaluation_criteria.actions[i] for i in writes]
    if _HELD.search(field) and any(_SPENDS.search(k) and isinstance(v, (int, float)) and not isinstance(v, bool)
                                   for k, v in writes[-1].arguments.items()):
        return "held"
    return None


def _asks_about(label: str, *texts: str | None) -> bool:
    """Does any sentence of `texts` already ask about what `label` names (a question would be asked twice)?"""
    words = {w.rstrip("s") for w in re.findall(r"[a-z]+", label.lower())}
    for sentence in re.split(r"(?<=[.!?])\s+", " ".join(filter(None, texts))):
        said = {w.rstrip("s") for w in re.findall(r"[a-z]+", sentence.lower())}
        if asks_something(sentence) and words & said:
            return True
    return False


def conditional(a: Task, b: Task, domain: Domain, env: Environment, rng: random.Random) -> Draft | None:
    """"I'll buy it only if the price is 80 or less; if not, I'd rather do B": two goals of one user,
    the branch fixed by an amount the user has a reason to care about (what A costs, or the balance A
    spends from) that the agent must look up.

    The gold is A's lookups up to the amount, then the branch the database decides. Sound only
    where both branches replay and end in different states (an agent on the wrong branch scores 0),
    and neither request already asks about the amount (the question would be asked twice).
    """
    found = _unknown_amount(a, domain, _told(a, b), rng)
    if found is None:
        return None
    j, key, field, record = found
    if not any(v == record[key] for x in b.evaluation_criteria.actions for v in x.arguments.values()):
        return None  # B is about another record: "if my order's balance is ..., ask about my gift card" is no choice
    stake = _stake(a, domain, field, record[field])
    label = _label(field)
    ia, ib = a.user_scenario.instructions, b.user_scenario.instructions
    if stake is None or _asks_about(label, ia.reason_for_call, ia.task_instructions, ib.reason_for_call,
                                    ib.task_instructions):
        return None
    noun, value = _noun(a, record), record[field]
    go_a = rng.random() < 0.5
    low = stake == "held"  # a balance must be high enough; a cost low enough
    threshold = _nice(value * rng.uniform(0.5, 0.85), up=False) if go_a == low else \
        _nice(value * rng.uniform(1.15, 1.8), up=True)
    if threshold <= 0 or (value > threshold) != (go_a == low):
        return None
    branches = _two_branches(a, b, j, env)
    if branches is None:
        return None
    branch_b, rest_b = branches
    branch_a, asked = a.evaluation_criteria.actions, a.evaluation_criteria.actions[:j + 1]
    taken = a if go_a else b
    what = f"the {label} on your {noun}" if stake == "held" else f"the {label} of the {noun}"
    if stake == "held":
        condition, reason = f"it is more than {_spell(threshold)}", (
            f"But only if {what} is more than {_spell(threshold)}: if it is {_spell(threshold)} or less, you would "
            f"rather keep it and do something else: {continuing(unframed(ib.reason_for_call))}")
    else:
        condition, reason = f"it is {_spell(threshold)} or less", (
            f"But only if {what} is {_spell(threshold)} or less: if it is more, you would rather do something "
            f"else: {continuing(unframed(ib.reason_for_call))}")
    variant = _variant(
        taken, Operator.CONDITIONAL, actions=branch_a if go_a else branch_b, intent=f"{a.meta.intent}|{b.meta.intent}",
        communicate=[_spell(value), *taken.evaluation_criteria.communicate_info],
        reason_for_call=f"{unclosed(ia.reason_for_call)} {reason}",
        known_info=merge_sentences(ia.known_info, ib.known_info),
        unknown_info=merge_sentences(ia.unknown_info, ib.unknown_info, f"You do not know {what}."),
        task_instructions=f"First ask the agent what {what} is. If {condition}: {continuing(_beside(a, b))} If it is "
                          f"not, say \"then I'd rather not\" and instead {continuing(_beside(b, a))}")
    check = _no_check if go_a else _same_outputs(rest_b, len(asked))
    return variant, check


_QUOTED = re.compile(r"fee|charge|price|fare|cost|deposit")  # what A costs: policies have it stated before a write
_STATES_COSTS = re.compile(r"(fee|charge|price|amount)[^.]{0,160}explicit confirmation", re.IGNORECASE)


def change_of_mind(a: Task, b: Task, domain: Domain, env: Environment, rng: random.Random) -> Draft | None:
    """The user asks for A, and when the agent states what A costs, changes their mind and asks for B.

    Sound only where the policy has the agent state the fee or charge before a write is confirmed
    (so the agent reports it before acting), the amount is on the record A and B are both about,
    and A's and B's end states differ (checked by replay). The gold is B's branch.
    """
    if not _STATES_COSTS.search(domain.policy) or calls_of(a)[-1] in calls_of(b):
        return None  # B doing A's write too ("change the ticket, then reserve a seat") is no change of mind
    found = _unknown_amount(a, domain, _told(a, b), rng)
    charged = a.meta.expected_outputs[-1] if isinstance(a.meta.expected_outputs[-1], dict) else {}
    if found is None or not _QUOTED.search(found[2]) or charged.get(found[2]) != found[3][found[2]]:
        return None  # only what A's own write charges, read beforehand, is sure to be stated before it is confirmed
    j, key, field, record = found
    value = record[field]
    threshold = _nice(value * rng.uniform(0.5, 0.85), up=False)
    if not 0 < threshold < value or not any(v == record[key] for x in b.evaluation_criteria.actions
                                             for v in x.arguments.values()):
        return None
    branches = _two_branches(a, b, j, env)
    if branches is None:
        return None
    branch_b, outputs_b = branches
    label = _label(field)
    ia, ib = a.user_scenario.instructions, b.user_scenario.instructions
    variant = _variant(
        b, Operator.CHANGE_OF_MIND, actions=branch_b, intent=f"{a.meta.intent}>{b.meta.intent}",
        communicate=[_spell(value), *b.evaluation_criteria.communicate_info],
        reason_for_call=ia.reason_for_call, known_info=merge_sentences(ia.known_info, ib.known_info),
        unknown_info=merge_sentences(ia.unknown_info, ib.unknown_info, f"You do not know the {label}."),
        task_instructions=f"{ia.task_instructions} If the agent says the {label} is more than {_spell(threshold)}, "
                          f"change your mind before confirming: you do not want that after all, and instead "
                          f"{continuing(ib.task_instructions)}")
    return variant, _same_outputs(outputs_b, j + 1)


def indirect_dates(task: Task, today: date) -> Draft | None:
    """Dates within two weeks of today are said relative to today; the agent must work them out."""
    i = task.user_scenario.instructions
    fields = ("reason_for_call", "known_info", "task_instructions")
    text = {f: relative_dates(getattr(i, f) or "", today) or None for f in fields}
    if all(text[f] == getattr(i, f) for f in fields):
        return None
    text["task_instructions"] = (text["task_instructions"] or "") + " Refer to dates the way you would in conversation."
    return _variant(task, Operator.INDIRECT, **text), _no_check


def _picked(output: Any, later: list[Action]) -> tuple[dict[str, Any], str] | None:
    """The one record of a listed output whose id a later gold call uses, and that id's field."""
    if not (isinstance(output, list) and len(output) > 1 and all(isinstance(r, dict) for r in output)):
        return None
    used = {json.dumps(v) for a in later for v in a.arguments.values()}
    picks = [(r, f) for r in output for f, v in r.items()
             if f.endswith("_id") and json.dumps(v) in used and sum(o.get(f) == v for o in output) == 1]
    return picks[0] if len(picks) == 1 else None


def _replace_value(text: str | None, old: str, new: str) -> str | None:
    return re.sub(rf"(?<![\w@.-]){re.escape(old)}(?![\w@])", new, text, flags=re.IGNORECASE) if text else text


def distractor(task: Task, env: Environment, rng: random.Random) -> Draft | None:
    """The user first names a sibling record (from the same list) and only later corrects themselves.

    Sound only when the text before the correction fits the wrong record as well as it fitted
    the right one (the right value is replaced by the wrong one, and every other detail the user
    gives, a timestamp's date or time included, is the wrong record's too), and acting on the wrong
    record runs in the tools and ends in another state (quality/soundness.py checks both by replay).
    """
    i = task.user_scenario.instructions
    fields = ("reason_for_call", "known_info", "task_instructions")
    text = normalize_text(" ".join(filter(None, [getattr(i, f) for f in fields])))
    actions = task.evaluation_criteria.actions
    for at, output in enumerate(task.meta.expected_outputs):
        picked = _picked(output, actions[at + 1:])
        if picked is None:
            continue
        chosen, key = picked
        told = [f for f, v in chosen.items() if isinstance(v, (str, int, float)) and not isinstance(v, bool)
                and len(str(v)) >= 2 and appears_in(v, text)]
        for field in told:
            value = chosen[field]
            if not isinstance(value, str) or len(value) < 3 or field.endswith("_id"):
                continue
            siblings = []
            for r in output:
                if r is chosen or not isinstance(r.get(field), str) or appears_in(r[field], text):
                    continue
                said = normalize_text(" ".join(filter(None, [_replace_value(getattr(i, f), value, r[field])
                                                             for f in fields])))
                if not misfits(said, chosen, r, {key}) and ends_elsewhere(env, task, at, chosen[key], r[key]):
                    siblings.append(r)
            if not siblings:
                continue
            wrong = rng.choice(sorted(siblings, key=lambda r: r[field]))[field]
            text_update = {f: _replace_value(getattr(i, f), value, wrong) for f in fields}
            text_update["task_instructions"] += (f" Once the agent has found it, before you agree to any change, correct "
                                                 f"yourself: you meant {value}, not {wrong}.")
            noun = key[:-3].replace("_", " ")
            return _variant(task, Operator.DISTRACTOR, **text_update,
                            nl=[*task.evaluation_criteria.nl_assertions,
                                f"The agent does not act on the {noun} the user first names ({spoken_date(wrong)}), "
                                f"only on the one they correct themselves to ({spoken_date(value)})."]), _no_check
        break
    return None


_ORDERS = ((re.compile(r"price|fare|fee|cost|total"), "cheapest", "most expensive"),
           (re.compile(r"departs_at|starts_at|start_date|start_time|tip_time|_date$"), "earliest", "latest"))


def _preference(chosen: dict[str, Any], records: list[dict[str, Any]]) -> tuple[str, str] | None:
    """(field, word) when `chosen` alone holds the minimum or maximum of a field a person orders by."""
    for field, value in sorted(chosen.items()):
        order = next((o for o in _ORDERS if o[0].search(field)), None)
        values = [r.get(field) for r in records]
        if order is None or isinstance(value, bool) or any(type(v) is not type(value) for v in values):
            continue
        if values.count(value) == 1 and value in (min(values), max(values)):
            return field, order[1] if value == min(values) else order[2]
    return None


def _spoken(value: Any) -> list[str]:
    """How the user's text may give a value: as is, or a timestamp's time of day."""
    text = str(value)
    return [text, text[11:16]] if re.fullmatch(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}.*", text) else [text]


def preference(task: Task, env: Environment) -> Draft | None:
    """The user states a preference ("the cheapest", "the earliest") instead of naming the record.

    Applies where the gold picks the record that alone is the extreme of a price or a time out
    of a listed output, and the details that named it sit in known_info (the goal's sentences stay).
    The variant must still pass the realizability and ambiguity gates: the rest of the text
    gives every argument, and the preference singles the record out.
    """
    from toolscale.quality.gates import GateContext
    from toolscale.quality.text_gates import AmbiguityGate, RealizabilityGate

    i = task.user_scenario.instructions
    goal = normalize_text(f"{i.reason_for_call} {i.task_instructions}")
    actions = task.evaluation_criteria.actions
    for at, output in enumerate(task.meta.expected_outputs):
        picked = _picked(output, actions[at + 1:])
        order = picked and _preference(picked[0], output)
        if not order:
            continue
        chosen, key = picked
        naming = [p for f, v in chosen.items() if any(r.get(f) != v for r in output) and not isinstance(v, bool)
                  for p in _spoken(v) if len(p) >= 2]
        if any(appears_in(p, goal) for p in naming):
            return None  # the goal itself names the record
        owner = {json.dumps(v) for v in (task.meta.expected_outputs[0] or {}).values()} \
            if isinstance(task.meta.expected_outputs[0], dict) else set()
        if any(json.dumps(v) in owner for v in actions[at].arguments.values()):
            return None  # a listing of the user's own records (tickets they hold): they mean one, they do not choose
        known = i.known_info or ""
        for p in naming:  # "arrives ... at 13:05 on 2026-04-21" -> "arrives ... on 2026-04-21"
            known = re.sub(rf"(?:\s(?:at|on|for))?\s(?<![\w@.-]){re.escape(p)}(?![\w@])", "", known)
        sentences = re.split(r"(?<=[.!?])\s+", known)
        kept = [s for s in sentences if not any(appears_in(p, normalize_text(s)) for p in naming)
                and (s in (i.known_info or "") or len(s.split()) >= 5)]  # not a stump like "The tour starts."
        if known == (i.known_info or "") and len(kept) == len(sentences):
            return None
        noun = key[:-3].replace("_", " ")
        wish = f"You have no particular {noun} in mind: you want the {order[1]} {noun} that fits the rest of your request."
        variant = _variant(task, Operator.PREFERENCE, known_info=" ".join([*kept, wish]))
        ctx = GateContext(env, variant)
        if all(gate.check(ctx).passed for gate in (RealizabilityGate(), AmbiguityGate())):
            return variant, _no_check
        return None
    return None


def partial(task: Task) -> Draft | None:
    """The user keeps back one detail the gold needs (an email, a date of birth) until asked."""
    i = task.user_scenario.instructions
    known, request = normalize_text(i.known_info or ""), normalize_text(f"{i.reason_for_call} {i.task_instructions}")
    for action in task.evaluation_criteria.actions:
        for argument, value in action.arguments.items():  # a detail the request itself states cannot be held back
            if isinstance(value, str) and len(value) >= 4 and appears_in(value, known) and not appears_in(value, request):
                label = argument.replace("_", " ")
                extra = f" Do not volunteer your {label}; give it only when the agent asks for it."
                return _variant(task, Operator.PARTIAL,
                                task_instructions=task.user_scenario.instructions.task_instructions + extra), _no_check
    return None
