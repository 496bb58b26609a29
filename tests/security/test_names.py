"""Names that cannot break the export: each attack is a domain.yaml that loads on 36e9cf1 and then
breaks the SQL schema, the populator or the exported τ²-bench package (red-team F7, F8). Now the
loader refuses it with the file, the line and the field, or (SQL keywords) the schema quotes it.

Each case edits the tiny `library` test domain (tests/fixtures/library).
"""

from __future__ import annotations

import re

import pytest
import sqlalchemy as sa

from toolscale.domains import Environment, load_domain_text
from toolscale.domains.domain import DomainError, parse_spec
from toolscale.domains.sql import create_schema
from toolscale.pipeline.rows import BuiltDomain
from toolscale.pipeline.populate import populate
from toolscale.pipeline.exporters.tau2 import import_package, write_package

MEMBER_STATUS = "      - {name: status, type: string, enum: [active, blocked], gen: {choice: [active, blocked], " \
                "weights: [0.8, 0.2]}}\n"


def with_column(text: str, column: str) -> str:
    """The library spec with one more column in `members` (tables.0.columns.4)."""
    assert MEMBER_STATUS in text
    return text.replace(MEMBER_STATUS, MEMBER_STATUS + f"      - {column}\n")


def with_tables(text: str, *names: str) -> str:
    """The library spec with one more fixed-data table per name (tables.3, tables.4...)."""
    tables = "".join(f"  - name: {name}\n    columns:\n      - {{name: code, type: string, primary_key: true}}\n"
                     for name in names)
    return text.replace("rules:\n", tables + "rules:\n", 1)


def refusal(text: str) -> tuple[str, str, str]:
    """(the text of the line the error names, the field, the reason) of the loader's first complaint."""
    with pytest.raises(DomainError) as err:
        parse_spec(text, "domain.yaml")
    found = re.match(r"domain\.yaml:(\d+): (\S+): (.*)", str(err.value))
    assert found, str(err.value)
    return text.splitlines()[int(found[1]) - 1], found[2], found[3]


KEYWORDS = ["class", "def", "from", "lambda", "async", "global", "return", "import"]
MODEL_ATTRIBUTES = ["model_config", "model_dump", "model_fields", "model_validate", "model_copy", "copy", "json",
                    "dict", "schema", "validate", "construct"]
TAU2_DB_ATTRIBUTES = ["load", "dump", "get_hash", "get_json_schema", "get_statistics"]
ANNOTATION_TYPES = ["str", "int", "float", "bool"]


@pytest.mark.parametrize("name", KEYWORDS + MODEL_ATTRIBUTES + ANNOTATION_TYPES)
def test_a_column_the_exported_model_cannot_hold_is_refused(library_source, name):
    line, field, reason = refusal(with_column(library_source["domain.yaml"],
                                              f"{{name: {name}, type: string, gen: {{faker: word}}}}"))
    assert field == "tables.0.columns.4.name" and f"name: {name}," in line
    assert repr(name) in reason


@pytest.mark.parametrize("name", ["class", "import", "while"] + TAU2_DB_ATTRIBUTES
                         + ["model_config", "model_dump", "model_fields", "copy", "str"])
def test_a_table_the_exported_db_cannot_hold_is_refused(library_source, name):
    line, field, reason = refusal(with_tables(library_source["domain.yaml"], name))
    assert field == "tables.3.name" and f"name: {name}" in line
    assert repr(name) in reason


@pytest.mark.parametrize("first, second", [("x_1", "x1"), ("loan_2", "loan2"), ("book_copy", "book__copy"),
                                           ("fee_1_2", "fee12"), ("late_fee", "late_fee_")])
def test_tables_whose_class_names_collide_are_refused(library_source, first, second):
    line, field, reason = refusal(with_tables(library_source["domain.yaml"], first, second))
    assert field == "tables.4.name" and f"name: {second}" in line
    assert first in reason and second in reason and "Record" in reason


@pytest.mark.parametrize("name", ["sqlite_master", "sqlite_sequence", "sqlite_stat1", "sqlite_x"])
def test_a_table_named_like_sqlite_internals_is_refused(library_source, name):
    line, field, reason = refusal(with_tables(library_source["domain.yaml"], name))
    assert field == "tables.3.name" and "sqlite_" in reason


def test_two_foreign_keys_with_the_same_index_name_are_refused(library_source):
    """ix_a_b_c is the index of a_b.c and of a.b_c: the second CREATE INDEX would fail."""
    text = library_source["domain.yaml"].replace("rules:\n", """\
  - name: a
    columns:
      - {name: a_id, type: string, primary_key: true}
      - {name: b_c, type: string, references: members.member_id}
  - name: a_b
    columns:
      - {name: ab_id, type: string, primary_key: true}
      - {name: c, type: string, references: members.member_id}
rules:
""", 1)
    line, field, reason = refusal(text)
    assert field == "tables.4.columns.1.name" and "name: c," in line and "ix_a_b_c" in reason


