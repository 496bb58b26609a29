"""What the published docs tell a consumer is true (red-team 2026-12-06 R13, R14): on 7043c43 the card's
"Replay a task" snippet imported `toolscale.pipeline.hf`, which does not exist, and neither the card nor a
τ²-bench package's README said that importing a package runs its code. The snippet is now executed here,
from the card as published, and both documents say what an import runs and which path sandboxes the tools.
"""

from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: the shared helpers

from published_run import published_run  # noqa: E402

CARD_TEMPLATE = Path(__file__).resolve().parents[2] / "pipeline" / "card.md.j2"


def code_blocks(text: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", text, re.S)


def replay_snippet(card: str) -> str:
    section = card.split("## Replay a task", 1)[1]
    return code_blocks(section)[0]


@pytest.fixture(scope="module")
def out(tmp_path_factory):
    copy = tmp_path_factory.mktemp("docs") / "out"
    shutil.copytree(published_run(tmp_path_factory, ("weather",)), copy)
    return copy


def test_the_card_template_replay_snippet_imports(tmp_path):
    """Every import line of the snippet, as the card template writes it, runs."""
    imports = [line for line in replay_snippet(CARD_TEMPLATE.read_text()).splitlines()
               if line.startswith(("import ", "from "))]
    assert any("environment_from_row" in line for line in imports), imports
    exec("\n".join(imports), {})


def test_the_published_card_replays_a_task_as_it_says(out):
    """The card's two snippets, run as written against the published folder (the repo id replaced by it)."""
    card = (out / "hf" / "README.md").read_text()
    load, replay = code_blocks(card)[0], replay_snippet(card)
    repo = re.search(r'load_dataset\("([^"]+)"', load).group(1)
    namespace: dict = {}
    exec(load.replace(f'"{repo}"', repr(str(out / "hf"))).replace("print(", "(lambda *_: None)("), namespace)
    exec(replay, namespace)
    assert namespace["state_hash"] == namespace["task"]["final_state_hash"]


@pytest.mark.parametrize("document", ["hf/README.md", "tau2/weather/README.md"])
def test_the_docs_say_importing_a_package_runs_it_and_which_path_sandboxes(out, document):
    text = " ".join((out / document).read_text().split())
    assert "importing it runs" in text.lower().replace("importing a package runs", "importing it runs")
    assert "under the vendored runtime" in text, text[:400]
    assert "unchecked" in text and "sandboxes the tool code" in text and "environment_from_row" in text
