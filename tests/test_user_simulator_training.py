"""Training with an LLM user simulator: the rollout opens with the simulator's message, the simulator
answers the policy's text turns until it says STOP or the turn limit is hit, and its turns carry no loss.

The simulated user is the real local OpenAI-compatible test server (tests/llm_server.py) answering as
`GoldAgent` does, except that it asks a follow-up question before it stops (`ChattyUser`), so user
turns land inside completions. The unit tests drive `run_rollouts` with a scripted policy; the last
test runs real GRPO steps of the cpu-smoke config through `toolscale train`.
"""

from __future__ import annotations

import json
import math
import re
import socket
from pathlib import Path
from typing import Any

import pytest
import yaml

from llm_server import LLMTestServer
from toolscale.trainer.config import ConfigError, check, load_config
from toolscale.agents.tasks import load_output
from toolscale.trainer.data import build_rows
from toolscale.agents.endpoints import ChatEndpoint, EndpointConfig
from toolscale.agents.episode import STOP, Episode, UserSimulator
from toolscale.trainer.rollout import ChatFormat, format_tool_call, run_rollouts, segments
from toolscale.trainer.tiny import build_tokenizer
from toolscale.agents.toolbox import SamplingConfig, ToolSampling, solo_instruction
from toolscale.trainer.train import tokenizer_corpus
from toolscale.trainer.warmup import final_answer
from trainer_support import GoldAgent, bank_output, read_tasks, toolscale

pytestmark = pytest.mark.usefixtures("cli_prefect_server")  # bank_output runs `toolscale generate`

CONFIGS = Path(__file__).resolve().parents[1] / "trainer" / "configs"
FOLLOW_UP = "Thanks. Could you say that once more, please?"


class ChattyUser:
    """GoldAgent as the simulated user, asking `follow_ups` follow-up questions before it stops.
    Counts the simulator requests it answers."""

    def __init__(self, gold: GoldAgent, follow_ups: int = 1) -> None:
        self.gold, self.follow_ups = gold, follow_ups
        self.user_requests = 0

    def __call__(self, body: dict[str, Any]) -> dict[str, Any] | None:
        messages = body["messages"]
        if messages[0]["role"] == "system" and messages[0]["content"].startswith("You are a user"):
            self.user_requests += 1
            asked = sum(1 for m in messages if m["role"] == "assistant" and m["content"] == FOLLOW_UP)
            if len(messages) > 2 and asked < self.follow_ups:  # past the opening: the simulator speaks as assistant
                return {"content": FOLLOW_UP}
        return self.gold(body)


@pytest.fixture(scope="module")
def out(tmp_path_factory):
    return bank_output(tmp_path_factory)


@pytest.fixture(scope="module")
def bank(out):
    return load_output(out, ["bank"])["bank"]


@pytest.fixture(scope="module")
def rows(bank):
    return build_rows({"bank": bank}, [], SamplingConfig(tools=ToolSampling(keep_probability=0.0)),
                      policy_max_chars=100)


@pytest.fixture(scope="module")
def fmt(rows):
    return ChatFormat(build_tokenizer(tokenizer_corpus(rows[:20]), 1024))


def server_for(out: Path, follow_ups: int) -> tuple[LLMTestServer, ChattyUser]:
    user = ChattyUser(GoldAgent(read_tasks(out)), follow_ups)
    return LLMTestServer(fallback=user), user


def simulator(server: LLMTestServer, task, price: float = 1.0) -> UserSimulator:
    return UserSimulator(ChatEndpoint(EndpointConfig(base_url=server.base_url, model="gold", price_in=price,
                                                     price_out=price)), task)


class Policy:
    """A scripted policy: for the episode whose prompt a context starts with, the text of its n-th turn
    (every earlier turn and every reply to it ended with one end-of-turn token)."""

    def __init__(self, fmt: ChatFormat, scripts: list[tuple[list[int], list[str]]]) -> None:
        self.fmt, self.scripts = fmt, scripts

    def __call__(self, contexts: list[list[int]]):
        eos = next(iter(self.fmt.eos_ids))
        out = []
        for context in contexts:
            prompt, turns = next((p, t) for p, t in self.scripts if context[: len(p)] == p)
            turn = sum(1 for token in context[len(prompt):] if token == eos) // 2
            out.append(self.fmt.tokenizer.encode(turns[min(turn, len(turns) - 1)], add_special_tokens=False) + [eos])
        return out, None


def split_by_mask(fmt: ChatFormat, ids: list[int], mask: list[int]) -> tuple[str, str]:
    """(the text that carries loss, the text that does not)."""
    trained = fmt.tokenizer.decode([t for t, m in zip(ids, mask) if m == 1])
    masked = fmt.tokenizer.decode([t for t, m in zip(ids, mask) if m == 0])
    return trained, masked


