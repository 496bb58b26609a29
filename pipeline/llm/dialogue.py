"""Asking for one validated artifact: parse, validate, send the errors back, then give up with a reason.

`solicit` sends a prompt, parses the answer as JSON into the stage's pydantic answer type, and
hands it to the stage's `build` function, which applies the same validators as the offline path
(the loader, the tool compiler, gold replay...) and raises `Invalid` with what is wrong. Validators
collect every problem of an answer rather than stopping at the first, each with the `field` it is
about, so one repair prompt (grouped by field, up to MAX_PROBLEMS) lets the model fix them all.
The problems go back to the model at most `rounds` times; after that the outcome is a rejection
whose reason names the category and the first problem. A request that got no
answer at all (LLMRequestError) is a rejection too: nothing is lost without a recorded reason.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ValidationError

from .client import Answer, LLMClient, LLMRequestError
from .prompts import render
from .usage import Usage

A = TypeVar("A", bound=BaseModel)
R = TypeVar("R")
MAX_PROBLEMS = 12
_FENCE = re.compile(r"^\s*```[a-zA-Z]*\s*\n(?P<body>.*?)\n\s*```\s*$", re.S)


@dataclass(frozen=True)
class Problem:
    """One thing wrong with an answer; `category` is what reports count (e.g. 'invalid_json'), `field`
    the part of the answer it is about (e.g. 'table rides', 'actions.2'), by which repairs group them."""

    category: str
    message: str
    field: str = ""


def schema_field(loc: tuple) -> str:
    """The part of an answer a pydantic error location points into: 'tables.3' of
    ('tables', 3, 'columns', 2, 'type'), 'policy' of ('policy',)."""
    parts = [str(p) for p in loc]
    return ".".join(parts[:2]) if len(parts) > 1 and isinstance(loc[1], int) else ".".join(parts[:1])


class Invalid(Exception):
    """Raised by a stage's build function: the answer breaks these rules."""

    def __init__(self, problems: list[Problem]) -> None:
        super().__init__("; ".join(p.message for p in problems))
        self.problems = problems


class Unrepairable(Invalid):
    """An answer that a repair round cannot help (e.g. the model declined): reject it at once."""


@dataclass
class Outcome(Generic[R]):
    value: R | None
    problems: list[Problem] = field(default_factory=list)
    repairs: int = 0
    last_answer: Any = None  # the last answer that parsed, kept with a rejection

    @property
    def ok(self) -> bool:
        return self.value is not None

    @property
    def category(self) -> str:
        return self.problems[0].category if self.problems else "ok"

    @property
    def reason(self) -> str:
        if not self.problems:
            return ""
        first = self.problems[0].message
        more = f" (+{len(self.problems) - 1} more)" if len(self.problems) > 1 else ""
        after = f" after {self.repairs} repair round{'s' if self.repairs != 1 else ''}" if self.repairs else ""
        return f"llm {self.category}{after}: {first}{more}"


def _json_body(text: str) -> str:
    fenced = _FENCE.match(text)
    if fenced:
        return fenced.group("body")
    start, end = text.find("{"), text.rfind("}")
    return text[start:end + 1] if 0 <= start < end else text


def parse_answer(text: str, answer_type: type[A]) -> A:
    """The answer as `answer_type`; Invalid with the JSON or schema problems otherwise."""
    if not text.strip():
        raise Invalid([Problem("empty_answer", "the answer was empty")])
    try:
        data = json.loads(_json_body(text))
    except json.JSONDecodeError as exc:
        raise Invalid([Problem("invalid_json", f"the answer is not valid JSON: {exc.msg} "
                                               f"(line {exc.lineno}, column {exc.colno})")]) from None
    try:
        return answer_type.model_validate(data)
    except ValidationError as exc:
        problems = []
        for err in exc.errors()[:MAX_PROBLEMS]:
            where = ".".join(str(p) for p in err["loc"]) or "(top level)"
            problems.append(Problem("schema", f"{where}: {err['msg']}", schema_field(err["loc"])))
        raise Invalid(problems) from None


def repair_prompt(problems: list[Problem]) -> str:
    """The repair message: the first MAX_PROBLEMS problems grouped by field, and how many more there are."""
    return render("partials/repair.j2", problems=problems[:MAX_PROBLEMS], more=max(0, len(problems) - MAX_PROBLEMS))


def schema_of(answer_type: type[BaseModel]) -> tuple[str, dict[str, Any]]:
    """(name, JSON schema) for the response_format of a request."""
    return answer_type.__name__, answer_type.model_json_schema()


async def solicit(client: LLMClient, usage: Usage, stage: str, messages: list[dict[str, str]],
                  answer_type: type[A], build: Callable[[A, bool], R], *, rounds: int,
                  seed: int | None = None, first: Answer | LLMRequestError | None = None) -> Outcome[R]:
    """Ask until `build(answer, final)` accepts an answer or `rounds` repairs are spent.

    `final` tells `build` it is the last chance, so stages that can keep part of an answer (rows,
    intents) keep the valid part instead of raising. When the last answer fails (or its request
    does), the earlier answers get that last chance too, newest first: a repair can make an
    answer worse. `first` is an answer already fetched (stages that send their first requests
    together and validate them in order pass it).
    """
    messages = list(messages)
    schema = schema_of(answer_type)
    repairs = 0
    last: A | None = None  # the last answer that parsed, kept with a rejection
    earlier: list[A] = []  # answers that parsed but were sent back for repair

    def accept(value: R) -> Outcome[R]:
        usage.count(stage, "accepted")
        return Outcome(value, [], repairs, last)

    def settle(problems: list[Problem]) -> Outcome[R]:
        for answer in reversed(earlier):  # the last answer failed: give the earlier ones its chance
            try:
                return accept(build(answer, True))
            except Invalid:
                continue
        usage.rejected(stage, problems[0].category)
        return Outcome(None, problems, repairs, last)

    while True:
        try:
            if first is None:
                answer = await client.complete(messages, stage=stage, usage=usage, schema=schema, seed=seed)
            elif isinstance(first, LLMRequestError):
                raise first
            else:
                answer, first = first, None
        except LLMRequestError as exc:
            return settle([Problem("request_failed", str(exc))])
        final = repairs >= rounds
        parsed = None
        try:
            parsed = last = parse_answer(answer.content, answer_type)
            return accept(build(parsed, final))
        except Unrepairable as exc:
            usage.rejected(stage, exc.problems[0].category)
            return Outcome(None, exc.problems, repairs, last)
        except Invalid as exc:
            problems = exc.problems or [Problem("invalid", "rejected without a reason")]
        if final:
            return settle(problems)
        if parsed is not None:
            earlier.append(parsed)
        messages += [{"role": "assistant", "content": answer.content},
                     {"role": "user", "content": repair_prompt(problems)}]
        repairs += 1
        usage.count(stage, "repair_rounds")
