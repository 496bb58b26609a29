"""The DomainSpec: what `domain.yaml` holds, as pydantic models.

A spec is pure data: the schema (tables, typed columns, keys, enums, generation hints), the
intents and, for the offline synthesizer, each intent's task template. Everything a loader,
a populator or a task synthesizer needs to know about a domain is here and validated here.
"""

from __future__ import annotations

import math
import re
from datetime import date, datetime
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator, model_validator

IDENTIFIER = r"^[a-z][a-z0-9_]*$"
ColumnType = Literal["string", "integer", "number", "boolean", "date", "datetime"]
# The most rows populate may make: bank, the largest default domain, makes at most 69,120 in one
# table and 107,525 in all at --scale 16, the largest scale the README documents.
MAX_TABLE_ROWS = 250_000
MAX_DATABASE_ROWS = 1_000_000
MAX_CANDIDATES = 1_000  # a template's count (the default domains draft at most 42 per intent)
# Control characters other than tab and newline, and lone surrogates: a NUL breaks SQLite's statements and
# Python source, and no UTF-8 file can hold a surrogate (descriptions and enum values go into generated code).
_UNPRINTABLE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff]")


def _printable(text: str) -> str:
    bad = _UNPRINTABLE.search(text)
    if bad:
        raise ValueError(f"control character {bad.group()!r} at position {bad.start()}")
    return text


