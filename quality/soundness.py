"""Whether a hardened task is sound, by replay: the checks the operators run before they keep a draft,
the operator gate runs on every task, and bench/task_defects.py counts over a whole run.

- a distractor's wrong record is one the tools accept, acting on it ends in another state, and every
  detail the user gives before correcting themselves fits it (`distractor_defect`);
- no gold argument is a value that a later read of the same record no longer returns (`stale_arguments`);
- the things the user does not know are each listed once (`repeated_unknowns`);
- a composition A+B and its order-swapped twin B+A of the same user are not both kept (`twin_key`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

from toolscale.domains import Environment, Task, replay
from toolscale.domains.matching import appears_in, normalize_text, same_value
from toolscale.domains.tasks import GateVerdict

from .gates import GateContext, failed, passed

CORRECTION = re.compile(r" ?Once the agent has found it, before you agree to any change, correct yourself: "
                        r"you meant (?P<right>.+?), not (?P<wrong>.+)\.$")


def spoken(value: Any) -> list[str]:
    """How the user's text may give a value: as is, and a timestamp's date and time of day apart."""
    text = str(value)
    moment = re.fullmatch(r"(\d{4}-\d{2}-\d{2})[T ](\d{2}:\d{2}).*", text)
    return [text, moment.group(1), moment.group(2)] if moment else [text]


def misfits(text: str, chosen: dict[str, Any], wrong: dict[str, Any], skip: set[str]) -> list[str]:
    """The details of `chosen` the (normalized) text gives that `wrong` does not share: a timestamp's
    date or time counts on its own ("your showing on 2026-07-15" names the date of 2026-07-15T20:30)."""
    theirs = {form.lower() for value in wrong.values() if value is not None and not isinstance(value, bool)
              for form in spoken(value)}
    found = []
    for field, value in chosen.items():
        if field in skip or isinstance(value, bool) or value is None or same_value(value, wrong.get(field)):
            continue
        for form in spoken(value):
            if len(form) >= 2 and form.lower() not in theirs and appears_in(form, text):
                found.append(f"{field} {form}")
    return found


def ends_elsewhere(env: Environment, task: Task, at: int, old: Any, new: Any) -> bool:
    """Does the gold, with the record id `new` in place of `old` after action `at`, run without error
    and end in another state than the gold's? (A refusal by the tools does not count: it tests nothing.)"""
    actions = task.evaluation_criteria.actions
    calls = task.gold_calls()[:at + 1] + [(a.name, {k: new if v == old else v for k, v in a.arguments.items()})
                                           for a in actions[at + 1:]]
    with env.fork() as fork:
        results = replay(fork, calls)
        return len(results) == len(calls) and all(r.ok for r in results) \
            and fork.state_hash() != task.meta.final_state_hash


def _records(output: Any) -> list[dict[str, Any]]:
    return [r for r in (output if isinstance(output, list) else [output]) if isinstance(r, dict)]


def _distractor_records(task: Task, right: str, wrong: str) -> tuple[int, str, dict[str, Any], dict[str, Any]] | None:
    """(action, id field, right record, wrong record): the listed records whose same field holds `right`
    and `wrong`, the right one's id used by a later gold call."""
    actions = task.evaluation_criteria.actions
    used = {json.dumps(v) for a in actions for v in a.arguments.values()}
    for at, output in enumerate(task.meta.expected_outputs):
        rows = _records(output)
        for chosen in rows:
            key = next((f for f, v in chosen.items() if f.endswith("_id") and json.dumps(v) in used
                        and sum(r.get(f) == v for r in rows) == 1
                        and any(json.dumps(v) in {json.dumps(x) for x in a.arguments.values()}
                                for a in actions[at + 1:])), None)
            if key is None:
                continue
            for field, value in chosen.items():
                if not same_value(str(value), right):
                    continue
                other = next((r for r in rows if r is not chosen and same_value(str(r.get(field)), wrong)), None)
                if other is not None:
                    return at, key, chosen, other
    return None


def distractor_defect(env: Environment, task: Task) -> str | None:
    """Why a distractor variant is unsound, or None: its wrong record must be one the tools accept,
    acting on it must end in another state, and the text before the correction must fit it."""
    i = task.user_scenario.instructions
    said = CORRECTION.search(i.task_instructions or "")
    if said is None:
        return "the user never corrects themselves"
    found = _distractor_records(task, said["right"], said["wrong"])
    if found is None:
        return f"no record listed beside the right one has {said['wrong']!r}"
    at, key, chosen, wrong = found
    if not ends_elsewhere(env, task, at, chosen[key], wrong[key]):
        return f"acting on {wrong[key]} is refused by the tools or ends in the gold's state"
    before = CORRECTION.sub("", i.task_instructions)
    text = normalize_text(" ".join(filter(None, [i.reason_for_call, i.known_info, before])))
    off = misfits(text, chosen, wrong, {key})
    return f"the user's words before the correction do not fit {wrong[key]}: {', '.join(off)}" if off else None


def _holders(output: Any, value: Any) -> Iterator[tuple[str, Any, str]]:
    """(id field, id, field) of each record in `output` holding `value` in a field that is not an id."""
    stack = [output]
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            stack.extend(node)
        elif isinstance(node, dict):
            key = next((f for f in node if f.endswith("_id")), None)
            for field, item in node.items():
                if isinstance(item, (dict, list)):
                    stack.append(item)
                elif key and not field.endswith("_id") and same_value(item, value):
                    yield key, node[key], field


