"""Pushing a run: huggingface_hub's real client against a local server that records requests; the
dataset folder at the repo's root, the τ² packages under tau2/, the card naming the repo."""

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

```python
tasks = load_dataset("ORG/NAME", "tasks")
```
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
def out(tmp_path):
    """A run's output folder as push reads it: OUT/hf and OUT/tau2."""
    folder = tmp_path / "hf"
    (folder / "data" / "tasks").mkdir(parents=True)
    (folder / "README.md").write_text(README)
    (folder / "data" / "tasks" / "train-00000-of-00001.parquet").write_bytes(bytes(range(256)) * 40)
    (folder / ".hf.tmp").mkdir()
    (folder / ".hf.tmp" / "stale.parquet").write_bytes(b"not for upload")
    package = tmp_path / "tau2" / "bank"
    (package / "__pycache__").mkdir(parents=True)
    (package / "__init__.py").write_text("from .environment import get_environment\n")
    (package / "__pycache__" / "x.pyc").write_bytes(b"cache")
    return tmp_path


def test_the_plan_lists_the_dataset_and_the_packages_but_hidden_files_and_caches(out):
    assert [(name, size) for name, _, size in upload_plan(out)] == [
        ("README.md", len(README)), ("data/tasks/train-00000-of-00001.parquet", 10240),
        ("tau2/bank/__init__.py", len("from .environment import get_environment\n"))]


def test_push_creates_the_repo_and_commits_the_run_with_the_repo_named_in_the_card(hub, out):
    result = upload_stage.fn(out, "acme/tool-tasks", private=True)
    assert [(r.method, r.path.split("?")[0]) for r in hub.requests] == [
        ("POST", "/api/repos/create"), ("POST", "/api/validate-yaml"),
        ("POST", "/api/datasets/acme/tool-tasks/preupload/main"), ("POST", "/api/datasets/acme/tool-tasks/commit/main")]
    assert all(r.headers["authorization"] == "Bearer hf_test_token" for r in hub.requests)
    assert hub.repos["acme/tool-tasks"] == {"name": "tool-tasks", "organization": "acme", "type": "dataset",
                                            "visibility": "private"}
    sent = hub.committed_files("acme/tool-tasks")
    assert sent.pop("README.md") == README.replace('"ORG/NAME"', '"acme/tool-tasks"').encode()
    assert sent == {name: path.read_bytes() for name, path, _ in upload_plan(out) if name != "README.md"}
    assert result["repo_url"] == f"{hub.url}/datasets/acme/tool-tasks"
    assert result["commit_url"].startswith(f"{hub.url}/datasets/acme/tool-tasks/commit/")


def test_a_public_push_says_so(hub, out):
    upload_stage.fn(out, "acme/open-tasks", private=False)
    assert hub.repos["acme/open-tasks"]["visibility"] == "public"


def test_a_refusing_hub_fails_the_push(hub, out, monkeypatch):
    monkeypatch.delenv("HF_TOKEN")
    monkeypatch.setenv("HF_HOME", str(out / "empty-hf-home"))
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_TOKEN_PATH", str(out / "no-token"))
    monkeypatch.setattr(constants, "HF_STORED_TOKENS_PATH", str(out / "no-tokens"))
    with pytest.raises(Exception, match="401"):
        upload_stage.fn(out, "acme/tool-tasks", private=False)
    assert not hub.repos
