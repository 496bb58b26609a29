"""Rollouts without a trainer: episodes in forked environments, the token-level loop, experts, the user.

The policy here is scripted (token ids made from text), the tools are the generated bank domain's,
and experts and the simulated user are a real local OpenAI-compatible server (tests/llm_server.py)
answering with gold actions.
"""

from __future__ import annotations

import json
from collections import Counter

import pytest

from llm_server import LLMTestServer
from toolscale.agents.tasks import load_output
from toolscale.trainer.data import build_rows
from toolscale.agents.endpoints import ChatEndpoint
from toolscale.agents.episode import Episode, UserSimulator
from toolscale.trainer.rollout import ChatFormat, format_tool_call, parse_hermes, run_rollouts
from toolscale.trainer.tiny import build_tokenizer
from toolscale.agents.toolbox import (ExpertConfig, ExpertSampling, RolloutSpec, SamplingConfig, ToolSampling,
                                       sample_spec, solo_instruction)
from toolscale.trainer.train import tokenizer_corpus
from toolscale.trainer.warmup import final_answer
from trainer_support import GoldAgent, bank_output

pytestmark = pytest.mark.usefixtures("cli_prefect_server")  # bank_output runs `toolscale generate`


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return load_output(bank_output(tmp_path_factory), ["bank"])


@pytest.fixture(scope="module")
def bank(data):
    return data["bank"]


@pytest.fixture(scope="module")
def rows(data):
    return build_rows(data, [], SamplingConfig(tools=ToolSampling(keep_probability=0.0)), policy_max_chars=100)


@pytest.fixture(scope="module")
def fmt(rows):
    return ChatFormat(build_tokenizer(tokenizer_corpus(rows[:20]), 1024))


def pick(rows, kind, min_actions=2):
    return next(r for r in rows if r.task.meta.kind == kind and len(r.task.gold_calls()) >= min_actions)


def episode(row, bank, **kw) -> Episode:
    return Episode(row.task, bank.domain, bank.env, row.spec, row.system, row.tools, **kw)


class Script:
    """A scripted policy: for the episode whose prompt a context starts with, the text of its n-th turn."""

    def __init__(self, fmt: ChatFormat, scripts: list[tuple[list[int], list[str]]], end_turns: bool = True):
        self.fmt, self.scripts, self.end_turns = fmt, scripts, end_turns

    def __call__(self, contexts):
        eos = next(iter(self.fmt.eos_ids))
        out = []
        for context in contexts:
            prompt, turns = next((p, t) for p, t in self.scripts if context[: len(p)] == p)
            turn = sum(1 for token in context[len(prompt):] if token == eos) // 2  # the turn's and its result's
            ids = self.fmt.tokenizer.encode(turns[turn], add_special_tokens=False)
            out.append(ids + [eos] if self.end_turns else ids)
        return out, None


def prompt_of(ep: Episode, fmt: ChatFormat) -> list[int]:
    return fmt.prompt_ids(ep.messages, ep.tools)


def test_hermes_parser_reads_every_call_and_keeps_malformed_ones():
    text = ('<think>plan</think>Let me look.\n' + format_tool_call("a", {"x": 1}) + "\n"
            + format_tool_call("b", {}) + '\n<tool_call>\n{"name": "c", "arguments": {oops}\n</tool_call>')
    message = parse_hermes(text)
    assert message["content"] == "Let me look."
    names = [c["function"]["name"] for c in message["tool_calls"]]
    assert names == ["a", "b", "c"]
    assert message["tool_calls"][0]["function"]["arguments"] == {"x": 1}
    assert isinstance(message["tool_calls"][2]["function"]["arguments"], str)  # unparseable: kept raw
    assert "tool_calls" not in parse_hermes("The balance is 5.")


