"""Offline population honours keys, uniqueness and enums, and is deterministic for a seed."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from toolscale.domains import Environment, available_domains, builtin_domain
from toolscale.domains.domain import parse_spec
from toolscale.pipeline.populate import PopulateError, populate


def test_foreign_keys_unique_and_enums_hold(library, library_rows):
    members = {m["member_id"] for m in library_rows["members"]}
    books = {b["book_id"] for b in library_rows["books"]}
    assert all(loan["member_id"] in members and loan["book_id"] in books for loan in library_rows["loans"])
    emails = [m["email"] for m in library_rows["members"]]
    assert len(emails) == len(set(emails))
    assert {m["status"] for m in library_rows["members"]} <= {"active", "blocked"}
    assert all(isinstance(b["copies"], int) for b in library_rows["books"])


def test_bank_rows_are_plausible():
    bank = builtin_domain("bank")
    rows = populate(bank.spec, seed=3)
    assert sum(len(r) for r in rows.values()) > 2000
    for account in rows["accounts"]:
        assert account["currency"] in {"EUR", "USD", "GBP"}
        if account["status"] == "closed":
            assert account["balance"] == 0
    assert all(c["email"].count("@") == 1 for c in rows["customers"])
    assert {c["country"] for c in rows["customers"]} >= {"US", "GB", "DE", "FR"}


def test_same_seed_same_rows_other_seed_other_rows(library):
    assert populate(library.spec, seed=1) == populate(library.spec, seed=1)
    assert populate(library.spec, seed=1) != populate(library.spec, seed=2)


def test_rows_do_not_depend_on_the_process_hash_seed():
    script = ("import json; from toolscale.domains import builtin_domain; "
              "from toolscale.pipeline.populate import populate; "
              "print(json.dumps(populate(builtin_domain('bank').spec, 5), sort_keys=True))")
    outputs = []
    for hash_seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        outputs.append(subprocess.run([sys.executable, "-c", script], env=env, check=True,
                                      capture_output=True, text=True).stdout)
    assert outputs[0] == outputs[1]
    assert json.loads(outputs[0])["customers"]


def test_scale_multiplies_rows(library):
    assert len(populate(library.spec, 0, scale=2.0)["members"]) == 24


def test_a_hint_that_cannot_fit_names_table_and_column(library_source):
    text = library_source["domain.yaml"].replace("gen: {range: [0, 3]}", "gen: {template: \"{{ 'many' }}\"}")
    with pytest.raises(PopulateError, match=r"books.copies: generated value does not fit"):
        populate(parse_spec(text), 0)


def test_an_impossible_unique_column_is_reported(library_source):
    text = library_source["domain.yaml"].replace('template: "member{{ seq }}@library.test"', "choice: [a@b.c, d@e.f]")
    with pytest.raises(PopulateError, match=r"members.email: no free unique value"):
        populate(parse_spec(text), 0)


def _with_hints(source: str, **hints: str) -> str:
    """The library's domain.yaml with books given extra columns: name -> 'type, gen: {...}'."""
    extra = "".join(f"      - {{name: {name}, {hint}}}\n" for name, hint in hints.items())
    return source.replace("      - {name: copies, type: integer, gen: {range: [0, 3]}}\n",
                          "      - {name: copies, type: integer, gen: {range: [0, 3]}}\n" + extra)


def test_template_output_takes_the_column_type(library_source):
    """The audit's three: a number for a text column, a block template's '15.0' for a number
    column, 'true' for a boolean column. Each comes out as the column's type."""
    text = _with_hints(library_source["domain.yaml"],
                       shelf_code='type: string, gen: {template: "{{ 3001 + seq * 7 }}"}',
                       fee='type: number, gen: {template: "{% if seq > 2 %}15.0{% else %}2.5{% endif %}"}',
                       pages='type: integer, gen: {template: " {{ 100 + seq }}{% if true %}{% endif %} "}',
                       lendable="type: boolean, gen: {template: \"{{ 'true' if seq % 2 else 'False' }}\"}")
    books = populate(parse_spec(text), 0)["books"]
    assert [b["shelf_code"] for b in books[:2]] == ["3001", "3008"]
    assert [b["fee"] for b in books[2:4]] == [2.5, 15.0] and isinstance(books[0]["fee"], float)
    assert books[1]["pages"] == 101
    assert [b["lendable"] for b in books[:2]] == [False, True]