def test_user_turns_are_masked_out_and_the_users_stop_ends_the_episode(out, bank, rows, fmt):
    read, other = [r for r in rows if r.task.meta.kind == "read"][:2]
    answer = final_answer(read.task.evaluation_criteria.communicate_info)
    server, chatty = server_for(out, follow_ups=1)
    with server:
        episodes = [Episode(r.task, bank.domain, bank.env, r.spec, r.system, r.tools, user=simulator(server, r.task),
                            max_turns=10, seed=0) for r in (read, other)]
        assert episodes[0].messages[-1] == {"role": "user", "content": solo_instruction(read.task)}  # the opening
        turns = [format_tool_call(n, a) for n, a in read.task.gold_calls()] + [answer, answer]
        policy = Policy(fmt, [(fmt.prompt_ids(episodes[0].messages, episodes[0].tools), turns),
                              (fmt.prompt_ids(episodes[1].messages, episodes[1].tools), ["I do not know."])])
        batch = run_rollouts(episodes, fmt, policy, max_completion_tokens=4000, price_in=1.0, price_out=1.0,
                             workers=2)
    done, unsure = batch.stats
    assert done.finish == unsure.finish == "user_stop"
    assert done.user_turns == unsure.user_turns == 1 and done.turns == len(read.task.gold_calls()) + 2
    assert done.outcome == 1.0 and unsure.outcome == 0.0
    assert chatty.user_requests == 6  # per episode: the opening, the follow-up, the STOP
    # the simulator's tokens are priced, kept apart from the policy's and counted in the reward's cost
    assert done.user_cost > 0 and done.features()["cost"] == pytest.approx(done.cost + done.user_cost)
    # the opening is in the prompt; the follow-up is in the completion, masked out of the loss
    ids, mask = batch.completion_ids[0], batch.env_mask[0]
    assert solo_instruction(read.task) in fmt.tokenizer.decode(batch.prompt_ids[0])
    trained, masked = split_by_mask(fmt, ids, mask)
    assert FOLLOW_UP in masked and FOLLOW_UP not in trained
    assert trained.count(answer) == 2 and "<tool_response>" in masked
    whole = fmt.render(episodes[0].messages, episodes[0].tools).rstrip("\n")
    assert fmt.tokenizer.decode(batch.prompt_ids[0] + ids) == whole  # built by concatenation, never re-tokenized
    runs = segments(fmt, ids, mask)
    assert "".join(r["text"] for r in runs) == fmt.tokenizer.decode(ids)
    assert any(FOLLOW_UP in r["text"] and r["loss"] == 0 for r in runs)
    for ep in episodes:
        ep.close()


def test_the_turn_limit_ends_a_conversation_without_asking_the_user_again(out, bank, rows, fmt):
    row = next(r for r in rows if r.task.meta.kind == "read")
    server, chatty = server_for(out, follow_ups=100)  # never says STOP
    with server:
        ep = Episode(row.task, bank.domain, bank.env, row.spec, row.system, row.tools, user=simulator(server, row.task),
                     max_turns=3)
        policy = Policy(fmt, [(fmt.prompt_ids(ep.messages, ep.tools), ["I am not sure."])])
        batch = run_rollouts([ep], fmt, policy, max_completion_tokens=4000)
    stats = batch.stats[0]
    assert stats.finish == "max_turns" and stats.turns == 3 and stats.user_turns == 2
    assert chatty.user_requests == 3  # the opening and two follow-ups; none after the last turn
    trained, masked = split_by_mask(fmt, batch.completion_ids[0], batch.env_mask[0])
    assert masked.count(FOLLOW_UP) == 2 and trained.count("I am not sure.") == 3
    ep.close()


def test_an_opening_asked_for_in_advance_is_not_asked_again_and_stop_ends_the_episode(out, bank, rows):
    row = next(r for r in rows if r.task.meta.kind == "read")
    server, _ = server_for(out, follow_ups=0)
    with server:
        user = simulator(server, row.task)
        with Episode(row.task, bank.domain, bank.env, row.spec, row.system, row.tools, user=user,
                     opening="Hello, I need my balance.") as ep:
            assert ep.messages[-1]["content"] == "Hello, I need my balance."  # given: not asked again
            assert user.cost == 0.0
            assert ep.step({"content": "Let me check."}) == []
            assert ep.stats.finish == "user_stop" and ep.stats.user_turns == 0 and ep.stats.user_cost > 0
            assert all(STOP not in m.get("content", "") for m in ep.messages)  # the policy never sees it