def test_a_domain_named_with_a_keyword_is_refused(library_source):
    line, field, reason = refusal(library_source["domain.yaml"].replace("name: library", "name: class", 1))
    assert field == "name" and line == "name: class"


CONTROL = [("nul", "\\0"), ("nul_hex", "\\x00"), ("bell", "\\a"), ("escape", "\\e"), ("backspace", "\\b"),
           ("vertical_tab", "\\v"), ("form_feed", "\\f"), ("carriage_return", "\\r"), ("delete", "\\x7f"),
           ("c1_next_line", "\\N")]


@pytest.mark.parametrize("char", [c for _, c in CONTROL], ids=[i for i, _ in CONTROL])
def test_a_control_character_in_a_table_description_is_refused(library_source, char):
    text = library_source["domain.yaml"].replace("    id_prefix: BK-\n", f'    id_prefix: BK-\n    description: "b{char}x"\n')
    line, field, reason = refusal(text)
    assert field == "tables.1.description" and "description:" in line and "control character" in reason


@pytest.mark.parametrize("where, field", [
    ("description: A small lending library, for the runtime's tests.", "description"),
    ("{name: title, type: string, gen: {faker: catch_phrase}}", "tables.1.columns.1.description"),
    ("description: Borrow a book by title.", "intents.0.description"),
])
def test_a_nul_in_any_description_is_refused(library_source, where, field):
    text = library_source["domain.yaml"]
    if where.startswith("{"):
        edited = text.replace(where, where[:-1] + ', description: "the\\0title"}')
    else:
        edited = text.replace(where, where.split(":")[0] + ': "nul\\0here"')
    assert edited != text
    assert refusal(edited)[1] == field


@pytest.mark.parametrize("char", ["\\0", "\\x1b", "\\x85"], ids=["nul", "escape", "c1_next_line"])
def test_a_control_character_in_an_enum_value_is_refused(library_source, char):
    text = library_source["domain.yaml"].replace("enum: [active, blocked]", f'enum: [active, "blo{char}cked"]')
    line, field, reason = refusal(text)
    assert field == "tables.0.columns.3.enum.1" and "enum:" in line


def build_schema(domain) -> sa.Engine:
    engine = sa.create_engine("sqlite://")
    with engine.begin() as conn:
        create_schema(domain.metadata, conn)
    return engine


@pytest.mark.parametrize("name", ["order", "group", "select", "where", "table", "check", "limit", "default"])
def test_an_enum_column_named_with_an_sql_keyword_gets_a_working_check(library_source, name):
    """The CHECK of an enum column quotes its name: the schema builds, the tools run, and the
    constraint still refuses a value outside the enum."""
    text = with_column(library_source["domain.yaml"], f"{{name: {name}, type: string, enum: [a, b]}}")
    domain = load_domain_text(text, library_source["tools.py"], library_source["policy.md"])
    rows = populate(domain.spec, 0)
    with Environment.from_rows(domain, rows) as env:
        assert env.call("find_member", {"email": rows["members"][0]["email"]}).ok
    members = domain.metadata.tables["members"]
    row = {**rows["members"][0], "member_id": "MEM-999999", "email": "new@library.test"}
    with build_schema(domain).connect() as conn:
        conn.execute(members.insert(), {**row, name: "a"})
        with pytest.raises(sa.exc.IntegrityError):
            conn.execute(members.insert(), {**row, "member_id": "MEM-999998", "email": "x@library.test", name: "z"})


@pytest.mark.parametrize("name", ["order", "group", "select"])
def test_the_exported_package_runs_with_an_enum_column_named_with_an_sql_keyword(library_source, tmp_path, name):
    """Through to τ²-bench's side: the package's data model holds the column and its tools answer as
    toolscale's Environment does."""
    text = with_column(library_source["domain.yaml"], f"{{name: {name}, type: string, enum: [a, b]}}")
    domain = load_domain_text(text, library_source["tools.py"], library_source["policy.md"])
    rows = populate(domain.spec, 0)
    email = rows["members"][0]["email"]
    with Environment.from_rows(domain, rows) as env:
        expected = env.call("find_member", {"email": email}).output
        built = BuiltDomain(domain, rows, env.state_hash(), [])
    package = import_package(write_package(built, tmp_path / "library", {}))
    assert package.get_environment().tools.use_tool("find_member", email=email) == expected
    assert expected[name] in ("a", "b")
