"""The report's tables as Prefect artifacts, so runs against a Prefect server show them in its UI."""

from __future__ import annotations

from typing import Any

from prefect.artifacts import create_markdown_artifact, create_table_artifact

from toolscale.quality.gating import GATE_ORDER


def publish_report_artifacts(report: dict[str, Any], markdown_text: str) -> None:
    rows = [{"domain": name, "candidates": d["candidates"],
             **{gate: d["rejected"].get(gate, 0) for gate in GATE_ORDER},
             "accepted": d["accepted"], "hardened_share": d["hardened"]["share"],
             "tool_coverage": d["coverage"]["share"]} for name, d in report["domains"].items()]
    create_table_artifact(key="toolscale-funnel", table=rows, description="Candidates, rejections by gate, accepted")
    create_markdown_artifact(key="toolscale-report", markdown=markdown_text, description="toolscale report.md")