Text = Annotated[str, AfterValidator(_printable)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Generator(_Strict):
    """How the offline populator fills a column: exactly one kind of hint."""

    faker: str | None = Field(None, description="Faker provider, e.g. 'city' or 'iban'")
    args: dict[str, Any] = Field(default_factory=dict, description="keyword args for the provider")
    choice: list[Any] | None = None
    weights: list[float] | None = None
    range: tuple[float, float] | None = Field(None, description="uniform number in [lo, hi]")
    decimals: int | None = Field(None, description="round a range to this many decimals")
    dates: tuple[date, date] | None = Field(None, description="uniform date in [start, end]")
    pattern: str | None = Field(None, description="Faker bothify: '#' a digit, '?' a letter")
    template: str | None = Field(None, description="jinja over the row so far, its refs and locale")
    null_rate: float = Field(0.0, ge=0.0, le=1.0)

    @field_validator("weights")
    @classmethod
    def _drawable(cls, weights: list[float] | None) -> list[float] | None:
        if weights is not None and (not all(math.isfinite(w) and w >= 0 for w in weights) or sum(weights) <= 0):
            raise ValueError(f"weights must be finite, not negative, and not all zero; got {weights}")
        return weights

    @field_validator("range")
    @classmethod
    def _finite(cls, bounds: tuple[float, float] | None) -> tuple[float, float] | None:
        if bounds is not None and not all(math.isfinite(b) for b in bounds):
            raise ValueError(f"range bounds must be finite numbers, got {list(bounds)}")
        return bounds

    @field_validator("dates")
    @classmethod
    def _ordered(cls, dates: tuple[date, date] | None) -> tuple[date, date] | None:
        if dates is not None and dates[0] > dates[1]:
            raise ValueError(f"the start {dates[0]} comes after the end {dates[1]}")
        return dates

    @model_validator(mode="after")
    def _one_kind(self) -> Generator:
        kinds = [k for k in ("faker", "choice", "range", "dates", "pattern", "template")
                 if getattr(self, k) is not None]
        if len(kinds) != 1:
            raise ValueError(f"give exactly one of faker/choice/range/dates/pattern/template, got {kinds or 'none'}")
        if self.weights is not None and (self.choice is None or len(self.weights) != len(self.choice)):
            raise ValueError("weights need a choice list of the same length")
        return self


class Column(_Strict):
    name: str = Field(pattern=IDENTIFIER)
    type: ColumnType
    description: Text = ""
    primary_key: bool = False
    unique: bool = False
    nullable: bool = False
    enum: list[Text] | None = None
    references: str | None = Field(None, description="'table.column' this column points at")
    gen: Generator | None = None

    @field_validator("references")
    @classmethod
    def _table_dot_column(cls, value: str | None) -> str | None:
        if value is not None and not re.fullmatch(r"[a-z][a-z0-9_]*\.[a-z][a-z0-9_]*", value):
            raise ValueError(f"references must be 'table.column', got {value!r}")
        return value

    @model_validator(mode="after")
    def _key_type(self) -> Column:
        if self.primary_key and self.type == "boolean":
            raise ValueError(f"primary key {self.name!r} cannot be boolean: it would hold two rows at most")
        return self


class PerParent(_Strict):
    """Rows are made per row of a parent table: `min`..`max` children each."""

    column: str
    min: int = Field(ge=0)
    max: int = Field(ge=1, le=MAX_TABLE_ROWS)

    @model_validator(mode="after")
    def _ordered(self) -> PerParent:
        if self.min > self.max:
            raise ValueError(f"min {self.min} exceeds max {self.max}")
        return self


class Table(_Strict):
    name: str = Field(pattern=IDENTIFIER)
    description: Text = ""
    columns: list[Column] = Field(min_length=1)
    id_prefix: str | None = Field(None, description="new string keys are prefix + zero-padded counter; "
                                  "without one, inserts must give the key")
    rows: int = Field(0, ge=0, le=MAX_TABLE_ROWS, description="rows to generate (ignored when `per` is set)")
    per: PerParent | None = None
    locales: list[str] = Field(default_factory=lambda: ["en_US"])
    data: list[dict[str, Any]] = Field(default_factory=list, description="fixed rows, e.g. reference data")

    @property
    def primary_key(self) -> Column:
        return next(c for c in self.columns if c.primary_key)

    def column(self, name: str) -> Column:
        for col in self.columns:
            if col.name == name:
                return col
        raise KeyError(f"table {self.name!r} has no column {name!r}")

    @model_validator(mode="after")
    def _keys(self) -> Table:
        names = [c.name for c in self.columns]
        if len(set(names)) != len(names):
            raise ValueError(f"duplicate column names in {self.name!r}")
        pks = [c for c in self.columns if c.primary_key]
        if len(pks) != 1:
            raise ValueError(f"table {self.name!r} needs exactly one primary_key column, has {len(pks)}")
        if self.per is not None:
            if self.per.column not in names:
                raise ValueError(f"per.column {self.per.column!r} is not a column of {self.name!r}")
            parent = (self.column(self.per.column).references or self.name).split(".")[0]
            if parent == self.name:  # rows made per row of the table itself would never end
                raise ValueError(f"per.column {self.per.column!r} must reference another table")
        generated = self.rows > 0 or self.per is not None
        if generated and pks[0].type not in ("string", "integer"):  # populate makes keys 1, 2... or PREFIX000001
            raise ValueError(f"table {self.name!r} generates rows, so its key needs type string or integer, "
                             f"not {pks[0].type}")
        for col in self.columns if generated else ():
            if not (col.primary_key or col.references or col.enum or col.gen):
                raise ValueError(f"column {self.name}.{col.name} needs gen, enum or references")
        return self


class ActionTemplate(_Strict):
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict,
                                      description="literals, or '{{ expr }}' rendered to native values")


class Binding(_Strict):
    """One row bound for a task: `match` filters by equality (indexed), `where` is any expression."""

    table: str
    match: dict[str, str] = Field(default_factory=dict, description="column -> expression")
    where: str | None = Field(None, description="expression over `row` and earlier bindings")


class TaskTemplate(_Strict):
    """The offline synthesizer's recipe for one intent: bind rows, derive values, write the task."""

    count: int = Field(30, ge=1, le=MAX_CANDIDATES, description="candidates to instantiate")
    bind: dict[str, Binding] = Field(min_length=1)
    let: dict[str, str] = Field(default_factory=dict, description="name -> expression, in order")
    reason_for_call: str
    known_info: str
    unknown_info: str = ""
    task_instructions: str
    actions: list[ActionTemplate] = Field(min_length=1)
    communicate: list[str] = Field(default_factory=list, description="expressions over `out`")
    nl_assertions: list[str] = Field(default_factory=list)
    naive: list[ActionTemplate] = Field(default_factory=list, description=(
        "what an agent that does exactly what the user asks would call after the gold's lookups (its calls "
        "before the first write a user wants), in order; rendered like `actions`, with the gold's `out`"))


