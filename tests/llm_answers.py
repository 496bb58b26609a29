"""What the test LLM server answers at each stage: valid artifacts made from the built-in domains.

A stage is recognised by the `## Request` block every toolscale prompt ends with. A domain that is
not built in (a `new-domain` brief) is answered with a built-in one chosen by its name. Rows come
from the built-in domain's offline population, re-keyed to the keys the request offers; tasks
come from the built-in intent templates bound to the database slice in the prompt
(examples.task_answer_from_template), so they replay on the client's database; an intent that tests
an agent rule is answered with its naive calls too.
"""

from __future__ import annotations

import json
import re
import zlib
from functools import lru_cache
from typing import Any

from toolscale.domains import BUILTIN_DOMAINS
from toolscale.domains.rules import TRANSFER_TOOL, agent_rules
from toolscale.pipeline.llm.design import HANDOFFS, MIN_AGENT_RULES
from toolscale.pipeline.llm.examples import builtin as builtin_domain
from toolscale.pipeline.llm.examples import intent_proposal, offline_rows, task_answer_from_template
from toolscale.pipeline.llm.rows import auto_key

_SECTION = re.compile(r"^## (?P<title>[^\n]+)\n```json\n(?P<body>.*?)\n```", re.S | re.M)


def sections(text: str) -> dict[str, Any]:
    """The `## Title` + fenced JSON sections of a prompt, parsed."""
    found = {}
    for match in _SECTION.finditer(text):
        try:
            found[match.group("title").strip()] = json.loads(match.group("body"))
        except json.JSONDecodeError:
            continue
    return found


@lru_cache(maxsize=None)
def designable() -> tuple[str, ...]:
    """The built-in domains whose design the design stage accepts: rules the agent applies, a handoffs
    table and transfer_to_human_agents (pipeline/llm/design.py)."""
    return tuple(name for name in BUILTIN_DOMAINS
                 if len(agent_rules(builtin_domain(name).spec)) >= MIN_AGENT_RULES
                 and any(t.name == HANDOFFS for t in builtin_domain(name).spec.tables)
                 and TRANSFER_TOOL in builtin_domain(name).toolkit.specs)


def builtin_for(name: str) -> str:
    """The built-in domain that stands in for `name` (itself, when built in; else one drawn by the name's
    hash, among those the design stage accepts when the draw is not)."""
    if name in BUILTIN_DOMAINS:
        return name
    drawn = BUILTIN_DOMAINS[zlib.crc32(name.encode()) % len(BUILTIN_DOMAINS)]
    return drawn if drawn in designable() else designable()[zlib.crc32(name.encode()) % len(designable())]


def design(request: dict[str, Any]) -> dict[str, Any]:
    domain = builtin_domain(builtin_for(request["domain"]))
    spec = domain.spec.model_dump(mode="json", exclude_defaults=True, exclude={"intents", "name"})
    return {**spec, "policy": domain.policy}


def tools(request: dict[str, Any]) -> dict[str, Any]:
    return {"source": builtin_domain(builtin_for(request["domain"])).toolkit.source}


def intents(request: dict[str, Any]) -> dict[str, Any]:
    domain = builtin_domain(builtin_for(request["domain"]))
    return {"intents": [intent_proposal(i).model_dump(mode="json") for i in domain.spec.intents if i.template]}


def populate(request: dict[str, Any]) -> dict[str, Any]:
    """Rows of the built-in population, in windows that do not overlap from batch to batch."""
    name = builtin_for(request["domain"])
    table = builtin_domain(name).spec.table(request["table"])
    pool = offline_rows(name)[table.name][len(table.data):]
    pk = table.primary_key.name
    offered = request.get("choices", {})
    if "parents" in request:
        span = request["max"] - request["min"] + 1
        counts = [request["min"] + zlib.crc32(str(p).encode()) % span for p in request["parents"]]
        start = request["batch"] * len(request["parents"]) * request["max"]
        parents = [p for p, n in zip(request["parents"], counts) for _ in range(n)]
    else:
        start = request["batch"] * request["count"]
        parents = [None] * request["count"]
    rows = []
    for j, parent in enumerate(parents):
        row = dict(pool[(start + j) % len(pool)]) if pool else {}
        if auto_key(table):
            row.pop(pk, None)
        if parent is not None:
            row[request["parent_column"]] = parent
        for column, keys in offered.items():
            row[column] = keys[(start + j) % len(keys)] if keys else None
        rows.append(row)
    return {"rows": rows}


def task(request: dict[str, Any], db_slice: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    domain = builtin_domain(builtin_for(request["domain"]))
    intent = next((i for i in domain.spec.intents if i.name == request["intent"] and i.template), None)
    if intent is None:
        return {"infeasible": f"no intent {request['intent']!r} here"}
    anchor = (request["anchor"]["table"], request["anchor"]["key"])
    answer = task_answer_from_template(domain, intent, db_slice, request["seed"], anchor)
    if answer is None:
        return {"infeasible": "no record in the slice fits this intent"}
    return answer.model_dump(mode="json", exclude={"infeasible"})


DISTRACTOR = "In passing, you mention the trip you took last spring; it has nothing to do with this request."


def harden(task: dict[str, Any]) -> dict[str, Any]:
    """The verified task with a distractor added: it replays as the original does (its naive calls too)."""
    keep = ("reason_for_call", "known_info", "unknown_info", "actions", "communicate", "nl_assertions", "naive")
    keep = [k for k in keep if k in task]
    return {"steps": ["distractor"],
            "task": {**{k: task[k] for k in keep}, "task_instructions": f"{task['task_instructions']} {DISTRACTOR}"}}


def answer(prompt: str) -> tuple[str, dict[str, Any]] | None:
    """(stage, answer) for a toolscale prompt, or None when the prompt is not one."""
    found = sections(prompt)
    request = found.get("Request")
    if not isinstance(request, dict) or "stage" not in request:
        return None
    stage = request["stage"]
    if stage == "design":
        return stage, design(request)
    if stage == "tools":
        return stage, tools(request)
    if stage == "intents":
        return stage, intents(request)
    if stage == "populate":
        return stage, populate(request)
    if stage == "task":
        return stage, task(request, found.get("Database slice", {}))
    if stage == "harden":
        return stage, harden(found["Task"])
    if stage == "judge":
        return stage, {"verdict": "pass", "reason": "the test server passes everything"}
    return stage, {"error": f"the test server does not answer stage {stage!r}"}
