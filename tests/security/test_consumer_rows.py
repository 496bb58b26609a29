"""Hostile or damaged dataset rows, as a consumer of the published Hugging Face dataset meets them
(red team 2026-12-06, R13 and R2's consumer route): `environment_from_row` and `replay_row` (what
the card shows, and what trainer/data.py runs) turn each into one clean DomainError naming the row,
never a raw SQLAlchemy IntegrityError with its SQL, a RecursionError, or a dead process.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from toolscale.domains import DomainError
from toolscale.pipeline.rows import RowError, environment_from_row, replay_row


def domain_row(library, rows, database=None, **changes) -> dict:
    row = {"domain": "library", "domain_yaml": library.sources["domain.yaml"],
           "tools_source": library.sources["tools.py"], "policy": library.policy,
           "database": json.dumps(rows) if database is None else database}
    return {**row, **changes}


def first_book(rows, **changes) -> dict:
    return {**rows, "books": [{**rows["books"][0], **changes}, *rows["books"][1:]]}


DEEP = "[" * 100_000 + "]" * 100_000
DATABASES = {
    "missing-required-column": lambda rows: json.dumps(first_book(rows, title=None)),
    "duplicate-key": lambda rows: json.dumps({**rows, "books": [rows["books"][0], rows["books"][0]]}),
    "unknown-column": lambda rows: json.dumps(first_book(rows, shelf_secret="x")),
    "unknown-table": lambda rows: json.dumps({**rows, "secrets": [{"a": 1}]}),
    "list-value": lambda rows: json.dumps(first_book(rows, title=["a", "b"])),
    "dict-value": lambda rows: json.dumps(first_book(rows, title={"a": 1})),
    "huge-integer": lambda rows: json.dumps(first_book(rows, copies=10**30)),
    "deeply-nested-value": lambda rows: json.dumps(first_book(rows, title="x")).replace('"x"', DEEP, 1),
    "deeply-nested-database": lambda rows: DEEP,
    "not-json": lambda rows: "{'books': []",
    "a-list": lambda rows: "[]",
    "table-not-a-list": lambda rows: json.dumps({"books": {"a": 1}}),
    "row-not-a-dict": lambda rows: json.dumps({"books": [1, 2]}),
    "null": lambda rows: "null",
    "not-text": lambda rows: 12,
}


@pytest.mark.parametrize("name", sorted(DATABASES))
def test_a_database_that_does_not_fit_is_one_clean_domain_error(name, library, library_rows):
    with pytest.raises(DomainError) as raised:
        environment_from_row(domain_row(library, library_rows, database=DATABASES[name](library_rows)))
    message = str(raised.value)
    assert isinstance(raised.value, RowError) and message.startswith("hf:library: database: ")
    assert "\n" not in message and "[SQL:" not in message and len(message) < 500, message


def test_a_row_missing_its_fields_is_one_clean_domain_error(library, library_rows):
    row = domain_row(library, library_rows)
    del row["tools_source"]
    with pytest.raises(RowError, match="hf:library: KeyError"):
        environment_from_row(row)


ACTIONS = {
    "arguments-not-json": [{"name": "search_books", "arguments": "{'x'"}],
    "arguments-deeply-nested": [{"name": "search_books", "arguments": DEEP}],
    "no-arguments": [{"name": "search_books"}],
    "not-a-list": 5,
}


@pytest.mark.parametrize("name", sorted(ACTIONS))
def test_a_task_row_with_bad_actions_is_one_clean_domain_error(name, library, library_rows):
    env = environment_from_row(domain_row(library, library_rows))
    try:
        with pytest.raises(RowError, match="task T1: actions: "):
            replay_row(env, {"id": "T1", "actions": ACTIONS[name]})
    finally:
        env.close()


def test_arguments_nested_past_what_the_schema_reads_are_a_result_or_a_clean_error(library, library_rows):
    env = environment_from_row(domain_row(library, library_rows))
    nested = "[" * 900 + "]" * 900
    try:
        results, _ = replay_row(env, {"id": "T1", "actions": [{"name": "search_books", "arguments": '{"title": ' + nested + "}"}]})
    except RowError:
        pass
    else:
        assert results[0].error_type == "InvalidArguments"
    finally:
        env.close()


_CONSUMER = r'''
import json, sys
from pathlib import Path
from toolscale.domains import load_domain
from toolscale.pipeline.populate import populate
from toolscale.pipeline.rows import environment_from_row, replay_row
library = load_domain(Path(sys.argv[1]))
rows = populate(library.spec, seed=0)
tail = """

@tool("read")
def probe(text: str) -> dict:
    \"\"\"Probe.

    Args:
        text: Anything, e.g. "x".
    \"\"\"
    t = ()
    for i in range(200000):
        t = (t,)
    return {"n": len({t})}
"""
row = {"domain": "library", "domain_yaml": library.sources["domain.yaml"],
       "tools_source": library.sources["tools.py"] + tail, "policy": library.policy, "database": json.dumps(rows)}
env = environment_from_row(row)
results, _ = replay_row(env, {"id": "T1", "actions": [{"name": "probe", "arguments": '{"text": "x"}'}]})
print(json.dumps([results[0].error_type, results[0].error]))
'''


def test_a_hostile_tool_in_a_dataset_row_does_not_kill_the_consumer(tmp_path):
    """R2 through the consumer's route: a `domains` row whose tool builds a deep tuple and hashes it
    crashed whoever replayed the task (rc 139). It is now the call's error."""
    library = Path(__file__).resolve().parents[1] / "fixtures" / "library"  # not `from conftest`: e2e has its own
    proc = subprocess.run([sys.executable, "-c", _CONSUMER, str(library)], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, f"exit status {proc.returncode}: {proc.stderr[-500:]}"
    error_type, error = json.loads(proc.stdout.strip().splitlines()[-1])
    assert error_type == "ToolSizeExceeded" and "nested" in error