class Intent(_Strict):
    name: str = Field(pattern=IDENTIFIER)
    description: Text
    kind: Literal["read", "write"]
    anchor_table: str | None = Field(None, description="the table of the record a task of this intent is about")
    tools: list[str] = Field(default_factory=list, description="the tools an agent calls for it, in order")
    premise: str | None = Field(None, description=(
        "what the anchor record must be for the request to make sense: an expression over `row` "
        "(domains/premises.py); candidates are anchored only on records that meet it"))
    tests_rule: str | None = Field(None, description=(
        "the id of an agent-enforced rule this intent is built to test: doing what the user literally asks "
        "(its template's `naive` calls) runs in the tools and breaks it, while the gold keeps it"))
    template: TaskTemplate | None = None

    @model_validator(mode="after")
    def _tested(self) -> Intent:
        if self.template is not None and (self.tests_rule is None) != (not self.template.naive):
            raise ValueError(f"intent {self.name!r}: a template that tests a rule gives both the intent's "
                             "`tests_rule` and the template's `naive` calls")
        return self


class StepCheck(_Strict):
    """A rule about the order or number of gold steps that no single tool can enforce.

    `before`: every call to a `then` tool comes after a call to one of the `first` tools.
    `at_most`: the `then` tools are called at most `times` times in all.
    """

    kind: Literal["before", "at_most"]
    first: list[str] = Field(default_factory=list)
    then: list[str] = Field(min_length=1)
    times: int = Field(1, ge=0)

    @model_validator(mode="after")
    def _complete(self) -> StepCheck:
        if self.kind == "before" and not self.first:
            raise ValueError("a 'before' check needs the `first` tools")
        return self


class AgentCheck(_Strict):
    """A rule no tool enforces, so the agent must apply it: before each call to one of `calls`, the
    expression `breaks` (domains/rules.py) says whether making that call now breaks the rule."""

    calls: list[str] = Field(min_length=1)
    breaks: str = Field(description=(
        "a jinja expression over `args` (the call's arguments; an optional one as args.get('x')) and the state "
        "before the call: record(table, key), rows(table, column=value, ...), today, now, add_days(day, n), "
        "days_between(a, b)"))


class PolicyRule(_Strict):
    """A rule of policy.md: the tools that enforce it (`enforced_by`), or what the agent must apply
    itself: a step check or an agent check, both run by the policy gate on every gold."""

    id: str
    rule: str
    enforced_by: list[str] = Field(default_factory=list)
    check: StepCheck | None = None
    agent: AgentCheck | None = None

    @model_validator(mode="after")
    def _enforced(self) -> PolicyRule:
        if not self.enforced_by and self.check is None and self.agent is None:
            raise ValueError(f"rule {self.id!r} needs enforced_by tools, a check or an agent check")
        return self