def test_a_failing_simulator_masks_its_rollout_out_of_the_loss(out, bank, rows, fmt):
    read, other = [r for r in rows if r.task.meta.kind == "read"][:2]
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{probe.getsockname()[1]}/v1"
    server, _ = server_for(out, follow_ups=1)
    with server:
        episodes = [Episode(r.task, bank.domain, bank.env, r.spec, r.system, r.tools, user=simulator(server, r.task))
                    for r in (read, other)]
        episodes[0].user.endpoint = ChatEndpoint(EndpointConfig(base_url=dead, model="gold", timeout_s=2))
        policy = Policy(fmt, [(fmt.prompt_ids(ep.messages, ep.tools), ["I do not know."]) for ep in episodes])
        batch = run_rollouts(episodes, fmt, policy, max_completion_tokens=4000)
    failed, fine = batch.stats
    assert failed.finish == "user_error" and set(batch.env_mask[0]) == {0}
    assert fine.finish == "user_stop" and 1 in batch.env_mask[1]
    for ep in episodes:
        ep.close()


def test_the_user_setting_takes_an_endpoint_config_and_fits_both_shipped_configs():
    user = "user={base_url: 'http://127.0.0.1:8000/v1', model: Qwen/Qwen3-32B, price_in: 0.8, price_out: 0.8}"
    for name in ("cpu-smoke.yaml", "h100.yaml"):
        config = load_config(CONFIGS / name, [user])
        assert isinstance(config.user, EndpointConfig) and config.user.model == "Qwen/Qwen3-32B"
        assert check(config) == []
        assert load_config(CONFIGS / name).user is None  # shipped default: solo mode
    # the commented example in h100.yaml is a valid setting once uncommented
    block = re.search(r"^# user:.*\n(?:#   .*\n)+", (CONFIGS / "h100.yaml").read_text(), re.M).group(0)
    example = yaml.safe_load("\n".join(line[2:] for line in block.splitlines()))["user"]
    config = load_config(CONFIGS / "h100.yaml", [f"user={json.dumps(example)}"])
    assert config.user.model == "gpt-5" and config.user.price_out > 0 and check(config) == []
    with pytest.raises(ConfigError, match="user.model"):
        load_config(CONFIGS / "cpu-smoke.yaml", ["user={base_url: 'http://x/v1'}"])
    with pytest.raises(ConfigError, match="user.alias"):  # an endpoint, not an expert
        load_config(CONFIGS / "cpu-smoke.yaml", ["user={base_url: 'http://x/v1', model: m, alias: u}"])


@pytest.fixture(scope="module")
def trained(out, tmp_path_factory):
    """Two real GRPO steps of cpu-smoke.yaml with the simulated user served by the test server."""
    work = tmp_path_factory.mktemp("train-user")
    server, chatty = server_for(out, follow_ups=1)
    with server:
        user = {"base_url": server.base_url, "model": "gold", "price_in": 1.0, "price_out": 2.0}
        proc = toolscale("train", "--config", str(CONFIGS / "cpu-smoke.yaml"), "--set", f"data.path={out}",
                         "--set", f"output_dir={work / 'run'}", "--set", f"user={json.dumps(user)}",
                         "--set", "grpo.max_steps=2", "--set", "rollout.save_rollouts=8",
                         "--set", "rollout.concurrency=4", cwd=work)
        requests = server.stats.requests
    assert proc.returncode == 0, proc.stderr[-4000:]
    return work / "run", requests, chatty


def test_grpo_steps_with_a_simulated_user_complete_with_a_finite_loss(trained):
    run, requests, chatty = trained
    summary = json.loads((run / "summary.json").read_text())
    assert summary["global_steps"] == 2 and all(math.isfinite(x) for x in summary["loss"])
    assert requests == chatty.user_requests >= 2 * 8  # the simulator opened all 8 rollouts of each step
    steps = [s for s in map(json.loads, (run / "metrics.jsonl").read_text().splitlines()) if "loss" in s]
    assert len(steps) == 2
    assert all(s["reward/user_cost_usd"] > 0 and s["reward/cost_usd"] > s["reward/user_cost_usd"] for s in steps)
    assert any(s["rollout/user_turns"] > 0 for s in steps) and all(s["rollout/user_errors"] == 0 for s in steps)


def test_user_turns_appear_in_the_trained_rollouts_masked_out_of_the_loss(trained):
    from transformers import AutoTokenizer

    run, _, _ = trained
    tokenizer = AutoTokenizer.from_pretrained(run / "final")
    records = [json.loads(line) for line in (run / "rollouts.jsonl").read_text().splitlines()]
    assert len(records) == 2 * 8
    assert all("Hi! How can I help you today?" in r["prompt"] for r in records)  # the simulator opened them
    with_user = [r for r in records if r["user_turns"] > 0]
    assert with_user
    for record in with_user:
        ids, mask = record["completion_ids"], record["env_mask"]
        assert len(ids) == len(mask) and 1 in mask
        trained_text = tokenizer.decode([t for t, m in zip(ids, mask) if m == 1])
        masked_text = tokenizer.decode([t for t, m in zip(ids, mask) if m == 0])
        assert FOLLOW_UP in masked_text and FOLLOW_UP not in trained_text
        assert any(FOLLOW_UP in s["text"] and s["loss"] == 0 for s in record["segments"])
