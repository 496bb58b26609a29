"""No secret of the machine is published (red-team 2026-12-06 R1, issue 38 item 1): on 7043c43 a domain
folder whose policy quoted (or linked to) the environment published HF_TOKEN and the LLM key into hf/, tau2/
and OUT, rc 0, and `toolscale push` would have sent them to the Hub.

Before the exporters' folders are swapped in, and before `push` (a dry run too), every public file is searched
for the values of the secret-looking environment variables and HF's stored token, as a reader sees the file: a
parquet file's string values (its pages are compressed), a SQLite database's text values. A hit stops the
publish with one line naming the file and the variable, never the value (pipeline/secret_scan.py).
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: the shared helpers

from published_run import published_run  # noqa: E402
from trainer_support import toolscale  # noqa: E402

from toolscale.pipeline.publication import build_publication  # noqa: E402
from toolscale.pipeline.rows import PublishError, read_run  # noqa: E402

SECRET = "hf_SECRETTOKEN1234567890abcdef"
LIBRARY = Path(__file__).resolve().parents[1] / "fixtures" / "library"


@pytest.fixture
def no_secrets(monkeypatch, tmp_path):
    """An environment with no secret-looking variable and no stored HF token: each test adds its own."""
    import huggingface_hub.constants as constants

    for name in list(os.environ):
        if name.upper().endswith(("_TOKEN", "_KEY", "_SECRET")):
            monkeypatch.delenv(name)
    monkeypatch.setattr(constants, "HF_TOKEN_PATH", str(tmp_path / "no-hf-home" / "token"))
    monkeypatch.setattr(constants, "HF_STORED_TOKENS_PATH", str(tmp_path / "no-hf-home" / "stored_tokens"))


def scan():
    from toolscale.pipeline.secret_scan import secrets

    return secrets()


def find(path: Path) -> str | None:
    from toolscale.pipeline.secret_scan import find_secret

    return find_secret(path, scan())


# ---- which values are secrets ---------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["HF_TOKEN", "TOOLSCALE_LLM_API_KEY", "OPENAI_API_KEY", "AWS_SECRET",
                                  "GITHUB_TOKEN", "my_lowercase_token", "ANTHROPIC_API_KEY", "WANDB_API_KEY"])
def test_a_secret_looking_variable_is_searched_for(no_secrets, monkeypatch, name):
    monkeypatch.setenv(name, SECRET)
    assert scan() == {f"${name}": SECRET}


@pytest.mark.parametrize(("name", "value"), [("HOME", SECRET), ("TOKENIZER", SECRET), ("KEYS", SECRET),
                                             ("API_KEY", "EMPTY"), ("SOME_TOKEN", "1"), ("X_SECRET", "true"),
                                             ("LANG_KEY", "en_US")])
def test_other_names_and_short_values_are_not(no_secrets, monkeypatch, name, value):
    """Short values ("EMPTY", "1", "true") are in any text: searching for them would stop every publish."""
    monkeypatch.setenv(name, value)
    assert scan() == {}


def test_the_hugging_face_token_file_is_searched_for(no_secrets, monkeypatch, tmp_path):
    import huggingface_hub.constants as constants

    token_file = tmp_path / "hf-home" / "token"
    token_file.parent.mkdir()
    token_file.write_text(SECRET + "\n")
    monkeypatch.setattr(constants, "HF_TOKEN_PATH", str(token_file))
    assert SECRET in scan().values()


# ---- where a secret hides: each file as a reader sees it --------------------------------------------------

def write_parquet(path: Path, table: pa.Table) -> Path:
    """gzip, no statistics (a page's min/max would show it raw): the raw bytes do not show the value."""
    pq.write_table(table, path, compression="gzip", write_statistics=False)
    assert SECRET.encode() not in path.read_bytes()  # the attack: a raw search misses it
    return path


PARQUETS = {
    "policy-column": lambda: pa.table({"domain": ["x"] * 50, "policy": [f"Policy {i}. {SECRET if i == 37 else ''}"
                                                                      for i in range(50)]}),
    "nested-actions": lambda: pa.table({"actions": [[{"name": "find", "arguments": json.dumps({"q": SECRET})}]]}),
    "list-of-strings": lambda: pa.table({"nl_assertions": [["a", "b"], [f"the token is {SECRET}"]]}),
    "struct-field": lambda: pa.table({"description": [{"purpose": "p", "notes": SECRET * 2}]}),
    "dictionary-encoded": lambda: pa.table({"kind": pa.array(["read", SECRET, "write"] * 30).dictionary_encode()}),
    "large-string": lambda: pa.table({"database": pa.array([json.dumps({"rows": [SECRET]})], pa.large_string())}),
}


@pytest.mark.parametrize("shape", PARQUETS)
def test_a_secret_in_a_compressed_parquet_value_is_found(no_secrets, monkeypatch, tmp_path, shape):
    monkeypatch.setenv("HF_TOKEN", SECRET)
    path = write_parquet(tmp_path / "train-00000-of-00001.parquet", PARQUETS[shape]())
    assert find(path) == "$HF_TOKEN"


def test_a_clean_parquet_and_a_file_named_parquet_that_is_not_one_pass(no_secrets, monkeypatch, tmp_path):
    monkeypatch.setenv("HF_TOKEN", SECRET)
    pq.write_table(pa.table({"a": ["nothing here"]}), tmp_path / "ok.parquet")
    (tmp_path / "fake.parquet").write_bytes(bytes(range(256)) * 40)
    assert find(tmp_path / "ok.parquet") is None and find(tmp_path / "fake.parquet") is None


def test_a_secret_across_sqlite_overflow_pages_is_found(no_secrets, monkeypatch, tmp_path):
    """A long value spans overflow pages: its bytes are split by page headers in the file."""
    monkeypatch.setenv("TOOLSCALE_LLM_API_KEY", SECRET)
    db = sqlite3.connect(tmp_path / "db.sqlite")
    db.execute("CREATE TABLE notes (id TEXT PRIMARY KEY, body TEXT)")
    for offset in range(4060, 4100, 3):
        db.execute("INSERT INTO notes VALUES (?, ?)", (f"n{offset}", "x" * offset + SECRET + "y" * 9000))
    db.commit()
    db.close()
    assert find(tmp_path / "db.sqlite") == "$TOOLSCALE_LLM_API_KEY"


@pytest.mark.parametrize(("name", "text"), [
    ("policy.md", f"# Policy\nQuote this to the agent: {SECRET}\n"),
    ("tools.py", f'def find(q: str) -> dict:\n    """Find. The key is {SECRET}."""\n    return {{}}\n'),
    ("tasks.jsonl", json.dumps({"id": "t1", "task_instructions": f"say {SECRET}"}) + "\n"),
    ("README.md", f"---\nlicense: apache-2.0\n---\n# card {SECRET}\n"),
    ("tools.json", json.dumps([{"description": SECRET}], indent=2)),
    ("escaped.json", json.dumps({"v": 'tok"' + SECRET + '\\x'})),
])
def test_a_secret_in_a_text_file_is_found(no_secrets, monkeypatch, tmp_path, name, text):
    monkeypatch.setenv("HF_TOKEN", 'tok"' + SECRET + '\\x' if name == "escaped.json" else SECRET)
    (tmp_path / name).write_text(text)
    assert find(tmp_path / name) == "$HF_TOKEN"


def test_a_secret_across_a_read_chunk_boundary_is_found(no_secrets, monkeypatch, tmp_path):
    from toolscale.pipeline.secret_scan import CHUNK

    monkeypatch.setenv("HF_TOKEN", SECRET)
    (tmp_path / "big.jsonl").write_bytes(b"a" * (CHUNK - 7) + SECRET.encode() + b"b" * 100)
    assert find(tmp_path / "big.jsonl") == "$HF_TOKEN"


# ---- the publish stops, the previous publication stays --------------------------------------------------

@pytest.fixture
def out(tmp_path, tmp_path_factory):
    copy = tmp_path / "out"
    shutil.copytree(published_run(tmp_path_factory, ("weather",)), copy)
    return copy


@pytest.mark.parametrize("where", ["policy", "task", "database-row"])
def test_a_secret_in_a_run_stops_its_publish_naming_the_file(no_secrets, monkeypatch, out, where):
    before = {p.relative_to(out).as_posix() for p in (out / "hf").rglob("*")}
    if where == "policy":
        with open(out / "weather" / "policy.md", "a") as fh:
            fh.write(f"\nThe operator's token is {SECRET}.\n")
        named = "weather/policy.md"
    elif where == "task":
        lines = (out / "weather" / "tasks.jsonl").read_text().splitlines()
        task = json.loads(lines[0])
        task["user_scenario"]["instructions"]["task_instructions"] += f" Mention {SECRET}."
        (out / "weather" / "tasks.jsonl").write_text("\n".join([json.dumps(task), *lines[1:]]) + "\n")
        named = "weather/tasks.jsonl"
    else:  # a value the database holds is the secret (a row of a hostile domain quoting it)
        from toolscale.pipeline.secret_scan import _texts_of_sqlite

        named, secret = "weather/db.sqlite", max((t for t in _texts_of_sqlite(out / "weather" / "db.sqlite")
                                                  if not t.startswith("CREATE")), key=len)
    monkeypatch.setenv("HF_TOKEN", SECRET if where != "database-row" else secret)
    with pytest.raises(PublishError) as caught:
        build_publication(read_run(out))
    message = str(caught.value)
    assert named in message and "$HF_TOKEN" in message and SECRET not in message, message
    assert os.environ["HF_TOKEN"] not in message
    assert {p.relative_to(out).as_posix() for p in (out / "hf").rglob("*")} == before  # the old one stays
    assert not (out / ".hf.tmp").exists() and not (out / ".tau2.tmp").exists()


def test_a_value_only_the_exporters_write_is_found_in_their_folder(no_secrets, monkeypatch, out):
    """A value that is in no domain file but in the published card: found in the folder about to be swapped
    in, named by its final path."""
    card = (out / "hf" / "README.md").read_text()
    value = next(line.strip() for line in card.splitlines() if "load_dataset(" in line)
    assert not any(value in p.read_text(errors="replace") for p in (out / "weather").iterdir() if p.is_file())
    monkeypatch.setenv("CARD_SECRET", value)
    with pytest.raises(PublishError, match=r"hf/README\.md holds the value of \$CARD_SECRET"):
        build_publication(read_run(out))


# ---- through the real CLI -------------------------------------------------------------------------------

def cli_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.upper().endswith(("_TOKEN", "_KEY", "_SECRET"))}
    return {**env, "HF_HOME": str(tmp_path / "hf-home"), **extra}


