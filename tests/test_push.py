"""Pushing the dataset folder: huggingface_hub's real client against a local server that records requests."""

from __future__ import annotations

import pytest

from recording_hub import start_recording_hub
from toolscale.flows.publish import upload_plan, upload_stage

README = """---
license: apache-2.0
configs:
- config_name: tasks
  data_files:
  - split: train
    path: data/tasks/train-*.parquet
---

# a dataset
"""


@pytest.fixture
def hub(monkeypatch):
    hub = start_recording_hub()
    monkeypatch.setenv("HF_ENDPOINT", hub.url)
    monkeypatch.setenv("HF_TOKEN", "hf_test_token")
    monkeypatch.setenv("HF_HUB_DISABLE_TELEMETRY", "1")
    yield hub
    hub.server.shutdown()


@pytest.fixture
def folder(tmp_path):
    folder = tmp_path / "hf"
    (folder / "data" / "tasks").mkdir(parents=True)
    (folder / "README.md").write_text(README)
    (folder / "data" / "tasks" / "train-00000-of-00001.parquet").write_bytes(bytes(range(256)) * 40)
    (folder / ".hf.tmp").mkdir()
    (folder / ".hf.tmp" / "stale.parquet").write_bytes(b"not for upload")
    return folder


def test_the_plan_lists_every_file_but_hidden_ones(folder):
    assert upload_plan(folder) == [("README.md", len(README)), ("data/tasks/train-00000-of-00001.parquet", 10240)]


def test_push_creates_the_repo_and_commits_the_folder_as_it_is(hub, folder):
    result = upload_stage.fn(folder, "acme/tool-tasks", private=True)
    assert [(r.method, r.path.split("?")[0]) for r in hub.requests] == [
        ("POST", "/api/repos/create"), ("POST", "/api/validate-yaml"),
        ("POST", "/api/datasets/acme/tool-tasks/preupload/main"), ("POST", "/api/datasets/acme/tool-tasks/commit/main")]
    assert all(r.headers["authorization"] == "Bearer hf_test_token" for r in hub.requests)
    assert hub.repos["acme/tool-tasks"] == {"name": "tool-tasks", "organization": "acme", "type": "dataset",
                                            "visibility": "private"}
    sent = hub.committed_files("acme/tool-tasks")
    assert sent == {path: (folder / path).read_bytes() for path, _ in upload_plan(folder)}
    assert result["repo_url"] == f"{hub.url}/datasets/acme/tool-tasks"
    assert result["commit_url"].startswith(f"{hub.url}/datasets/acme/tool-tasks/commit/")


def test_a_public_push_says_so(hub, folder):
    upload_stage.fn(folder, "acme/open-tasks", private=False)
    assert hub.repos["acme/open-tasks"]["visibility"] == "public"


def test_a_refusing_hub_fails_the_push(hub, folder, monkeypatch):
    monkeypatch.delenv("HF_TOKEN")
    monkeypatch.setenv("HF_HOME", str(folder.parent / "empty-hf-home"))
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_TOKEN_PATH", str(folder.parent / "no-token"))
    monkeypatch.setattr(constants, "HF_STORED_TOKENS_PATH", str(folder.parent / "no-tokens"))
    with pytest.raises(Exception, match="401"):
        upload_stage.fn(folder, "acme/tool-tasks", private=False)
    assert not hub.repos
