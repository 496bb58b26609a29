"""Exported τ²-bench packages: τ²-bench's layout, self-contained, and equal to toolscale's runtime."""

from __future__ import annotations

import inspect
import json
import pickle
import subprocess
import sys
from pathlib import Path

import pytest

from domain_checks import example_arguments
from published_run import published_run
from tau2_replay import compare_runtimes
from toolscale.domains import Environment, Task, dictdb, load_domain
from toolscale.pipeline.rows import PublishError, read_run
from toolscale.pipeline.publication import parts_of_domain, domain_parts, exporters
from toolscale.pipeline.exporters.tau2 import _without_sql, import_package, verify_package, write_package

DOMAINS = ("railway", "school")
RUNTIME_DIR = Path(dictdb.__file__).parent
PACKAGE_FILES = ["__init__.py", "environment.py", "data_model.py", "tools.py", "base.py", "compat.py", "utils.py",
                 "restricted_tools.py", "domain.json", "db.json", "policy.md", "tasks.json", "split_tasks.json",
                 "README.md", "runtime/__init__.py", "runtime/costs.py", "runtime/dictdb.py", "runtime/guards.py",
                 "runtime/limits.py", "runtime/records.py", "runtime/sandbox.py", "runtime/spec.py"]


@pytest.fixture(scope="module")
def out(tmp_path_factory) -> Path:
    return published_run(tmp_path_factory, DOMAINS)


def accepted(out: Path, name: str) -> list[Task]:
    return [Task.model_validate_json(line) for line in (out / name / "tasks.jsonl").read_text().splitlines()]


def test_each_package_has_tau2_benchs_files_and_tasks(out):
    for name in DOMAINS:
        folder = out / "tau2" / name
        assert sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()
                      and "__pycache__" not in p.parts) == sorted(PACKAGE_FILES)
        tasks = accepted(out, name)
        assert json.loads((folder / "tasks.json").read_text()) == [t.tau2() for t in tasks]
        splits = json.loads((folder / "split_tasks.json").read_text())
        assert splits["base"] == [t.id for t in tasks]
        assert sorted(splits["train"] + splits["test"]) == sorted(splits["base"])
        assert splits["test"] and not set(splits["train"]) & set(splits["test"])
        db = json.loads((folder / "db.json").read_text())
        domain = load_domain(out / name)
        with Environment.from_sqlite(domain, out / name / "db.sqlite") as env:
            rows = env.dump()
        for table in domain.spec.tables:
            assert list(db[table.name].values()) == rows[table.name]


def test_the_runtime_is_toolscales_own_source(out):
    runtime = out / "tau2" / DOMAINS[0] / "runtime"
    for module in ("dictdb", "sandbox", "spec"):
        assert (runtime / f"{module}.py").read_text() == (RUNTIME_DIR / f"{module}.py").read_text(), module
    vendored = (runtime / "records.py").read_text()
    original = (RUNTIME_DIR / "records.py").read_text().splitlines()
    assert "sqlalchemy" not in vendored and "class Records" not in vendored
    assert all(line in original for line in vendored.splitlines()[1:]), "records.py lines are copied, not rewritten"
    for name in ("coerce", "row_hash", "class Clock", "DIGEST_MOD"):
        assert name in vendored


def test_sql_parts_are_dropped_with_everything_that_uses_them():
    source = ('"""doc"""\nimport json\nimport sqlalchemy as sa\nfrom .sql import bind\n\nLIMIT = 3\n\n\n'
              "def table():\n    return sa.Table\n\n\n@decorated\ndef uses_table():\n    return table()\n\n\n"
              "def plain(x):\n    return json.dumps(x)  # kept as written\n")
    kept = _without_sql("example", source)
    assert "import json" in kept and "LIMIT = 3" in kept and "return json.dumps(x)  # kept as written" in kept
    assert "sqlalchemy" not in kept and "bind" not in kept and "def table" not in kept and "uses_table" not in kept
    assert "@decorated" not in kept


def test_packages_replay_every_accepted_task_as_toolscale_does(out, tmp_path):
    compared = compare_runtimes(out, tmp_path, every=7)
    assert compared == {name: len(accepted(out, name)) for name in DOMAINS}
    assert all(n > 0 for n in compared.values())
    print(f"tasks compared: {compared} (total {sum(compared.values())})")


def test_tool_calls_answer_as_the_environment_does_on_bad_input_too(out):
    name = DOMAINS[0]
    package = import_package(out / "tau2" / name)
    tools = package.get_environment().tools
    domain = load_domain(out / name)
    with Environment.from_sqlite(domain, out / name / "db.sqlite") as env:
        calls = [("no_such_tool", {})]
        for tool in domain.toolkit.specs:
            example = example_arguments(domain, tool)
            calls += [(tool, example), (tool, {**example, "surplus": True}),
                      (tool, {k: [v] for k, v in example.items()})]
        for tool, arguments in calls:
            assert tools.call(tool, arguments) == env.call(tool, arguments).model_dump(), (tool, arguments)
            assert tools.state_hash() == env.state_hash()
        assert tools.get_db_hash() == package.get_environment(db=tools.db).get_db_hash()


def test_a_failed_tool_call_raises_and_changes_nothing(out):
    package = import_package(out / "tau2" / DOMAINS[0])
    tools = package.get_environment().tools
    before = (tools.get_db_hash(), tools.state_hash())
    write = next(n for n in tools.tools if tools.tool_type(n) == "write")
    parameters = inspect.signature(getattr(tools, write)).parameters.values()
    with pytest.raises(Exception, match="no .* record|not found|invalid|unknown|must"):
        tools.use_tool(write, **{p.name: "NOPE-000000" if p.annotation is str else 0 for p in parameters})
    assert (tools.get_db_hash(), tools.state_hash()) == before


