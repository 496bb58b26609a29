"""Answers a grader can check: what a task asks the agent to say, in the form τ²-bench can match.

τ²-bench scores a communicated value by one rule: the value, lowercased, must occur in an assistant
message that has been lowercased and stripped of commas. So an expected value must be the part
that every natural correct reply contains ("17000000" is in "17,000,000 USD" and in "17000000.00";
"17000000.00" is not in the first), and a wrong reply must be unlikely to contain it (not "0", not
"W", not a number the user said themselves). `answer_form` writes a value that way; `weakness`
says why a value still cannot be checked, and `shape_answers` keeps the checkable values and turns
the others into statements for a judge (nl_assertions), which the synthesizers and the gate share.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from .tasks import Task

_DECIMAL = re.compile(r"-?\d+\.\d+")
_INTEGER = re.compile(r"-?\d+")
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_DATETIME = re.compile(r"(\d{4}-\d{2}-\d{2})[T ](\d{2}):(\d{2})(?::\d{2}(?:\.\d+)?)?")
_TIME = re.compile(r"(\d{2}):(\d{2})(?::\d{2})?")
_ENUM = re.compile(r"[a-z]+(?:_[a-z]+)+")
_PHONE = re.compile(r"(?=.*[ ()])\+?\(?\d[\d ()-]{6,}\d")  # digits with spaces or brackets: a phone number

_WORD = re.compile(r"[a-z]+")
VAGUE = frozenset({"none", "null", "n/a", "na", "yes", "no", "true", "false", "unknown", "other", "ok", "nil"})
_LIST_SEPARATOR = re.compile(r"\s*[;,]\s*")  # τ²-bench drops a reply's commas, so no value may keep one
SHORTEST = 3  # a value of two characters or fewer is in almost any reply ("3", "W", "12")


def _hour(hour: str, minute: str) -> str:
    return f"{int(hour)}:{minute}"  # "6:00" is in "06:00", "6:00 am" and "at 6:00"


def answer_form(value: str) -> str:
    """The part of `value` every natural correct reply contains: trailing zeros and signs dropped
    from numbers, seconds and the leading zero from times, enum underscores spelled as spaces."""
    text = value.strip()
    if _DECIMAL.fullmatch(text):
        text = text.lstrip("-").rstrip("0").rstrip(".")
        return text if text not in ("", "0") else "0"
    if _INTEGER.fullmatch(text):
        return text.lstrip("-")
    if moment := _TIME.fullmatch(text):
        return _hour(moment.group(1), moment.group(2))
    if _ENUM.fullmatch(text):
        return text.replace("_", " ")
    if _PHONE.fullmatch(text):  # "(503) 555-0165" is also written 503-555-0165 or +1 503 555 0165
        return re.findall(r"\d+", text)[-1]
    return text


_ASK = re.compile(r"\b(ask|asks|request|tell|told|find out|know|what|how|which|when|whether|confirm|check|wonder|learn"
                  r"|hear|quote)\b|\?", re.IGNORECASE)


def asks_something(request: str) -> bool:
    """Does the user's request (reason_for_call and task_instructions) ask to be told anything?"""
    return _ASK.search(request) is not None


@lru_cache(maxsize=65536)
def token_pattern(spelling: str) -> re.Pattern[str]:
    """`spelling` as a whole token of lowercased text: "0" is not in "10 eur", "2026-04-15" is in "the date
    2026-04-15." (domains/matching.py finds values in text with it)."""
    return re.compile(r"(?<![\w.@-])" + re.escape(spelling.lower()) + r"(?![\w@]|\.\d)")


def contains(reply: str, value: str) -> bool:
    """τ²-bench's rule: is `value` in `reply`, both lowercased, the reply's commas removed?"""
    return value.lower() in reply.lower().replace(",", "")


def _fields_holding(value: str, outputs: Sequence[Any]) -> Iterator[str]:
    """The output fields whose value is `value` (compared as written and in answer form)."""
    stack: list[Any] = list(outputs)
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            for key, item in node.items():
                if isinstance(item, (dict, list)):
                    stack.append(item)
                elif item is not None and not isinstance(item, bool) and value in (str(item), answer_form(str(item))):
                    yield key
        elif isinstance(node, list):
            stack.extend(node)