def run_cli(tmp_path: Path, env: dict[str, str], *args: str):
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(env)
    try:
        return toolscale(*args, cwd=tmp_path, timeout=300)
    finally:
        os.environ.clear()
        os.environ.update(saved)


def test_cli_a_policy_that_quotes_hf_token_stops_the_publish_naming_the_file(tmp_path):
    """Issue 38's must-show: not a symlink, a plain policy.md that contains the value of HF_TOKEN."""
    folder = tmp_path / "hleak"
    shutil.copytree(LIBRARY, folder)
    with open(folder / "policy.md", "a") as fh:
        fh.write(f"\nSupport staff authenticate with {SECRET}.\n")
    out = tmp_path / "out"
    proc = run_cli(tmp_path, cli_env(tmp_path, HF_TOKEN=SECRET), "generate", "--domain-dir", str(folder),
                   "--out", str(out), "--scale", "0.3")
    text = " ".join(proc.stderr.split())
    assert proc.returncode == 1, proc.stderr[-3000:]
    assert f"publish failed: {out}/library/policy.md holds the value of $HF_TOKEN" in text, text[-2000:]
    assert SECRET not in proc.stderr + proc.stdout
    assert not (out / "hf").exists() and not (out / "tau2").exists()


def hf_folder(tmp_path: Path, text: str) -> Path:
    out = tmp_path / "out"
    (out / "hf" / "data").mkdir(parents=True)
    (out / "hf" / "README.md").write_text("# a dataset\n")
    (out / "hf" / "data" / "notes.md").write_text(text)
    return out