def test_gold_script_runs_every_call_of_every_turn_and_scores_one(bank, rows, fmt):
    write, read = pick(rows, "write", 3), pick(rows, "read")
    episodes = [episode(write, bank), episode(read, bank)]
    gold = write.task.gold_calls()
    # the first turn makes two calls at once: both must run and count
    write_turns = ["\n".join(format_tool_call(n, a) for n, a in gold[:2])]
    write_turns += [format_tool_call(n, a) for n, a in gold[2:]]
    write_turns += [final_answer(write.task.evaluation_criteria.communicate_info)]
    read_turns = [format_tool_call(*read.task.gold_calls()[0]), "I do not know."]
    script = Script(fmt, [(prompt_of(episodes[0], fmt), write_turns), (prompt_of(episodes[1], fmt), read_turns)])
    before = bank.env.state_hash()
    batch = run_rollouts(episodes, fmt, script, max_completion_tokens=4000, price_in=1.0, price_out=2.0)
    done, failed = batch.stats
    assert done.outcome == 1.0 and done.db and done.communicate and done.finish == "answered"
    assert done.tool_calls == dict(Counter(n for n, _ in gold))
    assert done.turns == len(gold)  # two calls shared the first turn
    assert failed.outcome == 0.0 and not failed.communicate
    assert sum(failed.tool_calls.values()) == 1
    assert bank.env.state_hash() == before  # the writes happened in forks only
    assert done.policy_tokens == sum(batch.env_mask[0]) and done.cost > 0
    # the concatenated tokens are exactly the chat template's rendering of the whole conversation
    full = fmt.render(episodes[0].messages, episodes[0].tools)
    assert fmt.tokenizer.decode(batch.prompt_ids[0] + batch.completion_ids[0]) == full.rstrip("\n")
    # environment tokens (tool results) are masked out of the loss, model tokens are not
    ids, mask = batch.completion_ids[0], batch.env_mask[0]
    env_text = fmt.tokenizer.decode([t for t, m in zip(ids, mask) if m == 0])
    model_text = fmt.tokenizer.decode([t for t, m in zip(ids, mask) if m == 1])
    assert "<tool_response>" in env_text and "<tool_response>" not in model_text
    assert model_text.count("<tool_call>") == len(gold)
    for ep in episodes:
        ep.close()


def test_a_turn_cut_short_ends_the_episode_unexecuted(bank, rows, fmt):
    row = pick(rows, "read")
    ep = episode(row, bank)
    script = Script(fmt, [(prompt_of(ep, fmt), [format_tool_call(*row.task.gold_calls()[0])])], end_turns=False)
    stats = run_rollouts([ep], fmt, script, max_completion_tokens=4000).stats[0]
    assert stats.finish == "truncated" and stats.tool_calls == {} and stats.outcome == 0.0
    ep.close()


def test_the_completion_budget_is_never_exceeded(bank, rows, fmt):
    row = pick(rows, "read")
    ep = episode(row, bank)
    turns = [format_tool_call(*call) for call in row.task.gold_calls()] + ["done"]
    batch = run_rollouts([ep], fmt, Script(fmt, [(prompt_of(ep, fmt), turns)]), max_completion_tokens=60)
    assert len(batch.completion_ids[0]) <= 60
    assert batch.stats[0].finish in ("length", "truncated")
    ep.close()


def test_a_process_whose_episodes_ended_keeps_generating_in_step_with_the_others(bank, rows, fmt):
    row = pick(rows, "read")
    ep = episode(row, bank)
    script = Script(fmt, [(prompt_of(ep, fmt), ["I do not know."])])
    calls = []

    def generate(contexts):
        calls.append(len(contexts))
        return script(contexts)

    others = iter([True, True, True, False])  # another process needs three more turns
    batch = run_rollouts([ep], fmt, generate, 4000, others_active=lambda mine: next(others))
    assert calls == [1, 1, 1] and batch.stats[0].turns == 1  # one real turn, two throwaway calls
    ep.close()


def test_tools_not_offered_are_errors_and_run_nothing(bank, rows):
    row = pick(rows, "write")
    offered = RolloutSpec(task_id=row.task.id, domain="bank", tools=[row.task.gold_calls()[0][0]])
    with Episode(row.task, bank.domain, bank.env, offered, row.system, row.tools) as ep:
        name, arguments = row.task.gold_calls()[-1]
        observation = ep.step({"content": "", "tool_calls": [{"function": {"name": name, "arguments": arguments}}]})
        assert "error" in json.loads(observation[0]["content"])
        bad = ep.step({"content": "", "tool_calls": [{"function": {"name": offered.tools[0], "arguments": "{x"}}]})
        assert "not valid JSON" in bad[0]["content"]
        stats = ep.finish("test")
    assert stats.tool_errors == 2 and stats.tool_calls == {offered.tools[0]: 1}


@pytest.fixture(scope="module")
def gold_server(bank):
    with LLMTestServer(fallback=GoldAgent(bank.tasks)) as server:
        yield server


