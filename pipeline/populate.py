"""Offline population: rows for every table from the columns' generation hints.

Deterministic for a seed: each table draws from its own generators (seeded from the run seed,
the domain and the table), so changing one table's hints leaves the others' values alone.
Foreign keys point at existing rows, unique columns are retried until free, enums hold.

A template's output is converted to its column's type (`typed`), so the same hint works whether a
person or a model wrote it. A hint that cannot fill its column does not stop the tables: every
column that fails is noted (once) and the PopulateError lists them all, one line each, so a
repair round can fix every one at once.
"""

from __future__ import annotations

import random
import re
import reprlib
from contextlib import ExitStack
from datetime import timedelta
from typing import Any

from faker import Faker

from toolscale.domains import ToolError
from toolscale.domains.records import ID_WIDTH, coerce
from toolscale.domains.spec import Column, DomainSpec, Generator, Table

from .templating import (TemplateError, date_helpers, derive_seed, faker_helper, random_helpers, render_value,
                         seeded_faker)

Rows = dict[str, list[dict[str, Any]]]
UNIQUE_TRIES = 200
_INTEGER = re.compile(r"[+-]?[0-9]+(\.0*)?")
_NUMBER = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?")
_BOOLEANS = {"true": True, "false": False}


class PopulateError(ValueError):
    """Generation hints that cannot produce valid values: one line per table and column."""


# domain.yaml's values, a template's output and an exception's text are shown cut short: a value built
# to be huge (a list that nests a billion leaves, a 10 MB string) must not be expanded into a message.
_SHORT = reprlib.Repr()
_SHORT.maxlevel, _SHORT.maxdict, _SHORT.maxlist, _SHORT.maxtuple, _SHORT.maxset = 3, 8, 8, 8, 8
_SHORT.maxstring = _SHORT.maxother = _SHORT.maxlong = 120
MAX_MESSAGE = 300  # characters of an exception's text quoted in a reason


def _short(value: Any) -> str:
    return _SHORT.repr(value)


def _said(exc: BaseException) -> str:
    text = str(exc)
    return text if len(text) <= MAX_MESSAGE else text[:MAX_MESSAGE] + "…"


def typed(col: Column, value: Any) -> Any:
    """A template's output as `col`'s type: text that spells a number becomes the number for a number
    or integer column ('15.0' -> 15.0), 'true'/'false' a boolean, and a number becomes text for a
    string column (3001 -> '3001'). Anything else is returned as it is, for `coerce` to refuse.
    (Jinja prints a template with blocks as text, and keeps a lone `{{ expr }}`'s native type.)"""
    if isinstance(value, str) and col.type in ("integer", "number", "boolean"):
        text = value.strip()
        if col.type == "boolean":
            return _BOOLEANS.get(text.lower(), value)
        if col.type == "integer" and _INTEGER.fullmatch(text):
            return int(text.split(".")[0])
        if col.type == "number" and _NUMBER.fullmatch(text):
            return float(text)
        return value
    if col.type == "string" and isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    return value


