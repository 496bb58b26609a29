"""Few-shot examples drawn from the built-in domains, in each stage's answer format.

The example domain is restaurant (ToolScale's own exemplar), or bank when restaurant is the
domain being made. `task_answer_from_template` turns a built-in intent template, bound to real
rows, into the answer a model should give at the task stage: literal values, with `{{ out[i]... }}`
wherever a value comes from an earlier tool output. The test server answers with it too.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from typing import Any

from toolscale.domains import Domain, Environment, builtin_domain
from toolscale.domains.spec import Intent

from ..instantiate import instantiate
from ..populate import Rows, populate
from .answers import ActionAnswer, IntentProposal, TaskAnswer

EXAMPLE_ROWS = 3
_OUT_INDEX = re.compile(r"out\[(\d+)\]")


def example_domain_name(target: str) -> str:
    """The built-in domain whose files the prompts show as the example: bank, whose tools use every
    record-API helper and look rows up by filter, never by a loop over a whole table (restaurant's
    phone lookup does); restaurant for the bank itself."""
    return "restaurant" if target == "bank" else "bank"


@lru_cache(maxsize=None)
def builtin(name: str) -> Domain:
    """A built-in domain, loaded once per process (loading compiles its tools: ~0.5 s)."""
    return builtin_domain(name)


@lru_cache(maxsize=None)
def offline_rows(name: str, seed: int = 0) -> Rows:
    """A built-in domain's offline rows (cached: examples and the test server reuse them; read only)."""
    return populate(builtin(name).spec, seed)


@lru_cache(maxsize=None)
def design_example(name: str) -> dict[str, Any]:
    """The design answer of a built-in domain, its fixed reference rows cut to a few."""
    domain = builtin(name)
    spec = domain.spec.model_dump(mode="json", exclude_defaults=True, exclude={"intents", "name"})
    for table in spec["tables"]:
        if "data" in table:
            table["data"] = table["data"][:EXAMPLE_ROWS]
    return {"brief": domain.spec.description, "answer": {**spec, "policy": domain.policy}}


@lru_cache(maxsize=None)
def rows_example(name: str) -> dict[str, Any]:
    """A few rows of the example domain's first generated root table, keys left out."""
    domain = builtin(name)
    table = next(t for t in domain.spec.creation_order() if t.rows > 0 and t.per is None)
    pk = table.primary_key.name
    rows = [{k: v for k, v in row.items() if k != pk} for row in offline_rows(name)[table.name][:EXAMPLE_ROWS]]
    return {"table": table.name, "answer": {"rows": rows}}


def tools_example(name: str) -> str:
    return builtin(name).toolkit.source


def intent_proposal(intent: Intent) -> IntentProposal | None:
    """An intent of a spec as the intents stage proposes one: its own anchor_table and tools, else
    its template's (the first binding is the anchor); None when it has neither."""
    if intent.anchor_table and intent.tools:
        anchor, tools = intent.anchor_table, intent.tools
    elif intent.template is not None:
        anchor = next(iter(intent.template.bind.values())).table
        tools = list(dict.fromkeys(a.name for a in intent.template.actions))
    else:
        return None
    if intent.template is not None:  # the tool the literal request calls is offered too, though the gold does not call it
        tools = list(dict.fromkeys([*tools, *(a.name for a in intent.template.naive)]))
    return IntentProposal(name=intent.name, description=intent.description, kind=intent.kind,
                          anchor_table=anchor, tools=tools, premise=intent.premise, tests_rule=intent.tests_rule)


@lru_cache(maxsize=None)
def intents_example(name: str, count: int = 4, tested: int = 2) -> list[dict[str, Any]]:
    """The first `count` intents of a built-in domain and its first `tested` that test an agent rule."""
    intents = [i for i in builtin(name).spec.intents if i.template]
    chosen = ([i for i in intents if i.tests_rule is None][:count]
              + [i for i in intents if i.tests_rule is not None][:tested])
    return [intent_proposal(i).model_dump(mode="json") for i in chosen]


