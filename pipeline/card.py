"""The dataset card (OUT/hf/README.md): huggingface_hub's card data for the YAML header (configs,
license, tags), and pipeline/card.md.j2 for the body: what the data is, its statistics and funnel,
how to load and replay it, its limitations, the synthetic-PII note and the citation.

The card is written with `REPO_PLACEHOLDER` where the Hub repo id goes; `with_repo_id` fills it in
when the folder is pushed, so the Load snippet names the repo it is in.
"""

from __future__ import annotations

import importlib.metadata
from pathlib import Path
from typing import Any

from toolscale.domains.splits import SPLITS

from .rows import Run

REPO_PLACEHOLDER = "ORG/NAME"
TEMPLATE = Path(__file__).with_name("card.md.j2")


def _size_category(n: int) -> str:
    for limit, label in ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"), (1_000_000, "100K<n<1M")):
        if n < limit:
            return label
    return "n>1M"


def _funnel_rows(report: dict[str, Any]) -> list[dict[str, Any]]:
    rows = []
    for name, funnel in sorted(report.get("domains", {}).items()):
        rejected = funnel.get("rejected", {})
        rows.append({"domain": name, "candidates": funnel["candidates"], "accepted": funnel["accepted"],
                     "yield": f"{funnel['accepted'] / funnel['candidates']:.0%}" if funnel["candidates"] else "-",
                     "rejected": ", ".join(f"{gate} {n}" for gate, n in rejected.items()) or "none"})
    totals = report.get("totals")
    if totals:
        rows.append({"domain": "**total**", "candidates": totals["candidates"], "accepted": totals["accepted"],
                     "yield": f"{totals['accepted'] / totals['candidates']:.0%}" if totals["candidates"] else "-",
                     "rejected": ", ".join(f"{g} {n}" for g, n in totals.get("rejected", {}).items()) or "none"})
    return rows


def toolscale_version() -> str:
    try:
        return importlib.metadata.version("toolscale")
    except importlib.metadata.PackageNotFoundError:  # run from a source tree that was never installed
        return "(source tree)"


def render_card(run: Run, counts: dict[str, dict[str, int]], stats: dict[str, list[dict[str, Any]]],
                fingerprint: str, license: str = "apache-2.0") -> str:
    """README.md of the dataset repo."""
    from huggingface_hub import DatasetCard, DatasetCardData

    from toolscale.quality.stats import markdown_table

    total = sum(counts["tasks"].values())
    data = DatasetCardData(
        license=license, language=["en"], pretty_name="toolscale: verifiable tool-use tasks",
        task_categories=["text-generation"], size_categories=[_size_category(total)],
        tags=["tool-use", "function-calling", "agents", "tau2-bench", "synthetic"],
        configs=[{"config_name": "tasks", "default": True,
                  "data_files": [{"split": s, "path": f"data/tasks/{s}-{fingerprint}-*.parquet"} for s in SPLITS]},
                 {"config_name": "domains",
                  "data_files": [{"split": "train", "path": f"data/domains/train-{fingerprint}-*.parquet"}]}],
        dataset_info=[{"config_name": "tasks", "splits": [{"name": s, "num_examples": counts["tasks"][s]}
                                                          for s in SPLITS]},
                      {"config_name": "domains", "splits": [{"name": "train",
                                                             "num_examples": counts["domains"]["train"]}]}],
    )
    settings = run.report.get("settings", {})
    llm = settings.get("llm") or {}
    card = DatasetCard.from_template(
        data, template_path=str(TEMPLATE), total=total, domains=list(run.names), version=toolscale_version(),
        backend=run.report.get("backend", "offline"), model=llm.get("model"), seed=run.seed,
        scale=run.report.get("scale", 1.0), fingerprint=fingerprint, counts=counts,
        per_domain=markdown_table(stats["per_domain"]), per_difficulty=markdown_table(stats["per_difficulty"]),
        per_tool=markdown_table(stats["per_tool"]), funnel=markdown_table(_funnel_rows(run.report)),
        repo_id=REPO_PLACEHOLDER, example=run.names[0])
    return str(card)


def with_repo_id(card: str, repo_id: str) -> str:
    """The card with the Hub repo id it is pushed to in its snippets."""
    return card.replace(f'"{REPO_PLACEHOLDER}"', f'"{repo_id}"')
