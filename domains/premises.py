"""An intent's premise: what the record a task is about must be for the request to make sense.

"Upgrade my monthly plan to annual" needs an active monthly membership, "refund my last ride" a
ride within the refund window. A premise is a jinja expression over `row`, the anchor record
(`row.status == 'active' and row.plan == 'monthly'`), which may use `today`, `now` and
`add_days(day, n)` (dates as YYYY-MM-DD text, so they compare as text). The LLM task stage anchors
a candidate only on a record that meets it; here the loader checks that it parses and names only
the anchor table's columns and those helpers.
"""

from __future__ import annotations

from jinja2 import TemplateSyntaxError, nodes
from jinja2.sandbox import SandboxedEnvironment

from .spec import Table

HELPERS = ("today", "now", "add_days")
_PARSER = SandboxedEnvironment()


def premise_problems(premise: str, table: Table) -> list[str]:
    """What is wrong with `premise` as a filter on `table`'s rows, one message each (none: it is fine)."""
    try:
        tree = _PARSER.parse("{{ (" + premise + ") }}")
    except TemplateSyntaxError as exc:
        return [f"premise {premise!r} is not an expression: {exc.message}"]
    columns = {c.name for c in table.columns}
    problems = []
    for name in tree.find_all(nodes.Name):
        if name.ctx == "load" and name.name != "row" and name.name not in HELPERS:
            problems.append(f"premise {premise!r} names {name.name!r}; it may use row.<column> and "
                            f"{', '.join(HELPERS)} only")
    for node in tree.find_all((nodes.Getattr, nodes.Getitem)):
        if not (isinstance(node.node, nodes.Name) and node.node.name == "row"):
            continue
        column = node.attr if isinstance(node, nodes.Getattr) else getattr(node.arg, "value", None)
        if column not in columns:
            problems.append(f"premise {premise!r}: table {table.name} has no column {column!r} "
                            f"(its columns: {', '.join(sorted(columns))})")
    return list(dict.fromkeys(problems))