def _field_of(output: Any, key: str, ident: Any, field: str) -> tuple[bool, Any]:
    stack = [output]
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            stack.extend(node)
        elif isinstance(node, dict):
            if node.get(key) == ident and field in node:
                return True, node[field]
            stack.extend(v for v in node.values() if isinstance(v, (dict, list)))
    return False, None


def stale_arguments(env: Environment, task: Task) -> list[str]:
    """Each gold argument equal to a value read from a record before a write that changed the state,
    where the same read made again just before the call no longer returns that value (the user's own
    values aside)."""
    calls = task.gold_calls()
    kinds = [env.domain.toolkit.specs[name].kind for name, _ in calls]
    outputs = task.meta.expected_outputs
    if len(outputs) != len(calls) or "write" not in kinds:
        return []
    told = normalize_text(task.user_scenario.text())
    candidates = [(k, argument, value, j) for k, (_, arguments) in enumerate(calls)
                  for argument, value in arguments.items()
                  if not isinstance(value, (bool, dict, list)) and value is not None and not appears_in(value, told)
                  for j in range(k) if kinds[j] == "read" and "write" in kinds[j + 1:k]
                  and next(_holders(outputs[j], value), None) is not None]
    if not candidates:
        return []  # no argument was read before a write (most golds): nothing to replay
    stale: list[str] = []
    hashes: list[str] = []
    with env.fork() as fork:
        hashes.append(fork.state_hash())
        for name, arguments in calls:
            if not fork.call(name, arguments).ok:
                return []
            hashes.append(fork.state_hash())
    done: set[tuple[int, str]] = set()
    for k, argument, value, j in candidates:  # the user's own values aside: theirs to give, not read from a record
        if (k, argument) in done or hashes[j + 1] == hashes[k]:
            continue  # already found stale, or read after the last write before k: still what the record holds
        for key, ident, field in _holders(outputs[j], value):
            with env.fork() as fork:
                replay(fork, calls[:k])
                again = fork.call(*calls[j])
            there, now = _field_of(again.output, key, ident, field) if again.ok else (False, None)
            if there and not same_value(now, value):
                stale.append(f"action {k} ({calls[k][0]}) {argument}={value!r} is {key} {ident}'s {field} as action "
                             f"{j} read it; read again before action {k} it is {now!r}")
                done.add((k, argument))
                break
    return stale


_STOP = frozenset({"the", "your", "a", "an", "my", "exact", "of", "on", "for", "in", "to", "with", "account", "current",
                   "precise", "its", "their", "any", "is", "or"})
_UNKNOWN = re.compile(r"(?:[Yy]ou do not know|[Yy]ou don't know) ([^.;()]+)")


def unknown_items(unknown_info: str | None) -> list[str]:
    """The things a "You do not know A, B or C." text lists, each as written."""
    items = []
    for listed in _UNKNOWN.findall(unknown_info or ""):
        items += [i.strip() for i in re.split(r", (?:or |and )?| or | and ", listed) if i.strip()]
    return items


def content_words(item: str) -> frozenset[str]:
    """What an unknown names, without articles, "exact", "on your account" or plurals: one thing's key."""
    return frozenset(w.rstrip("s") for w in re.findall(r"[a-z0-9]+", item.lower()) if w not in _STOP and w != "s")


def repeated_unknowns(unknown_info: str | None) -> list[tuple[str, str]]:
    """Pairs of listed unknowns that are one thing: the same words once "the", "your", "exact", "on your
    account" and plurals are set aside, or one's words all among the other's ("the price" and "the exact
    price"; "your exact points balance" and "the points balance on your account")."""
    items = unknown_items(unknown_info)
    pairs = []
    for n, a in enumerate(items):
        for b in items[n + 1:]:
            wa, wb = content_words(a), content_words(b)
            if wa and wb and (wa <= wb or wb <= wa):
                pairs.append((a, b))
    return pairs


def twin_key(task: Task) -> tuple[str, frozenset[str]] | None:
    """A composition's user (its first gold call) and its two intents unordered: A+B and B+A share it."""
    if "composition" not in task.meta.hardening or "+" not in task.meta.intent or not task.evaluation_criteria.actions:
        return None
    first = task.evaluation_criteria.actions[0]
    return json.dumps([first.name, first.arguments], sort_keys=True), frozenset(task.meta.intent.split("+", 1))


class SoundnessGate:
    """The hardening operators' work holds up on replay: no gold argument is a value a later read of the
    same record no longer returns, a distractor's wrong record is one the tools accept that ends in another
    state and fits what the user says before correcting themselves, and unknown_info lists each thing once."""

    name = "soundness"

    def check(self, ctx: GateContext) -> GateVerdict:
        task = ctx.task
        if pairs := repeated_unknowns(task.user_scenario.instructions.unknown_info):
            return failed(f"unknown_info lists one thing twice: {pairs[0][0]!r} and {pairs[0][1]!r}")
        if "distractor" in task.meta.hardening and (why := distractor_defect(ctx.env, task)):
            return failed(f"distractor: {why}")
        if stale := stale_arguments(ctx.env, task):
            return failed(f"stale gold: {stale[0]}")
        return passed()
