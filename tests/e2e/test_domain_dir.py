"""`toolscale generate --domain-dir`: a hand-written domain folder goes through the same loader, stages,
gates and exports as a built-in domain, keyed by its content."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: the shared helpers

from trainer_support import toolscale  # noqa: E402

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "library"


def test_a_domain_folder_is_built_published_and_reused_until_it_changes(tmp_path):
    folder = tmp_path / "my-library"
    shutil.copytree(FIXTURE, folder)
    out = tmp_path / "out"
    first = toolscale("generate", "--domain-dir", str(folder), "--out", str(out), cwd=tmp_path)
    assert first.returncode == 0, first.stderr[-3000:]
    report = json.loads((out / "report.json").read_text())
    assert list(report["domains"]) == ["library"] and report["domains"]["library"]["accepted"] > 0
    tasks = (out / "library" / "tasks.jsonl").read_text().splitlines()
    assert len(tasks) == report["domains"]["library"]["accepted"]
    assert (out / "tau2" / "library" / "tasks.json").is_file() and (out / "hf" / "README.md").is_file()
    assert (out / "library" / "policy.md").read_text() == (folder / "policy.md").read_text()

    again = toolscale("generate", "--domain-dir", str(folder), "--out", str(out), cwd=tmp_path)
    assert again.returncode == 0 and "nothing to recompute" in " ".join(again.stderr.split())

    (folder / "policy.md").write_text((folder / "policy.md").read_text() + "\nBe brief.\n")
    edited = toolscale("generate", "--domain-dir", str(folder), "--out", str(out), cwd=tmp_path)
    assert edited.returncode == 0 and "nothing to recompute" not in " ".join(edited.stderr.split())
    assert (out / "library" / "policy.md").read_text().endswith("Be brief.\n")


def test_a_folder_that_does_not_load_or_takes_a_built_in_name_is_one_line(tmp_path):
    broken = tmp_path / "broken"
    shutil.copytree(FIXTURE, broken)
    (broken / "tools.py").write_text("import os\n")
    for folder, words in ((broken, "only functions and constants may appear at module level"),
                          (tmp_path / "nowhere", "domain.yaml: missing"),
                          (Path(__file__).resolve().parents[2] / "domains" / "bank", "'bank' is already built in")):
        proc = toolscale("generate", "--domain-dir", str(folder), "--out", str(tmp_path / "out"), cwd=tmp_path)
        assert proc.returncode == 2 and words in " ".join(proc.stderr.split()), proc.stderr
        assert "Traceback" not in proc.stderr
