"""The LLM client layer against a real local OpenAI-compatible server (tests/llm_server.py):
retries in one layer, the bound on requests in flight, the response cache, usage and cost."""

from __future__ import annotations

import asyncio

import pytest

from llm_server import Faults, LLMTestServer
from toolscale.pipeline.llm import LLMClient, LLMConfig, LLMRequestError, Usage
from toolscale.pipeline.llm.config import Price


def ask(n: int) -> list[dict[str, str]]:
    return [{"role": "user", "content": f"question {n}"}]


@pytest.fixture
def make_client(tmp_path):
    clients = []

    def make(server: LLMTestServer, cache: bool = False, **options) -> LLMClient:
        options = {"backoff_s": 0.01, "timeout_s": 5.0, **options}
        config = LLMConfig(base_url=server.base_url, model="toolscale-test",
                           cache_dir=tmp_path / "cache" if cache else None, **options)
        clients.append(LLMClient(config))
        return clients[-1]

    yield make
    for client in clients:
        client.close()


def complete_all(client: LLMClient, usage: Usage, numbers) -> list:
    async def run():
        return await asyncio.gather(*(client.complete(ask(n), stage="test", usage=usage) for n in numbers),
                                    return_exceptions=True)
    return client.run(run())


def test_429_500_and_timeouts_are_retried_until_every_request_is_answered(make_client):
    # a client timeout well above an answer's time on a busy machine (0.25 s was not: a slow answer was
    # one retry more than the faults), and a stalled answer well above it
    faults = Faults(rate=0.5, kinds=("429", "500", "timeout"), timeout_s=2.5)
    with LLMTestServer(faults=faults) as server:
        client = make_client(server, timeout_s=1.0, max_retries=10)
        usage = Usage("toolscale-test", None)
        answers = complete_all(client, usage, range(20))
        assert all(not isinstance(a, Exception) for a in answers)
        stage = usage.report()["stages"]["test"]
        assert sum(server.stats.faults.values()) > 0
        assert stage["retries"] == sum(server.stats.faults.values())  # one layer: one retry per fault
        assert server.stats.requests == 20 + stage["retries"]


def test_a_request_that_keeps_failing_gives_up_after_max_retries_and_is_not_cached(make_client):
    with LLMTestServer(faults=Faults(rate=1.0, kinds=("500",))) as server:
        client = make_client(server, cache=True, max_retries=3)
        usage = Usage("toolscale-test", None)
        with pytest.raises(LLMRequestError, match="after 4 attempts"):
            client.run(client.complete(ask(1), stage="test", usage=usage))
        assert server.stats.requests == 4
        assert len(client.cache) == 0
        assert usage.report()["stages"]["test"]["failed_requests"] == 1


def test_a_refused_request_is_not_retried(make_client):
    with LLMTestServer(faults=Faults(rate=1.0, kinds=("400",))) as server:
        client = make_client(server, max_retries=5)
        with pytest.raises(LLMRequestError) as error:
            client.run(client.complete(ask(1), stage="test"))
        assert error.value.status == 400
        assert server.stats.requests == 1


def test_a_cached_answer_is_replayed_without_a_request(make_client):
    with LLMTestServer() as server:
        first = make_client(server, cache=True)
        answer = first.run(first.complete(ask(7), stage="test"))
        second = make_client(server, cache=True)  # a new process would see the same cache directory
        usage = Usage("toolscale-test", None)
        again = second.run(second.complete(ask(7), stage="test", usage=usage))
        assert server.stats.requests == 1
        assert again.content == answer.content and again.cached
        assert usage.report()["stages"]["test"]["cache_hits"] == 1


def test_requests_in_flight_never_exceed_the_limit_and_fill_it(make_client):
    with LLMTestServer(latency=0.2) as server:
        client = make_client(server, max_in_flight=4)
        answers = complete_all(client, Usage("m", None), range(16))
    assert all(not isinstance(a, Exception) for a in answers)
    # counted by the server, not timed: a busy machine stretches any wall-clock bound
    assert server.stats.max_in_flight == 4


def test_identical_requests_in_flight_share_one_answer(make_client):
    with LLMTestServer(latency=0.1) as server:
        client = make_client(server)
        answers = complete_all(client, Usage("m", None), [3, 3, 3])
    assert server.stats.requests == 1
    assert len({a.content for a in answers}) == 1


def test_usage_counts_tokens_and_prices_them_per_stage(make_client):
    with LLMTestServer() as server:
        client = make_client(server)
        usage = Usage("toolscale-test", Price(input=2.0, output=10.0))
        answer = client.run(client.complete(ask(1), stage="design", usage=usage))
    report = usage.report()
    design = report["stages"]["design"]
    assert design["prompt_tokens"] == answer.prompt_tokens > 0
    assert design["cost_usd"] == pytest.approx((answer.prompt_tokens * 2 + answer.completion_tokens * 10) / 1e6)
    assert report["totals"]["requests"] == 1 and report["priced"]


def test_a_server_without_structured_outputs_gets_plain_requests(make_client):
    with LLMTestServer(structured_outputs=False) as server:
        client = make_client(server)
        answer = client.run(client.complete(ask(1), stage="test", schema=("Thing", {"type": "object"})))
    assert answer.content
    assert client.response_format == "none"
    assert server.stats.faults["response_format_refused"] == 2  # json_schema, then json_object
