"""Live progress of LLM stages (issue 16): the ledger tells a watcher of every request and finished
item, the synthesizer plans each fan-out, and what the terminal and a Prefect run are shown."""

from __future__ import annotations

import io

from rich.console import Console

from llm_server import LLMTestServer
from toolscale.domains import Environment
from toolscale.flows import progress
from toolscale.flows.llm_progress import describe, watching
from toolscale.flows.terminal import showing_progress
from toolscale.pipeline.llm import LLMClient, LLMConfig, LLMSynthesizer, SynthesisOptions
from toolscale.pipeline.llm.config import Price
from toolscale.pipeline.llm.usage import Usage

SMALL = SynthesisOptions(intents=4, tasks_per_intent=2, populate_scale=0.1, rows_per_request=4, parents_per_request=4)


def test_the_ledger_tells_its_watcher_of_every_change_and_keeps_progress_out_of_the_report():
    heard = []
    usage = Usage("m", Price(input=1.0, output=3.0), watcher=lambda stage, snap: heard.append((stage, snap)))
    usage.plan("task", 0)  # nothing planned: no stage appears
    assert heard == [] and usage.report()["stages"] == {}
    usage.plan("task", 2)
    usage.answered("task", 1000, 500, estimated=False)
    usage.count("task", "retries")
    usage.finish("task")
    assert [s["finished"] for _, s in heard] == [0, 0, 0, 1]
    assert heard[-1] == ("task", {"planned": 2, "finished": 1, "requests": 2, "tokens": 1500, "cost_usd": 0.0025})
    assert "planned" not in usage.report()["stages"]["task"]  # the stored report keeps its shape
    assert describe({"stage": "task", **heard[-1][1]}) == "task 1/2 · 2 requests · 1.5k tokens · $0.00"
    assert describe({"stage": "design", "planned": 0, "finished": 0, "requests": 3, "tokens": 12345,
                     "cost_usd": 0.0}) == "design · 3 requests · 12.3k tokens"


class _Logger:
    def __init__(self):
        self.lines = []

    def info(self, message):
        self.lines.append(message)


def test_an_llm_stage_reports_answers_of_planned_requests_and_tokens_as_it_goes(monkeypatch, tmp_path):
    """Through a real local server: the tasks stage plans one item per candidate and finishes every
    one; the CLI's listeners hear each change and the Prefect run gets a closing line."""
    events = []
    listener = lambda domain, stage, info: events.append((domain, stage, info))  # noqa: E731
    published = []
    import prefect.artifacts

    monkeypatch.setattr(prefect.artifacts, "create_progress_artifact",
                        lambda share, key, description: published.append((key, share)) or "artifact-id")
    monkeypatch.setattr(prefect.artifacts, "update_progress_artifact",
                        lambda artifact, share, description: published.append((artifact, share)))
    with LLMTestServer() as server:
        config = LLMConfig(base_url=server.base_url, model="toolscale-test", backoff_s=0.01, timeout_s=10.0, cache_dir=None,
                           synthesis=SMALL)
        client = LLMClient(config)
        try:
            synth = LLMSynthesizer(config, seed=3, client=client)
            domain = synth.design("movie")
            rows = synth.populate(domain, 3)
            logger = _Logger()
            progress.subscribe(listener)
            try:
                with Environment.from_rows(domain, rows) as env, watching("movie", "tasks", synth, logger):
                    tasks, rejected = synth.tasks(domain, env, rows, 3)
            finally:
                progress.unsubscribe(listener)
            requests = server.stats.requests
        finally:
            client.close()
    live = [info["llm"] for domain, stage, info in events if stage == "tasks"]
    last = live[-1]
    assert last["stage"] == "task" and last["planned"] == len(tasks) + len(rejected) == last["finished"]
    assert [s["finished"] for s in live] == sorted(s["finished"] for s in live)  # counts only go up
    assert 0 < last["requests"] <= requests and last["tokens"] > 0, live
    assert logger.lines[-1] == f"movie tasks: {describe(last)}"
    assert published[0] == ("llm-tasks-movie", 0.0) and published[-1] == ("artifact-id", 100.0)


def test_a_run_written_to_a_file_prints_a_line_per_stage_and_no_bar(monkeypatch):
    from toolscale.flows import terminal

    clock = [100.0]
    monkeypatch.setattr(terminal.time, "monotonic", lambda: clock[0])
    out = io.StringIO()
    console = Console(file=out, force_terminal=False, width=60)
    snapshot = {"stage": "task", "planned": 4, "finished": 1, "requests": 2, "tokens": 900, "cost_usd": 0.0}
    with showing_progress(console, ["bank"]):
        for stage in ("design", "populate"):
            progress.emit("bank", stage, reused=True)  # reused stages: no line
        progress.emit("bank", "tasks", reused=False)
        progress.emit("bank", "tasks", llm=snapshot)  # within 10 s of the last line: not printed
        clock[0] += 11
        progress.emit("bank", "tasks", llm={**snapshot, "finished": 2})
        progress.emit("bank", "tasks", llm={**snapshot, "finished": 3})
        progress.emit("prefect", "notice", message="starting Prefect's local server")
        progress.emit("bank", "done", accepted=1234, reused=False)
    lines = out.getvalue().splitlines()
    assert lines == ["bank: tasks", "bank: tasks: llm task 2/4 · 2 requests · 0.9k tokens",
                     "prefect: starting Prefect's local server", "bank: 1,234 accepted"]
