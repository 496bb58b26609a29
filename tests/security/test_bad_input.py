"""Bad input is a one-line error: each attack is an input that, on 36e9cf1, ends in a traceback, a
bare ValueError or OverflowError deep in a run, or a populate stage that hangs (red-team F3, F8).

domain.yaml cases are refused by the loader with the file, the line and the field (the LLM path
goes through the same loader); populate refuses a scale it cannot honour before making a row; the
CLI exits 2 with the reason before Prefect starts.
"""

from __future__ import annotations

import re

import pytest
from typer.testing import CliRunner

import toolscale.flows.cli as cli
import toolscale.pipeline.populate as populate_module
from toolscale.domains.domain import DomainError, parse_spec
from toolscale.pipeline.populate import PopulateError, populate

LOANS_DUE = '{name: due_on, type: date, gen: {dates: ["2026-02-20", "2026-03-20"]}}'
STATUS_WEIGHTS = "gen: {choice: [active, blocked], weights: [0.8, 0.2]}"
COPIES_RANGE = "gen: {range: [0, 3]}"


def table(name: str, key: str = "{name: code, type: string, primary_key: true}", rest: str = "") -> str:
    return f"  - name: {name}\n{rest}    columns:\n      - {key}\n"


def edit(text: str, old: str, new: str) -> str:
    assert old in text, old
    return text.replace(old, new, 1)


def add(text: str, *tables: str) -> str:
    """The library spec with more tables after its three (tables.3, tables.4...)."""
    return edit(text, "rules:\n", "".join(tables) + "rules:\n")


def cycle(*names: str) -> list[str]:
    """Tables each pointing at the next, the last at the first."""
    return [table(n, rest="", key="{name: %s_id, type: string, primary_key: true}\n"
                  "      - {name: next_id, type: string, references: %s.%s_id}" % (n, m, m))
            for n, m in zip(names, names[1:] + names[:1])]


SPECS = {
    "boolean_primary_key": (lambda t: add(t, table("flags", "{name: flag, type: boolean, primary_key: true}")),
                            "tables.3.columns.0", "boolean"),
    "boolean_primary_key_generated": (
        lambda t: add(t, table("flags", "{name: flag, type: boolean, primary_key: true}", "    rows: 3\n")),
        "tables.3.columns.0", "boolean"),
    "number_key_generated": (
        lambda t: add(t, table("rates", "{name: rate, type: number, primary_key: true}", "    rows: 3\n")),
        "tables.3", "string or integer"),
    "date_key_generated": (
        lambda t: add(t, table("days", "{name: day, type: date, primary_key: true}", "    rows: 3\n")),
        "tables.3", "string or integer"),
    "cyclic_foreign_keys": (lambda t: add(t, *cycle("eggs", "hens")), "tables", "cycle"),
    "cyclic_foreign_keys_of_three": (lambda t: add(t, *cycle("rock", "paper", "scissors")), "tables", "cycle"),
    "per_parent_is_the_table_itself": (
        lambda t: add(t, table("cells", "{name: cell_id, type: string, primary_key: true}\n"
                                        "      - {name: parent_id, type: string, references: cells.cell_id}",
                               "    id_prefix: C-\n    per: {column: parent_id, min: 1, max: 2}\n")),
        "tables.3", "another table"),
    "per_column_without_a_reference": (
        lambda t: edit(t, "    per: {column: member_id, min: 0, max: 2}", "    per: {column: due_on, min: 0, max: 2}"),
        "tables.2", "another table"),
    "inverted_dates": (lambda t: edit(t, '["2026-02-20", "2026-03-20"]', '["2026-03-20", "2026-02-20"]'),
                       "tables.2.columns.3.gen.dates", "after the end"),
    "negative_weights": (lambda t: edit(t, STATUS_WEIGHTS, "gen: {choice: [active, blocked], weights: [-1, 2]}"),
                         "tables.0.columns.3.gen.weights", "weights"),
    "zero_weights": (lambda t: edit(t, STATUS_WEIGHTS, "gen: {choice: [active, blocked], weights: [0, 0]}"),
                     "tables.0.columns.3.gen.weights", "weights"),
    "infinite_weight": (lambda t: edit(t, STATUS_WEIGHTS, "gen: {choice: [active, blocked], weights: [.inf, 1]}"),
                        "tables.0.columns.3.gen.weights", "weights"),
    "nan_weight": (lambda t: edit(t, STATUS_WEIGHTS, "gen: {choice: [active, blocked], weights: [.nan, 1]}"),
                   "tables.0.columns.3.gen.weights", "weights"),
    "infinite_range": (lambda t: edit(t, COPIES_RANGE, "gen: {range: [0, .inf]}"),
                       "tables.1.columns.2.gen.range", "finite"),
    "nan_range": (lambda t: edit(t, COPIES_RANGE, "gen: {range: [.nan, 3]}"), "tables.1.columns.2.gen.range",
                  "finite"),
    "a_billion_rows": (lambda t: edit(t, "rows: 12", "rows: 1000000000"), "tables.0.rows", "250000"),
    "rows_just_over_the_ceiling": (lambda t: edit(t, "rows: 12", "rows: 250001"), "tables.0.rows", "250000"),
    "a_hundred_thousand_children_per_parent": (
        lambda t: edit(edit(t, "rows: 12", "rows: 1000"), "min: 0, max: 2", "min: 100000, max: 100000"),
        "tables.2", "at most 250,000"),
    "a_billion_children_per_parent": (lambda t: edit(t, "min: 0, max: 2", "min: 0, max: 1000000000"),
                                      "tables.2.per.max", "250000"),
    "fixed_row_pointing_at_the_trillionth_member": (
        lambda t: edit(t, "    per: {column: member_id, min: 0, max: 2}\n",
                       "    per: {column: member_id, min: 0, max: 2}\n    data:\n"
                       "      - {loan_id: LN-1, member_id: MEM-999999999999, book_id: BK-000001,"
                       " due_on: 2026-03-01, returned: false}\n"),
        "tables.0", "at most 250,000"),
    "five_tables_over_the_database_ceiling": (
        lambda t: add(t, *(table(f"big{i}", "{name: n, type: integer, primary_key: true}",
                                 "    rows: 240000\n") for i in range(5))),
        "tables", "at most 1,000,000"),
    "a_billion_candidates": (lambda t: edit(t, "count: 8", "count: 1000000000"), "intents.0.template.count",
                             "1000"),
}


