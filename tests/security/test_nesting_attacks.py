"""Deeply nested values (red team 2026-12-06, R2): hashing a tuple nested 200,000 deep overflows
CPython 3.11's C stack in tuplehash and kills the process (SIGSEGV) in the Environment, the exported
package and an HF consumer's replay. Every way tool code can get such a tuple hashed must end in a
clean error, in both runtimes; deep lists and dicts must end in one when shown, compared or returned.

Each attack runs in a child process (isolated.AttackChild), so a crash fails its test, not the worker.
"""

from __future__ import annotations

import pytest

from isolated import AttackChild, assert_stopped_in_child
from test_tool_attacks import FAULTS, LIMITS, RUNTIMES

DEPTH = 200_000
HELPERS = f'''
def deep(n={DEPTH}):
    t = ()
    for i in range(n):
        t = (t,)
    return t


def deep_list(n={DEPTH}):
    x = []
    for i in range(n):
        x = [x]
    return x


def deep_dict(n={DEPTH}):
    x = {{}}
    for i in range(n):
        x = {{"a": x}}
    return x


def pack(*items):
    return items
'''

# where Python hashes a value the tool made: each with the deep tuple `t`
HASH_SITES = {
    "set-display": 'return {"n": len({t})}',
    "set-display-second": 'return {"n": len({1, t})}',
    "set-display-starred": 'return {"n": len({*[t]})}',
    "dict-display-key": 'return {"n": len({t: 1})}',
    "dict-display-second-key": 'return {"n": len({"a": 1, t: 2})}',
    "set-comprehension": 'return {"n": len({x for x in [t]})}',
    "dict-comprehension": 'return {"n": len({x: 1 for x in [t]})}',
    "subscript-read": 'd = {}\nreturn {"n": d[t]}',
    "subscript-write": 'd = {}\nd[t] = 1\nreturn {"n": len(d)}',
    "subscript-delete": 'd = {}\ndel d[t]\nreturn {}',
    "subscript-write-in-for-target": 'd = {}\nfor d[t] in [1]:\n    pass\nreturn {}',
    "subscript-write-unpacked": 'd = {}\nd[t], x = 1, 2\nreturn {}',
    "dict-get": 'return {"n": {}.get(t)}',
    "dict-get-default": 'return {"n": {}.get(t, 0)}',
    "dict-pop": 'return {"n": {}.pop(t, 0)}',
    "dict-setdefault": 'd = {}\nd.setdefault(t, 1)\nreturn {}',
    "set-add": 's = set()\ns.add(t)\nreturn {}',
    "set-discard": 's = set()\ns.discard(t)\nreturn {}',
    "dict-get-as-value": 'f = {}.get\nreturn {"n": f(t)}',
    "set-add-as-value": 's = set()\nf = s.add\nf(t)\nreturn {}',
    "dict-get-mapped": 'return {"n": list(map({}.get, [t]))}',
    "dict-get-starred": 'return {"n": {}.get(*[t])}',
    "sorted-key-dict-get": 'return {"n": sorted([t], key={}.get)}',
    "in-set-display": 'return {"n": t in {1}}',
    "not-in-dict-display": 'return {"n": t not in {1: 2}}',
    "in-dict": 'd = {"a": 1}\nreturn {"n": t in d}',
    "in-set": 's = set([1])\nreturn {"n": t in s}',
    "in-keys-view": 'd = {"a": 1}\nreturn {"n": t in d.keys()}',
    "in-items-view": 'd = {"a": 1}\nreturn {"n": (t, 1) in d.items()}',
    "in-chained": 'd = {"a": 1}\nreturn {"n": () < t in d}',
    "in-chained-third": 'd = {"a": 1}\nreturn {"n": 0 < 1 < 2 and 1 <= 1 in d or () < t in d}',
    "set-builtin": 'return {"n": len(set([t]))}',
    "dict-builtin-pairs": 'return {"n": len(dict([(t, 1)]))}',
    "dict-builtin-zip": 'return {"n": len(dict(zip([t], [1])))}',
    "dict-update-pairs": 'd = {}\nd.update([(t, 1)])\nreturn {}',
    "set-union": 'return {"n": len(set().union([t]))}',
    "set-intersection": 'return {"n": len(set([1]).intersection([t]))}',
    "set-difference": 'return {"n": len(set([1]).difference([t]))}',
    "keys-view-minus-list": 'd = {"a": 1}\nreturn {"n": len(d.keys() - [t])}',
    "keys-view-or-list": 'd = {"a": 1}\nreturn {"n": len(d.keys() | [t])}',
    "keys-view-and-list": 'd = {"a": 1}\nreturn {"n": len(d.keys() & [t])}',
    "keys-view-xor-list": 'd = {"a": 1}\nreturn {"n": len(d.keys() ^ [t])}',
    "items-view-minus-list": 'd = {"a": 1}\nreturn {"n": len(d.items() - [(t, 1)])}',
    "list-minus-keys-view": 'd = {"a": 1}\nreturn {"n": len([t] - d.keys())}',
    "keys-view-inplace-minus": 'v = {"a": 1}.keys()\nv -= [t]\nreturn {"n": len(v)}',
    "len-of-set": 'return {"n": len({t}) + 1}',
    "isinstance-class-tuple": 'return {"n": isinstance(1, t)}',
    "isinstance-class-pair": 'return {"n": isinstance(1, (int, t))}',
    "record-find-where-pairs": 'return {"n": len(db.find("books", [(t, 1)]))}',
    "record-one-where-pairs": 'return {"n": db.one("books", [(t, 1)])}',
    "record-count-where-pairs": 'return {"n": db.count("books", [(t, 1)])}',
    "record-ensure-where-pairs": 'db.ensure("books", [(t, 1)], "x")\nreturn {}',
    "record-get-key": 'return {"n": db.get("books", t)}',
    "record-find-where-value": 'return {"n": db.find("books", {"title": t})}',
    "record-owned-owner": 'return {"n": db.owned("books", "BK-000001", "title", t)}',
}

