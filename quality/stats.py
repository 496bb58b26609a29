"""Dataset statistics with DuckDB over the published parquet: per domain, per tool, per difficulty.

The numbers are read from `OUT/hf/data/` itself, so the dataset card and the report describe
the files a user downloads, not an in-memory list that could differ from them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb

_DIFFICULTIES = ("easy", "medium", "hard")


def _literal(path: Path) -> str:
    return "'" + str(path).replace("'", "''") + "'"


def _rows(con: duckdb.DuckDBPyConnection, sql: str, params: list[Any]) -> list[dict[str, Any]]:
    result = con.execute(sql, params)
    names = [d[0] for d in result.description]
    return [dict(zip(names, row)) for row in result.fetchall()]


def dataset_stats(folder: Path) -> dict[str, list[dict[str, Any]]]:
    """{per_domain, per_difficulty, per_tool, splits} for the dataset repo folder `folder`."""
    tasks = _literal(Path(folder) / "data" / "tasks" / "*.parquet")
    domains = _literal(Path(folder) / "data" / "domains" / "*.parquet")
    con = duckdb.connect()
    try:  # views cannot take parameters: the paths go in as quoted literals
        con.execute("create temp view tasks as select *, regexp_extract(filename, '([a-z]+)-[^/]*$', 1) as split "
                    f"from read_parquet({tasks}, filename = true)")
        con.execute(f"create temp view domains as select * from read_parquet({domains})")
        difficulty = ", ".join(f"count(*) filter (where difficulty = '{d}') as {d}" for d in _DIFFICULTIES)
        per_domain = _rows(con, f"""
            select t.domain, count(*) as tasks,
                   count(*) filter (where split = 'train') as train, count(*) filter (where split = 'test') as test,
                   {difficulty},
                   count(*) filter (where kind = 'write') as write_tasks,
                   round(avg(len(actions)), 2) as avg_actions, max(len(actions)) as max_actions,
                   count(distinct intent) as intents,
                   any_value(len(d.tools)) as tools,
                   any_value(list_sum(list_transform(d.tables, lambda x: x.rows))) as db_rows
            from tasks t join domains d on d.domain = t.domain
            group by t.domain order by t.domain""", [])
        per_difficulty = _rows(con, """
            select difficulty, count(*) as tasks, count(distinct domain) as domains,
                   round(avg(len(actions)), 2) as avg_actions, round(avg(len(communicate_info)), 2) as avg_communicate,
                   count(*) filter (where len(hardening) > 0) as hardened
            from tasks group by difficulty
            order by case difficulty when 'easy' then 0 when 'medium' then 1 when 'hard' then 2 else 3 end""", [])
        per_tool = _rows(con, """
            with declared as (select domain, unnest(tools) as tool from domains),
                 used as (select domain, id, unnest(actions).name as tool from tasks)
            select d.domain, d.tool.name as tool, d.tool.kind as kind,
                   count(u.id) as calls, count(distinct u.id) as tasks
            from declared d left join used u on u.domain = d.domain and u.tool = d.tool.name
            group by all order by d.domain, d.tool.name""", [])
        splits = _rows(con, "select split, count(*) as tasks from tasks group by split order by split", [])
    finally:
        con.close()
    return {"per_domain": per_domain, "per_difficulty": per_difficulty, "per_tool": per_tool, "splits": splits}


def markdown_table(rows: list[dict[str, Any]], columns: list[str] | None = None) -> str:
    """A GitHub-flavoured markdown table of `rows` (numbers right-aligned)."""
    if not rows:
        return "(none)\n"
    columns = columns or list(rows[0])
    numeric = {c for c in columns if all(isinstance(r.get(c), (int, float)) for r in rows)}
    lines = ["| " + " | ".join(columns) + " |",
             "|" + "|".join("---:" if c in numeric else "---" for c in columns) + "|"]
    for row in rows:
        cells = [f"{row[c]:,}" if isinstance(row.get(c), int) and not isinstance(row.get(c), bool) else str(row.get(c, ""))
                 for c in columns]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


__all__ = ["dataset_stats", "markdown_table"]
