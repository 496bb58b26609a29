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

from .sayings import spoken_date, statement
from .tasks import Task

_DECIMAL = re.compile(r"-?\d+\.\d+")
_INTEGER = re.compile(r"-?\d+")
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_DATETIME = re.compile(r"(\d{4}-\d{2}-\d{2})[Tt ](\d{2}):(\d{2})(?::\d{2}(?:\.\d+)?)?")
_TIME = re.compile(r"(\d{2}):(\d{2})(?::\d{2})?")
_ENUM = re.compile(r"[a-z]+(?:_[a-z]+)+")
_PHONE = re.compile(r"(?=.*[ ()])\+?\(?\d[\d ()-]{6,}\d")  # digits with spaces or brackets: a phone number

_WORD = re.compile(r"[a-z]+")
VAGUE = frozenset({"none", "null", "n/a", "na", "yes", "no", "true", "false", "unknown", "other", "ok", "nil"})
_LIST_SEPARATOR = re.compile(r"\s*[;,]\s*")  # τ²-bench drops a reply's commas, so no value may keep one
SHORTEST = 3  # a value of two characters or fewer is in almost any reply ("3", "W", "12")
SHORT = 3  # one of three characters or fewer ("0.5", "348") goes to the judge when anything shown can hold it


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


def _is(value: str, item: Any) -> bool:
    return item is not None and not isinstance(item, (bool, dict, list)) \
        and value in (str(item), answer_form(str(item)), _time_of(str(item)))


def _holding(value: str, outputs: Sequence[Any]) -> Iterator[tuple[str, str | None]]:
    """(field, the record's id field) of each output field whose value is `value` (compared as written
    and in answer form), in document order; a field listing it among others is "field[]"."""
    stack: list[Any] = list(reversed(outputs))
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            own = next((f for f in node if f.endswith("_id")), None)
            for key, item in node.items():
                if _is(value, item):
                    yield key, own
                elif isinstance(item, list) and any(_is(value, x) for x in item):
                    yield f"{key}[]", own
            stack.extend(reversed([item for item in node.values() if isinstance(item, (dict, list))]))
        elif isinstance(node, list):
            stack.extend(reversed(node))


def _fields_holding(value: str, outputs: Sequence[Any]) -> Iterator[str]:
    """The output fields whose value is `value` (compared as written and in answer form)."""
    return (key for key, _ in _holding(value, outputs) if not key.endswith("[]"))


def _is_status(value: str, outputs: Sequence[Any]) -> bool:
    return any(f == "status" or f.endswith("_status") for f in _fields_holding(value, outputs))


def _shown(outputs: Sequence[Any]) -> Iterator[str]:
    """Every value the gold's outputs show, in the forms a reply may say it (as written, in answer form,
    a float with two decimals), lowercased and without commas as τ²-bench reads a reply."""
    stack: list[Any] = list(outputs)
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
        elif node is not None and not isinstance(node, bool):
            text = str(node)
            forms = {text, answer_form(text)} | ({f"{node:.2f}"} if isinstance(node, float) else set())
            yield from (f.lower().replace(",", "") for f in forms)


def _same_fact(value: str, shown: str) -> bool:
    """Is `shown` the value itself in another form ("3480.00" for "3480", a timestamp for its time of day)?"""
    return answer_form(shown) == value.lower() or _time_of(shown) == value.lower()


def shown_containing(value: str, user_text: str, outputs: Sequence[Any], others: Sequence[str] = ()) -> str | None:
    """Another value the conversation shows that contains `value` by τ²-bench's rule ('348' is in the
    booking total '3480'), so that a reply giving the wrong one passes: a token of the user's text, a value
    of the gold's outputs (the value itself in another form aside), another expected value; None when
    there is none."""
    needle = value.lower()
    tokens = re.findall(r"[^\s]+", user_text.lower().replace(",", ""))
    for shown in (*(o.lower() for o in others), *tokens, *_shown(outputs)):
        shown = shown.rstrip(".;:!?)").lstrip("(")
        if needle in shown and shown != needle and not _same_fact(value, shown):
            return shown
    return None


