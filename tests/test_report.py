"""The run report names every gate: how many candidates each passed and rejected, zeros included,
and which no task reached, so a reader can tell "passed everything" from "never checked"."""

from __future__ import annotations

from toolscale.quality.gating import GATE_ORDER, default_gates
from toolscale.quality.report import NOT_REACHED, domain_funnel, markdown, totals


def test_every_gate_is_counted_in_order_and_the_counts_chain(bank_run):
    domain, _, accepted, rejected = bank_run
    funnel = domain_funnel(accepted, rejected, tools=list(domain.toolkit.specs))
    gates = funnel["gates"]
    assert list(gates) == list(GATE_ORDER)
    gates_run = ["synthesis", *(g.name for g in default_gates()[0]), *(g.name for g in default_gates()[1])]
    assert [g for g, c in gates.items() if c != NOT_REACHED] == gates_run
    assert gates["solvable"] == gates["needs_tools"] == NOT_REACHED  # no reference agent was configured
    standing = funnel["candidates"]
    for gate in gates_run:  # each gate sees what the one before passed
        assert gates[gate]["passed"] + gates[gate]["rejected"] == standing, gate
        assert gates[gate]["rejected"] == funnel["rejected"].get(gate, 0)
        standing = gates[gate]["passed"]
    assert standing == funnel["accepted"]
    assert any(c["rejected"] == 0 for c in gates.values() if c != NOT_REACHED)  # zeros are kept


def test_the_markdown_funnel_shows_every_gate_that_ran_and_names_those_none_reached(bank_run, tmp_path):
    domain, _, accepted, rejected = bank_run
    funnel = {**domain_funnel(accepted, rejected, tools=list(domain.toolkit.specs)), "tools": 24, "rows": 1}
    report = {"backend": "offline", "seed": 0, "scale": 1.0, "domains": {"bank": funnel},
              "totals": totals({"bank": funnel})}
    text = markdown(report, tmp_path)
    header = next(line for line in text.splitlines() if line.startswith("| domain | candidates |"))
    assert "| policy |" in header and "| necessity |" in header  # gates that rejected nothing are columns too
    assert "Not reached by any task: solvable, needs_tools" in text
    assert (tmp_path / "report_funnel.png").stat().st_size > 0 and (tmp_path / "report_mix.png").stat().st_size > 0
