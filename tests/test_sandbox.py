"""Tool source is compiled under a strict policy: what it may not do is refused, with the line."""

from __future__ import annotations

import pytest

from toolscale.domains import DomainError, Environment, ToolCompileError, load_domain_text
from toolscale.domains.toolkit import build_toolkit

HEADER = '''
@tool("read")
def probe(text: str) -> dict:
    """Probe the sandbox.

    Args:
        text: Anything, e.g. "x".
    """
'''


def compile_body(body: str):
    return build_toolkit(HEADER + "\n".join("    " + line for line in body.splitlines()), "probe.py")


@pytest.mark.parametrize("body, message", [
    ("import os\nreturn {}", "imports are not allowed"),
    ("from os import path\nreturn {}", "imports are not allowed"),
    ("return text.__class__", '"__class__" is an invalid attribute name'),
    ("return probe.__globals__", '"__globals__" is an invalid attribute name'),
    ("return __builtins__", '"__builtins__" is an invalid variable name'),
    ("return open('/etc/passwd').read()", "'open' is not available to tools"),
    ("return eval('1+1')", "Eval calls are not allowed"),
    ("exec('x = 1')\nreturn {}", "Exec calls are not allowed"),
    ("return getattr(text, 'upper')()", "'getattr' is not available to tools"),
    ("return type(text)", "'type' is not available to tools"),
    ("class Thing:\n    pass\nreturn {}", "classes are not allowed"),
])
def test_forbidden_source_is_refused_at_load_with_its_line(body, message):
    with pytest.raises(ToolCompileError) as err:
        compile_body(body)
    assert message in str(err.value)
    assert "probe.py" in str(err.value) and ":" in str(err.value)


def test_import_error_names_the_line():
    with pytest.raises(ToolCompileError, match=r"probe\.py:10: imports are not allowed"):
        compile_body("x = 1\nimport os\nreturn {}")


def run_probe(library, library_rows, body: str):
    tools = library.sources["tools.py"] + HEADER + "\n".join("    " + line for line in body.splitlines())
    domain = load_domain_text(library.sources["domain.yaml"], tools, library.policy)
    with Environment.from_rows(domain, library_rows) as env:
        before = env.state_hash()
        result = env.call("probe", {"text": "abc"})
        assert env.state_hash() == before
        return result


def test_endless_while_loop_is_stopped_with_a_clear_error(library, library_rows):
    result = run_probe(library, library_rows, "n = 0\nwhile True:\n    n += 1\nreturn {}")
    assert result.error_type == "StepBudgetExceeded"
    assert "budget" in result.error


def test_endless_for_loop_is_stopped_with_a_clear_error(library, library_rows):
    result = run_probe(library, library_rows, "total = 0\nfor i in range(10 ** 12):\n    total += i\nreturn {}")
    assert result.error_type == "StepBudgetExceeded"


def test_unbounded_recursion_is_reported_not_crashed(library, library_rows):
    tools = library.sources["tools.py"] + '''
def again(n):
    return again(n + 1)


@tool("read")
def probe(text: str) -> dict:
    """Recurse forever.

    Args:
        text: Anything, e.g. "x".
    """
    return again(0)
'''
    domain = load_domain_text(library.sources["domain.yaml"], tools, library.policy)
    with Environment.from_rows(domain, library_rows) as env:
        assert env.call("probe", {"text": "a"}).error_type == "RecursionError"


@pytest.mark.parametrize("body", ["return text.format(1)", "return db.conn", "return clock.tzinfo",
                                  "return [].__len__()"])
def test_attribute_access_outside_the_record_api_fails_at_run_time(library, library_rows, body):
    if "__" in body:
        with pytest.raises(DomainError):
            run_probe(library, library_rows, body)
        return
    result = run_probe(library, library_rows, body)
    assert result.error_type == "AttributeError"
    assert "not available to tools" in result.error


