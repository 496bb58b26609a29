"""`toolscale generate` then `toolscale push`, end to end: the real CLI, every built-in domain.

The generate run (all ten domains, default scale) also publishes OUT/hf and OUT/tau2. Every
accepted task is then replayed through both runtimes, the dataset is loaded offline, and the
folder is pushed to a local server that records what huggingface_hub sent.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from recording_hub import start_recording_hub
from tau2_replay import compare_runtimes
from toolscale.domains import available_domains
from toolscale.pipeline.exporters.hf import data_file
from toolscale.pipeline.rows import environment_from_row, replay_row


def toolscale(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    exe = shutil.which("toolscale")
    cmd = [exe, *args] if exe else [sys.executable, "-m", "toolscale.flows.cli", *args]
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=900, env=env or {**os.environ})


@pytest.fixture(scope="module")
def out(tmp_path_factory) -> Path:
    work = tmp_path_factory.mktemp("publish")
    proc = toolscale("generate", "--out", str(work / "out"), cwd=work)
    assert proc.returncode == 0, proc.stderr[-3000:]
    said = " ".join(proc.stderr.split())  # rich wraps long lines
    assert "published" in said and "(10 τ²-bench packages)" in said
    return work / "out"


def test_generate_also_writes_the_dataset_and_the_tau2_packages(out):
    report = json.loads((out / "report.json").read_text())
    assert sorted(p.name for p in (out / "tau2").iterdir()) == available_domains()
    rows = report["dataset"]["rows"]
    assert sum(rows["tasks"].values()) == report["totals"]["accepted"] and rows["domains"]["train"] == 10
    for config, split in (("tasks", "train"), ("tasks", "test"), ("domains", "train")):
        assert data_file(out / "hf", config, split).name.endswith(f"-{report['dataset']['fingerprint']}-00000-of-00001.parquet")
    assert (out / "hf" / "README.md").read_text().startswith("---\n")


def test_every_accepted_task_of_every_domain_replays_the_same_in_its_tau2_package(out, tmp_path):
    compared = compare_runtimes(out, tmp_path, every=50)
    report = json.loads((out / "report.json").read_text())
    assert compared == {name: funnel["accepted"] for name, funnel in report["domains"].items()}
    print(f"differential replay: {sum(compared.values())} tasks compared in {len(compared)} domains: {compared}")


def test_load_dataset_round_trips_offline(out, tmp_path):
    script = ("import json, sys; from datasets import load_dataset; d = load_dataset(sys.argv[1], 'tasks'); "
              "print(json.dumps({s: d[s].num_rows for s in d}))")
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "HF_HOME": str(tmp_path / "home")}
    proc = subprocess.run([sys.executable, "-c", script, str(out / "hf")], capture_output=True, text=True, env=env,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads((out / "report.json").read_text())
    assert json.loads(proc.stdout.splitlines()[-1]) == report["dataset"]["rows"]["tasks"]


def test_tasks_of_every_domain_replay_from_the_parquet_alone(out):
    domains = {r["domain"]: r for r in pq.read_table(data_file(out / "hf", "domains", "train")).to_pylist()}
    rows = pq.read_table(data_file(out / "hf", "tasks", "test")).to_pylist()
    for name, domain in domains.items():
        env = environment_from_row(domain)
        for row in [r for r in rows if r["domain"] == name][:10]:  # every task is replayed by the differential test
            results, state_hash = replay_row(env, row)
            assert [r.output for r in results] == [json.loads(o) for o in row["expected_outputs"]], row["id"]
            assert state_hash == row["final_state_hash"], row["id"]
        env.close()


def test_push_sends_the_dataset_folder_to_hf_endpoint(out, tmp_path):
    hub = start_recording_hub()
    env = {**os.environ, "HF_ENDPOINT": hub.url, "HF_TOKEN": "hf_e2e_token", "HF_HUB_DISABLE_TELEMETRY": "1",
           "HF_HOME": str(tmp_path / "home")}
    dry = toolscale("push", "--repo", "acme/toolscale-tasks", "--dry-run", "--out", str(out), cwd=tmp_path, env=env)
    assert dry.returncode == 0, dry.stderr[-2000:]
    assert data_file(out / "hf", "tasks", "train").relative_to(out / "hf").as_posix() in dry.stdout
    assert f"{hub.url}/datasets/acme" in dry.stdout
    assert hub.requests == []

    no_token = {k: v for k, v in env.items() if k not in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN")}
    refused = toolscale("push", "--repo", "acme/toolscale-tasks", "--out", str(out), cwd=tmp_path, env=no_token)
    assert refused.returncode == 2 and "no Hugging Face token" in refused.stderr and hub.requests == []

    pushed = toolscale("push", "--repo", "acme/toolscale-tasks", "--private", "--out", str(out), cwd=tmp_path, env=env)
    assert pushed.returncode == 0, pushed.stderr[-3000:]
    print("requests:", [(r.method, r.path) for r in hub.requests])
    assert [r.path.split("?")[0] for r in hub.requests] == [
        "/api/repos/create", "/api/validate-yaml", "/api/datasets/acme/toolscale-tasks/preupload/main",
        "/api/datasets/acme/toolscale-tasks/commit/main"]
    assert hub.repos["acme/toolscale-tasks"]["visibility"] == "private"
    sent = hub.committed_files("acme/toolscale-tasks")
    card = sent.pop("README.md").decode()
    assert 'load_dataset("acme/toolscale-tasks", "tasks")' in card and "ORG/NAME" not in card
    local = {p.relative_to(out / "hf").as_posix(): p.read_bytes() for p in (out / "hf").rglob("*")
             if p.is_file() and p.name != "README.md"}
    local |= {"tau2/" + p.relative_to(out / "tau2").as_posix(): p.read_bytes() for p in (out / "tau2").rglob("*")
              if p.is_file() and "__pycache__" not in p.parts}
    assert sent == local and "report.json" in sent and "tau2/bank/tasks.json" in sent
    hub.server.shutdown()
    with sqlite3.connect(Path(os.environ["PREFECT_HOME"]) / "prefect.db") as db:  # the tests' server (conftest)
        names = {name for (name,) in db.execute("select name from flow_run")}
    db.close()
    assert "push-acme/toolscale-tasks" in names and "publish-out" in names  # as a Prefect UI lists them
