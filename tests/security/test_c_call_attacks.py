"""One C call the watchdog cannot interrupt (red team 2026-12-06, R3, R5, R11, R12): its exception
lands only between bytecodes, so a sort, a comparison, a search, a rounding or a big-number
operation over objects built within the budget ran for minutes per call. Each must now be paid for
or refused before it starts, in both runtimes, and end well inside the time limit (1 s here); bytes
%-formatting goes through str's checks; loops of searches end by the step budget, the same on every
machine, not by the clock; outputs and messages carry no control characters.

Each attack runs in a child process (isolated.AttackChild): on a checkout without these checks it
fails by running past the child's deadline instead of stalling the test worker.
"""

from __future__ import annotations

import re

import pytest

from isolated import AttackChild, assert_stopped_in_child
from test_tool_attacks import RUNTIMES

LONG = 's = "a" * 10**6\nt = s[1:] + "a"\n'  # two equal texts of 10^6 characters, not the same object
HUGE = 's = "a" * 10**7\n'

# R3: one C call over texts that compare equal
C_CALLS = {
    "sorted-long-texts": HUGE + 'return {"n": len(sorted([s] * 10**5))}',
    "sort-method-long-texts": HUGE + 'x = [s] * 10**5\nx.sort()\nreturn {}',
    "sort-reverse-long-texts": LONG + 'x = [s, t] * 50000\nx.sort(reverse=True)\nreturn {}',
    "sorted-pairs-long-texts": LONG + 'return {"n": len(sorted([(s, 1), (t, 1)] * 50000))}',
    "sorted-key-long-texts": LONG + 'return {"n": len(sorted(range(10**5), key=lambda i: s if i % 2 else t))}',
    "sort-key-identity": LONG + 'x = [s, t] * 50000\nx.sort(key=lambda v: v)\nreturn {}',
    "min-long-texts": LONG + 'return {"n": len(min([s, t] * 50000))}',
    "max-long-texts": LONG + 'return {"n": len(max([s, t] * 50000))}',
    "max-default-long-texts": LONG + 'return {"n": len(max([s, t] * 50000, default=""))}',
    "min-key-long-texts": LONG + 'return {"n": len(min([s, t] * 50000, key=lambda v: v))}',
    "max-key-long-keys": LONG + 'return {"n": max(range(10**5), key=lambda i: s if i % 2 else t)}',
    "list-count": LONG + 'x = [s] * 10**5\nreturn {"n": x.count(t)}',
    "list-index": LONG + 'x = [s] * 10**5 + [t]\nreturn {"n": x.index(t)}',
    "list-index-start": LONG + 'x = [s] * 10**5 + [t]\nreturn {"n": x.index(t, 0)}',
    "list-remove": LONG + 'x = [s] * 10**5 + [t]\nx.remove(t)\nreturn {}',
    "list-count-mapped": LONG + 'x = [s] * 10**5\nreturn {"n": list(map(x.count, [t, t]))}',
    "in-list": LONG + 'x = [s] * 10**5\nreturn {"n": t in x}',
    "not-in-list": LONG + 'x = [s] * 10**5\nreturn {"n": t not in x}',
    "in-tuple": LONG + 'x = tuple([s] * 10**5)\nreturn {"n": t in x}',
    "in-dict-values": LONG + 'd = {i: s for i in range(10**5)}\nreturn {"n": t in d.values()}',
    "list-equal": LONG + 'x = [s] * 10**5\nreturn {"n": x == [t] * 10**5}',
    "list-not-equal": LONG + 'x = [s] * 10**5\nreturn {"n": x != [t] * 10**5}',
    "list-less": LONG + 'x = [s] * 10**5\nreturn {"n": x < [t] * 10**5}',
    "list-greater-equal": LONG + 'x = [s] * 10**5\nreturn {"n": x >= [t] * 10**5}',
    "list-chained-equal": LONG + 'x = [s] * 10**5\ny = [t] * 10**5\nreturn {"n": x == y == x}',
    "tuple-equal": LONG + 'return {"n": tuple([s] * 10**5) == tuple([t] * 10**5)}',
    "pairs-equal": LONG + 'return {"n": [(s, 1)] * 10**5 == [(t, 1)] * 10**5}',
    "dict-equal": LONG + 'a = {i: s for i in range(10**5)}\nb = {i: t for i in range(10**5)}\nreturn {"n": a == b}',
    "round-minus-1e8": 'return {"n": round(5, -10**8)}',
    "round-minus-3e7": 'return {"n": round(5, -3 * 10**7)}',
    "round-minus-1e7-float": 'return {"n": round(5.5, -10**7)}',
    "round-big-int": 'x = 7 ** 1400\nreturn {"n": round(x, -10**6) > 0}',
    "int-hex-floordiv": 'a = int("f" * 2 * 10**6, 16)\nb = int("7" * 10**6, 16)\nreturn {"n": a // b > 0}',
    "int-hex-mod": 'a = int("f" * 2 * 10**6, 16)\nb = int("7" * 10**6, 16)\nreturn {"n": a % b > 0}',
    "int-binary-1e6": 'return {"n": int("1" * 10**6, 2) > 0}',
    "int-octal": 'return {"n": int("7" * 10**6, 8) > 0}',
    "int-base32": 'return {"n": int("v" * 10**6, 32) > 0}',
    "int-base0-hex-prefix": 'return {"n": int("0x" + "f" * 10**6, 0) > 0}',
    "int-bytes-hex": 'return {"n": int(b"f" * 10**6, 16) > 0}',
    "int-underscored": 'return {"n": int("1_" * 10**5 + "1", 2) > 0}',
    "floordiv-grown-int": 'a = 1\nfor i in range(20000):\n    a = a + a\nb = a - 12345\nreturn {"n": a // b}',
    "mod-grown-int": 'a = 1\nfor i in range(20000):\n    a = a + a\nb = a - 12345\nreturn {"n": a % b > 0}',
    "inplace-floordiv-grown-int": 'a = 1\nfor i in range(20000):\n    a = a + a\nb = a - 3\na //= b\nreturn {"n": a}',
    "upper-ffi": 's = "\\ufb03" * 10**7\nreturn {"n": len(s.upper())}',
    "title-ffi": 's = "\\ufb03" * 10**7\nreturn {"n": len(s.title())}',
    "capitalize-sharp-s": 's = "\\u00df" * 10**7\nreturn {"n": len(s.capitalize())}',
    "lower-dotted-capital-i": 's = "\\u0130" * 6 * 10**6\nreturn {"n": len(s.lower())}',
    "fstring-list-of-long": HUGE + 'return {"n": len(f"{[s] * 150}")}',
    "fstring-error-of-list": HUGE + 'return {"n": len(f"{ValueError([s] * 150)}")}',
    "fstring-tuple-of-long": HUGE + 'x = tuple([s] * 150)\nreturn {"n": len(f"{x}")}',
    "fstring-dict-of-long": HUGE + 'd = {i: s for i in range(150)}\nreturn {"n": len(f"{d}")}',
    "str-of-error-of-list": HUGE + 'return {"n": len(str(ValueError([s] * 150)))}',
    "percent-error-of-list": HUGE + 'return {"n": len("%s" % (ValueError([s] * 150),))}',
    "fstring-repr-unprintable": 's = "\\x00" * 5 * 10**6\nreturn {"n": len(f"{s!r}")}',
    "fstring-ascii-astral": 's = "\\U0001f600" * 2 * 10**6\nreturn {"n": len(f"{s!a}")}',
    "str-of-unprintable-list": 's = "\\x01" * 3 * 10**6\nreturn {"n": len(str([s, s]))}',
    "strip-long-chars": 's = "a" * 10**6\nchars = "b" * 5 * 10**6 + "a"\nreturn {"n": len(s.strip(chars))}',
    "lstrip-long-chars": 's = "a" * 10**6\nchars = "b" * 5 * 10**6 + "a"\nreturn {"n": len(s.lstrip(chars))}',
    "rstrip-long-chars": 's = "a" * 10**6\nchars = "b" * 5 * 10**6 + "a"\nreturn {"n": len(s.rstrip(chars))}',
    "float-in-huge-range": 'return {"n": 0.5 in range(10**12)}',
    "text-in-huge-range": 'return {"n": "a" in range(10**12)}',
    "float-not-in-huge-range": 'return {"n": 0.5 not in range(10**12)}',
}
# R5: bytes %-formatting under str's checks
BYTES = {
    "bytes-percent-width": 'return {"n": len(b"%01500000000d" % (1,))}',
    "bytes-percent-star-width": 'return {"n": len(b"%0*d" % (1500 * 10**6, 1))}',
    "bytes-percent-precision": 'return {"n": len(b"%.1500000000f" % (1.0,))}',
    "bytes-percent-a-db": 'return {"b": list(b"%a" % (db,))}',
    "bytes-percent-r-db": 'return {"b": list(b"%r" % (db,))}',
    "bytes-percent-a-function": 'return {"b": list(b"%a" % (probe,))}',
    "bytes-percent-a-clock": 'return {"b": list(b"%a" % clock)}',
    "bytes-percent-a-set": 'return {"b": list(b"%a" % ({"x", "y"},))}',
    "bytes-percent-mapping": 'return {"b": list(b"%(a)d" % {b"a": 1})}',
    "bytes-doubling": 's = b"ab"\nfor _ in range(64):\n    s = b"%b%b" % (s, s)\nreturn {"n": len(s)}',
    "bytes-inplace-percent": 's = b"%01500000000d"\ns %= (1,)\nreturn {"n": len(s)}',
}
# R11: a loop of C calls, each fast: ended by the step budget (the same on every machine), not the clock
LOOPS = {
    "in-long-needle": 'hay = "ab" * 5 * 10**5\nneedle = "ab" * 10**4 + "c"\nn = 0\nfor i in range(10**5):\n'
                      '    n += needle in hay\nreturn {"n": n}',
    "find-long-needle": 'hay = "ab" * 5 * 10**5\nneedle = "ab" * 10**4 + "c"\nn = 0\nfor i in range(10**5):\n'
                        '    n += hay.find(needle)\nreturn {"n": n}',
    "count-long-needle": 'hay = "ab" * 5 * 10**5\nneedle = "ab" * 10**4 + "c"\nn = 0\nfor i in range(10**5):\n'
                         '    n += hay.count(needle)\nreturn {"n": n}',
    "startswith-long": LONG + 'n = 0\nfor i in range(10**5):\n    n += s.startswith(t)\nreturn {"n": n}',
    "endswith-long": LONG + 'n = 0\nfor i in range(10**5):\n    n += s.endswith(t)\nreturn {"n": n}',
    "equal-long-texts": LONG + 'n = 0\nfor i in range(10**5):\n    n += s == t\nreturn {"n": n}',
    "less-long-texts": LONG + 'n = 0\nfor i in range(10**5):\n    n += s <= t\nreturn {"n": n}',
    "list-copy": 'x = [0] * 10**6\nn = 0\nfor i in range(10**4):\n    n += len(x.copy())\nreturn {"n": n}',
    "lower-long": 's = "A" * 5 * 10**6\nn = 0\nfor i in range(10**4):\n    n += len(s.lower())\nreturn {"n": n}',
    "strip-long": 's = " " * 5 * 10**6 + "a"\nn = 0\nfor i in range(10**4):\n    n += len(s.strip())\nreturn {"n": n}',
    "in-small-list-many-times": 'x = list(range(10**5))\nn = 0\nfor i in range(10**5):\n    n += -1 in x\n'
                                'return {"n": n}',
}
# R12: outputs and messages with control characters or lone surrogates
UNPRINTABLE_OUTPUTS = {
    "output-nul": 'return {"s": "a\\x00b"}',
    "output-ansi": 'return {"s": "\\x1b[2J\\x1b[31mOWNED"}',
    "output-c1-csi": 'return {"s": "\\x9b31m"}',
    "output-del": 'return {"s": "\\x7f"}',
    "output-bell": 'return {"s": "\\x07"}',
    "output-backspace": 'return {"s": "ok\\x08\\x08no"}',
    "output-lone-surrogate": 'return {"s": "\\ud800"}',
    "output-lone-low-surrogate": 'return {"s": "x\\udc00"}',
    "output-control-in-key": 'return {"\\x1b": 1}',
    "output-surrogate-in-key": 'return {"\\udfff": 1}',
    "output-nested-nul": 'return {"rows": [["ok", {"a": "\\x00"}]]}',
    "output-built-from-argument": 'return {"s": "".join([text, "\\x1b[0m"])}',
    "output-list-return": 'return ["\\x1b]0;title\\x07"]',
}
UNPRINTABLE_MESSAGES = {
    "tool-error-ansi": 'raise ToolError("\\x1b[2J\\x1b[31mOWNED")',
    "tool-error-nul": 'raise ToolError("no\\x00such")',
    "tool-error-lone-surrogate": 'raise ToolError("\\ud800")',
    "tool-error-c1": 'raise ToolError("\\x9b2J")',
    "value-error-ansi": 'raise ValueError("\\x1b[31mred")',
    "key-error-ansi": 'd = {}\nreturn {"n": d["\\x1b[2J"]}',
    "record-error-ansi": 'return {"r": db.get("books", "\\x1b[2J")}',
    "record-one-ansi": 'return {"r": db.one("books", {"title": "\\x1b[2J"})}',
}
_UNPRINTABLE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff]")
SECONDS = 4.0  # a call's time in the child: the 1 s limit and a busy machine's slack; unchecked, minutes