def test_every_get_environment_starts_from_db_json_however_the_others_were_used(out):
    """get_environment() reads db.json once and forks it (τ²-bench calls it several times a simulation):
    each environment is independent, and a new one is the pristine database."""
    name = DOMAINS[0]
    package = import_package(out / "tau2" / name)
    pristine = json.loads((out / "tau2" / name / "db.json").read_text())
    task = next(t for t in accepted(out, name) if t.meta.kind == "write")
    first, second = package.get_environment(), package.get_environment()
    before = (first.tools.get_db_hash(), first.tools.state_hash())
    for action_name, arguments in task.gold_calls():
        assert first.tools.call(action_name, arguments)["error"] is None
    assert first.tools.state_hash() == task.meta.final_state_hash != before[1]
    for env in (second, package.get_environment()):
        assert (env.tools.get_db_hash(), env.tools.state_hash()) == before
        assert env.tools.db.model_dump() == type(env.tools.db).model_validate(pristine).model_dump()


def test_task_splits_follow_tau2_bench(out):
    package = import_package(out / "tau2" / DOMAINS[1])
    splits = package.get_tasks_split()
    assert [t["id"] for t in package.get_tasks()] == splits["base"]
    assert [t["id"] for t in package.get_tasks("test")] == splits["test"]
    assert len(package.get_tasks(None)) == len(splits["base"])
    with pytest.raises(ValueError, match="Invalid task split name"):
        package.get_tasks("dev")
    with pytest.raises(ValueError, match="solo mode"):
        package.get_environment(solo_mode=True)


def test_publishing_refuses_a_package_that_answers_differently(out, tmp_path):
    built = read_run(out).load(DOMAINS[0])
    folder = write_package(built, tmp_path / DOMAINS[0], splits={})
    verify_package(folder, built)
    source = (folder / "restricted_tools.py").read_text()
    assert "db.get(" in source
    (folder / "restricted_tools.py").write_text(source.replace("db.get(", "None and db.get("))
    with pytest.raises(PublishError, match="answers differently|another state"):
        verify_package(folder, built)


def parts(folder: Path) -> list:
    """Every exporter's per-domain part, writing into `folder`."""
    return [exporter.part(folder) for exporter in exporters().values()]


def test_domains_published_side_by_side_in_worker_processes_are_the_ones_published_in_turn(out, tmp_path):
    run = read_run(out)
    in_turn = list(domain_parts(run, parts(tmp_path / "in_turn"), 0.1, workers=1))
    side_by_side = list(domain_parts(run, parts(tmp_path / "side_by_side"), 0.1, workers=2))
    assert side_by_side == in_turn  # each exporter's part (the dataset rows, the package's name), in name order
    assert [names for _, names in in_turn] == sorted(DOMAINS)
    assert [domain["domain"] for (_, domain), _ in in_turn] == sorted(DOMAINS)
    assert sorted(p.name for p in (tmp_path / "side_by_side").iterdir()) == sorted(DOMAINS)
    files = sorted(p.relative_to(tmp_path / "in_turn") for p in (tmp_path / "in_turn").rglob("*")
                   if p.is_file() and "__pycache__" not in p.parts)
    assert files == sorted(p.relative_to(tmp_path / "side_by_side") for p in (tmp_path / "side_by_side").rglob("*")
                           if p.is_file() and "__pycache__" not in p.parts)
    for path in files:
        assert (tmp_path / "side_by_side" / path).read_bytes() == (tmp_path / "in_turn" / path).read_bytes(), path


def test_a_package_a_worker_process_refuses_fails_the_publication(out, tmp_path):
    """A domain whose package answers differently fails publishing with the package's one-line
    reason, also when the packages are written and checked in worker processes."""
    broken = tmp_path / "out"
    for path in out.rglob("*"):
        if path.is_file() and not {"tau2", "hf", "__pycache__"} & set(path.relative_to(out).parts):
            target = broken / path.relative_to(out)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(path.read_bytes())
    tasks = broken / DOMAINS[1] / "tasks.jsonl"
    lines = tasks.read_text().splitlines()
    first = json.loads(lines[0])
    first["meta"]["final_state_hash"] = "0" * 64
    tasks.write_text("\n".join([json.dumps(first), *lines[1:]]) + "\n")
    with pytest.raises(PublishError, match=f"tau2/{DOMAINS[1]}: task .* ends in another state"):
        list(domain_parts(read_run(broken), parts(tmp_path / "packages"), 0.1, workers=2))


def test_a_publishing_worker_imports_neither_datasets_nor_pyarrow(out, tmp_path):
    """Workers build rows and packages; the parquet files are the parent's (`datasets` and pyarrow
    cost a worker ~0.9 s to import). The worker gets its call pickled, as the pool sends it."""
    call = tmp_path / "call.pickle"
    call.write_bytes(pickle.dumps((parts_of_domain, (read_run(out), DOMAINS[0], parts(tmp_path), 0.1))))
    script = (f"import pickle, sys; function, args = pickle.loads(open({str(call)!r}, 'rb').read()); "
              "print(function(*args)[1]); print(sorted(m for m in ('datasets', 'pyarrow') if m in sys.modules))")
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip().splitlines()[-2:] == [DOMAINS[0], "[]"]
