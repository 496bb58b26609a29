"""A small OpenAI-compatible server for tests and benchmarks, answering toolscale's LLM stages.

`LLMTestServer` runs FastAPI + uvicorn in a thread on a free loopback port: `POST /v1/chat/completions`
answers each toolscale stage with valid artifacts (tests/llm_answers.py), `GET /v1/models`, and
`GET /stats` for what it saw. A `fallback(body) -> message dict | None` answers other prompts (e.g.
an agent's turns); without one, they get `{"ok": true}`.

`structured_outputs=False` refuses any `response_format` with a 400, as servers without structured
outputs do. Faults: with `Faults(rate=r)` a request is faulted with probability r, decided by a
hash of the request body and how often that body was seen, so runs are reproducible and a retry
of a faulted request may pass. Transport faults (429, 500, a timeout) answer no content; so does
"400", a refusal that is not retried (not among the default kinds: it loses the request on
purpose). Content faults answer a broken artifact: malformed JSON, a schema-invalid object, a
hallucinated tool name, or tools that do not compile. At most `max_per_conversation` content
faults hit one conversation (a prompt and its repair rounds), so a client that repairs loses
nothing. Two design kinds, not among the defaults, replay what a capable model wrote in the audit
(notes/audit-2026-12-01/llm_real.md): "bad_gen_hints" gives three tables a column whose template
cannot fill it (all three at once, as that model's first answer had them), "typed_templates" adds
the audit's templates that print their numbers and booleans as text (which populate converts); a
task kind, "unsaid_argument", drops what the user says, so the gold uses values no user told; another,
"literal_is_gold", makes a rule-testing task's naive calls the gold's last call, so the literal
request keeps the rule it should break and ends in the gold's state (the policy gate refuses it).
`bodies` keeps every request body, for tests that read the repair prompts.

Run it by hand: `python tests/llm_server.py --port 8011 [--latency 0.05] [--fault-rate 0.3]`.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

import llm_answers

TRANSPORT_FAULTS = ("429", "500", "timeout")
CONTENT_FAULTS = ("malformed_json", "schema_invalid", "hallucinated_tool", "bad_tool_source")
ALL_FAULTS = TRANSPORT_FAULTS + CONTENT_FAULTS
DESIGN_FAULTS = ("bad_gen_hints", "typed_templates")
# The audit's second run (llm_real2.md): a task whose gold replays but uses values the user never
# says (its model paraphrased a problem description); the realizability gate rejects it.
TASK_FAULTS = ("unsaid_argument", "literal_is_gold")
# A number column whose template prints through blocks, a text column given a number, a boolean
# given the strings 'true'/'false': the three the audit's model needed three repair rounds for.
AUDIT_TEMPLATES = [
    {"name": "audit_code", "type": "string", "nullable": True, "gen": {"template": "{{ 3001 + seq * 7 }}"}},
    {"name": "audit_fee", "type": "number", "nullable": True,
     "gen": {"template": "{%- set base = 15.0 -%}{%- if seq > 2 -%}{{ base }}{%- else -%}2.5{%- endif -%}"}},
    {"name": "audit_renews", "type": "boolean", "nullable": True,
     "gen": {"template": "{{ 'true' if seq % 2 else 'false' }}"}},
]
# What no conversion can save, one column in each of three tables.
BAD_TEMPLATES = [
    {"name": "bad_flag", "type": "boolean", "nullable": True, "gen": {"template": "{{ 'maybe' }}"}},
    {"name": "bad_fee", "type": "number", "nullable": True, "gen": {"template": "{% if true %}about 15{% endif %}"}},
    {"name": "bad_count", "type": "integer", "nullable": True, "gen": {"template": "{{ unknown_name + 1 }}"}},
]


@dataclass
class Faults:
    rate: float = 0.0
    kinds: tuple[str, ...] = ALL_FAULTS
    seed: int = 0
    max_per_conversation: int = 2
    timeout_s: float = 2.0  # how long a 'timeout' fault stalls before answering
    stages: tuple[str, ...] | None = None  # fault only these stages' requests (None: all)


@dataclass
class Stats:
    requests: int = 0
    answered: int = 0
    by_stage: Counter = field(default_factory=Counter)
    faults: Counter = field(default_factory=Counter)
    in_flight: int = 0
    max_in_flight: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {"requests": self.requests, "answered": self.answered, "by_stage": dict(self.by_stage),
                "faults": dict(self.faults), "max_in_flight": self.max_in_flight}


def _digest(*parts: object) -> int:
    return int.from_bytes(hashlib.blake2b("/".join(map(str, parts)).encode(), digest_size=8).digest(), "big")


def _with_columns(answer: dict[str, Any], columns: list[dict[str, Any]], spread: bool) -> str:
    """The design with `columns` added to its tables that get rows: all to the first, or one each."""
    tables = [dict(t) for t in answer["tables"]]
    generated = [t for t in tables if t.get("rows") or t.get("per")]
    for i, column in enumerate(columns):
        target = generated[i % len(generated)] if spread else generated[0]
        target["columns"] = [*target["columns"], column]
    return json.dumps({**answer, "tables": tables})


def corrupt(kind: str, stage: str, answer: dict[str, Any]) -> str:
    """The answer broken the way `kind` says (a kind that does not fit the stage breaks the schema)."""
    text = json.dumps(answer)
    if kind == "bad_gen_hints" and stage == "design":
        return _with_columns(answer, BAD_TEMPLATES, spread=True)
    if kind == "typed_templates" and stage == "design":
        return _with_columns(answer, AUDIT_TEMPLATES, spread=False)
    if kind == "malformed_json":
        return text[: max(1, len(text) // 2)]
    if kind == "hallucinated_tool" and stage == "task" and answer.get("actions"):
        actions = [{**answer["actions"][0], "name": "lookup_everything"}, *answer["actions"][1:]]
        return json.dumps({**answer, "actions": actions})
    if kind == "hallucinated_tool" and stage == "harden":
        task = answer["task"]
        return json.dumps({**answer, "task": {**task, "actions": [{**task["actions"][0], "name": "lookup_everything"},
                                                                  *task["actions"][1:]]}})
    if kind == "hallucinated_tool" and stage == "intents":
        first = answer["intents"][0]
        return json.dumps({"intents": [{**first, "tools": [*first["tools"], "teleport_customer"]},
                                       *answer["intents"][1:]]})
    if kind == "unsaid_argument" and stage == "task" and answer.get("actions"):
        return json.dumps({**answer, "known_info": "", "task_instructions": "Ask the agent to sort it out."})
    if kind == "literal_is_gold" and stage == "task":  # a task that tests no rule is left as it is
        return json.dumps({**answer, "naive": answer["actions"][-1:]} if answer.get("naive") else answer)
    if kind == "bad_tool_source" and stage == "tools":
        return json.dumps({"source": "import os\n\n" + answer["source"]})
    return json.dumps({"unexpected_field": True, **{k: v for k, v in list(answer.items())[1:]}})


class LLMTestServer:
    def __init__(self, latency: float = 0.0, faults: Faults | None = None,
                 fallback: Callable[[dict[str, Any]], dict[str, Any] | None] | None = None,
                 structured_outputs: bool = True) -> None:
        self.latency = latency
        self.structured_outputs = structured_outputs
        self.faults = faults or Faults()
        self.fallback = fallback
        self.stats = Stats()
        self.bodies: list[dict[str, Any]] = []
        self._seen: Counter = Counter()
        self._conversation_faults: Counter = Counter()
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self.base_url = ""
        self.app = self._build_app()

    def _fault_for(self, body: dict[str, Any], first_prompt: str, stage: str) -> str | None:
        if self.faults.stages is not None and stage not in self.faults.stages:
            return None
        key = hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()
        attempt = self._seen[key]
        self._seen[key] += 1
        roll = _digest(self.faults.seed, key, attempt)
        if not self.faults.kinds or (roll % 10_000) / 10_000 >= self.faults.rate:
            return None
        kind = self.faults.kinds[(roll >> 20) % len(self.faults.kinds)]
        if kind in CONTENT_FAULTS + DESIGN_FAULTS + TASK_FAULTS:
            conversation = hashlib.sha256(first_prompt.encode()).hexdigest()
            if self._conversation_faults[conversation] >= self.faults.max_per_conversation:
                return None
            self._conversation_faults[conversation] += 1
        return kind

    def _reply(self, body: dict[str, Any], content: str) -> dict[str, Any]:
        prompt_chars = sum(len(m.get("content") or "") for m in body.get("messages", []))
        return {"id": f"chatcmpl-{self.stats.requests}", "object": "chat.completion", "created": int(time.time()),
                "model": body.get("model", "test"),
                "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                             "finish_reason": "stop"}],
                "usage": {"prompt_tokens": prompt_chars // 4, "completion_tokens": len(content) // 4,
                          "total_tokens": prompt_chars // 4 + len(content) // 4}}

    def _build_app(self) -> FastAPI:
        app = FastAPI()

        @app.get("/v1/models")
        async def models() -> dict[str, Any]:
            return {"object": "list", "data": [{"id": "toolscale-test", "object": "model", "owned_by": "tests"}]}

        @app.get("/stats")
        async def stats() -> dict[str, Any]:
            return self.stats.as_dict()

        @app.post("/v1/chat/completions")
        async def complete(request: Request):
            body = await request.json()
            self.bodies.append(body)
            self.stats.requests += 1
            self.stats.in_flight += 1
            self.stats.max_in_flight = max(self.stats.max_in_flight, self.stats.in_flight)
            try:
                return await self._complete(body)
            finally:
                self.stats.in_flight -= 1

        return app

    async def _complete(self, body: dict[str, Any]):
        if self.latency:
            await asyncio.sleep(self.latency)
        if not self.structured_outputs and body.get("response_format", {}).get("type", "text") != "text":
            self.stats.faults["response_format_refused"] += 1
            return JSONResponse({"error": {"message": "response_format is not supported by this server",
                                           "type": "invalid_request_error"}}, status_code=400)
        users = [m.get("content") or "" for m in body.get("messages", []) if m.get("role") == "user"]
        first = users[0] if users else ""
        request = llm_answers.sections(first).get("Request")
        stage = request.get("stage", "other") if isinstance(request, dict) else "other"
        kind = self._fault_for(body, first, stage)
        if kind:
            self.stats.faults[kind] += 1
        if kind in ("429", "500", "400"):
            message = {"429": "rate limited", "500": "internal error", "400": "bad request"}[kind]
            return JSONResponse({"error": {"message": f"injected fault: {message}", "type": "test"}},
                                status_code=int(kind))
        if kind == "timeout":
            await asyncio.sleep(self.faults.timeout_s)
        staged = llm_answers.answer(first)
        if staged is None:
            message = (self.fallback(body) if self.fallback else None) or {"content": json.dumps({"ok": True})}
            self.stats.by_stage["other"] += 1
            self.stats.answered += 1
            reply = self._reply(body, message.get("content") or "")
            reply["choices"][0]["message"] = {"role": "assistant", **message}
            return reply
        stage, answer = staged
        self.stats.by_stage[stage] += 1
        self.stats.answered += 1
        content = (corrupt(kind, stage, answer) if kind in CONTENT_FAULTS + DESIGN_FAULTS + TASK_FAULTS
                   else json.dumps(answer))
        return self._reply(body, content)

    # running -----------------------------------------------------------------------------------
    def start(self, port: int = 0) -> str:
        """Serve on 127.0.0.1 (a free port by default); returns the base URL, ending in /v1."""
        config = uvicorn.Config(self.app, host="127.0.0.1", port=port, log_level="warning", access_log=False)
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, name="test-llm-server", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 20
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError("the test LLM server did not start")
            time.sleep(0.01)
        bound = self._server.servers[0].sockets[0].getsockname()[1]
        self.base_url = f"http://127.0.0.1:{bound}/v1"
        return self.base_url

    def stop(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
            self._thread.join(timeout=10)
            self._server = None

    def __enter__(self) -> LLMTestServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8011)
    parser.add_argument("--latency", type=float, default=0.0, help="seconds added to every request")
    parser.add_argument("--fault-rate", type=float, default=0.0)
    parser.add_argument("--faults", default=",".join(ALL_FAULTS), help="comma-separated fault kinds")
    parser.add_argument("--fault-seed", type=int, default=0)
    parser.add_argument("--timeout-s", type=float, default=2.0, help="stall of a 'timeout' fault")
    args = parser.parse_args(argv)
    faults = Faults(rate=args.fault_rate, kinds=tuple(k for k in args.faults.split(",") if k), seed=args.fault_seed,
                    timeout_s=args.timeout_s)
    server = LLMTestServer(latency=args.latency, faults=faults)
    print(server.start(args.port), flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        server.stop()


if __name__ == "__main__":
    sys.exit(main())