class _TableFiller:
    def __init__(self, spec: DomainSpec, table: Table, rows: Rows, seed: int, held: ExitStack) -> None:
        """`held` keeps the table's Fakers until the table is filled."""
        self.spec, self.table, self.rows = spec, table, rows
        self.rng = random.Random(derive_seed(seed, spec.name, table.name))
        self.helpers = random_helpers(self.rng)
        self.fakers = {}
        for locale in table.locales:
            try:
                seed_of_locale = derive_seed(seed, spec.name, table.name, locale)
                self.fakers[locale] = held.enter_context(seeded_faker(locale, seed_of_locale))
            except AttributeError:
                raise PopulateError(f"{table.name}: unknown Faker locale {_short(locale)}") from None
        self.dates = date_helpers(spec.clock)
        self.taken: dict[str, set[Any]] = {c.name: set() for c in table.columns if c.unique}
        self.errors: dict[str, str] = {}  # column -> why its hint fails: the first reason only

    def _key(self, n: int) -> Any:
        pk = self.table.primary_key
        return n if pk.type == "integer" else f"{self.table.id_prefix}{n:0{ID_WIDTH}d}"

    def _generate(self, col: Column, gen: Generator, context: dict[str, Any], faker: Faker) -> Any:
        if gen.null_rate and self.rng.random() < gen.null_rate:
            return None
        if gen.faker is not None:
            provider = getattr(faker, gen.faker, None) if not gen.faker.startswith("_") else None
            if not callable(provider):
                raise PopulateError(f"unknown Faker provider {_short(gen.faker)}")
            try:
                return provider(**gen.args)
            except Exception as exc:  # wrong `args` for the provider: a TypeError, a ValueError...
                raise PopulateError(f"Faker provider {_short(gen.faker)} with args {_short(gen.args)}: "
                                    f"{type(exc).__name__}: {_said(exc)}") from None
        if gen.choice is not None:
            return self.rng.choices(gen.choice, weights=gen.weights)[0] if gen.weights else self.helpers["pick"](gen.choice)
        if gen.range is not None:
            lo, hi = gen.range
            value = lo + self.rng.random() * (hi - lo)
            return round(value) if col.type == "integer" else round(value, gen.decimals if gen.decimals is not None else 2)
        if gen.dates is not None:
            start, end = gen.dates
            return (start + timedelta(days=self.rng.randrange((end - start).days + 1))).isoformat()
        if gen.pattern is not None:
            return faker.bothify(gen.pattern)
        return render_value(gen.template, context)

    def _fail(self, col: Column, reason: str, value: Any) -> Any:
        """Note why `col` cannot be filled and go on with `value`, so the other columns get checked too."""
        self.errors.setdefault(col.name, f"{self.table.name}.{col.name}: {reason}")
        return value

    def _value(self, col: Column, context: dict[str, Any], faker: Faker) -> Any:
        failed = col.name in self.errors  # one try: its reason is known, the row goes on for the others
        for _ in range(UNIQUE_TRIES if col.unique and not failed else 1):
            if col.gen is not None:
                try:
                    raw = self._generate(col, col.gen, context, faker)
                except (TemplateError, PopulateError) as exc:
                    return self._fail(col, _said(exc), None)
                if col.gen.template is not None:
                    raw = typed(col, raw)
            else:
                raw = self.helpers["pick"](col.enum)
            try:
                value = coerce(self.table, col, raw)
            except ToolError as exc:
                shown = f" (template {_short(col.gen.template)})" if col.gen is not None and col.gen.template else ""
                return self._fail(col, f"generated value does not fit: {_said(exc)}{shown}", raw)
            if not col.unique or value not in self.taken[col.name]:
                if col.unique:
                    self.taken[col.name].add(value)
                return value
        return self._fail(col, f"no free unique value after {UNIQUE_TRIES} tries", value)

    def template_context(self, refs: dict[str, dict[str, Any]], locale: str, faker: Faker, seq: int,
                         seq_in_parent: int) -> dict[str, Any]:
        """What a template sees besides the row's earlier columns (the design prompt documents each)."""
        return {"refs": refs, "locale": locale, "seq": seq, "seq_in_parent": seq_in_parent,
                "fake": faker_helper(faker), "numerify": faker.numerify, **self.dates, **self.helpers}

    def row(self, seq: int, parent: dict[str, Any] | None, seq_in_parent: int) -> dict[str, Any]:
        locale = self.helpers["pick"](self.table.locales)
        faker = self.fakers[locale]
        row: dict[str, Any] = {}
        refs: dict[str, dict[str, Any]] = {}
        for col in self.table.columns:
            if not col.references:
                continue
            if self.table.per is not None and col.name == self.table.per.column:
                target_row = parent
            else:
                target_rows = self.rows[col.references.split(".")[0]]
                if target_rows:
                    target_row = self.helpers["pick"](target_rows)
                else:
                    target_row = self._fail(col, f"{col.references} has no rows to point at", {})
            refs[col.name] = target_row
        context = self.template_context(refs, locale, faker, seq, seq_in_parent)
        for col in self.table.columns:
            if col.primary_key:
                row[col.name] = self._key(seq + 1)
            elif col.references:
                row[col.name] = refs[col.name].get(col.references.split(".")[1])
            else:
                row[col.name] = self._value(col, {**context, **row}, faker)
            context[col.name] = row[col.name]
        return row


def _fixed_rows(table: Table, errors: list[str]) -> list[dict[str, Any]]:
    out = []
    for fixed in table.data:
        try:
            out.append({c.name: coerce(table, c, fixed.get(c.name)) for c in table.columns})
        except ToolError as exc:
            errors.append(f"{table.name}: fixed row {_short(fixed)}: {_said(exc)}")
    return out


def populate(spec: DomainSpec, seed: int, scale: float = 1.0) -> Rows:
    """Rows for every table of `spec`: fixed `data` first, then generated rows (`rows` times
    `scale`, but at least as many as fixed rows elsewhere point at). PopulateError, before any row
    is made, when that could be more rows than a table or a database may hold; after all tables,
    listing every column and fixed row that failed."""
    problem = spec.size_problem(scale)
    if problem is not None:
        raise PopulateError(f"{spec.name}: {problem[1]}")
    needed = spec.referenced_by_fixed_rows()
    rows: Rows = {}
    errors: list[str] = []
    for table in spec.creation_order():
        out = rows[table.name] = _fixed_rows(table, errors)
        with ExitStack() as held:
            try:
                filler = _TableFiller(spec, table, rows, seed, held)
            except PopulateError as exc:
                errors.append(str(exc))
                continue
            if table.per is not None:
                parent_table = table.column(table.per.column).references.split(".")[0]
                for parent in rows[parent_table]:
                    for j in range(filler.rng.randint(table.per.min, table.per.max)):
                        out.append(filler.row(len(out), parent, j))
            else:
                for i in range(max(round(table.rows * scale), needed.get(table.name, 0) - len(out))):
                    out.append(filler.row(len(out), None, i))
            errors.extend(filler.errors.values())
    if errors:
        raise PopulateError("\n".join(errors))
    return rows


__all__ = ["PopulateError", "Rows", "populate"]