@pytest.mark.parametrize("case", SPECS)
def test_a_spec_that_would_crash_or_hang_later_is_refused_at_load(library_source, case):
    change, field, reason = SPECS[case]
    text = change(library_source["domain.yaml"])
    with pytest.raises(DomainError) as err:
        parse_spec(text, "lib/domain.yaml")
    first = str(err.value).splitlines()[0]
    assert re.match(rf"lib/domain\.yaml:\d+: {re.escape(field)}: ", first), first
    assert reason in first


@pytest.fixture
def no_rows(monkeypatch):
    """populate must refuse before it makes a single row."""
    def made_a_row(*args, **kwargs):
        raise AssertionError("populate started making rows")

    monkeypatch.setattr(populate_module._TableFiller, "row", made_a_row)


@pytest.mark.parametrize("scale", [float("inf"), float("-inf"), float("nan"), 1e308, 1e9, 30_000],
                         ids=["inf", "minus_inf", "nan", "1e308", "1e9", "just_over_the_ceiling"])
def test_populate_refuses_a_scale_it_cannot_honour_before_making_rows(library, no_rows, scale):
    with pytest.raises(PopulateError, match=r"scale|at most 250,000"):
        populate(library.spec, 0, scale=scale)


@pytest.fixture
def refused(monkeypatch):
    """Invoke the CLI in-process; refused input must exit 2 before Prefect is configured."""
    def prefect(*args, **kwargs):
        raise AssertionError("Prefect was started")

    monkeypatch.setattr(cli, "configure_prefect", prefect)

    def invoke(*args: str) -> str:
        result = CliRunner().invoke(cli.app, list(args), env={"COLUMNS": "400"})
        assert result.exit_code == 2, (result.exit_code, result.output, result.exception)
        assert "Traceback" not in result.output
        return result.stderr

    return invoke


LLM = ("--llm-base-url", "http://127.0.0.1:9/v1", "--model", "m")
CLI = {
    "out_is_a_file": (["generate", "--out", "{file}"], "is a file, not a folder"),
    "out_is_dev_null": (["generate", "--out", "/dev/null"], "is a file, not a folder"),
    "out_under_a_file": (["generate", "--out", "{file}/sub"], "cannot be written: Not a directory"),
    "out_in_proc": (["generate", "--out", "/proc/x"], "--out /proc/x cannot be written"),
    "out_in_sys": (["generate", "--out", "/sys/toolscale"], "--out /sys/toolscale cannot be written"),
    "huge_seed": (["generate", "--seed", "123456789012345678901234567890"], "less than or equal to 9223372036854775807"),
    "seed_past_int64": (["generate", "--seed", str(2**63)], "less than or equal to 9223372036854775807"),
    "seed_below_int64": (["generate", "--seed", str(-2**63 - 1)], "greater than or equal to -9223372036854775808"),
    "scale_inf": (["generate", "--scale", "inf"], "--scale must be a finite number, got inf"),
    "scale_1e9": (["generate", "--scale", "1e9"], "a table holds at most 250,000"),
    "scale_1e308": (["generate", "--scale", "1e308"], "a table holds at most 250,000"),
    "scale_100_for_bank": (["generate", "--domains", "bank", "--scale", "100"],
                           "table 'transactions' would get up to 432,000 rows"),
    "new_domain_scale_inf": (["new-domain", "pet grooming", *LLM, "--scale", "inf"], "--scale must be a finite"),
    "new_domain_out_is_a_file": (["new-domain", "pet grooming", *LLM, "--out", "{file}"], "is a file, not a folder"),
    "new_domain_huge_seed": (["new-domain", "pet grooming", *LLM, "--seed", str(10**30)], "less than or equal to"),
    "regenerate_huge_seed": (["regenerate-domain", "bank", "--out", "{run}", "--seed", str(10**30)],
                             "less than or equal to"),
}


@pytest.mark.parametrize("case", CLI)
def test_bad_cli_input_exits_2_with_a_one_line_reason(tmp_path, refused, case):
    args, reason = CLI[case]
    (tmp_path / "afile").write_text("not a folder")
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "report.json").write_text('{"domains": {}}')
    args = [a.format(file=tmp_path / "afile", run=tmp_path / "run") for a in args]
    said = refused(*args)
    assert any(reason in line for line in said.splitlines()), said


@pytest.mark.parametrize("scale", [1e9, 5e4])
def test_the_llm_path_refuses_a_database_past_the_ceilings_before_any_request(scale):
    from toolscale.pipeline.llm import LLMConfig, LLMSynthesizer
    from toolscale.pipeline.synthesizer import OfflineSynthesizer

    domain = OfflineSynthesizer().design("bank")
    config = LLMConfig(base_url="http://127.0.0.1:9/v1", model="unreachable", timeout_s=1.0)
    synth = LLMSynthesizer(config, seed=3, scale=scale)
    with pytest.raises(PopulateError, match="a table holds at most|a database holds at most"):
        synth.populate(domain, 3)
    assert synth.report()["stages"] == {}  # nothing was asked