def test_allowed_methods_and_builtins_work(library, library_rows):
    result = run_probe(library, library_rows,
                       "words = sorted(text.upper().split('B'), key=lambda w: len(w))\n"
                       "return {'words': words, 'total': sum([len(w) for w in words]), 'today': clock.today()}")
    assert result.ok, result.error
    assert result.output == {"words": ["A", "C"], "total": 2, "today": "2026-03-02"}


def test_text_helpers_are_builtins(library, library_rows):
    result = run_probe(library, library_rows,
                       "return {'digits': digits_of('+44 (0)20 7946-0958'), "
                       "'plain': unaccent('Córdoba, Straße, Ærø, Łódź').lower()}")
    assert result.ok, result.error
    assert result.output == {"digits": "4402079460958", "plain": "cordoba, strasse, aero, lodz"}


def test_unpacking_in_loops_pays_steps_and_guards_nested_targets(library, library_rows):
    flat = run_probe(library, library_rows, "pairs = {'a': 1, 'b': 2}\n"
                                            "return {'sum': sum([v for k, v in pairs.items()]), "
                                            "'nested': [k + str(i) + str(j) for k, (i, j) in [('x', [1, 2])]]}")
    assert flat.ok, flat.error
    assert flat.output == {"sum": 3, "nested": ["x12"]}
    endless = run_probe(library, library_rows, "total = 0\nfor i, j in zip(range(10 ** 12), range(10 ** 12)):\n"
                                               "    total += i\nreturn {}")
    assert endless.error_type == "StepBudgetExceeded"


def test_schema_comes_from_type_hints_and_docstring(library):
    spec = library.toolkit.specs["set_copies"]
    params = spec.parameters
    assert params["required"] == ["book_id", "copies"]
    assert params["properties"]["copies"]["type"] == "integer"
    assert params["properties"]["reason"]["enum"] == ["stocktake", "damage"]
    assert params["properties"]["note"]["anyOf"] == [{"type": "string"}, {"type": "null"}]
    assert params["properties"]["book_id"]["description"] == 'The book, e.g. "BK-000001".'
    assert spec.openai_schema()["function"]["description"].startswith("Set the number of copies")
    assert library.toolkit.specs["borrow_book"].kind == "write"


@pytest.mark.parametrize("source, message", [
    ('@tool("read")\ndef f(x: str) -> dict:\n    """No args section."""\n    return {}\n', "not described under Args"),
    ('@tool("read")\ndef f(x) -> dict:\n    """Doc.\n\n    Args:\n        x: e.g. "a".\n    """\n    return {}\n', "needs a type hint"),
    ('@tool("admin")\ndef f() -> dict:\n    """Doc."""\n    return {}\n', 'the only decorator allowed'),
    ('def f(:\n    pass\n', "probe.py:1"),
    ('x = open("f")\n', "module-level values must be constants"),
    ('def helper():\n    return 1\n', "defines no @tool functions"),
])
def test_malformed_tool_definitions_are_refused(source, message):
    with pytest.raises(ToolCompileError, match=message):
        build_toolkit(source, "probe.py")


def test_domains_load_side_by_side_in_threads(library_source):
    """Two threads loading tools at once (the LLM backend builds domains in threads): CPython 3.11's ast
    module shares its conversion depth between threads, and a thread switch inside a parse failed a
    default run's domain with "SystemError: AST constructor recursion depth mismatch". A collection
    callback that yields the GIL makes such a switch happen inside nearly every parse."""
    import gc
    import threading
    import time

    def switch(phase, info):
        if phase == "start":
            time.sleep(0)

    errors = []

    def load():
        for n in range(15):  # texts no other load had: load_domain_text would reuse that one, parsing nothing
            tools = f"{library_source['tools.py']}\n# load {threading.get_ident()} {n}\n"
            try:
                load_domain_text(library_source["domain.yaml"], tools, library_source["policy.md"], "library")
            except SystemError as exc:
                errors.append(str(exc))

    threshold = gc.get_threshold()
    gc.callbacks.append(switch)
    gc.set_threshold(50)
    try:
        threads = [threading.Thread(target=load) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        gc.callbacks.remove(switch)
        gc.set_threshold(*threshold)
    assert errors == []
