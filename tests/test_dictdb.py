"""The record API over dicts behaves as the one over SQLite: same results, same refusals, same state.

Each check runs the same operations through `records.Records` (SQLite, as the Environment uses it)
and `dictdb.DictRecords`, and compares what came back (value, or exception type and message) and
the final rows and digest.
"""

from __future__ import annotations

import sqlite3
import weakref

import pytest
import sqlalchemy as sa

from domain_checks import example_arguments
from toolscale.domains import Environment, available_domains, builtin_domain, load_domain_text
from toolscale.domains.dictdb import DictRecords, DictTools
from toolscale.domains.records import DIGEST_MOD, Records, row_hash
from toolscale.domains.sql import Statements, create_schema
from toolscale.pipeline.populate import populate

EDGE_YAML = """
name: edge
description: Tables that reach every rule of the record API.
clock: "2026-03-02T09:00:00"
tables:
  - name: teams
    columns:
      - {name: team_no, type: integer, primary_key: true}
      - {name: label, type: string, unique: true}
      - {name: budget, type: number, nullable: true}
  - name: people
    id_prefix: p_X-
    columns:
      - {name: code, type: string, unique: true, nullable: true}
      - {name: person_id, type: string, primary_key: true}
      - {name: email, type: string, unique: true}
      - {name: team_no, type: integer, references: teams.team_no, nullable: true}
      - {name: mentor_id, type: string, references: people.person_id, nullable: true}
      - {name: active, type: boolean}
      - {name: born, type: date, nullable: true}
      - {name: level, type: string, enum: [junior, senior]}
"""
EDGE_TOOLS = '''
@tool("read")
def noop(x: int) -> int:
    """Nothing.

    Args:
        x: A number, e.g. 1.
    """
    return x
'''
EDGE_ROWS = {
    "teams": [{"team_no": 1, "label": "Ops", "budget": 10.0}, {"team_no": 4, "label": "dev", "budget": None}],
    "people": [
        {"code": None, "person_id": "p_X-000002", "email": "a@x", "team_no": 1, "mentor_id": None, "active": True,
         "born": "1990-01-02", "level": "senior"},
        {"code": "c1", "person_id": "p_x-000009", "email": "b@x", "team_no": 4, "mentor_id": "p_X-000002",
         "active": False, "born": None, "level": "junior"},
        {"code": None, "person_id": "pzX-000050", "email": "c@x", "team_no": None, "mentor_id": None,
         "active": True, "born": None, "level": "junior"},
    ],
}
person = {"email": "n@x", "active": True, "level": "junior"}
OPERATIONS = [
    ("get", "people", "p_X-000002"), ("get", "people", "nope"), ("get", "teams", "4"), ("get", "teams", " 4 "),
    ("get", "teams", 4.0), ("get", "teams", True), ("get", "teams", [1]), ("get", "teams", 2 ** 70),
    ("get", "ghosts", 1), ("get", "people", None), ("get", "teams", float("nan")),
    ("find", "people", None, None, None), ("find", "people", {"active": 1}, None, None),
    ("find", "people", {"active": "1"}, None, None), ("find", "people", {"code": None}, "-email", None),
    ("find", "people", None, "code", None), ("find", "people", None, "-code", 2), ("find", "people", None, "born", 0),
    ("find", "people", None, "level", -1), ("find", "people", {"team_no": "1.0"}, None, None),
    ("find", "teams", {"budget": 10}, None, None), ("find", "teams", {"label": 4}, None, None),
    ("find", "teams", {"label": 2.5}, None, None), ("find", "teams", {"budget": "1e1"}, None, None),
    ("find", "people", {"email": "a@x", "code": ["c"]}, None, None), ("find", "people", {"shoe": 1}, None, None),
    ("find", "people", None, "-shoe", None), ("find", "people", None, "-team_no", None),
    ("count", "people", {"level": "junior"}),
    ("one", "people", {"email": "b@x"}), ("one", "people", {"email": "nobody@x"}, "colleague"),
    ("one", "people", {"level": "junior"}), ("one", "people", {"shoe": 1}), ("one", "ghosts", {"x": 1}),
    ("owned", "people", "p_x-000009", "team_no", 4), ("owned", "people", "p_x-000009", "team_no", 1),
    ("owned", "people", "p_x-000009", "mentor_id", "p_X-000002", "mentee"), ("owned", "people", "nope", "team_no", 4),
    ("owned", "people", "p_x-000009", "shoe_id", 4), ("owned", "people", "p_x-000009", ["team_no"], 4),
    ("one", "people", "email"), ("one", "people", {"email": ["a@x"]}),
    ("ensure", "people", {"email": "a@x"}, "no a"), ("ensure", "people", {"email": "z@x"}, "nobody is z"),
    ("insert", "people", person), ("insert", "people", {**person, "email": "m@x"}),
    ("insert", "people", {**person, "email": "a@x"}), ("insert", "people", {**person, "email": "q@x", "code": "c1"}),
    ("insert", "people", {**person, "email": "a@x", "code": "c1"}),
    ("insert", "people", {**person, "email": "a@x", "person_id": "p_X-000002"}),
    ("insert", "people", {**person, "email": "z@x", "person_id": "p_X-000002"}),
    ("insert", "people", {**person, "email": "t@x", "team_no": 77}),
    ("insert", "people", {**person, "email": "t@x", "mentor_id": "nobody", "team_no": 77}),
    ("insert", "people", {**person, "email": "s@x", "person_id": "self", "mentor_id": "self"}),
    ("insert", "people", {**person, "email": "t2@x", "level": "boss"}),
    ("insert", "people", {**person, "email": "t3@x", "active": "yes"}), ("insert", "people", {"email": "t4@x"}),
    ("insert", "people", {**person, "email": "t5@x", "shoe": 3}), ("insert", "people", ["email"]),
    ("insert", "people", {**person, "email": "t6@x", "born": "yesterday"}),
    ("insert", "teams", {"label": "new"}), ("insert", "teams", {"label": "new2", "team_no": 4}),
    ("insert", "teams", {"label": "Ops", "team_no": 4}), ("insert", "teams", {"label": "big", "team_no": 2 ** 64}),
    ("insert", "teams", {"label": "nan", "budget": float("nan")}), ("insert", "teams", {"label": "x", "budget": "1"}),
    ("insert", "teams", {"label": "f", "team_no": 7.0}), ("insert", "teams", {"label": "g", "team_no": 7.5}),
    ("update", "people", "p_x-000009", {"email": "a@x"}), ("update", "people", "p_x-000009", {"code": "c1"}),
    ("update", "people", "p_x-000009", {"team_no": 99}), ("update", "people", "p_x-000009", {"person_id": "new"}),
    ("update", "people", "p_x-000009", {"person_id": "p_x-000009", "level": "senior"}),
    ("update", "people", "p_x-000009", {}), ("update", "teams", "1", {"budget": 3}),
    ("update", "teams", 1, {"team_no": "1"}), ("update", "teams", 1, {"budget": float("nan")}),
    ("delete", "teams", 1), ("delete", "people", "p_X-000002"), ("delete", "people", "pzX-000050"),
    ("delete", "teams", 5), ("insert", "people", {**person, "email": "after@x"}),
    ("find", "people", None, "person_id", None), ("count", "teams", None),
]