def _leaves(value: Any, path: str = ""):
    """(path, leaf) pairs of a JSON value, paths written as jinja ('.balance', '[0].amount')."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _leaves(item, f"{path}.{key}" if re.fullmatch(r"[A-Za-z_]\w*", key) else f"{path}[{key!r}]")
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _leaves(item, f"{path}[{i}]")
    else:
        yield path, value


def _numeric(leaf: Any) -> bool:
    return isinstance(leaf, (int, float)) and not isinstance(leaf, bool)


def out_reference(outputs: list[Any], raw: str, value: Any) -> str | None:
    """`{{ out[i]<path> }}` for where `value` sits in the outputs `raw` (a template) refers to;
    `|money` is kept when `raw` formats the value that way."""
    money = "|money" in raw
    indices = [int(i) for i in _OUT_INDEX.findall(raw)] or list(range(len(outputs) - 1, -1, -1))
    for i in dict.fromkeys(indices):
        if i >= len(outputs):
            continue
        for path, leaf in _leaves(outputs[i]):
            if money and _numeric(leaf) and f"{float(leaf):.2f}" == str(value):
                return f"{{{{ out[{i}]{path}|money }}}}"
            if leaf is not None and not isinstance(leaf, bool) and (leaf == value or str(leaf) == str(value)):
                return f"{{{{ out[{i}]{path} }}}}"
    return None


def task_answer_from_template(domain: Domain, intent: Intent, rows: Rows, seed: int,
                              anchor: tuple[str, Any] | None = None) -> TaskAnswer | None:
    """Bind the intent's template to `rows` (its first binding to `anchor`, when given), replay it,
    and write the result as a task answer; None when no rows fit or the gold fails."""
    template = intent.template
    first, binding = next(iter(template.bind.items()))
    if anchor is not None:
        table, key = anchor
        if table != binding.table:
            return None
        pk = domain.spec.table(table).primary_key.name
        binding = binding.model_copy(update={"match": {**binding.match, pk: json.dumps(key)}})
    bound = template.model_copy(update={"count": 1, "bind": {**template.bind, first: binding}})
    with Environment.from_rows(domain, rows) as env:
        tasks, _ = instantiate(domain, env, rows, intent.model_copy(update={"template": bound}), seed)
    if not tasks:
        return None
    task = tasks[0]
    outputs = task.meta.expected_outputs
    actions = _answer_actions(outputs, task.evaluation_criteria.actions, template.actions)
    literal = task.meta.naive_actions[len(task.meta.naive_actions) - len(template.naive):]  # after the lookups
    communicate = [out_reference(outputs, raw, value) or value
                   for raw, value in zip(template.communicate, task.evaluation_criteria.communicate_info) if value]
    text = task.user_scenario.instructions
    return TaskAnswer(reason_for_call=text.reason_for_call, known_info=text.known_info or "",
                      unknown_info=text.unknown_info or "", task_instructions=text.task_instructions,
                      actions=actions, communicate=communicate,
                      nl_assertions=task.evaluation_criteria.nl_assertions,
                      naive=_answer_actions(outputs, literal, template.naive))


def _answer_actions(outputs: list[Any], actions: list[Any], steps: list[Any]) -> list[ActionAnswer]:
    """Replayed actions as a model writes them: literal values, and a reference to an earlier output
    wherever the template's argument took its value from one."""
    answers = []
    for action, step in zip(actions, steps):
        arguments = {}
        for name, value in action.arguments.items():
            raw = step.arguments.get(name)
            reference = out_reference(outputs, raw, value) if isinstance(raw, str) and "out[" in raw else None
            arguments[name] = reference or value
        answers.append(ActionAnswer(name=action.name, arguments=arguments))
    return answers


@lru_cache(maxsize=None)
def task_example(name: str, tests_rule: bool = False) -> dict[str, Any]:
    """A task answer of the example domain, from an intent whose gold uses an earlier output, or (with
    `tests_rule`) from its first intent that tests an agent rule ({} when it has none)."""
    domain = builtin(name)
    intents = [i for i in domain.spec.intents if i.template]
    if tests_rule:
        intents = [i for i in intents if i.tests_rule is not None]
        if not intents:
            return {}
    chosen = next((i for i in intents if any("out[" in json.dumps(a.arguments) for a in i.template.actions)),
                  intents[0])
    answer = None
    for seed in range(5):
        answer = task_answer_from_template(domain, chosen, offline_rows(name), seed)
        if answer is not None:
            break
    shown = {"infeasible"} if tests_rule else {"infeasible", "naive"}  # an everyday task's empty naive: left out
    return {"intent": intent_proposal(chosen).model_dump(mode="json"),
            "answer": answer.model_dump(mode="json", exclude=shown) if answer else {}}
