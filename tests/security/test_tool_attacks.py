"""Hostile tool code, as an attacker writes it: each attack must be stopped in toolscale's
Environment and in the exported package's runtime (dictdb.DictTools, what τ²-bench users import).

"Stopped" means: refused when the domain is loaded (DomainError naming the file), or the call
ends in an error (a limit, or a fault the sandbox raised) with the database exactly as it was;
integrity attacks must leave the state and its digest untouched whatever the call returns. The
red-team report behind these is ../shared/notes/audit-2026-12-01/redteam.md (F1, F3, F4, F5, F9, F10).
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from toolscale.domains import DomainError, Environment, ToolCompileError, limits, load_domain_text
from toolscale.domains.dictdb import DictTools

RUNTIMES = ["environment", "package"]
LIMITS = {"StepBudgetExceeded", "ToolSizeExceeded", "ToolTimeout", "ToolMemoryExceeded", "ToolOutputRefused"}
FAULTS = LIMITS | {"TypeError", "AttributeError", "ValueError", "RecursionError", "PermissionError", "NameError", "ZeroDivisionError"}
SHORT_TIME_LIMIT = 1.0  # seconds: the wall-clock limit of a call under `short_time_limit` (limits.TIME_LIMIT is 5)


@pytest.fixture
def short_time_limit(monkeypatch) -> float:
    """A shorter wall-clock limit, for attacks that only the watchdog's timeout ends: each would take
    TIME_LIMIT (5 s) otherwise. Both runtimes here call limits.run_tool, so one watchdog serves both."""
    # Watchdog.enter's default `seconds` is bound to TIME_LIMIT at import: patching TIME_LIMIT would not reach it
    monkeypatch.setattr(limits.Watchdog.enter, "__defaults__", (SHORT_TIME_LIMIT,))
    return SHORT_TIME_LIMIT


def probe_source(body: str, kind: str = "read", before: str = "", returns: str = " -> dict",
                 params: str = "text: str") -> str:
    return before + f'''

@tool("{kind}")
def probe({params}){returns}:
    """Probe the sandbox.

    Args:
        text: Anything, e.g. "x".
    """
''' + textwrap.indent(textwrap.dedent(body).strip("\n"), "    ") + "\n"


@dataclass
class Outcome:
    result: dict[str, Any]
    state_changed: bool
    digest_consistent: bool

    @property
    def error_type(self) -> str | None:
        return self.result["error_type"]


def attack(runtime: str, library, rows, tools_tail: str, arguments: dict | None = None) -> Outcome:
    """Load the library domain with `tools_tail` appended to its tools, call `probe` once."""
    source = library.sources["tools.py"] + tools_tail
    domain = load_domain_text(library.sources["domain.yaml"], source, library.policy)
    arguments = {"text": "abc"} if arguments is None else arguments
    if runtime == "environment":
        with Environment.from_rows(domain, rows) as env:
            before, dump = env.state_hash(), env.dump()
            result = env.call("probe", arguments).model_dump()
            return Outcome(result, env.dump() != dump or env.state_hash() != before,
                           env.state_hash() == env.recomputed_state_hash())
    models = {name: spec.args_model for name, spec in domain.toolkit.specs.items()}
    tools = DictTools(domain.spec, source, rows, models)
    before, dump = tools.state_hash(), tools.dump()
    result = tools.call("probe", arguments)
    return Outcome(result, tools.dump() != dump or tools.state_hash() != before,
                   tools.state_hash() == tools.recomputed_state_hash())


def assert_stopped(outcome: Outcome, expected: set[str]) -> None:
    assert outcome.error_type in expected, outcome.result
    assert not outcome.state_changed
    assert outcome.digest_consistent


# --- resource exhaustion: CPU, memory, time (F3) ------------------------------------------------
EXHAUSTION = {
    "sum-range": 'return {"n": sum(range(10**12))}',
    "all-range": 'return {"n": all(range(1, 10**12))}',
    "any-genexp": 'return {"n": any(x < 0 for x in range(10**12))}',
    "max-range": 'return {"n": max(range(10**12))}',
    "min-range": 'return {"n": min(range(10**12))}',
    "sorted-range": 'return {"n": len(sorted(range(10**12)))}',
    "list-range": 'return {"n": len(list(range(10**12)))}',
    "tuple-range": 'return {"n": len(tuple(range(10**12)))}',
    "set-range": 'return {"n": len(set(range(10**12)))}',
    "dict-zip": 'return {"n": len(dict(zip(range(10**12), range(10**12))))}',
    "listcomp": 'return {"n": len([i for i in range(10**12)])}',
    "dictcomp": 'return {"n": len({i: i for i in range(10**12)})}',
    "setcomp": 'return {"n": len({i for i in range(10**12)})}',
    "genexp-sum": 'return {"n": sum(1 for _ in range(10**12))}',
    "starred-list": 'return {"n": len([*range(10**12)])}',
    "starred-call": 'return {"n": max(*range(10**12))}',
    "join-map": 'return {"n": len(",".join(map(str, range(10**12))))}',
    "extend-range": 'x = []\nx.extend(range(10**12))\nreturn {}',
    "enumerate-range": 'return {"n": len(list(enumerate(range(10**12))))}',
    "filter-range": 'return {"n": len(list(filter(None, range(10**12))))}',
    "reversed-range": 'return {"n": len(list(reversed(range(10**12))))}',
    "sorted-key-lambda": 'return {"n": sorted(range(10**6), key=lambda i: -i)[0]}',
    "while-true": 'n = 0\nwhile True:\n    n += 1\nreturn {}',
    "for-huge-range": 'total = 0\nfor i in range(10**12):\n    total += i\nreturn {}',
    "nested-loops": 'n = 0\nfor i in range(1000):\n    for j in range(1000):\n        for k in range(1000):\n'
                    '            n += 1\nreturn {}',
    "big-power": 'x = 10 ** (10 ** 7)\nreturn {"n": x > 1}',
    "big-square": 'x = 3 ** 90000\ny = x * x\nreturn {"n": y > 1}',
    "big-shift": 'x = 1 << 10 ** 9\nreturn {"n": x > 1}',
    "inplace-power": 'x = 10\nx **= 10 ** 7\nreturn {}',
    "inplace-shift": 'x = 1\nx <<= 10 ** 9\nreturn {}',
    "str-repeat": 'return {"s": "a" * (1500 * 10**6)}',
    "str-repeat-left": 'return {"s": (1500 * 10**6) * "a"}',
    "list-repeat": 'return {"n": len([0] * 10**9)}',
    "tuple-repeat": 'return {"n": len((0,) * 10**9)}',
    "percent-star-width": 'return {"n": len("%0*d" % (1500 * 10**6, 1))}',
    "percent-width": 'return {"n": len("%01500000000d" % 1)}',
    "percent-precision": 'return {"n": len("%.1500000000f" % 1.0)}',
    "fstring-nested-width": 'n = 1500 * 10**6\nreturn {"n": len(f"{1:>{n}}")}',
    "fstring-width": 'return {"n": len(f"{1:>1500000000}")}',
    "fstring-precision": 'return {"n": len(f"{1.0:.1500000000f}")}',
    "zfill": 'return {"n": len(text.zfill(1500 * 10**6))}',
    "doubling-add": 's = "ab"\nfor _ in range(64):\n    s = s + s\nreturn {"n": len(s)}',
    "doubling-inplace": 's = "ab"\nfor _ in range(64):\n    s += s\nreturn {"n": len(s)}',
    "doubling-fstring": 's = "ab"\nfor _ in range(64):\n    s = f"{s}{s}"\nreturn {"n": len(s)}',
    "doubling-percent": 's = "ab"\nfor _ in range(64):\n    s = "%s%s" % (s, s)\nreturn {"n": len(s)}',
    "doubling-join": 's = "ab"\nfor _ in range(64):\n    s = "".join([s, s])\nreturn {"n": len(s)}',
    "doubling-replace": 's = "ab"\nfor _ in range(64):\n    s = s.replace("a", "aa")\nreturn {"n": len(s)}',
    "replace-empty": 's = "a" * 10**4\nreturn {"n": len(s.replace("", s))}',
    "doubling-list": 'x = [0]\nfor _ in range(64):\n    x = x + x\nreturn {"n": len(x)}',
    "doubling-list-mul": 'x = [0]\nfor _ in range(64):\n    x = x * 2\nreturn {"n": len(x)}',
    "doubling-extend": 'x = [0]\nfor _ in range(64):\n    x.extend(x)\nreturn {"n": len(x)}',
    "doubling-inplace-mul": 'x = [0]\nfor _ in range(64):\n    x *= 2\nreturn {"n": len(x)}',
    "exponential-recursion": 'def grow(n):\n    return grow(n - 1) + grow(n - 1) if n else 1\nreturn {"n": grow(40)}',
    "recursion-in-except": 'def grow(n):\n    return grow(n - 1) + grow(n - 1) if n else 1\n'
                           'try:\n    grow(40)\nexcept:\n    grow(40)\nreturn {}',
    "lambda-recursion": 'f = [None]\nf[0] = lambda n: f[0](n - 1) + f[0](n - 1) if n else 1\nreturn {"n": f[0](40)}',
    "db-calls-in-loop": 'n = 0\nfor i in range(999000):\n    n += len(db.find("books"))\nreturn {"n": n}',
    "clock-calls-in-loop": 'n = 0\nfor i in range(999000):\n    n += len(clock.today())\nreturn {"n": n}',
    "sum-in-loop": 'n = 0\nfor i in range(10**5):\n    n += sum(range(10**6))\nreturn {"n": n}',
    "huge-output": 'return {"s": "x" * (300 * 10**6)}',
    "big-output": 'return {"rows": ["x" * 10**5] * 20}',
}
# Work the steps once could not see (C code over big objects): the step budget now pays for the search
# and the case change by their size; the wall-clock and memory watchdog remain the backstop.
BACKSTOPS = {
    "contains-in-loop": 'x = [0] * 10**5\nn = 0\nfor i in range(900000):\n    n += (i + 1) in x\nreturn {"n": n}',
    "memory-growth": 'big = "a" * 10**7\nkeep = []\nfor i in range(10**5):\n    keep.append(big.lower())\n'
                     'return {"n": len(keep)}',
}


@pytest.mark.parametrize("runtime", RUNTIMES)
@pytest.mark.parametrize("name", sorted(EXHAUSTION))
def test_resource_exhaustion_is_stopped(runtime, name, library, library_rows):
    assert_stopped(attack(runtime, library, library_rows, probe_source(EXHAUSTION[name])), LIMITS)


@pytest.mark.parametrize("runtime", RUNTIMES)
@pytest.mark.parametrize("name", sorted(BACKSTOPS))
def test_work_the_step_budget_cannot_see_is_stopped_by_the_watchdog(runtime, name, library, library_rows, request):
    if name == "contains-in-loop":  # ends only at the time limit (memory-growth at the memory limit: it keeps 5 s)
        request.getfixturevalue("short_time_limit")
    expected = {"contains-in-loop": {"ToolTimeout", "StepBudgetExceeded"},
                "memory-growth": {"ToolMemoryExceeded", "ToolTimeout", "StepBudgetExceeded"}}[name]
    assert_stopped(attack(runtime, library, library_rows, probe_source(BACKSTOPS[name])), expected)


# --- a limit cannot be caught by the tool's own code -------------------------------------------
SWALLOWING = {
    "bare-except": 'try:\n    while True:\n        pass\nexcept:\n    pass\nreturn {"ok": True}',
    "except-exception": 'try:\n    while True:\n        pass\nexcept Exception:\n    pass\nreturn {"ok": True}',
    "except-tuple": 'try:\n    while True:\n        pass\nexcept (ToolError, ValueError, Exception):\n    pass\n'
                    'return {"ok": True}',
    "except-three-times": 'for i in range(3):\n    try:\n        while True:\n            pass\n    except:\n'
                          '        pass\nreturn {"ok": True}',
    "finally-keeps-going": 'try:\n    while True:\n        pass\nfinally:\n    x = 1\nreturn {"ok": True}',
    "size-error-caught": 'try:\n    s = "a" * 10**10\nexcept:\n    pass\nreturn {"ok": True}',
    "recursion-then-loop": 'def deep(n):\n    return deep(n + 1)\ntry:\n    deep(0)\nexcept:\n    pass\n'
                           'while True:\n    pass\nreturn {}',
    "timeout-caught": 'x = [0] * 10**5\nn = 0\ntry:\n    for i in range(900000):\n        n += (i + 1) in x\n'
                      'except:\n    pass\nreturn {"ok": True}',
}


@pytest.mark.parametrize("runtime", RUNTIMES)
@pytest.mark.parametrize("name", sorted(SWALLOWING))
def test_a_limit_cannot_be_swallowed_by_the_tool(runtime, name, library, library_rows, request):
    if name == "timeout-caught":  # ends only at the time limit
        request.getfixturevalue("short_time_limit")
    assert_stopped(attack(runtime, library, library_rows, probe_source(SWALLOWING[name])), LIMITS)


# --- the record API, the clock and ToolError are read-only to tools (F4) ---------------------
INTEGRITY = {
    "read-only-flag": ("read", 'db.read_only = False\ndb.update("books", "BK-000001", {"copies": 99})\nreturn {}'),
    "read-only-flag-then-error": ("read", 'db.read_only = False\ndb.update("books", "BK-000001", {"copies": 99})\n'
                                          'raise ToolError("x")'),
    "read-tool-writes": ("read", 'db.update("books", "BK-000001", {"copies": 99})\nreturn {}'),
    "read-tool-write-swallowed": ("read", 'try:\n    db.insert("books", {"title": "T", "copies": 1})\n'
                                          'except Exception:\n    pass\nreturn {"ok": True}'),
    "read-tool-delete-swallowed": ("read", 'try:\n    db.delete("books", "BK-000001")\nexcept:\n    pass\n'
                                           'return {}'),
    "forge-digest": ("write", 'db.update("books", "BK-000001", {"copies": 99})\ndb.digest = 0\nreturn {}'),
    "forge-next-keys": ("write", 'db.next_keys = {"members": -5}\nreturn db.insert("members", '
                                 '{"name": "X", "email": "x@x.test", "status": "active"})'),
    "replace-find": ("write", 'db.find = lambda *a, **k: []\nreturn {}'),
    "replace-get": ("write", 'db.get = lambda *a: {}\nreturn {}'),
    "delete-method": ("write", 'del db.find\nreturn {}'),
    "clear-journal": ("write", 'db.update("books", "BK-000001", {"copies": 99})\ndb.journal = []\n'
                               'raise ToolError("x")'),
    "tool-api-of-tool-error": ("read", 'ToolError.TOOL_API = ["args", "with_traceback"]\nreturn {}'),
    "tool-error-instance": ("read", 'e = ToolError("x")\ne.args = ("y",)\nreturn {}'),
    "clock-now": ("read", 'clock.now = lambda: "2099-01-01T00:00:00"\nreturn {}'),
    "clock-api": ("read", 'clock.TOOL_API = ["_now"]\nreturn {}'),
    "record-api-list": ("read", 'db.TOOL_API = ["dump", "next_key"]\nreturn {}'),
    "function-attribute": ("read", 'probe.x = 1\nreturn {}'),
    "helper-attribute": ("read", 'digits_of.x = 1\nreturn {}'),
    "builtin-attribute": ("read", 'len.x = 1\nreturn {}'),
    "write-then-fault": ("write", 'db.update("books", "BK-000001", {"copies": 99})\nreturn {"x": 1 / 0}'),
    "write-then-loop": ("write", 'db.update("books", "BK-000001", {"copies": 99})\nwhile True:\n    pass'),
    "write-then-nan": ("write", 'db.update("books", "BK-000001", {"copies": 99})\nreturn {"x": float("nan")}'),
    "write-then-huge-output": ("write", 'db.update("books", "BK-000001", {"copies": 99})\n'
                                        'return {"rows": ["x" * 10**5] * 20}'),
    "write-then-swallowed-limit": ("write", 'db.update("books", "BK-000001", {"copies": 99})\ntry:\n'
                                            '    while True:\n        pass\nexcept:\n    pass\nreturn {"ok": 1}'),
    "insert-then-error": ("write", 'db.insert("books", {"title": "T", "copies": 1})\nraise ToolError("x")'),
    "replace-one": ("write", 'db.one = lambda *a: {}\nreturn {}'),
    "edit-the-row-one-returned": ("read", 'row = db.one("books", {"book_id": "BK-000001"})\nrow["copies"] = 99\n'
                                          'return {}'),
    "edit-the-row-owned-returned": ("read", 'row = db.owned("books", "BK-000001", "copies", db.get("books", '
                                            '"BK-000001")["copies"])\nrow["copies"] = 99\nreturn {}'),
    "ensure-with-a-huge-message": ("read", 'db.ensure("books", {"book_id": "nope"}, ["x" * 10**6] * 10)\nreturn {}'),
    "dump-is-hidden": ("read", 'return {"rows": db.dump()}'),
    "next-key-is-hidden": ("read", 'return {"key": db.next_key("books")}'),
}


# the refusal is swallowed, or the tool edited only its own copy of a row: the call may end normally
ENDS_NORMALLY = {"read-tool-write-swallowed", "read-tool-delete-swallowed", "edit-the-row-one-returned",
                 "edit-the-row-owned-returned"}


@pytest.mark.parametrize("runtime", RUNTIMES)
@pytest.mark.parametrize("name", sorted(INTEGRITY))
def test_tools_cannot_change_what_they_are_given(runtime, name, library, library_rows):
    kind, body = INTEGRITY[name]
    outcome = attack(runtime, library, library_rows, probe_source(body, kind=kind))
    assert not outcome.state_changed, outcome.result
    assert outcome.digest_consistent
    if name not in ENDS_NORMALLY:
        assert outcome.error_type in FAULTS | {"ToolError"}, outcome.result


def test_a_tool_error_class_change_cannot_leak_into_other_tools(library, library_rows):
    attack("environment", library, library_rows, probe_source('ToolError.TOOL_API = ["args"]\nreturn {}'))
    outcome = attack("environment", library, library_rows,
                     probe_source('try:\n    raise ToolError("x")\nexcept ToolError as e:\n    return {"a": e.args}'))
    assert outcome.error_type == "AttributeError"


# --- outputs have one canonical form (F9) -----------------------------------------------------
def test_set_iteration_does_not_depend_on_the_hash_seed(library, library_rows):
    body = ('names = {"alpha", "beta", "gamma", "delta", "epsilon"}\n'
            'return {"list": list(names), "loop": [n for n in names], "joined": "-".join(names),'
            ' "sorted": sorted(names), "zipped": [a for a, b in zip(names, names)]}')
    for runtime in RUNTIMES:
        outcome = attack(runtime, library, library_rows, probe_source(body))
        canonical = ["alpha", "beta", "delta", "epsilon", "gamma"]
        assert outcome.result["output"] == {"list": canonical, "loop": canonical, "joined": "-".join(canonical),
                                            "sorted": canonical, "zipped": canonical}


TEXT_FORMS = {
    "str-of-db": 'return {"s": str(db)}',
    "fstring-of-function": 'return {"s": f"{probe}"}',
    "fstring-repr-of-function": 'return {"s": f"{probe!r}"}',
    "percent-of-clock": 'return {"s": "%s" % (clock,)}',
    "str-of-set": 'return {"s": str({"a", "b", "c"})}',
    "fstring-of-set": 'return {"s": f"{ {1, 2} }"}',
    "list-of-functions": 'return {"s": str([probe, len])}',
    "nan-output": 'return {"x": float("nan")}',
    "inf-output": 'return {"x": float("inf")}',
    "set-output": 'return {"x": {1, 2}}',
    "huge-int-text": 'return {"s": str(10 ** 5000)}',
    "deep-output": 'x = []\nfor i in range(10**5):\n    x = [x]\nreturn {"x": x}',
}


@pytest.mark.parametrize("runtime", RUNTIMES)
@pytest.mark.parametrize("name", sorted(TEXT_FORMS))
def test_outputs_without_a_canonical_form_are_refused(runtime, name, library, library_rows):
    assert_stopped(attack(runtime, library, library_rows, probe_source(TEXT_FORMS[name])), FAULTS)


# --- escapes from the restricted body ---------------------------------------------------------
ESCAPES = {
    "format-class": 'return {"s": "{0.__class__}".format(text)}',
    "format-map": 'return {"s": "{x}".format_map({"x": 1})}',
    "dict-fromkeys": 'return {"d": {}.fromkeys([1])}',
    "str-maketrans": 'return {"d": text.maketrans("a", "b")}',
    "records-dump": 'return {"d": db.dump()}',
    "records-spec": 'return {"d": db.spec}',
    "records-read-only-read": 'return {"d": db.read_only}',
    "function-globals-name": 'return {"g": probe.func_globals}',
    "exception-traceback": 'try:\n    1 / 0\nexcept Exception as e:\n    return {"t": e.with_traceback}',
    "exception-args": 'try:\n    1 / 0\nexcept Exception as e:\n    return {"t": e.args}',
    "builtin-self": 'return {"t": len.self}',
}


@pytest.mark.parametrize("runtime", RUNTIMES)
@pytest.mark.parametrize("name", sorted(ESCAPES))
def test_escapes_at_run_time_are_refused(runtime, name, library, library_rows):
    assert_stopped(attack(runtime, library, library_rows, probe_source(ESCAPES[name])), {"AttributeError"})


REFUSED_BODIES = {
    "dunder-class": 'return {"x": text.__class__}',
    "dunder-subclasses": 'return {"x": ().__class__.__bases__[0].__subclasses__()}',
    "dunder-traceback": 'try:\n    1 / 0\nexcept Exception as e:\n    return {"x": e.__traceback__}',
    "dunder-builtins": 'return {"x": __builtins__}',
    "gi-frame": 'g = (x for x in [1])\nreturn {"f": g.gi_frame}',
    "gi-code": 'g = (x for x in [1])\nreturn {"f": g.gi_code}',
    "dunder-import": 'return {"x": __import__("os")}',
    "lambda-default-builtins": 'return {"x": (lambda b=__builtins__: b)()}',
    "import": 'import os\nreturn {}',
    "from-import": 'from os import path\nreturn {}',
    "class": 'class A:\n    pass\nreturn {}',
    "open": 'return {"x": open("/etc/passwd").read()}',
    "eval": 'return {"x": eval("1")}',
    "exec": 'exec("x = 1")\nreturn {}',
    "compile": 'return {"x": compile("1", "f", "eval")}',
    "getattr": 'return {"x": getattr(text, "upper")()}',
    "setattr": 'setattr(db, "read_only", False)\nreturn {}',
    "vars": 'return {"x": vars(db)}',
    "globals": 'return {"x": globals()}',
    "type": 'return {"x": type(db)}',
    "id": 'return {"x": id(db)}',
    "hash": 'return {"x": hash(text)}',
    "repr": 'return {"x": repr(db)}',
    "format-builtin": 'return {"x": format(10**9, ">1000000000")}',
    "print": 'print(text)\nreturn {}',
    "iter-next": 'return {"x": next(iter([1]))}',
    "underscore-attr": 'return {"x": db._cursor}',
    "underscore-clock": 'return {"x": clock._now}',
    "underscore-name": '_x = 1\nreturn {}',
    "with-db": 'with db:\n    pass\nreturn {}',
    "yield": 'yield 1',
    "yield-lambda": 'f = lambda: (yield)\nreturn {}',
    "global": 'global LOAN_DAYS\nLOAN_DAYS = 0\nreturn {}',
    "nonlocal": 'def f():\n    nonlocal text\nreturn {}',
    "except-star": 'try:\n    pass\nexcept* ValueError:\n    pass\nreturn {}',
    "except-base-exception": 'try:\n    pass\nexcept BaseException:\n    pass\nreturn {}',
    "except-system-exit": 'try:\n    pass\nexcept SystemExit:\n    pass\nreturn {}',
    "except-tuple-with-base": 'try:\n    pass\nexcept (ValueError, BaseException):\n    pass\nreturn {}',
    "except-expression": 'try:\n    pass\nexcept [ValueError][0]:\n    pass\nreturn {}',
    "finally-return": 'try:\n    while True:\n        pass\nfinally:\n    return {"ok": True}',
    "finally-break": 'for i in range(2):\n    try:\n        while True:\n            pass\n    finally:\n        break\n'
                     'return {}',
    "finally-continue": 'for i in range(2):\n    try:\n        pass\n    finally:\n        continue\nreturn {}',
    "async-def": 'async def f():\n    pass\nreturn {}',
    "match-class-pattern": 'match text:\n    case str(__class__=c):\n        return {"c": c}\nreturn {}',
}


@pytest.mark.parametrize("name", sorted(REFUSED_BODIES))
def test_forbidden_bodies_are_refused_at_load(name, library, library_rows):
    with pytest.raises(DomainError, match="tools.py"):
        attack("environment", library, library_rows, probe_source(REFUSED_BODIES[name]))


# --- tool definitions: every hint, default, decorator and module-level value is checked (F1, F5, F10)
MARK = "/tmp/toolscale-pwned"
PAYLOAD = f'__import__("os").system("id > {MARK}")'
REFUSED_DEFINITIONS = {
    "return-annotation-payload": probe_source('return {"ok": text}', returns=f" -> {PAYLOAD} or dict"),
    "return-annotation-string": probe_source('return {"ok": text}', returns=' -> "dict"'),
    "return-annotation-call": probe_source('return {}', returns=" -> dict(a=1)"),
    "parameter-annotation-payload": probe_source('return {}', params=f"text: {PAYLOAD} or str"),
    "parameter-annotation-subscript": probe_source('return {}', params=f"text: list[{PAYLOAD}]"),
    "literal-payload": probe_source('return {}', params=f"text: Literal[{PAYLOAD}]"),
    "literal-empty": probe_source('return {}', params="text: Literal[()]"),
    "literal-mixed": probe_source('return {}', params='text: Literal["a", 1]'),
    "default-payload": probe_source('return {}', params=f"text: str = {PAYLOAD}"),
    "default-expression": probe_source('return {}', params='text: str = "a" * 10'),
    "default-infinite-float": probe_source('return {}', params="text: float = 1e999"),
    "helper-default-loop": 'def helper(x=sum(range(10**12))):\n    return x\n' + probe_source('return {}'),
    "helper-default-string": 'def helper(x="a" * (1500 * 10**6)):\n    return x\n' + probe_source('return {}'),
    "helper-kwonly-default": 'def helper(*, x=sum(range(10**12))):\n    return x\n' + probe_source('return {}'),
    "helper-annotation-payload": f'def helper(x: {PAYLOAD}):\n    return x\n' + probe_source('return {}'),
    "helper-return-payload": f'def helper(x) -> {PAYLOAD}:\n    return x\n' + probe_source('return {}'),
    "decorator-payload": f'@{PAYLOAD}\ndef helper():\n    return 1\n' + probe_source('return {}'),
    "double-decorator": probe_source('return {}').replace('@tool("read")', '@tool("read")\n@tool("write")'),
    "decorator-keyword": probe_source('return {}').replace('@tool("read")', '@tool("read", x=1)'),
    "decorator-variable": 'KIND = "read"\n' + probe_source('return {}').replace('@tool("read")', "@tool(KIND)"),
    "duplicate-tool": probe_source('return {}') + probe_source('return {"again": 1}'),
    "tool-shadows-constant": 'probe = 1\n' + probe_source('return {}'),
    "module-level-loop": 'for i in range(10**12):\n    pass\n' + probe_source('return {}'),
    "module-level-call": f'X = {PAYLOAD}\n' + probe_source('return {}'),
    "module-level-expression": 'X = "a" * (1500 * 10**6)\n' + probe_source('return {}'),
    "module-level-comprehension": 'X = [i for i in range(10**12)]\n' + probe_source('return {}'),
    "module-level-lambda": 'X = lambda: 1\n' + probe_source('return {}'),
    "module-level-annotation": f'X: {PAYLOAD} = 1\n' + probe_source('return {}'),
    "module-level-if": 'if True:\n    X = 1\n' + probe_source('return {}'),
    "module-level-try": 'try:\n    X = 1\nexcept Exception:\n    pass\n' + probe_source('return {}'),
    "tool-named-call": probe_source('return {}').replace("def probe(", "def call("),
    "tool-named-tools": probe_source('return {}').replace("def probe(", "def tools("),
    "tool-named-use-tool": probe_source('return {}').replace("def probe(", "def use_tool("),
    "tool-named-db": probe_source('return {}').replace("def probe(", "def db("),
    "tool-named-update-db": probe_source('return {}').replace("def probe(", "def update_db("),
    "parameter-named-self": probe_source('return {}', params="self: str, text: str").replace(
        "text: Anything", 'self: A value, e.g. "x".\n        text: Anything'),
    "tool-vararg": probe_source('return {}', params="text: str, *rest"),
    "tool-kwargs": probe_source('return {}', params="text: str, **rest"),
    "tool-kwonly": probe_source('return {}', params="*, text: str"),
    "nul-byte": probe_source('return {}') + "\x00\n",
    "deep-nesting": probe_source("return " + "(" * 5000 + "1" + ")" * 5000),
}


@pytest.mark.parametrize("name", sorted(REFUSED_DEFINITIONS))
def test_hostile_tool_definitions_are_refused_at_load_and_run_nothing(name, library, library_rows, tmp_path):
    Path(MARK).unlink(missing_ok=True)
    with pytest.raises(DomainError, match="tools.py"):
        attack("environment", library, library_rows, REFUSED_DEFINITIONS[name])
    source = library.sources["tools.py"] + REFUSED_DEFINITIONS[name]
    with pytest.raises(ToolCompileError):  # a hand-edited restricted_tools.py in an exported package
        DictTools(library.spec, source, library_rows, {})
    assert not Path(MARK).exists()


def test_annotations_inside_tool_bodies_never_run(library, library_rows):
    Path(MARK).unlink(missing_ok=True)
    body = f'def inner(x: {PAYLOAD}) -> {PAYLOAD}:\n    return x\nreturn {{"ok": inner(1)}}'
    for runtime in RUNTIMES:
        outcome = attack(runtime, library, library_rows, probe_source(body))
        assert outcome.result["output"] == {"ok": 1}
    assert not Path(MARK).exists()


def test_integer_literals_are_published_as_integers(library, library_rows):
    source = library.sources["tools.py"] + probe_source('return {}', params="text: Literal[1, 2]")
    domain = load_domain_text(library.sources["domain.yaml"], source, library.policy)
    assert domain.toolkit.specs["probe"].parameters["properties"]["text"] == {
        "type": "integer", "enum": [1, 2], "description": 'Anything, e.g. "x".'}



@pytest.mark.parametrize("runtime", RUNTIMES)
def test_order_by_takes_one_dash_at_most(runtime, library, library_rows):
    outcome = attack(runtime, library, library_rows, probe_source('return {"rows": db.find("books", order_by="--title")}'))
    assert_stopped(outcome, {"ToolError"})
    assert "no column '-title'" in outcome.result["error"]


def test_the_statement_cache_stays_bounded_whatever_queries_tools_make(library_env):
    from toolscale.domains.sql import STATEMENT_CACHE_SIZE

    statements = library_env._statements
    books = statements.metadata.tables["books"]
    for i in range(STATEMENT_CACHE_SIZE + 500):  # as many shapes of query as a hostile tool could ask for
        statements.get(("probe", i), lambda: books.select().limit(i))
    assert len(statements._cache) == STATEMENT_CACHE_SIZE
    assert statements.get(("find", "books", (), (), None, False), lambda: books.select())[0].startswith("SELECT")


def test_whole_table_reads_kept_for_forks_stay_bounded_whatever_orders_tools_ask_for(library, library_rows,
                                                                                    monkeypatch):
    """Forks share their whole-table reads of the state they came from (sql.SharedReads), and those
    outlive a call, past its memory limit: a tool reading every table in every order, in fork after
    fork, must not pin them all. Past the bound, reads still answer, from SQL."""
    from toolscale.domains import sql

    monkeypatch.setattr(sql, "SHARED_READ_ROWS", 40)
    body = """
        tables = ["books", "loans", "members"]
        shapes = [db.find(t, order_by=o) for t in tables for c in db.find(t, limit=1)[0] for o in (c, "-" + c)]
        return {"rows": sum(len(rows) for rows in shapes), "first": shapes[0][0]}
    """
    domain = load_domain_text(library.sources["domain.yaml"], library.sources["tools.py"] + probe_source(body),
                              library.policy)
    with Environment.from_rows(domain, library_rows) as env:
        answers = []
        for _ in range(3):
            with env.fork() as fork:
                answers.append(fork.call("probe", {"text": "x"}).model_dump())
        kept = env._shared_reads.rows
        assert answers[0]["error"] is None and answers[0] == answers[1] == answers[2]
        assert answers[0]["output"]["rows"] > 40 >= kept > 0
        books = env.dump()["books"]  # in key order: the first read orders them by their first column, the key
        assert answers[0]["output"]["first"] == books[0]


def test_a_tools_writes_in_one_copy_of_a_package_database_change_nothing_its_siblings_or_origin_find(
        library, library_rows):
    """Copies of a package's database share the lookups of the state they came from (dictdb): a tool
    that reads through them, writes, reads again and then fails or succeeds must leave every other
    copy, and the store they came from, answering from its own rows."""
    from toolscale.domains.dictdb import DictRecords

    body = """
        member, mode = text.split(" ")
        before = len(db.find("loans", {"member_id": member}))
        book = db.find("books", limit=1)[0]["book_id"]
        db.insert("loans", {"loan_id": "LN-900000", "member_id": member, "book_id": book, "due_on": "2026-03-01",
                            "returned": False})
        after = len(db.find("loans", {"member_id": member}))
        if mode == "fail":
            raise ToolError("asked to fail after writing")
        return {"before": before, "after": after, "next": db.find("loans", order_by="-loan_id", limit=1)[0]["loan_id"]}
    """
    source = library.sources["tools.py"] + probe_source(body, kind="write")
    domain = load_domain_text(library.sources["domain.yaml"], source, library.policy)
    models = {name: spec.args_model for name, spec in domain.toolkit.specs.items()}
    base = DictTools(domain.spec, source, library_rows, models)
    member = library_rows["members"][0]["member_id"]
    alone = DictRecords(domain.spec, library_rows)
    own = len(alone.find("loans", {"member_id": member}))
    kept, failed, idle = base.fork(), base.fork(), base.fork()
    assert idle.records.find("loans", {"member_id": member}) == alone.find("loans", {"member_id": member})
    assert kept.call("probe", {"text": f"{member} keep"})["output"] == {"before": own, "after": own + 1,
                                                                        "next": "LN-900000"}
    assert failed.call("probe", {"text": f"{member} fail"})["error"] == "asked to fail after writing"
    for copy in (failed, idle, base, base.fork()):
        assert copy.records.find("loans", {"member_id": member}) == alone.find("loans", {"member_id": member})
        assert copy.records.next_key("loans") == alone.next_key("loans")
        assert copy.dump() == base.dump() and copy.state_hash() == copy.recomputed_state_hash()
    assert kept.records.find("loans", {"member_id": member}) == DictRecords(domain.spec, kept.dump()).find(
        "loans", {"member_id": member})


def test_checked_methods_keep_their_ordinary_meaning(library, library_rows):
    body = ('d = {"a": 1}\nd.update({"b": 2}, c=3)\nd.update([("e", 5)])\ns = {1}\nx = [0]\nx.extend((1, 2))\n'
            'return {"d": d, "u": sorted(s.union([2], (3,))), "x": x, "j": "-".join(["a", "b"]), '
            '"r": "aXbX".replace("X", "y", 1), "z": "7".zfill(3), "sp": "a b".split()}')
    for runtime in RUNTIMES:
        outcome = attack(runtime, library, library_rows, probe_source(body))
        assert outcome.result["output"] == {"d": {"a": 1, "b": 2, "c": 3, "e": 5}, "u": [1, 2, 3], "x": [0, 1, 2],
                                            "j": "a-b", "r": "aybX", "z": "007", "sp": ["a", "b"]}, outcome.result


# --- a second red team's findings on the rebuilt sandbox (2026-12-01, 23:16) --------------------
SECOND_ROUND = {
    "tool-error-of-db": ('raise ToolError(db)', {"ToolError"}),
    "tool-error-of-function": ('raise ToolError(probe)', {"ToolError"}),
    "tool-error-huge-list": ('s = "x" * 10**4\nraise ToolError([s] * 100000)', {"ToolError"}),
    "tool-error-deep-list": ('x = []\nfor i in range(10**5):\n    x = [x]\nraise ToolError(x)', {"ToolError"}),
    "value-error-of-db": ('raise ValueError(db)', {"ValueError"}),
    "fstring-of-exception": ('e = ToolError(probe)\nreturn {"s": f"{e}"}', {"TypeError"}),
    "str-of-exception-with-set": ('return {"s": str(ValueError({"a", "b"}))}', {"TypeError"}),
    "output-one-string-many-times": ('s = "x" * 10**7\nreturn {"rows": [s] * 1000}', LIMITS),
    "output-many-strings": ('return {"rows": ["x" * 10**4] * 100000}', LIMITS),
    "str-of-big-list": ('return {"n": len(str(["x" * 10**4] * 100000))}', LIMITS),
    "percent-mapping-repeat": ('s = "x" * 10**6\nreturn {"n": len(("%(a)s" * 200000) % {"a": s})}', {"TypeError"}),
    "percent-nested-key-width": ('return {"n": len("%((a)b)1500000000d" % {"(a)b": 1})}', {"TypeError"}),
    "percent-tuple-repeat": ('s = "x" * 10**5\nreturn {"n": len(("%s" * 2000) % tuple([s] * 2000))}',
                             LIMITS),
    "big-int-compare": ('a = 1 << 99000\nreturn {"n": (a + 1) in [a] * 10**7}', LIMITS),
    "nan-from-float": ('return {"x": len([float("nan")])}', {"ValueError"}),
    "inf-from-float": ('return {"x": float("1e999")}', {"ValueError"}),
    "module-list-append": ('SEEN.append(text)\nreturn {"n": len(SEEN)}', {"TypeError"}),
    "module-list-item": ('SEEN[0:0] = [text]\nreturn {}', {"TypeError"}),
    "module-dict-item": ('LIMITS["x"] = 1\nreturn {}', {"TypeError"}),
    "module-nested-append": ('LIMITS["tiers"].append(text)\nreturn {}', {"TypeError"}),
    "module-dict-update": ('LIMITS.update({"x": 1})\nreturn {}', {"TypeError"}),
}
MODULE_STATE = 'SEEN = []\nLIMITS = {"tiers": ["a"]}\n'
# One C call that runs long: the watchdog's exception can only land between bytecodes. The step budget
# now pays for a search and a list `in` by their size, so most end before the time limit.
SECOND_ROUND_SLOW = {
    "hash-collisions": 'M = 2 ** 61 - 1\nreturn {"n": len(set(range(0, 60000 * M, M)))}',
    "sort-key-c-method": 'hay = "ab" * 2000000\nitems = ["a"] * 10000\nreturn {"n": sorted(items, key=hay.count)[0]}',
    "max-key-c-method": 'hay = "ab" * 2000000\nitems = ["a"] * 10000\nreturn {"n": max(items, key=hay.count)}',
    "finally-after-timeout": 'x = [0] * 10**5\nn = 0\ntry:\n    for i in range(900000):\n        n += (i + 1) in x\n'
                             'finally:\n    for i in range(20000):\n        n += (i + 1) in x\nreturn {"n": n}',
}


@pytest.mark.parametrize("runtime", RUNTIMES)
@pytest.mark.parametrize("name", sorted(SECOND_ROUND))
def test_second_round_attacks_are_stopped(runtime, name, library, library_rows):
    body, expected = SECOND_ROUND[name]
    for kind in ("read", "write"):
        write_first = 'db.update("books", "BK-000001", {"copies": 99})\n' if kind == "write" else ""
        outcome = attack(runtime, library, library_rows, probe_source(write_first + body, kind=kind, before=MODULE_STATE))
        assert_stopped(outcome, expected)
        assert len(outcome.result["error"]) <= 2_100 and " at 0x" not in outcome.result["error"]


@pytest.mark.parametrize("runtime", RUNTIMES)
@pytest.mark.parametrize("name", sorted(SECOND_ROUND_SLOW))
def test_long_c_calls_end_as_timeouts_soon_after_the_limit(runtime, name, library, library_rows, short_time_limit):
    import time

    start = time.monotonic()
    outcome = attack(runtime, library, library_rows, probe_source(SECOND_ROUND_SLOW[name]))
    assert_stopped(outcome, {"ToolTimeout", "StepBudgetExceeded"})
    assert time.monotonic() - start < short_time_limit + 4  # a 1 s limit; unchecked, these run minutes to hours


def test_host_messages_name_no_memory_address(library, library_rows):
    for runtime in RUNTIMES:
        outcome = attack(runtime, library, library_rows, probe_source('return {"r": db.find("books", order_by=db)}'))
        assert outcome.error_type == "ToolError" and "0x" not in outcome.result["error"]


@pytest.mark.parametrize("name", ["Literal", "int", "str", "ToolType", "RestrictedToolKit", "is_tool", "Field"])
def test_tool_names_the_generated_package_uses_are_refused(name, library, library_rows):
    with pytest.raises(DomainError, match="lower_snake_case"):
        attack("environment", library, library_rows, probe_source('return {}').replace("def probe(", f"def {name}("))


def test_a_literal_list_default_passes_the_package_check():
    from toolscale.pipeline.exporters.tau2 import check_tools_module

    check_tools_module("def t(self, tags: list[str] = ['a'], n: int | None = None) -> dict:\n    pass\n", "tools.py")


def test_constants_that_merely_spell_inf_or_nan_are_literals(library, library_rows):
    before = 'FRUIT = "banana"\nKINDS = ["infant", "information"]\n'
    body = 'return {"fruit": FRUIT, "kinds": KINDS, "text": text}'
    outcome = attack("environment", library, library_rows,
                     probe_source(body, before=before, params='text: str = "nan-free"'), arguments={})
    assert outcome.result["output"] == {"fruit": "banana", "kinds": ["infant", "information"], "text": "nan-free"}


@pytest.mark.parametrize("constant", ["[1.0, 1e999]", '{"limit": -1e999}', "(1e999j,)"])
def test_a_non_finite_float_inside_a_constant_is_refused(constant, library, library_rows):
    with pytest.raises(DomainError, match="is not a literal constant"):
        attack("environment", library, library_rows, probe_source("return {}", before=f"X = {constant}\n"))


def test_a_tools_hidden_state_does_not_travel_between_environments_of_one_loaded_domain(library, library_rows):
    """load_domain_text hands the same Domain to every load of the same texts: a tool that keeps state
    in a mutable default must still start fresh in every environment built from it, and in every fork."""
    tail = 'def remember(x, seen={}):\n    seen[x] = len(seen)\n    return len(seen)\n' + \
        probe_source('return {"n": remember(text)}')
    source = library.sources["tools.py"] + tail
    first = load_domain_text(library.sources["domain.yaml"], source, library.policy)
    second = load_domain_text(library.sources["domain.yaml"], source, library.policy)
    assert second is first
    with Environment.from_rows(first, library_rows) as env:
        assert env.call("probe", {"text": "a"}).output == {"n": 1}
        assert env.call("probe", {"text": "b"}).output == {"n": 2}  # within one environment it is kept
        with env.fork() as fork:
            assert fork.call("probe", {"text": "c"}).output == {"n": 1}
    with Environment.from_rows(second, library_rows) as env:
        assert env.call("probe", {"text": "z"}).output == {"n": 1}