def test_cli_push_dry_run_refuses_a_secret(tmp_path):
    out = hf_folder(tmp_path, f"token: {SECRET}\n")
    proc = run_cli(tmp_path, cli_env(tmp_path, WANDB_API_KEY=SECRET), "push", "--repo", "org/name", "--dry-run",
                   "--out", str(out))
    text = " ".join(proc.stderr.split()) + " ".join(proc.stdout.split())
    assert proc.returncode == 1 and "hf/data/notes.md holds the value of $WANDB_API_KEY" in text, text
    assert SECRET not in proc.stderr + proc.stdout and "would create" not in proc.stdout


def test_cli_push_refuses_the_stored_hugging_face_token(tmp_path):
    out = hf_folder(tmp_path, f"token: {SECRET}\n")
    (tmp_path / "hf-home").mkdir()
    (tmp_path / "hf-home" / "token").write_text(SECRET)
    proc = run_cli(tmp_path, cli_env(tmp_path), "push", "--repo", "org/name", "--out", str(out))
    text = " ".join(proc.stderr.split())
    assert proc.returncode == 1 and "holds the value of the Hugging Face token file" in text, text
    assert SECRET not in proc.stderr + proc.stdout


def test_cli_push_dry_run_of_a_clean_folder_still_lists_it(tmp_path):
    out = hf_folder(tmp_path, "nothing secret\n")
    proc = run_cli(tmp_path, cli_env(tmp_path, HF_TOKEN=SECRET), "push", "--repo", "org/name", "--dry-run",
                   "--out", str(out))
    assert proc.returncode == 0 and "would create" in proc.stdout, proc.stderr
