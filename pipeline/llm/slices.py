"""The slice of a database a task prompt shows: one anchor record, what hangs off it, and context.

A slice holds the anchor row, every row that points at it (transitively, up to `limit` rows a
table), the records those rows belong to with their own rows (a loan's member and the member's
other loans), a sample of each table not reached that way (all of a small table), and then every
row those rows point at, so the slice is closed under foreign keys: it loads into an
Environment of its own (the test server builds its answers that way) and a model sees no
dangling id.
"""

from __future__ import annotations

import random
from typing import Any

from toolscale.domains.spec import DomainSpec

from ..populate import Rows


def _fks(spec: DomainSpec) -> list[tuple[str, str, str]]:
    """(table, column, referenced table) for every foreign key."""
    return [(t.name, c.name, c.references.split(".")[0]) for t in spec.tables for c in t.columns if c.references]


def db_slice(spec: DomainSpec, rows: Rows, anchor_table: str, anchor_key: Any, rng: random.Random,
             limit: int = 30) -> Rows:
    """The slice around `anchor_key` of `anchor_table`, each table's rows in key order."""
    pks = {t.name: t.primary_key.name for t in spec.tables}
    by_key = {t: {r[pks[t]]: r for r in rows.get(t, [])} for t in pks}
    if anchor_key not in by_key.get(anchor_table, {}):
        raise KeyError(f"no {anchor_table} row with key {anchor_key!r}")
    chosen: dict[str, dict[Any, dict[str, Any]]] = {t: {} for t in pks}
    chosen[anchor_table][anchor_key] = by_key[anchor_table][anchor_key]
    fks = _fks(spec)

    def pointing_at(targets: dict[str, dict[Any, dict[str, Any]]], transitive: bool) -> None:
        """Add the rows that point at `targets` (and, if `transitive`, at what was added)."""
        grew = True
        while grew:
            grew = False
            for table, column, target in fks:
                keys = targets[target]
                if not keys:
                    continue
                for row in rows.get(table, []):
                    key = row[pks[table]]
                    if row[column] in keys and key not in chosen[table] and len(chosen[table]) < limit:
                        chosen[table][key] = row
                        grew = grew or transitive

    def pointed_at() -> dict[str, dict[Any, dict[str, Any]]]:
        """Add every row a chosen row points at, so the slice is closed; return what was added."""
        added: dict[str, dict[Any, dict[str, Any]]] = {t: {} for t in pks}
        grew = True
        while grew:
            grew = False
            for table, column, target in fks:
                for row in list(chosen[table].values()):
                    ref = row[column]
                    if ref is not None and ref not in chosen[target] and ref in by_key[target]:
                        chosen[target][ref] = added[target][ref] = by_key[target][ref]
                        grew = True
        return added

    pointing_at(chosen, transitive=True)  # what hangs off the anchor
    # and the other rows of the records those rows belong to: a tool's borrower's other loans,
    # which a task about the tool must see to know whether the borrower may borrow again
    pointing_at(pointed_at(), transitive=False)
    for table in pks:  # context for the tables the anchor does not reach
        pool = rows.get(table, [])
        if table == anchor_table or chosen[table] or not pool:
            continue
        picked = pool if len(pool) <= limit else rng.sample(pool, max(1, limit // 3))
        chosen[table].update((r[pks[table]], r) for r in picked)
    pointed_at()
    return {t.name: [chosen[t.name][k] for k in sorted(chosen[t.name])] for t in spec.creation_order()}
