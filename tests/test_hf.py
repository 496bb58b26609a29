"""The Hugging Face dataset folder: lossless rows, offline load_dataset, replay from parquet alone, card, stats."""

from __future__ import annotations

import importlib.metadata
import json
import os
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml

from published_run import published_run
from toolscale.domains import Task
from toolscale.pipeline.publication import build_publication
from toolscale.pipeline.exporters import hf
from toolscale.domains.splits import SPLITS, assign_splits
from toolscale.pipeline.exporters.hf import TASK_FEATURES, data_file
from toolscale.pipeline.rows import dataset_rows, environment_from_row, read_run, replay_row, task_from_row, task_row
from toolscale.quality.stats import dataset_stats
from toolscale.trainer.config import DataConfig
from toolscale.agents.tasks import DataError, load_output

DOMAINS = ("railway", "school")


@pytest.fixture(scope="module")
def out(tmp_path_factory) -> Path:
    return published_run(tmp_path_factory, DOMAINS)


def accepted(out: Path) -> list[Task]:
    return [Task.model_validate_json(line) for name in DOMAINS
            for line in (out / name / "tasks.jsonl").read_text().splitlines()]


def test_every_task_round_trips_through_its_row(out):
    tasks = accepted(out)
    assert tasks
    for task in tasks:
        row = task_row(task)
        assert set(row) == set(TASK_FEATURES)
        assert all(isinstance(a["arguments"], str) for a in row["actions"])
        assert task_from_row(row) == task


LOAD = """
import json, sys
from datasets import load_dataset
folder = sys.argv[1]
tasks = load_dataset(folder, "tasks")
domains = load_dataset(folder, "domains", split="train")
print(json.dumps({"splits": {s: tasks[s].num_rows for s in tasks}, "features": str(tasks["train"].features),
                  "rows": [r for s in tasks for r in tasks[s]], "domains": [d["domain"] for d in domains]}))
"""


