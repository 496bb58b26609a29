"""Loading a domain folder: errors name the file, the line and the field."""

from __future__ import annotations

import pytest

from toolscale.domains import BUILTIN_DOMAINS, DomainError, builtin_domain, load_domain, load_domain_text
from toolscale.domains.domain import parse_spec


def test_a_wrong_type_names_field_and_line(library_source):
    text = library_source["domain.yaml"].replace("rows: 12", "rows: twelve")
    with pytest.raises(DomainError) as err:
        parse_spec(text, "domain.yaml")
    assert "domain.yaml:7: tables.0.rows:" in str(err.value)


def test_an_unknown_field_is_named(library_source):
    text = library_source["domain.yaml"].replace("    id_prefix: BK-", "    id_prefix: BK-\n    colour: red")
    with pytest.raises(DomainError, match=r"domain.yaml:\d+: tables.1.colour: Extra inputs are not permitted"):
        parse_spec(text, "domain.yaml")


def test_a_missing_field_is_named(library_source):
    text = library_source["domain.yaml"].replace("description: A small lending library, for the runtime's tests.\n", "")
    with pytest.raises(DomainError, match=r"description: Field required"):
        parse_spec(text)


def test_a_bad_generator_is_named(library_source):
    text = library_source["domain.yaml"].replace("gen: {faker: name}", "gen: {faker: name, choice: [a]}")
    with pytest.raises(DomainError, match=r"domain.yaml:\d+: tables.0.columns.1.gen: Value error, give exactly one"):
        parse_spec(text, "domain.yaml")


def test_broken_yaml_names_the_line():
    with pytest.raises(DomainError, match=r"domain.yaml:2: not valid YAML"):
        parse_spec("name: x\n  bad: [1, 2\n", "domain.yaml")


def test_a_reference_to_an_unknown_table_is_refused(library_source):
    text = library_source["domain.yaml"].replace("references: books.book_id", "references: novels.book_id")
    with pytest.raises(DomainError, match="unknown table 'novels'"):
        parse_spec(text)


def test_a_rule_naming_an_unknown_tool_is_refused(library_source):
    text = library_source["domain.yaml"].replace("enforced_by: [borrow_book]}", "enforced_by: [lend_book]}", 1)
    with pytest.raises(DomainError, match="unknown tool"):
        load_domain_text(text, library_source["tools.py"], library_source["policy.md"])


def test_a_missing_file_is_named(tmp_path):
    (tmp_path / "domain.yaml").write_text("name: x\n")
    with pytest.raises(DomainError, match=r"tools.py: missing"):
        load_domain(tmp_path)


def test_unknown_builtin_domain_lists_the_known_ones():
    with pytest.raises(DomainError, match="unknown domain 'casino'.*bank"):
        builtin_domain("casino")


def test_the_ten_toolscale_domains_are_built_in():
    """ToolScale's ten domains are built in; another domain is just another folder (no list to edit)."""
    assert {"bank", "basketball", "ecommerce", "medicine", "movie", "railway", "restaurant", "school", "travel",
            "weather"} <= set(BUILTIN_DOMAINS)
    assert list(BUILTIN_DOMAINS) == sorted(BUILTIN_DOMAINS)  # a stable order: runs and reports list them so


def test_every_rule_and_intent_naming_an_unknown_tool_is_listed_at_once(library_source):
    text = (library_source["domain.yaml"].replace("enforced_by: [borrow_book]}", "enforced_by: [lend_book]}")
            .replace("{name: find_member,", "{name: find_patron,"))
    with pytest.raises(DomainError) as err:
        load_domain_text(text, library_source["tools.py"], library_source["policy.md"], "library")
    lines = str(err.value).splitlines()
    assert [line.split(": ", 1)[1] for line in lines] == [
        "rule 'active_members' names unknown tool(s) lend_book", "rule 'copies' names unknown tool(s) lend_book",
        "intent 'borrow' uses unknown tool 'find_patron'"]


def test_the_same_texts_load_once_and_a_failure_names_its_own_origin(library_source):
    texts = (library_source["domain.yaml"], library_source["tools.py"], library_source["policy.md"])
    first = load_domain_text(*texts, "library")
    assert load_domain_text(*texts, "elsewhere") is first  # the compiled tools are reused
    bank = builtin_domain("bank")
    assert bank.path is not None and load_domain(bank.path).toolkit is bank.toolkit  # each with its own path
    broken = library_source["tools.py"] + "\nimport os\n"
    for origin in ("one", "two"):  # a failed load is not kept: each names its own file
        with pytest.raises(DomainError, match=rf"^{origin}/tools.py"):
            load_domain_text(texts[0], broken, texts[2], origin)