@pytest.mark.parametrize("hint, words", [
    ('type: number, gen: {template: "{% if true %}about 15{% endif %}"}', "must be a finite number, got 'about 15'"),
    ("type: boolean, gen: {template: \"{{ 'yes' }}\"}", "must be true or false, got 'yes'"),
    ('type: string, gen: {template: "{{ seq > 3 }}"}', "must be text, got False"),
    ('type: integer, gen: {template: "{% if true %}2.5{% endif %}"}', "must be a whole number, got '2.5'"),
])
def test_a_template_value_that_cannot_be_converted_names_table_column_type_and_value(library_source, hint, words):
    with pytest.raises(PopulateError) as error:
        populate(parse_spec(_with_hints(library_source["domain.yaml"], odd=hint)), 0)
    assert f"books.odd: generated value does not fit: books.odd {words} (template " in str(error.value)


def test_every_column_that_cannot_be_filled_is_reported_at_once(library_source):
    text = _with_hints(library_source["domain.yaml"],
                       a="type: boolean, gen: {template: \"{{ 'maybe' }}\"}",
                       b='type: number, gen: {template: "{{ nowhere + 1 }}"}',
                       c="type: string, gen: {faker: no_such_provider}",
                       d="type: string, gen: {faker: name, args: {colour: red}}")
    text = text.replace('template: "member{{ seq }}@library.test"', "choice: [a@b.c, d@e.f]")
    with pytest.raises(PopulateError) as error:
        populate(parse_spec(text), 0)
    lines = str(error.value).splitlines()
    assert [line.split(":")[0] for line in lines] == ["members.email", "books.a", "books.b", "books.c", "books.d"]
    assert "'nowhere' is undefined" in lines[2] and "args {'colour': 'red'}" in lines[4]


@pytest.mark.parametrize("scale", [0.1, 4])
@pytest.mark.parametrize("name", available_domains())
def test_every_builtin_domain_loads_at_other_scales(name, scale):
    """Scaled down, fixed rows still find the generated rows they point at; scaled up, unique
    columns still find free values. The database's own constraints check both."""
    domain = builtin_domain(name)
    rows = populate(domain.spec, seed=3, scale=scale)
    with Environment.from_rows(domain, rows) as env:
        assert env.state_hash()
    generated = [t for t in domain.spec.tables if t.rows and not t.data and t.per is None]
    assert all(len(rows[t.name]) >= round(t.rows * scale) for t in generated)


def test_unique_vocabularies_last_to_sixteen_times_the_default_size():
    rows = populate(builtin_domain("ecommerce").spec, seed=0, scale=16)
    for table, column in (("sellers", "name"), ("listings", "title")):
        values = [r[column] for r in rows[table]]
        assert len(values) == len(set(values)) >= 16 * 16


LOCALES = ["en_GB", "de_DE", "fr_FR", "es_ES", "it_IT", "nl_NL"]


def _draws(faker) -> list:
    return [faker.name(), faker.city(), faker.iban(), faker.company(), faker.bothify("??-####"),
            faker.date_between("-30y", "-18y").isoformat(), faker.random_int(0, 10**9)]


def test_a_reused_faker_draws_what_a_new_one_draws_for_its_seed():
    from faker import Faker

    from toolscale.pipeline.templating import seeded_faker

    for seed in (1, 2):
        with seeded_faker(LOCALES, 7) as used:  # used for another seed before each draw below
            _draws(used)
        with seeded_faker(LOCALES, seed) as reused:
            assert reused is used
            drawn = _draws(reused)
        fresh = Faker(LOCALES)
        fresh.seed_instance(seed)
        for provider in (p for loc in fresh.locales for p in fresh[loc].providers):
            if hasattr(provider, "cap_city_province"):
                provider.cities = sorted(provider.cities)
        assert drawn == _draws(fresh)


def test_fakers_held_at_once_are_distinct_and_keep_their_draws():
    from toolscale.pipeline.templating import seeded_faker

    with seeded_faker(LOCALES, 1) as first, seeded_faker(LOCALES, 2) as second:
        assert first is not second
        interleaved = []
        for _ in range(3):  # draws from the two alternate
            interleaved.append(first.name())
            second.name()
    with seeded_faker(LOCALES, 1) as again:
        assert interleaved == [again.name() for _ in range(3)]
