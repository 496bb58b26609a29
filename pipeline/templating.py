"""Jinja expressions and texts for the offline synthesizer's hints and task templates.

A string that is exactly `{{ expr }}` evaluates to a native value (a number stays a number);
any other string with `{{` renders as text; the rest are literals. The environment is
sandboxed and undefined names fail loudly, so a typo in a template is an error, not a blank.
"""

from __future__ import annotations

import hashlib
import random
import re
import threading
import unicodedata
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta
from functools import lru_cache
from typing import Any

from jinja2 import StrictUndefined

from toolscale.domains.template_limits import BoundedEnvironment, bounded_render, charge, check_output

_WHOLE_EXPRESSION = re.compile(r"^\s*\{\{(?P<expr>(?:(?!\{\{|\}\}).)*)\}\}\s*$", re.S)


class TemplateError(ValueError):
    """A template or expression that does not compile or evaluate; names the source."""


def _ascii(text: str) -> str:
    return unicodedata.normalize("NFKD", str(text)).encode("ascii", "ignore").decode().replace(" ", "")


def _money(value: float) -> str:
    return f"{float(value):.2f}"


_IRREGULAR_PLURALS = {"person": "people", "child": "children", "adult": "adults"}


def _plural(noun: str, count: Any) -> str:
    """`{{ 'season'|plural(years) }}`: the noun in the form its count takes ("1 season", "2 seasons")."""
    if float(count) == 1:
        return noun
    if noun in _IRREGULAR_PLURALS:
        return _IRREGULAR_PLURALS[noun]
    if noun.endswith("y") and noun[-2:-1] not in "aeiou":
        return noun[:-1] + "ies"
    return noun + ("es" if noun.endswith(("s", "x", "ch", "sh")) else "s")


class _Environment(BoundedEnvironment):
    """Jinja's sandbox with bounded work (domains/template_limits.py), each template's globals a plain
    dict: Jinja chains them to the environment's (a ChainMap), and every render copies them into a new
    context, which made that copy ~2/3 of an expression's cost (14 of 21 µs; 4.5 µs with a dict). A copy
    protects the environment's globals as the chain does; they are not changed after this module is set up."""

    def make_globals(self, d: dict[str, Any] | None) -> dict[str, Any]:  # type: ignore[override]
        return {**self.globals, **(d or {})}


_ENV = _Environment(undefined=StrictUndefined, keep_trailing_newline=False)
_ENV.filters.update(ascii=_ascii, money=_money, plural=_plural)


@lru_cache(maxsize=4096)
def _expression(source: str) -> Callable[..., Any]:
    try:
        return _ENV.compile_expression(source, undefined_to_none=False)
    except Exception as exc:
        raise TemplateError(f"bad expression {_clip(repr(source))}: {_clip(str(exc))}") from None


@lru_cache(maxsize=4096)
def _text(source: str) -> Any:
    try:
        return _ENV.from_string(source)
    except Exception as exc:
        raise TemplateError(f"bad template {_clip(repr(source))}: {_clip(str(exc))}") from None


def _clip(text: str, limit: int = 200) -> str:
    """A template's source or an error's text, cut short for a message (a template may be 1 MB)."""
    return text if len(text) <= limit else text[:limit] + "…"


def evaluate(source: str, context: dict[str, Any]) -> Any:
    """Evaluate a bare jinja expression such as `row.balance > 100`."""
    try:
        with bounded_render():
            return check_output(_expression(source)(**context))
    except TemplateError:
        raise
    except Exception as exc:
        raise TemplateError(f"{_clip(repr(source))}: {type(exc).__name__}: {_clip(str(exc))}") from None


def render_text(source: str, context: dict[str, Any]) -> str:
    try:
        with bounded_render():
            return check_output(_text(source).render(**context))
    except TemplateError:
        raise
    except Exception as exc:
        raise TemplateError(f"{_clip(repr(source))}: {type(exc).__name__}: {_clip(str(exc))}") from None


def render_value(value: Any, context: dict[str, Any]) -> Any:
    """A literal stays itself; `{{ expr }}` gives a native value; other templates give text.

    Lists and dicts are rendered element by element.
    """
    if isinstance(value, str):
        whole = _WHOLE_EXPRESSION.match(value)
        if whole:
            return evaluate(whole.group("expr"), context)
        if "{{" in value or "{%" in value:
            return render_text(value, context)
        return value
    if isinstance(value, list):
        return [render_value(v, context) for v in value]
    if isinstance(value, dict):
        return {k: render_value(v, context) for k, v in value.items()}
    return value


def derive_seed(*parts: object) -> int:
    """A stable 63-bit seed from any parts (Python's hash() is salted per process)."""
    digest = hashlib.blake2b("/".join(map(str, parts)).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") >> 1


def random_helpers(rng: random.Random) -> dict[str, Callable[..., Any]]:
    """pick / randint / uniform for templates, drawing from one seeded generator."""

    def pick(options: Any) -> Any:
        options = list(options)
        charge(len(options))
        if not options:
            raise TemplateError("pick() got nothing to choose from")
        return options[rng.randrange(len(options))]

    return {"pick": pick, "randint": rng.randint, "uniform": rng.uniform}


def faker_helper(faker: Any) -> Callable[..., Any]:
    """`fake('company')` inside templates: public Faker providers only."""

    def fake(provider: str, **kwargs: Any) -> Any:
        method = None if provider.startswith("_") else getattr(faker, provider, None)
        if not callable(method):
            raise TemplateError(f"unknown Faker provider {provider!r}")
        return method(**kwargs)

    return fake


_idle_fakers = threading.local()  # per thread: {locales: [Faker, ...]} not in use


@contextmanager
def seeded_faker(locales: str | list[str], seed: int) -> Iterator[Any]:
    """A Faker whose output depends only on `seed`, whatever the process's hash seed, for the body
    of the `with`. Fakers are reused, re-seeded (building one takes ~15 ms with six locales, and
    every intent and table asks for one): a reseeded Faker draws what a new one would."""
    key = (locales,) if isinstance(locales, str) else tuple(locales)
    idle = _idle_fakers.__dict__.setdefault(key, [])
    faker = idle.pop() if idle else _new_faker(list(key))
    faker.seed_instance(seed)
    try:
        yield faker
    finally:
        idle.append(faker)


def _new_faker(locales: list[str]) -> Any:
    from faker import Faker

    faker = Faker(locales)
    for generator in (faker[loc] for loc in faker.locales):
        for provider in generator.providers:
            # Faker's it_IT address provider lists its cities out of a set, so their order (and
            # which city a seed draws) changes with PYTHONHASHSEED unless we sort them.
            if hasattr(provider, "cap_city_province") and isinstance(getattr(provider, "cities", None), list):
                provider.cities = sorted(provider.cities)
    return faker


def date_helpers(clock: datetime) -> dict[str, Any]:
    """`today`, `now` and `add_days(day, n)` for templates, from the domain's fixed clock."""

    def add_days(day: str, days: int) -> str:
        return (datetime.fromisoformat(str(day)[:10]) + timedelta(days=days)).date().isoformat()

    return {"today": clock.date().isoformat(), "now": clock.isoformat(), "add_days": add_days}
