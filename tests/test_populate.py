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
