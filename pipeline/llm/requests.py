"""What each stage's prompt is given: the variables of its template and its `## Request` block.

The request block repeats a stage's parameters as JSON (domain, table, batch, anchor...), so a
model, a log reader or the test server can see exactly what was asked.
"""

from __future__ import annotations

from typing import Any

from toolscale.domains import Domain
from toolscale.domains.rules import TRANSFER_TOOL, agent_rules
from toolscale.domains.spec import DomainSpec

from ..operators import LLM_STEPS, MEANINGS
from ..populate import Rows
from . import prompts
from .answers import IntentProposal
from .examples import (design_example, example_domain_name, intents_example, rows_example, task_example,
                       tools_example)
from .rows import Batch, auto_key, premises, referenced
from .tasks import tested_rule


def design(name: str, brief: str) -> list[dict[str, str]]:
    example = example_domain_name(name)
    return prompts.messages("design", name=name, brief=brief, example=design_example(example),
                            request={"stage": "design", "domain": name, "brief": brief})


def tools(spec: DomainSpec, policy: str) -> list[dict[str, str]]:
    example = example_domain_name(spec.name)
    required = list(dict.fromkeys([*(t for rule in spec.rules for t in rule.enforced_by),
                                   *(t for rule in spec.rules if rule.agent for t in rule.agent.calls), TRANSFER_TOOL]))
    return prompts.messages("tools", domain=spec, policy=policy, required=required, example_name=example,
                            example_source=tools_example(example),
                            request={"stage": "tools", "domain": spec.name, "required_tools": required})


def intents(domain: Domain, count: int) -> list[dict[str, str]]:
    example = example_domain_name(domain.name)
    return prompts.messages("intents", domain=domain.spec, tools=list(domain.toolkit.specs.values()), count=count,
                            agent_rules=agent_rules(domain.spec), example_name=example,
                            example=intents_example(example),
                            request={"stage": "intents", "domain": domain.name, "count": count})


def populate(spec: DomainSpec, batch: Batch, choices: dict[str, list[Any]], rows: Rows) -> list[dict[str, str]]:
    table = batch.table
    request: dict[str, Any] = {"stage": "populate", "domain": spec.name, "table": table.name, "batch": batch.index}
    parent_table = None
    if batch.parents:
        parent_table = table.column(table.per.column).references.split(".")[0]
        parent_pk = spec.table(parent_table).primary_key.name
        request.update(parents=[p[parent_pk] for p in batch.parents], parent_column=table.per.column,
                       min=table.per.min, max=table.per.max)
    else:
        request.update(count=batch.count, first=batch.first, subject=batch.subject)
    if choices:
        request["choices"] = choices
    return prompts.messages("populate", domain=spec, table=table, auto_key=auto_key(table), parents=batch.parents,
                            parent_table=parent_table, count=batch.count, first=batch.first, subject=batch.subject,
                            choices=choices, referenced=referenced(spec, table, choices, rows),
                            premises=premises(spec, table), example=rows_example(example_domain_name(spec.name)),
                            request=request)


def task(domain: Domain, intent: IntentProposal, tool_names: list[str], db_slice: Rows, anchor: tuple[str, Any],
         candidate: int, seed: int) -> list[dict[str, str]]:
    example = example_domain_name(domain.name)
    schemas = [domain.toolkit.specs[name].openai_schema()["function"] for name in tool_names]
    rule = tested_rule(domain, intent.tests_rule)
    return prompts.messages("task", domain=domain.spec, policy=domain.policy, intent=intent, tools=schemas,
                            slice=db_slice, anchor={"table": anchor[0], "key": anchor[1]}, example_name=example,
                            example=task_example(example), rule=rule, rule_example=task_example(example, True),
                            request={"stage": "task", "domain": domain.name, "intent": intent.name,
                                     "anchor": {"table": anchor[0], "key": anchor[1]}, "tools": tool_names,
                                     "candidate": candidate, "seed": seed})


def harden(domain: Domain, task: dict[str, Any], tool_names: list[str], db_slice: Rows, base_id: str,
           seed: int) -> list[dict[str, str]]:
    schemas = [domain.toolkit.specs[name].openai_schema()["function"] for name in tool_names]
    steps = [(step.value, MEANINGS[step]) for step in LLM_STEPS]
    return prompts.messages("harden", domain=domain.spec, policy=domain.policy, task=task, tools=schemas,
                            slice=db_slice, steps=steps, request={"stage": "harden", "domain": domain.name, "task": base_id,
                                                     "tools": tool_names, "seed": seed})