@pytest.fixture(scope="module")
def child():
    runner = AttackChild()
    yield runner
    runner.close()


def assert_ended_soon(record: dict, expected: set[str]) -> None:
    assert_stopped_in_child(record, expected, SECONDS)


@pytest.mark.parametrize("runtime", RUNTIMES)
@pytest.mark.parametrize("name", sorted(C_CALLS))
def test_a_long_c_call_is_refused_before_it_starts(runtime, name, child):
    assert_ended_soon(child.run(runtime, C_CALLS[name]), {"StepBudgetExceeded", "ToolSizeExceeded"})


@pytest.mark.parametrize("runtime", RUNTIMES)
@pytest.mark.parametrize("name", sorted(BYTES))
def test_bytes_formatting_has_the_checks_of_str(runtime, name, child):
    record = child.run(runtime, BYTES[name])
    assert_ended_soon(record, {"StepBudgetExceeded", "ToolSizeExceeded", "TypeError"})
    assert "0x" not in (record["result"]["error"] or "") and "Records" not in (record["result"]["error"] or "")


@pytest.mark.parametrize("runtime", RUNTIMES)
@pytest.mark.parametrize("name", sorted(LOOPS))
def test_a_loop_of_c_calls_ends_by_the_budget_not_the_clock(runtime, name, child):
    assert_ended_soon(child.run(runtime, LOOPS[name]), {"StepBudgetExceeded"})


