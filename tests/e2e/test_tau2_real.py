"""Exported packages in the real τ²-bench: registered as their README says, every test-split gold 1.0.

`toolscale generate --domains bank,weather --scale 0.1` writes the packages; the unpacked τ² source
(tests/tau2_install.sh keeps it beside its virtualenv, in `VENV/tau2-src`) is copied into tmp_path and
each package is installed in the copy by following its README.md literally: the folder copied to
src/tau2/domains/NAME, the README's python block appended to src/tau2/registry.py. Then, in τ²'s
virtualenv (never toolscale's):

- bench/tau2_gold.py --registered scores every test-split task's gold trajectory with τ²'s own DB and
  COMMUNICATE evaluators, the domain and tasks as τ²'s registry has them;
- `python -m tau2.cli run --task-split-name test` runs each task as a simulation: the agent is
  tests/tau2_real.py's scripted one, which sends the same gold turns (registered by two lines appended
  to the copy's registry.py, tests/ on PYTHONPATH); the user is τ²'s own UserSimulator, its litellm
  pointed at tests/llm_server.py's server in this process, which opens the conversation and says
  ###STOP### once the agent has answered. τ²'s user prompt reads data/tau2/user_simulator/, which the
  vendored archive lacks (no data files), so the test writes a one-paragraph stand-in there.

Every reward must be exactly 1.0. Needs TOOLSCALE_TAU2_PYTHON (tests/tau2_install.sh makes the
virtualenv and prints its python; CI runs it); skipped without.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: the shared helpers

from llm_server import LLMTestServer  # noqa: E402
from trainer_support import toolscale  # noqa: E402

PYTHON_VARIABLE = "TOOLSCALE_TAU2_PYTHON"
ROOT = Path(__file__).resolve().parents[2]
DOMAINS = ("bank", "weather")
USER_MODEL = "openai/toolscale-user"  # litellm's OpenAI provider, at the test server's api_base
OPENING = "Hello, I need some help, please."
GUIDELINES = ("You play a customer who contacts a customer service agent. Follow the instructions below; "
              "when your request is done, say ###STOP###.<PERSONA_GUIDELINES>\n")


def tau2_python() -> str | None:
    return os.environ.get(PYTHON_VARIABLE) or None


pytestmark = pytest.mark.skipif(tau2_python() is None, reason=f"{PYTHON_VARIABLE} is not set (tests/tau2_install.sh)")


def readme_install(readme: str, name: str) -> str:
    """The lines the README's "In τ²-bench" section says to append to registry.py, after checking
    that it says where the folder goes, where the lines go, and what τ²'s environment needs."""
    section = readme.split("## In τ²-bench", 1)[1].split("\n## ", 1)[0]
    said = " ".join(section.split())
    assert f"Copy this folder to `src/tau2/domains/{name}/`" in said, section
    assert "append these lines to the end of `src/tau2/registry.py`" in said, section
    assert "pip install RestrictedPython" in said, section
    blocks = re.findall(r"```python\n(.*?)```", section, re.S)
    assert len(blocks) == 1, section
    return blocks[0]


def play_user(body: dict) -> dict:
    """τ²'s UserSimulator's side (roles flipped: the user speaks as `assistant`): an opening line,
    then, once the agent has answered, the stop word."""
    if any(m["role"] == "assistant" for m in body["messages"]):
        return {"content": "Thank you, that is all. ###STOP###"}
    return {"content": OPENING}


def run_tau2(tree: dict, *args: str, timeout: int = 300) -> subprocess.CompletedProcess:
    return subprocess.run([tau2_python(), *args], cwd=tree["root"], env=tree["env"], capture_output=True, text=True,
                          timeout=timeout)