# how the deep tuple is built: each ends in a set display
BUILDERS = {
    "literal": "t = deep()",
    "starred-args": "t = ()\nfor i in range(200000):\n    t = pack(t)",
    "lambda-args": "f = lambda *a: a\nt = ()\nfor i in range(200000):\n    t = f(t)",
    "tuple-builtin": "t = ()\nfor i in range(200000):\n    t = tuple([t])",
    "zip": "t = ()\nfor i in range(200000):\n    t = list(zip([t]))[0]",
    "enumerate": "t = ()\nfor i in range(200000):\n    t = list(enumerate([t]))[0]",
    "dict-items": "t = ()\nfor i in range(200000):\n    t = list({0: t}.items())[0]",
    "pairs": "t = ()\nfor i in range(200000):\n    t = (t, i)",
}

# deep lists and dicts: shown, compared, returned or stored
DEEP_CONTAINERS = {
    "return-deep-list": 'return {"x": deep_list()}',
    "return-deep-dict": 'return {"x": deep_dict()}',
    "return-list-100-deep": 'return {"x": deep_list(150)}',
    "str-of-deep-list": 'return {"s": str(deep_list())}',
    "str-of-deep-dict": 'return {"s": str(deep_dict())}',
    "fstring-of-deep-list": 'x = deep_list()\nreturn {"s": f"{x}"}',
    "fstring-repr-of-deep-tuple": 't = deep()\nreturn {"s": f"{t!r}"}',
    "percent-of-deep-list": 'return {"s": "%s" % (deep_list(),)}',
    "compare-deep-lists": 'return {"n": deep_list() == deep_list()}',
    "compare-deep-tuples": 'return {"n": deep() == deep()}',
    "order-deep-tuples": 'return {"n": deep() < deep()}',
    "sort-deep-lists": 'return {"n": len(sorted([deep_list(), deep_list()]))}',
    "in-list-of-deep": 'return {"n": deep_list() in [deep_list()]}',
    "tool-error-of-deep-list": 'raise ToolError(deep_list())',
    "value-error-of-deep-tuple": 'raise ValueError(deep())',
    "insert-deep-value": 'db.insert("books", {"title": deep_list()})\nreturn {}',
    "update-deep-value": 'db.update("books", "BK-000001", {"title": deep()})\nreturn {}',
    "return-deep-tuple": 'return {"x": deep()}',
    "deep-tuple-in-output-key": 'return {"x": [deep()]}',
}


@pytest.fixture(scope="module")
def child():
    runner = AttackChild()
    yield runner
    runner.close()


def assert_clean(record: dict, expected: set[str], seconds: float = 10.0) -> None:
    assert_stopped_in_child(record, expected, seconds)


@pytest.mark.parametrize("runtime", RUNTIMES)
@pytest.mark.parametrize("name", sorted(HASH_SITES))
def test_a_deep_tuple_is_never_hashed(runtime, name, child):
    body = "t = deep()\n" + HASH_SITES[name]
    kind = "write" if "record" in name else "read"
    # the record API refuses a tuple as SQLite does, with the same message in both runtimes
    assert_clean(child.run(runtime, body, before=HELPERS, kind=kind), LIMITS | {"ToolError", "TypeError", "ProgrammingError"})


@pytest.mark.parametrize("runtime", RUNTIMES)
@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_a_deep_tuple_built_any_way_is_never_hashed(runtime, name, child):
    body = BUILDERS[name] + '\nreturn {"n": len({t})}'
    assert_clean(child.run(runtime, body, before=HELPERS), LIMITS)


@pytest.mark.parametrize("runtime", RUNTIMES)
@pytest.mark.parametrize("name", sorted(DEEP_CONTAINERS))
def test_deep_lists_and_dicts_end_in_a_clean_error(runtime, name, child):
    kind = "write" if "value" in name and "error" not in name else "read"
    record = child.run(runtime, DEEP_CONTAINERS[name], before=HELPERS, kind=kind)
    assert_clean(record, LIMITS | FAULTS | {"ToolError"})
    assert "Traceback" not in (record["result"]["error"] or "")


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_tuples_as_keys_keep_working(runtime, child):
    """The checks refuse depth, not tuples: what tools do with pairs as keys still works."""
    body = ('d = {}\nk = (text, 1)\nd[k] = 2\nd[(text, 2)] = 3\ns = {k, (1, (2, (3,)))}\n'
            'return {"a": d[k], "b": d.get((text, 2)), "c": k in d, "d": len(s), "e": sorted(d.values()),'
            ' "f": (1, (2, (3,))) in s, "g": len({x: 1 for x in [k, k]}), "h": len(set([k])) + len(dict([(k, 1)]))}')
    record = child.run(runtime, body)
    assert record["result"]["output"] == {"a": 2, "b": 3, "c": True, "d": 2, "e": [2, 3], "f": True, "g": 1, "h": 2}
