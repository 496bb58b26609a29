"""The LLM gates: a reference agent tries each gated task k times with the tools and once without.

The agent is the scripted GoldAgent behind the OpenAI-compatible test server, so which tries succeed
is known in advance and the verdicts and pass^k can be checked exactly. Stages run as plain functions
(as in test_resume.py), without Prefect's server.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from llm_server import Faults, LLMTestServer
from test_resume import build as build_weather
from toolscale.domains.tasks import Rejection, Task
from toolscale.flows.generate import domain_entry
from toolscale.flows.plan import RunConfig, domain_work
from toolscale.quality.reference import ReferenceConfig, ReferenceUnavailable
from toolscale.flows.store import read_jsonl
from toolscale.agents.scoring import pass_hat
from toolscale.quality.agent_gates import Attempts, apply_reference
from toolscale.quality.report import markdown
from toolscale.agents.endpoints import EndpointConfig
from trainer_support import GoldAgent

DOMAIN = "school"


def build(config: RunConfig) -> list[str]:
    return build_weather(config, domain_work(DOMAIN, config))


@pytest.fixture(scope="module")
def gated(tmp_path_factory):
    """A finished run without a reference agent, and the tasks its gate stage passed on."""
    config = RunConfig(domains=[DOMAIN], out=tmp_path_factory.mktemp("run"), seed=2, scale=0.1)
    build(config)
    tasks = list(read_jsonl(domain_work(DOMAIN, config).artifact("gate") / "tasks.jsonl", Task))
    assert len(tasks) >= 20
    return config, tasks


def with_reference(gated, tmp_path: Path, server: LLMTestServer, trials: int = 3) -> RunConfig:
    config = gated[0]
    shutil.copytree(config.out, tmp_path / "out")
    reference = ReferenceConfig(agent=EndpointConfig(base_url=server.base_url, model="gold"), trials=trials)
    return config.model_copy(update={"out": tmp_path / "out", "reference": reference})


def outcome(config: RunConfig) -> tuple[list[Task], list[Rejection]]:
    solve = domain_work(DOMAIN, config).artifact("solve")
    return list(read_jsonl(solve / "tasks.jsonl", Task)), list(read_jsonl(solve / "rejected.jsonl", Rejection))


def test_only_the_reference_stage_and_the_export_rerun_and_pass_k_is_recorded(gated, tmp_path):
    tasks = gated[1]
    agent = GoldAgent(tasks, fail_rate=0.5, without_tools="decline")
    with LLMTestServer(fallback=agent) as server:
        config = with_reference(gated, tmp_path, server)
        assert build(config) == ["solve", "export"]  # the earlier stages do not depend on the reference agent
    accepted, rejected = outcome(config)
    solved = {t.id: sum(not agent.failing(t, trial) for trial in range(3)) for t in tasks}
    assert sorted(t.id for t in accepted) == sorted(i for i, n in solved.items() if n >= 1)
    assert rejected and {r.gate for r in rejected} == {"solvable"}
    assert all(r.reason.startswith("the reference agent (gold) solved it in 0 of 3 tries") for r in rejected)
    for task in accepted + [r.task for r in rejected]:
        record = task.meta.reference
        assert record.trials == 3 and record.solved == solved[task.id] and record.solved_without_tools is False
        assert record.pass_hat == {f"pass^{k}": round(pass_hat(record.solved, 3, k), 6) for k in (1, 2, 3)}
    exported = (config.out / DOMAIN / "tasks.jsonl").read_text().splitlines()
    assert len(exported) == len(accepted)
    summary = domain_entry(domain_work(DOMAIN, config))["reference"]
    records = [t.meta.reference for t in accepted + [r.task for r in rejected]]
    assert summary["tasks"] == len(tasks) and summary["model"] == "gold"
    assert summary["pass^1"] == round(sum(r.pass_hat["pass^1"] for r in records) / len(records), 3)
    text = markdown({"backend": "offline", "seed": 2, "scale": 0.1, "domains": {DOMAIN: domain_entry(
        domain_work(DOMAIN, config))}, "totals": {"accepted": 1, "candidates": 1, "domains": 1, "hardened": 0,
                                                  "hardened_share": 0.0, "tools": 1, "rows": 1}}, config.out)
    assert "## Reference agent" in text and f"| {DOMAIN} | gold | {len(tasks)} |" in text


def test_a_task_the_agent_answers_without_tools_is_rejected(gated, tmp_path):
    tasks = gated[1]
    with LLMTestServer(fallback=GoldAgent(tasks, without_tools="answer")) as server:
        build(config := with_reference(gated, tmp_path, server, trials=1))
    accepted, rejected = outcome(config)
    work = domain_work(DOMAIN, config)
    initial = work.env().state_hash()
    work.close()
    # an answer alone can only solve a task whose gold leaves the database as it was
    unchanged = {t.id for t in tasks if t.meta.final_state_hash == initial}
    assert unchanged and {r.task.id for r in rejected} == unchanged and {r.gate for r in rejected} == {"needs_tools"}
    assert accepted and all(t.meta.reference.solved == 1 and not t.meta.reference.solved_without_tools
                            for t in accepted)


@pytest.mark.parametrize("judge_answers", [True, False])
def test_a_judge_decides_the_solved_tries_of_tasks_with_nl_assertions(gated, tmp_path, judge_answers):
    tasks = gated[1]
    asserted = {t.id for t in tasks if t.evaluation_criteria.nl_assertions}
    assert asserted and len(asserted) < len(tasks)
    # the test server's judge passes every conversation; broken, its verdicts do not parse: a fail
    faults = Faults() if judge_answers else Faults(rate=1.0, kinds=("malformed_json",), stages=("judge",),
                                                   max_per_conversation=99)
    with LLMTestServer(fallback=GoldAgent(tasks, without_tools="decline"), faults=faults) as server:
        config = with_reference(gated, tmp_path, server, trials=1)
        judge = EndpointConfig(base_url=server.base_url, model="judge")
        config = config.model_copy(update={"reference": config.reference.model_copy(update={"judge": judge})})
        build(config)
        assert server.stats.by_stage["judge"] == len(asserted)  # one verdict per solved try of such a task
    accepted, rejected = outcome(config)
    if judge_answers:
        assert not rejected and len(accepted) == len(tasks)
    else:
        assert {r.task.id for r in rejected} == asserted and {r.gate for r in rejected} == {"solvable"}
        assert {t.id for t in accepted} == {t.id for t in tasks} - asserted


def test_an_unreachable_agent_decides_nothing_and_stores_nothing(gated, tmp_path):
    with LLMTestServer() as server:
        url = server.base_url
    config = with_reference(gated, tmp_path, type("Gone", (), {"base_url": url})())
    with pytest.raises(ReferenceUnavailable, match="does not answer"):
        build(config)
    work = domain_work(DOMAIN, config)
    assert not work.store.has("solve", work.keys["solve"])


def test_verdicts_from_attempts(gated):
    task = gated[1][0]
    accepted, _ = apply_reference([task], {task.id: Attempts([False, True, True, True], False)}, "m", min_solved=3)
    assert accepted and accepted[0].meta.reference.pass_hat == {"pass^1": 0.75, "pass^2": 0.5, "pass^3": 0.25,
                                                                  "pass^4": 0.0}
    assert accepted[0].meta.gates["solvable"].passed and accepted[0].meta.gates["needs_tools"].passed
    _, rejected = apply_reference([task], {task.id: Attempts([True, False, False, True], False)}, "m", min_solved=3)
    assert rejected[0].gate == "solvable" and "solved it in 2 of 4 tries (needs 3)" in rejected[0].reason
    _, rejected = apply_reference([task], {task.id: Attempts([True], True)}, "m")
    assert rejected[0].gate == "needs_tools"
    with pytest.raises(KeyError):
        apply_reference([task], {}, "m")