def sqlite_records(domain, rows) -> Records:
    connection = sqlite3.connect(":memory:", isolation_level=None)
    connection.execute("PRAGMA foreign_keys = ON")
    engine = sa.create_engine("sqlite://", creator=lambda: connection, poolclass=sa.pool.StaticPool)
    with engine.begin() as conn:
        create_schema(domain.metadata, conn)
        for table in domain.spec.creation_order():
            conn.execute(domain.metadata.tables[table.name].insert(), rows[table.name])
    connection.isolation_level = None
    with Environment.from_rows(domain, rows) as env:
        digest = int(env.state_hash(), 16)
    return Records(domain.spec, Statements(domain.metadata, engine.dialect), connection, digest)


def full_digest(rows) -> int:
    return sum(row_hash(t, r) for t, rs in rows.items() for r in rs) % DIGEST_MOD


def outcome(records, operation):
    name, *args = operation
    try:
        return ("ok", getattr(records, name)(*args))
    except Exception as exc:
        return (type(exc).__name__, str(exc))


def test_every_record_operation_answers_as_sqlite_does():
    domain = load_domain_text(EDGE_YAML, EDGE_TOOLS, "")
    sql, dicts = sqlite_records(domain, EDGE_ROWS), DictRecords(domain.spec, EDGE_ROWS)
    kinds = set()
    for operation in OPERATIONS:
        expected, got = outcome(sql, operation), outcome(dicts, operation)
        assert got == expected, operation
        kinds.add(expected[0] if expected[0] != "ok" else f"ok-{operation[0]}")
        assert dicts.dump() == sql.dump(), operation
        # from the rows: Records' running digest hashes a NaN it stored as NULL (its own quirk)
        assert dicts.digest == dicts.full_digest() == full_digest(sql.dump()), operation
    # the table reaches success and every kind of refusal
    assert {"ok-get", "ok-find", "ok-one", "ok-owned", "ok-ensure", "ok-insert", "ok-update", "ok-delete",
            "ToolError", "ProgrammingError", "OverflowError"} <= kinds