@pytest.fixture(scope="module")
def tree(tmp_path_factory) -> dict:
    work = tmp_path_factory.mktemp("tau2-real")
    start = time.perf_counter()
    proc = toolscale("generate", "--domains", ",".join(DOMAINS), "--scale", "0.1", "--out", str(work / "out"), cwd=work)
    assert proc.returncode == 0, proc.stderr[-3000:]
    generated_s = time.perf_counter() - start
    source = Path(tau2_python()).parent.parent / "tau2-src"  # the venv's folder, not the python's target
    assert (source / "src" / "tau2" / "registry.py").exists(), f"{source}: run tests/tau2_install.sh"
    root = work / "tau2-bench"
    shutil.copytree(source, root, ignore=shutil.ignore_patterns("data", "__pycache__"))
    registry = root / "src" / "tau2" / "registry.py"
    splits, reasons = {}, {}
    for name in DOMAINS:
        package = work / "out" / "tau2" / name
        shutil.copytree(package, root / "src" / "tau2" / "domains" / name)
        lines = readme_install((package / "README.md").read_text(encoding="utf-8"), name)
        registry.write_text(registry.read_text(encoding="utf-8") + "\n" + lines, encoding="utf-8")
        splits[name] = json.loads((package / "split_tasks.json").read_text(encoding="utf-8"))["test"]
        assert splits[name], f"{name} has no test-split task at this scale"
        reasons.update({t["id"]: t["user_scenario"]["instructions"]["reason_for_call"]
                        for t in json.loads((package / "tasks.json").read_text(encoding="utf-8"))
                        if t["id"] in splits[name]})
    registry.write_text(registry.read_text(encoding="utf-8")
                        + "\nfrom tau2_real import register as toolscale_register  # the test's scripted agent\n"
                        + "toolscale_register(registry)\n", encoding="utf-8")
    guidelines = root / "data" / "tau2" / "user_simulator" / "simulation_guidelines.md"
    guidelines.parent.mkdir(parents=True)
    guidelines.write_text(GUIDELINES, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root / "src"), str(ROOT / "tests")]),
           "TAU2_DATA_DIR": str(root / "data"), "LITELLM_LOCAL_MODEL_COST_MAP": "True", "LOGURU_LEVEL": "WARNING",
           "OPENAI_API_KEY": "unused"}
    env.pop("PYTHONHOME", None)
    return {"root": root, "env": env, "splits": splits, "reasons": reasons, "generated_s": generated_s,
            "packages": work / "out" / "tau2"}


def test_without_tau2_a_package_warns_that_it_runs_on_stand_ins(tree):
    from toolscale.pipeline.exporters.tau2 import import_package

    with pytest.warns(UserWarning, match="bank package runs on its stand-ins for τ²-bench"):
        package = import_package(tree["packages"] / "bank")
    assert package.compat.TAU2 is False


def test_every_test_split_gold_scores_1_in_tau2s_own_evaluators(tree, capsys):
    rewards_file = tree["root"] / "gold-rewards.json"
    start = time.perf_counter()
    proc = run_tau2(tree, str(ROOT / "bench" / "tau2_gold.py"), "--registered", ",".join(DOMAINS), "--split", "test",
                    "--rewards", str(rewards_file))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "stand-ins" not in proc.stderr  # with τ² the packages run on τ²'s classes
    rewards = json.loads(rewards_file.read_text())
    assert sorted(rewards) == sorted(i for ids in tree["splits"].values() for i in ids)
    assert all(r == 1.0 for r in rewards.values()), rewards
    with capsys.disabled():
        print(f"\nτ²-bench evaluators, test split (generated in {tree['generated_s']:.0f}s, scored in "
              f"{time.perf_counter() - start:.0f}s):\n{proc.stdout.strip()}\n" + _table(rewards))


def test_tau2_run_with_a_scripted_agent_scores_every_test_task_1(tree, capsys):
    lines = []
    with LLMTestServer(fallback=play_user) as server:
        user_args = json.dumps({"api_base": server.base_url, "api_key": "unused", "temperature": 0.0})
        for name in DOMAINS:
            start = time.perf_counter()
            proc = run_tau2(tree, "-m", "tau2.cli", "run", "--domain", name, "--task-split-name", "test",
                            "--agent", "toolscale_gold", "--user", "user_simulator", "--user-llm", USER_MODEL,
                            "--user-llm-args", user_args, "--save-to", f"{name}-gold", "--max-concurrency", "2",
                            "--max-retries", "0", "--log-level", "WARNING")
            assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
            results = json.loads((tree["root"] / "data" / "simulations" / f"{name}-gold" / "results.json").read_text())
            runs = {s["task_id"]: s for s in results["simulations"]}
            assert sorted(runs) == sorted(tree["splits"][name]), proc.stdout[-2000:]
            rewards = {task: run["reward_info"]["reward"] for task, run in runs.items()}
            bad = {t: (r["reward_info"], r["termination_reason"]) for t, r in runs.items() if rewards[t] != 1.0}
            assert not bad, bad
            for run in runs.values():  # the gold, call for call, then the user's stop word
                assert run["termination_reason"] == "user_stop"
                assert all(check["action_match"] for check in run["reward_info"]["action_checks"])
            lines.append(f"{name}: tau2 run, {len(runs)} test tasks, all 1.0 in {time.perf_counter() - start:.0f}s\n"
                         + _table(rewards))
        # two user turns a task, each prompted with τ²'s user system prompt and that task's instructions
        assert server.stats.requests == 2 * len(tree["reasons"])
        prompts = [body["messages"][0]["content"] for body in server.bodies]
        assert all(GUIDELINES.split("<")[0] in prompt for prompt in prompts)
        for reason in tree["reasons"].values():
            assert sum(reason.splitlines()[0] in prompt for prompt in prompts) >= 2, reason
    with capsys.disabled():
        print("\n" + "\n".join(lines))


def _table(rewards: dict) -> str:
    return "\n".join(f"  {task}: {reward}" for task, reward in sorted(rewards.items()))