@pytest.mark.parametrize("runtime", RUNTIMES)
@pytest.mark.parametrize("name", sorted(UNPRINTABLE_OUTPUTS))
def test_an_output_with_control_characters_is_refused(runtime, name, child):
    record = child.run(runtime, UNPRINTABLE_OUTPUTS[name])
    assert_ended_soon(record, {"ToolOutputRefused"})
    assert not _UNPRINTABLE.search(record["result"]["error"])


@pytest.mark.parametrize("runtime", RUNTIMES)
@pytest.mark.parametrize("name", sorted(UNPRINTABLE_MESSAGES))
def test_an_error_message_carries_no_control_characters(runtime, name, child):
    record = child.run(runtime, UNPRINTABLE_MESSAGES[name])
    assert_ended_soon(record, {"ToolError", "ValueError", "KeyError"})
    assert not _UNPRINTABLE.search(record["result"]["error"]), record["result"]["error"]


@pytest.mark.parametrize("limit", ["10**30", "-10**30", "2**63", "2**31", "True", "0", "-1", "2"])
def test_both_runtimes_find_the_same_rows_whatever_the_limit(limit, child):
    """R11: `limit=10**30` was an OverflowError over SQLite and 20 rows over dicts."""
    body = f'return {{"ids": [r["book_id"] for r in db.find("books", limit={limit})]}}'
    environment, package = (child.run(runtime, body)["result"] for runtime in RUNTIMES)
    assert environment == package
    assert environment["error"] is None and environment["output"]["ids"]


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_ordinary_work_is_unchanged(runtime, child):
    """The checks refuse sizes, not kinds of work: what tools do every day gives what it gave."""
    body = ('rows = db.find("books")\nnames = sorted([r["title"] for r in rows])\nx = [3, 1, 2]\nx.sort()\n'
            'd = {"a": 1}\nw = "Hello \\ufb03 World"\n'
            'return {"n": len(names), "first": min(names) == names[0], "x": x, "r": round(1234.5678, 2),'
            ' "r2": round(1234, -2), "i": int("ff", 16) + int("42"), "q": 17 // 5, "m": 17 % 5,'
            ' "u": w.upper(), "l": w.lower(), "t": "a\\tb\\nc\\r", "c": x.count(2) + x.index(3),'
            ' "in": 2 in x and "a" in d and "ell" in w, "eq": [1, (2, "x")] == [1, (2, "x")], "ch": 1 < 2 <= 2 < 3,'
            ' "k": sorted(d.keys() - ["b"]), "b": len(b"%05d" % (42,)), "s": "%s-%03d" % ("a", 7)}')
    output = child.run(runtime, body)["result"]["output"]
    assert output == {"n": output["n"], "first": True, "x": [1, 2, 3], "r": 1234.57, "r2": 1200, "i": 297, "q": 3,
                      "m": 2, "u": "HELLO FFI WORLD", "l": "hello \ufb03 world", "t": "a\tb\nc\r", "c": 3, "in": True,
                      "eq": True, "ch": True, "k": ["a"], "b": 5, "s": "a-007"}