def test_the_lookup_helpers_name_what_went_wrong():
    """one / owned / ensure: the shapes the tools repeat, with the messages an agent acts on."""
    domain = load_domain_text(EDGE_YAML, EDGE_TOOLS, "")
    for records in (sqlite_records(domain, EDGE_ROWS), DictRecords(domain.spec, EDGE_ROWS)):
        assert records.one("people", {"email": "b@x"})["person_id"] == "p_x-000009"
        assert outcome(records, ("one", "people", {"email": "n@x"})) == ("ToolError", "no people with email n@x")
        assert outcome(records, ("one", "people", {"email": "n@x"}, "colleague")) == \
            ("ToolError", "no colleague with email n@x")
        assert outcome(records, ("one", "people", {"level": "senior", "active": False})) == \
            ("ToolError", "no people with level senior and active False")
        assert outcome(records, ("one", "people", {"level": "junior"})) == \
            ("ToolError", "more than one people with level junior")
        assert records.owned("people", "p_x-000009", "mentor_id", "p_X-000002")["email"] == "b@x"
        assert outcome(records, ("owned", "people", "p_x-000009", "team_no", 1, "person")) == \
            ("ToolError", "person p_x-000009 does not belong to team no 1")
        assert outcome(records, ("ensure", "people", {"email": "z@x"}, "verify first")) == ("ToolError", "verify first")
        assert records.ensure("people", {"email": "a@x"}, "verify first") is None


def test_new_keys_follow_the_largest_key_like_the_prefix():
    domain = load_domain_text(EDGE_YAML, EDGE_TOOLS, "")
    dicts = DictRecords(domain.spec, EDGE_ROWS)
    # SQLite's LIKE: '_' is any character and case is ignored, so 'pzX-000050' counts
    assert dicts.next_key("people") == "p_X-000051"
    assert dicts.next_key("teams") == 5


def test_read_tools_cannot_write_and_failed_writes_leave_no_trace(library, library_rows):
    models = {n: s.args_model for n, s in library.toolkit.specs.items()}
    tools = DictTools(library.spec, library.toolkit.source, library_rows, models)
    before, rows = tools.state_hash(), tools.dump()
    refused = tools.call("sneaky_write", {"book_id": "BK-000001"})
    assert refused["error_type"] == "PermissionError"
    failed = tools.call("set_copies", {"book_id": "BK-000002", "copies": 3, "note": "fail"})
    assert failed == {"name": "set_copies", "output": None, "error": "asked to fail after writing",
                      "error_type": "ToolError"}
    assert tools.state_hash() == before and tools.dump() == rows


@pytest.mark.parametrize("name", ["library", *available_domains()])
def test_every_tool_answers_as_the_environment_does(name, library, library_rows):
    """Each tool with its docstring example, then with bad arguments: same result, same state."""
    domain = library if name == "library" else builtin_domain(name)
    rows = library_rows if name == "library" else populate(domain.spec, seed=3)
    models = {n: s.args_model for n, s in domain.toolkit.specs.items()}
    tools = DictTools(domain.spec, domain.toolkit.source, rows, models)
    calls = [("no_such_tool", {})]
    for tool, spec in domain.toolkit.specs.items():
        example = example_arguments(domain, tool)
        calls += [(tool, example), (tool, {**example, "unexpected": 1})]
        for arg in spec.parameters["required"][:1]:
            calls.append((tool, {**example, arg: [example[arg]]}))
    with Environment.from_rows(domain, rows) as env:
        for tool, arguments in calls:
            assert tools.call(tool, arguments) == env.call(tool, arguments).model_dump(), (tool, arguments)
            assert tools.state_hash() == env.state_hash(), (tool, arguments)
        assert tools.dump() == env.dump()
        assert tools.recomputed_state_hash() == env.recomputed_state_hash()


def test_copies_share_the_lookups_of_their_state_and_each_sees_its_own_writes():
    """A copy answers `find` and new keys from the indexes of the store it was copied from while
    the table is unwritten in both (built there once for every copy), and from its own rows after:
    each answer is the one a store made from the same rows alone gives."""
    domain = load_domain_text(EDGE_YAML, EDGE_TOOLS, "")

    def same_answers(records: DictRecords) -> None:
        alone = DictRecords(domain.spec, records.dump())
        for where in ({"level": "junior"}, {"active": True}, {"team_no": 1}, {"email": "x@x"}):
            assert records.find("people", where) == alone.find("people", where), where
        if "people" not in records.next_keys:  # a store's own inserts move its counter on, not its rows
            assert records.next_key("people") == alone.next_key("people")

    base = DictRecords(domain.spec, EDGE_ROWS)
    first, second = base.copy(), base.copy()
    same_answers(first)
    assert ("people", "level") in base._lookups  # built once, where both copies share it
    assert second._index("people", "level") is first._index("people", "level")
    first.insert("people", {**person, "email": "x@x"})
    base.insert("people", {**person, "email": "y@x", "team_no": 1, "person_id": "pzX-000070"})
    later = base.copy()
    for records in (first, second, base, later):
        same_answers(records)
    assert [second.next_key("people"), later.next_key("people")] == ["p_X-000051", "p_X-000071"]
    assert "x@x" in {r["email"] for r in first.find("people", {"level": "junior"})}
    assert "x@x" not in {r["email"] for r in base.find("people")} | {r["email"] for r in second.find("people")}
    gone = weakref.ref(base)
    del base  # copies hold the store they came from weakly: copies of copies keep no state alive
    assert gone() is None
    same_answers(later)  # alone, it answers from its own rows