class DomainSpec(_Strict):
    name: str = Field(pattern=IDENTIFIER)
    description: Text
    clock: datetime = Field(description="the fixed 'now' every tool sees")
    tables: list[Table] = Field(min_length=1)
    intents: list[Intent] = Field(default_factory=list)
    rules: list[PolicyRule] = Field(default_factory=list)

    def table(self, name: str) -> Table:
        for table in self.tables:
            if table.name == name:
                return table
        raise KeyError(f"domain {self.name!r} has no table {name!r}")

    @model_validator(mode="after")
    def _references(self) -> DomainSpec:
        tables = {t.name: t for t in self.tables}
        if len(tables) != len(self.tables):
            raise ValueError("duplicate table names")
        for table in self.tables:
            for col in table.columns:
                if col.references is None:
                    continue
                target, target_col = col.references.split(".")
                if target not in tables:
                    raise ValueError(f"{table.name}.{col.name} references unknown table {target!r}")
                if target_col != tables[target].primary_key.name:
                    raise ValueError(f"{table.name}.{col.name} must reference the primary key of {target!r}")
        for intent in self.intents:
            for binding in (intent.template.bind.values() if intent.template else []):
                if binding.table not in tables:
                    raise ValueError(f"intent {intent.name!r} binds unknown table {binding.table!r}")
            if intent.anchor_table is not None and intent.anchor_table not in tables:
                raise ValueError(f"intent {intent.name!r}: anchor_table {intent.anchor_table!r} is not a table")
            if intent.premise is not None and intent.anchor_table is None:
                raise ValueError(f"intent {intent.name!r}: a premise needs an anchor_table")
        names = [i.name for i in self.intents]
        if len(set(names)) != len(names):
            raise ValueError("duplicate intent names")
        return self

    def referenced_by_fixed_rows(self) -> dict[str, int]:
        """{table: the highest generated key's ordinal that some fixed row points at}: a table is never
        scaled down below the rows that fixed data elsewhere refers to ("SUB-000003 belongs to SHP-000050")."""
        needed: dict[str, int] = {}
        for table in self.tables:
            for fixed in table.data:
                for col in table.columns:
                    key = fixed.get(col.name)
                    if not col.references or key is None:
                        continue
                    target = self.table(col.references.split(".")[0])
                    prefix = "" if target.primary_key.type == "integer" else target.id_prefix or ""
                    digits = str(key)[len(prefix):] if str(key).startswith(prefix) else ""
                    if re.fullmatch("[0-9]{1,18}", digits):  # a generated key's ordinal, as _TableFiller writes it
                        needed[target.name] = max(needed.get(target.name, 0), int(digits))
        return needed

    def _row_bounds(self, scale: float) -> dict[str, float]:
        """{table: the most rows populate makes in it at `scale`}: its fixed rows and `rows` times `scale` (at
        least as many as fixed rows elsewhere point at), or `per.max` for each row of its parent table. Floats,
        only to compare with the ceilings: a huge scale overflows to inf instead of raising."""
        needed = self.referenced_by_fixed_rows()
        bounds: dict[str, float] = {}
        for table in self.creation_order():
            if table.per is not None:
                parent = table.column(table.per.column).references.split(".")[0]
                bounds[table.name] = len(table.data) + bounds[parent] * table.per.max
            else:
                bounds[table.name] = max(len(table.data) + table.rows * scale, needed.get(table.name, 0))
        return bounds

    def size_problem(self, scale: float = 1.0) -> tuple[str | None, str] | None:
        """(the table, or None for the whole database; why) when populating at `scale` could make more
        rows than MAX_TABLE_ROWS in a table or MAX_DATABASE_ROWS in all; None when it cannot."""
        if not (math.isfinite(scale) and scale > 0):
            return None, f"the scale must be a positive finite number, got {scale}"
        bounds = self._row_bounds(scale)
        for name, count in bounds.items():
            if count > MAX_TABLE_ROWS:
                return name, (f"table {name!r} would get up to {count:,.0f} rows at scale {scale:g}; "
                              f"a table holds at most {MAX_TABLE_ROWS:,}")
        if sum(bounds.values()) > MAX_DATABASE_ROWS:
            return None, (f"the database would get up to {sum(bounds.values()):,.0f} rows at scale {scale:g}; "
                          f"a database holds at most {MAX_DATABASE_ROWS:,}")
        return None

    def creation_order(self) -> list[Table]:
        """Tables ordered so that every referenced table comes before the ones pointing at it."""
        done: dict[str, Table] = {}
        pending = list(self.tables)
        while pending:
            ready = [t for t in pending
                     if all(c.references.split(".")[0] in done or c.references.split(".")[0] == t.name
                            for c in t.columns if c.references)]
            if not ready:
                raise ValueError(f"foreign keys form a cycle among {[t.name for t in pending]}")
            for table in ready:
                done[table.name] = table
                pending.remove(table)
        return list(done.values())