_LABEL_COLON = re.compile(r"\b(?:[Tt]he|with) (?!agent\b)(?:[a-z]+ ){0,5}[a-z]+: ")  # field names are lowercase
_SNAKE = re.compile(r"\b[a-z]+_[a-z_]+\b")
_TAIL = frozenset({"to", "at", "on", "from", "by", "until", "kmh", "pct", "c", "m", "min", "eur", "usd", "gbp", "id"})


def raw_label(assertion: str, outputs: Sequence[Any] = ()) -> bool:
    """Does an nl_assertion give an output field's raw label, not words ("the valid to: 2027-04-16",
    "the record with departs at ...", "the wind gust kmh")?"""
    if _LABEL_COLON.search(assertion) or _SNAKE.search(assertion):
        return True
    lowered = assertion.lower()
    return any(re.search(rf"\b(?:the|with) {re.escape(f.replace('_', ' '))}\b", lowered) for f in _all_fields(outputs)
               if "_" in f and f.rsplit("_", 1)[1] in _TAIL)


def _all_fields(outputs: Sequence[Any]) -> set[str]:
    found: set[str] = set()
    stack: list[Any] = list(outputs)
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            found.update(node)
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return found


WHY = {  # each kind of value no substring check can grade, and why
    "timestamp": "a timestamp, which a person says as a date and a time",
    "date": "a date, which a person says in words",
    "short": "two characters or fewer, which almost any reply contains, or three with a digit (any number said "
             "may hold them) or that another value shown contains",
    "zero": "a bare zero, which almost any reply contains",
    "absence": "an absence or a yes/no, which a reply puts in other words",
    "status": "a status word, which a reply may put in other words",
    "echo": "the user's own words contain it, so echoing them passes",
    "contained": "another value the conversation shows (the user's text, the gold's outputs, another expected "
                 "value) contains it",
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
    if len(value) <= SHORT and re.search(r"\d", value):
        return "short"  # any other number said, a date or an id, can hold three digits ("348" in "3480")
    if shown_containing(value, user_text, outputs, others) is not None:
        return "short" if len(value) <= SHORT else "contained"
    return None


@dataclass(frozen=True)
class Judged:
    """A fact the task wants told that no substring check can grade, left to a judge."""

    value: str
    kind: str  # a key of WHY
    field: str | None = None  # the output field it was read from
    record: str | None = None  # the id field of the record it is on ("railcard_id")

    def assertion(self) -> str:
        what = statement(self.field, self.value, self.record) if self.field else spoken_date(self.value)
        return f"The agent tells the user {what}."


@dataclass
class ShapedAnswers:
    """The values the grader checks, and the facts left to a judge."""

    communicate: list[str] = field(default_factory=list)
    judged: list[Judged] = field(default_factory=list)

    def assertions(self) -> list[str]:
        return [j.assertion() for j in self.judged]


def _time_of(value: str) -> str | None:
    """A timestamp's time of day ("18:00"), None for any other value."""
    moment = _DATETIME.fullmatch(value)
    return _hour(moment.group(2), moment.group(3)) if moment else None


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
        whole = "," in value and next(_holding(value, outputs), None) is not None
        # each item alone (a reply lists them in its own order), but one value with a comma in it
        # ("Ramsey, White and Dunn") whole, without its commas as τ²-bench reads a reply
        for item in [re.sub(r"\s*,\s*", " ", value)] if whole else _LIST_SEPARATOR.split(value):
            form = _timestamp_form(answer_form(item), user_text)
            if form and form not in forms:
                forms.append(form)
    shaped = ShapedAnswers()
    for form in forms:
        kind = weakness(form, user_text, forms, outputs)
        if kind is None:
            shaped.communicate.append(form)
        else:
            # named after the latest output holding it: what the last calls returned is what the user asked
            # for (a refill's copay of 4, not the 4 of a plan listed on the way)
            field, record = next((h for output in reversed(outputs) for h in _holding(form, [output])), (None, None))
            shaped.judged.append(Judged(form, kind, field, record))
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