def _is_status(value: str, outputs: Sequence[Any]) -> bool:
    return any(f == "status" or f.endswith("_status") for f in _fields_holding(value, outputs))


WHY = {  # each kind of value no substring check can grade, and why
    "timestamp": "a timestamp, which a person says as a date and a time",
    "date": "a date, which a person says in words",
    "short": "two characters or fewer, which almost any reply contains",
    "zero": "a bare zero, which almost any reply contains",
    "absence": "an absence or a yes/no, which a reply puts in other words",
    "status": "a status word, which a reply may put in other words",
    "echo": "the user's own words contain it, so echoing them passes",
    "contained": "another expected value contains it",
}


def weakness(value: str, user_text: str, others: Sequence[str] = (), outputs: Sequence[Any] = ()) -> str | None:
    """The kind of value (a key of WHY) that keeps `value`, already in answer form, from being
    graded; None when it can be. `user_text` is all the user's side is told, `others` the task's
    other values, `outputs` the gold's outputs (to tell a status from another word)."""
    if _DATETIME.fullmatch(value):
        return "timestamp"
    if _DATE.fullmatch(value):
        return "date"
    if len(value) < SHORTEST:
        return "short"
    if _INTEGER.fullmatch(value) and int(value) == 0:
        return "zero"
    if value.lower() in VAGUE:
        return "absence"
    if _WORD.fullmatch(value) and _is_status(value, outputs):
        return "status"
    if contains(user_text, value):
        return "echo"
    if any(other != value and contains(other, value) for other in others):
        return "contained"
    return None


@dataclass(frozen=True)
class Judged:
    """A fact the task wants told that no substring check can grade, left to a judge."""

    value: str
    kind: str  # a key of WHY
    label: str | None = None  # the output field it was read from, in words

    def assertion(self) -> str:
        what = f"the {self.label}: {self.value}" if self.label else self.value
        return f"The agent tells the user {what}."


@dataclass
class ShapedAnswers:
    """The values the grader checks, and the facts left to a judge."""

    communicate: list[str] = field(default_factory=list)
    judged: list[Judged] = field(default_factory=list)

    def assertions(self) -> list[str]:
        return [j.assertion() for j in self.judged]


def _timestamp_form(value: str, user_text: str) -> str:
    """A timestamp whose date the user already has becomes its time of day ("18:00")."""
    moment = _DATETIME.fullmatch(value)
    if moment and moment.group(1) in user_text:
        return _hour(moment.group(2), moment.group(3))
    return value


def shape_answers(values: Sequence[str], user_text: str, outputs: Sequence[Any] = ()) -> ShapedAnswers:
    """Each value in answer form, duplicates dropped; the ones no grader can check set aside."""
    forms: list[str] = []
    for value in values:
        for item in _LIST_SEPARATOR.split(value):  # each item alone: a reply lists them in its own order
            form = _timestamp_form(answer_form(item), user_text)
            if form and form not in forms:
                forms.append(form)
    shaped = ShapedAnswers()
    for form in forms:
        kind = weakness(form, user_text, forms, outputs)
        if kind is None:
            shaped.communicate.append(form)
        else:
            label = next(_fields_holding(form, outputs), None)
            shaped.judged.append(Judged(form, kind, label and label.replace("_", " ")))
    return shaped


def with_checkable_answers(task: Task) -> Task:
    """The task with its communicate_info shaped against what its user is told and its gold outputs;
    what cannot be graded by substring becomes an nl_assertion."""
    criteria = task.evaluation_criteria
    shaped = shape_answers(criteria.communicate_info, task.user_scenario.text(), task.meta.expected_outputs)
    stated = [j.assertion() for j in shaped.judged  # a fact an assertion of the task's own states is not asked again
              if not any(token_pattern(j.value).search(assertion.lower()) for assertion in criteria.nl_assertions)]
    assertions = [*criteria.nl_assertions, *(a for a in stated if a not in criteria.nl_assertions)]
    judged = [*task.meta.judged_answers, *(j.kind for j in shaped.judged)]
    return task.model_copy(update={
        "evaluation_criteria": criteria.model_copy(update={"communicate_info": shaped.communicate,
                                                           "nl_assertions": assertions}),
        "meta": task.meta.model_copy(update={"judged_answers": judged})})