def test_call_expert_runs_the_experts_actions_and_prices_them(bank, rows, gold_server):
    expert = ExpertConfig(alias="expert-1", model="gold", base_url=gold_server.base_url, price_in=2.0,
                          price_out=8.0, latency_s=3.0)
    row = pick(rows, "write", 3)
    spec = sample_spec(row.task, bank.domain, [expert], SamplingConfig(experts=ExpertSampling(price_jitter=(1, 1))))
    endpoint = ChatEndpoint(expert)
    with Episode(row.task, bank.domain, bank.env, spec, row.system, row.tools,
                 experts={"expert-1": endpoint}) as ep:
        calls = len(row.task.gold_calls())
        for turn in range(calls):
            result = ep.step({"content": "", "tool_calls": [
                {"function": {"name": "call_expert", "arguments": {"expert": "expert-1"}}}]})
            assert json.loads(result[0]["content"])["actions"][0]["name"] == row.task.gold_calls()[turn][0]
        wrong = ep.step({"content": "", "tool_calls": [{"function": {"name": "call_expert",
                                                                     "arguments": {"expert": "expert-9"}}}]})
        assert "unknown expert" in wrong[0]["content"]
        ep.step({"content": final_answer(row.task.evaluation_criteria.communicate_info)})
        stats = ep.finish("")
    assert stats.outcome == 1.0
    assert stats.expert_calls == {"expert-1": calls}
    assert stats.tool_calls == dict(Counter(n for n, _ in row.task.gold_calls()))  # the expert's calls count too
    assert stats.latency == pytest.approx(3.0 * calls)
    assert stats.cost > 0 and stats.tool_errors == 1


def test_with_a_simulated_user_the_conversation_ends_when_the_user_stops(bank, rows, gold_server):
    row = pick(rows, "read")
    user = UserSimulator(ChatEndpoint(ExpertConfig(alias="user", model="gold", base_url=gold_server.base_url)),
                         row.task)
    with Episode(row.task, bank.domain, bank.env, row.spec, row.system, row.tools, user=user) as ep:
        assert ep.messages[-1] == {"role": "user", "content": solo_instruction(row.task)}
        for name, arguments in row.task.gold_calls():
            ep.step({"content": "", "tool_calls": [{"function": {"name": name, "arguments": arguments}}]})
        assert ep.step({"content": final_answer(row.task.evaluation_criteria.communicate_info)}) == []
        assert ep.done and ep.stats.finish == "user_stop" and ep.stats.outcome == 1.0


def test_offers_are_seeded_and_always_include_the_gold_tools(bank):
    experts = [ExpertConfig(alias=f"expert-{i}", model="m", base_url="http://127.0.0.1:9/v1", price_in=1.0,
                            price_out=2.0) for i in range(3)]
    sampling = SamplingConfig(seed=1, tools=ToolSampling(keep_probability=0.3),
                              experts=ExpertSampling(keep_probability=0.0, min_experts=2, price_jitter=(0.5, 2.0)))
    task = bank.tasks[0]
    first = sample_spec(task, bank.domain, experts, sampling)
    assert first == sample_spec(task, bank.domain, experts, sampling)
    assert {n for n, _ in task.gold_calls()} <= set(first.tools)
    assert [e.alias for e in first.experts] == ["expert-0", "expert-1"]
    assert first.preference["outcome"] == 1.0 and 0 <= first.preference["cost"] <= 0.5
    other = sample_spec(task, bank.domain, experts, sampling.model_copy(update={"seed": 2}))
    assert (other.experts, other.preference) != (first.experts, first.preference)


def test_qwen3_template_is_used_through_trls_prefix_preserving_version():
    from trl.chat_template_utils import get_training_chat_template, qwen3_chat_template

    qwen3 = build_tokenizer(["hello world"] * 5, 300)
    qwen3.chat_template = qwen3_chat_template
    with pytest.raises(ValueError, match="prefix-preserving"):
        ChatFormat(qwen3).suffix_ids([{"role": "tool", "name": "x", "content": "{}"}])
    fixed = ChatFormat(qwen3, {"enable_thinking": True}, get_training_chat_template(qwen3))
    suffix = qwen3.decode(fixed.suffix_ids([{"role": "tool", "name": "x", "content": "{}"}]))
    assert suffix == "\n<|im_start|>user\n<tool_response>\n{}\n</tool_response><|im_end|>\n<|im_start|>assistant\n"