def test_load_dataset_reads_the_folder_offline(out, tmp_path):
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "HF_HOME": str(tmp_path / "hf-home"),
           "HF_HUB_DISABLE_TELEMETRY": "1"}
    proc = subprocess.run([sys.executable, "-c", LOAD, str(out / "hf")], capture_output=True, text=True, env=env,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    loaded = json.loads(proc.stdout.splitlines()[-1])
    tasks = {t.id: t for t in accepted(out)}
    assert sum(loaded["splits"].values()) == len(tasks) and set(loaded["splits"]) == set(SPLITS)
    assert loaded["features"] == str(TASK_FEATURES)
    assert sorted(loaded["domains"]) == sorted(DOMAINS)
    for row in loaded["rows"]:
        assert task_from_row(row) == tasks[row["id"]]


ALTERNATE = """
import json, sys
from datasets import load_dataset
print(json.dumps([sorted(r["id"] for r in load_dataset(folder, "tasks", split="train")) for folder in sys.argv[1:]]))
"""


def test_each_runs_folder_loads_as_its_own_dataset_with_one_cache(out, tmp_path):
    """Every run writes a folder named `hf`; `datasets` used to key them all to one cache slot, so
    the second run loaded returned the first one's rows (notes/audit-2026-12-01/ecosystem.md)."""
    other = tmp_path / "other"
    shutil.copytree(out, other, ignore=shutil.ignore_patterns("hf", "tau2"))
    tasks = (other / DOMAINS[0] / "tasks.jsonl").read_text().splitlines(keepends=True)
    (other / DOMAINS[0] / "tasks.jsonl").write_text("".join(tasks[:5]))
    build_publication(read_run(other))
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "HF_HOME": str(tmp_path / "hf-home"),
           "HF_HUB_DISABLE_TELEMETRY": "1"}
    folders = [str(out / "hf"), str(other / "hf"), str(out / "hf"), str(other / "hf")]
    proc = subprocess.run([sys.executable, "-c", ALTERNATE, *folders], capture_output=True, text=True, env=env,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    loaded = json.loads(proc.stdout.splitlines()[-1])
    own = [sorted(r["id"] for r in pq.read_table(data_file(Path(f), "tasks", "train")).to_pylist()) for f in folders]
    assert own[0] != own[1]
    assert loaded == own


def test_a_task_replays_from_the_parquet_files_alone(out, tmp_path):
    alone = tmp_path / "alone"  # the parquet files and nothing else: no card, no run folder
    for config, split in (("tasks", "train"), ("tasks", "test"), ("domains", "train")):
        path = data_file(out / "hf", config, split)
        (alone / "data" / config).mkdir(parents=True, exist_ok=True)
        shutil.copy(path, alone / "data" / config / path.name)
    domains = {row["domain"]: row for row in pq.read_table(data_file(alone, "domains", "train")).to_pylist()}
    replayed = 0
    for split in SPLITS:
        rows = pq.read_table(data_file(alone, "tasks", split)).to_pylist()
        for domain in DOMAINS:
            env = environment_from_row(domains[domain])
            assert env.state_hash() == domains[domain]["database_hash"]
            for row in [r for r in rows if r["domain"] == domain][:40]:
                results, state_hash = replay_row(env, row)
                assert [r.output for r in results] == [json.loads(o) for o in row["expected_outputs"]], row["id"]
                assert state_hash == row["final_state_hash"], row["id"]
                replayed += 1
            env.close()
    assert replayed >= 4 * len(DOMAINS)


def test_splits_are_stratified_by_domain_and_seeded():
    ids = {"a": [f"a.{i:03d}" for i in range(50)], "b": [f"b.{i:03d}" for i in range(9)], "c": ["c.000", "c.001"],
           "d": ["d.000"]}
    splits = assign_splits(ids, seed=1)
    assert splits == assign_splits({k: list(reversed(v)) for k, v in ids.items()}, seed=1)
    test = Counter(task_id.split(".")[0] for task_id, split in splits.items() if split == "test")
    assert test == {"a": 5, "b": 1, "c": 1}
    assert assign_splits(ids, seed=2) != splits


def test_publishing_again_writes_the_same_bytes(out):
    def snapshot() -> dict[str, bytes]:
        return {p.relative_to(out).as_posix(): p.read_bytes() for folder in ("hf", "tau2")
                for p in (out / folder).rglob("*") if p.is_file() and "__pycache__" not in p.parts}

    before = snapshot()
    build_publication(read_run(out), workers=2)  # published side by side, as the CLI does
    after = snapshot()
    assert sorted(after) == sorted(before)
    assert [name for name in before if before[name] != after[name]] == []


def test_parquet_is_written_a_row_group_at_a_time_and_reads_back_whole(out, tmp_path, monkeypatch):
    monkeypatch.setattr(hf, "ROW_GROUP", 40)
    run = read_run(out)
    collector = hf.EXPORTER().collector(run, tmp_path)
    for built in run.each():
        collector.add(dataset_rows(built, run.splits(built)))
    counts = collector.finish().report["dataset"]["rows"]
    tasks = accepted(out)
    splits = assign_splits({name: [t.id for t in tasks if t.domain == name] for name in DOMAINS}, run.seed)
    for split in SPLITS:
        parquet = pq.ParquetFile(data_file(tmp_path, "tasks", split))
        rows = parquet.read().to_pylist()
        assert counts["tasks"][split] == len(rows) == sum(1 for t in tasks if splits[t.id] == split)
        assert parquet.num_row_groups == -(-len(rows) // 40)
        assert [task_from_row(r) for r in rows] == [t for t in tasks if splits[t.id] == split]
        assert parquet.schema_arrow.metadata[b"huggingface"]  # the Features, for load_dataset


TRAINER_LOAD = """
import json, sys
from toolscale.agents.tasks import DataError
from toolscale.trainer.data import load_dataset
data = load_dataset(sys.argv[1], "train")
print(json.dumps({name: {"tasks": [t.model_dump(mode="json") for t in d.tasks], "hash": d.env.state_hash(),
                         "skipped": dict(d.skipped)} for name, d in data.items()}))
try:
    load_dataset(sys.argv[1], "validation")
except DataError as exc:
    print(str(exc))
"""


def test_the_trainer_loads_the_dataset_as_it_loads_the_run(out, tmp_path):
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "HF_HOME": str(tmp_path / "hf-home"),
           "HF_HUB_DISABLE_TELEMETRY": "1"}
    proc = subprocess.run([sys.executable, "-c", TRAINER_LOAD, str(out / "hf")], capture_output=True, text=True,
                          env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stdout.strip().splitlines()
    loaded, refusal = json.loads(lines[0]), lines[-1]
    assert "not a toolscale dataset with a 'validation' split" in refusal
    run = load_output(out)
    splits = assign_splits({name: [t.id for t in d.tasks] for name, d in run.items()}, read_run(out).seed)
    assert sorted(loaded) == sorted(run) == sorted(DOMAINS)
    for name, data in run.items():
        train = [t for t in data.tasks if splits[t.id] == "train"]
        assert [Task.model_validate(t) for t in loaded[name]["tasks"]] == train and train
        assert loaded[name]["hash"] == data.env.state_hash() and loaded[name]["skipped"] == {}


def test_statistics_count_what_the_files_hold(out):
    stats = dataset_stats(out / "hf")
    tasks = accepted(out)
    per_domain = {r["domain"]: r for r in stats["per_domain"]}
    for name in DOMAINS:
        mine = [t for t in tasks if t.domain == name]
        assert per_domain[name]["tasks"] == len(mine) == per_domain[name]["train"] + per_domain[name]["test"]
        for level in ("easy", "medium", "hard"):
            assert per_domain[name][level] == sum(t.meta.difficulty == level for t in mine)
    calls = Counter((t.domain, a.name) for t in tasks for a in t.evaluation_criteria.actions)
    assert {(r["domain"], r["tool"]): r["calls"] for r in stats["per_tool"] if r["calls"]} == dict(calls)
    assert sum(r["tasks"] for r in stats["per_difficulty"]) == len(tasks)


def test_the_card_carries_configs_statistics_funnel_and_usage(out):
    card = (out / "hf" / "README.md").read_text()
    header = yaml.safe_load(card.split("---")[1])
    assert [c["config_name"] for c in header["configs"]] == ["tasks", "domains"]
    assert header["license"] and "tau2-bench" in header["tags"]
    report = json.loads((out / "report.json").read_text())
    for name in DOMAINS:
        funnel = report["domains"][name]
        assert f"| {name} | {funnel['candidates']:,} | {funnel['accepted']:,} |" in card
    for heading in ("## Statistics", "## Quality funnel", "## Load", "## Replay a task", "## Limitations",
                    "## Personal data", "## Citation"):
        assert heading in card
    assert "arXiv:2511.21689" in card and "arXiv:2506.07982" in card  # ToolOrchestra and τ²-bench
    assert f"toolscale {importlib.metadata.version('toolscale')} with the `offline` backend" in card
    rows = {(c["config_name"], s["name"]): s["num_examples"] for c in header["dataset_info"] for s in c["splits"]}
    for split in SPLITS:  # split sizes: a stale cache fails loudly rather than hand back other rows
        assert rows["tasks", split] == pq.ParquetFile(data_file(out / "hf", "tasks", split)).metadata.num_rows
    beside = json.loads((out / "hf" / "report.json").read_text())  # the run's report, uploaded with the data
    assert beside["domains"].keys() == report["domains"].keys() and "timings_s" not in beside


def test_an_output_folder_is_read_by_split_as_the_dataset_is_published(out):
    """The trainer's default (`data.split: train`) leaves out the tasks the dataset holds out for testing."""
    published = {split: {r["id"] for r in pq.read_table(data_file(out / "hf", "tasks", split)).to_pylist()}
                 for split in SPLITS}
    read = {split: {t.id for d in load_output(out, split=split).values() for t in d.tasks} for split in SPLITS}
    assert read == published and read["train"] and read["test"]
    assert DataConfig().split == "train"
    with pytest.raises(DataError, match="split 'validation'"):
        load_output(out, split="validation")
