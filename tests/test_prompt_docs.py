"""Each stage's prompt documents what its answer may hold and what its examples use.

A capable model working from the prompt alone (notes/audit-2026-12-01/llm_real.md) had to guess at
helpers and fields the examples used but the text never explained. These tests render every
stage's prompt as the synthesizer sends it and check, in the prose (code blocks left out: an
example shows a construct, it does not explain it), that every field of the stage's answer schema
and every template helper and filter is named in backticks; that every helper, filter and record
API method the prompt mentions or its examples use exists; and that the answer format comes first.
"""

from __future__ import annotations

import json
import random
import re
import typing
from contextlib import ExitStack
from typing import Any

import pytest
from faker import Faker
from jinja2 import meta, nodes
from jinja2.defaults import DEFAULT_FILTERS, DEFAULT_NAMESPACE
from pydantic import BaseModel

from toolscale.domains import Environment
from toolscale.domains.records import Clock, RecordStore
from toolscale.domains.rules import HELPERS as RULE_HELPERS
from toolscale.pipeline import templating
from toolscale.pipeline.llm import requests
from toolscale.pipeline.llm.answers import (DesignAnswer, HardenAnswer, IntentsAnswer, JudgeAnswer, RowsAnswer,
                                            TaskAnswer, ToolsAnswer)
from toolscale.pipeline.llm.examples import builtin, intent_proposal, offline_rows
from toolscale.pipeline.llm.judge import judge_messages
from toolscale.pipeline.llm.rows import plan
from toolscale.pipeline.llm.slices import db_slice
from toolscale.pipeline.populate import _TableFiller
from toolscale.pipeline.synthesizer import OfflineSynthesizer

DOMAIN = "movie"  # the examples come from restaurant
# The synthesis stages, and the judge of the LLM gates.
ANSWERS: dict[str, type[BaseModel]] = {"design": DesignAnswer, "tools": ToolsAnswer, "intents": IntentsAnswer,
                                       "populate": RowsAnswer, "task": TaskAnswer, "harden": HardenAnswer,
                                       "judge": JudgeAnswer}
_FENCED = re.compile(r"```.*?```", re.S)


def _judged_task(domain, rows):
    """A movie task from the offline synthesizer, for the judge's prompt."""
    with Environment.from_rows(domain, rows) as env:
        return OfflineSynthesizer().tasks(domain, env, rows, seed=0)[0][0]


def _prompt(stage: str) -> str:
    """The user message of `stage` as the synthesizer sends it for the movie domain."""
    domain = builtin(DOMAIN)
    rows = offline_rows(DOMAIN)
    intent = intent_proposal(next(i for i in domain.spec.intents if i.template))
    anchor_pk = domain.spec.table(intent.anchor_table).primary_key.name
    anchor = (intent.anchor_table, rows[intent.anchor_table][0][anchor_pk])
    part = db_slice(domain.spec, rows, *anchor, random.Random(0), 5)
    if stage == "design":
        messages = requests.design("bike_share", "a municipal bike-share system")
    elif stage == "tools":
        messages = requests.tools(domain.spec, domain.policy)
    elif stage == "intents":
        messages = requests.intents(domain, 4)
    elif stage == "judge":
        messages = judge_messages(_judged_task(domain, rows), [{"role": "user", "content": "Hi"},
                                                                {"role": "assistant", "content": "Hello"}])
    elif stage == "populate":
        table = next(t for t in domain.spec.tables if t.per is not None)
        parent = table.column(table.per.column).references.split(".")[0]
        batch = plan(domain.spec, table, {parent: rows[parent]}, 4, 4, 0.1, random.Random(0))[0]
        messages = requests.populate(domain.spec, batch, {}, rows)
    else:
        tools = intent.tools
        if stage == "task":
            messages = requests.task(domain, intent, tools, part, anchor, 0, 1)
        else:
            shown = {"reason_for_call": "r", "known_info": "k", "unknown_info": "", "task_instructions": "t",
                     "actions": [], "outputs": [], "communicate": [], "nl_assertions": []}
            messages = requests.harden(domain, shown, tools, part, "movie.x.000", 1)
    return messages[1]["content"]


@pytest.fixture(scope="module")
def rendered() -> dict[str, str]:
    return {stage: _prompt(stage) for stage in ANSWERS}


def prose(text: str) -> str:
    return _FENCED.sub("", text)


def documented(name: str, text: str) -> bool:
    """Whether `name` appears as a word inside some `backticked` span of the text."""
    return re.search(rf"`[^`\n]*(?<![\w.]){re.escape(name)}(?!\w)[^`\n]*`", text) is not None


def _models(annotation: Any) -> list[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [m for arg in typing.get_args(annotation) for m in _models(arg)]


def schema_fields(model: type[BaseModel], seen: set[type] | None = None) -> set[str]:
    """Every field name of `model` and of the models its fields hold, at any depth."""
    seen = seen if seen is not None else set()
    seen.add(model)
    names = set(model.model_fields)
    for field in model.model_fields.values():
        for inner in _models(field.annotation):
            if inner not in seen:
                names |= schema_fields(inner, seen)
    return names


def custom_filters() -> set[str]:
    return set(templating._ENV.filters) - set(DEFAULT_FILTERS)


def template_helpers() -> set[str]:
    """The names a gen template sees besides the row's own columns, as populate makes them."""
    spec = builtin(DOMAIN).spec
    with ExitStack() as held:
        filler = _TableFiller(spec, spec.tables[0], {}, 0, held)
        return set(filler.template_context({}, "en_US", Faker("en_US"), 0, 0))


def answer_format(prompt: str) -> str:
    """The paragraph right after the '# Title' line, when it states the answer format; else ''."""
    first = prompt.split("\n", 1)[1].lstrip().split("\n\n", 1)[0]
    return first if first.startswith("Answer format:") else ""


@pytest.mark.parametrize("stage", ANSWERS)
def test_every_answer_field_is_documented_in_its_stage_prompt(rendered, stage):
    text = prose(rendered[stage])
    missing = sorted(f for f in schema_fields(ANSWERS[stage]) if not documented(f, text))
    assert not missing, f"{stage}.j2 never explains {missing}"


@pytest.mark.parametrize("stage", ANSWERS)
def test_the_answer_format_stands_at_the_top(rendered, stage):
    line = answer_format(rendered[stage])
    assert line, f"{stage}.j2 does not open with its answer format"
    assert all(f'"{f}"' in line for f in ANSWERS[stage].model_fields if ANSWERS[stage].model_fields[f].is_required())


@pytest.mark.parametrize("stage", ANSWERS)
def test_every_field_the_prose_and_answer_format_name_exists(rendered, stage):
    """Keys written as JSON ("kind": ...) or as `field: ...` in the prose are fields of the answer."""
    text = prose(rendered[stage])
    spans = re.findall(r"`[^`\n]*`", text) + [answer_format(rendered[stage])]
    keys = {k for span in spans for k in re.findall(r'"([a-z_]+)":', span)}
    keys |= {k for span in spans for k in re.findall(r"^`([a-z_]+): ", span)}
    unknown = sorted(keys - schema_fields(ANSWERS[stage]))
    assert keys and not unknown, f"{stage}.j2 names fields its answer does not have: {unknown}"


def test_the_design_prompt_documents_every_template_helper_and_filter(rendered):
    text = prose(rendered["design"])
    missing = sorted(n for n in template_helpers() | custom_filters() if not documented(n, text))
    assert not missing, f"design.j2 never explains {missing}"


@pytest.mark.parametrize("stage", ["task", "harden"])
def test_the_prompts_whose_references_take_filters_document_every_filter(rendered, stage):
    text = prose(rendered[stage])
    missing = sorted(n for n in custom_filters() if not documented(n, text))
    assert not missing, f"{stage}.j2 never explains the filters {missing}"


def _template_names(source: str) -> tuple[set[str], set[str]]:
    """(variables, filters) a jinja template uses."""
    tree = templating._ENV.parse(source)
    return meta.find_undeclared_variables(tree), {f.name for f in tree.find_all(nodes.Filter)}


def _example(text: str, title: str) -> Any:
    """The JSON of the first fenced block after a line starting with `title`."""
    block = re.search(rf"^{re.escape(title)}.*?\n```json\n(.*?)\n```", text, re.S | re.M)
    return json.loads(block.group(1))


def test_every_helper_and_filter_the_design_example_uses_exists(rendered):
    example = DesignAnswer.model_validate(_example(rendered["design"], "Example"))
    known = template_helpers() | set(DEFAULT_NAMESPACE)
    for table in example.tables:
        columns = {c.name for c in table.columns}
        for col in table.columns:
            if col.gen is None or col.gen.template is None:
                continue
            names, filters = _template_names(col.gen.template)
            assert names <= known | columns, f"{table.name}.{col.name} uses {names - known - columns}"
            assert filters <= set(templating._ENV.filters), f"{table.name}.{col.name} uses {filters}"


def test_every_helper_and_filter_the_design_prose_names_exists(rendered):
    """Generation templates' helpers, and those of a rule's agent check (domains/rules.py HELPERS)."""
    text = prose(rendered["design"])
    spans = re.findall(r"`[^`\n]*`", text)
    calls = {name for span in spans for name in re.findall(r"(?<![|\w.])([a-z_]+)\(", span)}
    filters = {name for span in spans for name in re.findall(r"\|\s*([a-z_]+)", span)}
    known = template_helpers() | set(DEFAULT_NAMESPACE) | set(RULE_HELPERS)
    assert calls <= known, calls - known
    assert filters <= set(templating._ENV.filters), filters - set(templating._ENV.filters)


@pytest.mark.parametrize("stage", ["task", "harden"])
def test_every_filter_a_reference_in_the_prompt_uses_exists(rendered, stage):
    spans = re.findall(r"\{\{.*?\}\}", rendered[stage])
    used = {f for span in spans for f in _template_names(span)[1]}
    assert used <= set(templating._ENV.filters), used - set(templating._ENV.filters)


def test_the_design_prompt_documents_every_helper_an_agent_check_may_use(rendered):
    text = prose(rendered["design"])
    missing = sorted(n for n in RULE_HELPERS if not documented(n, text))
    assert not missing, f"design.j2 never explains the agent-check helpers {missing}"


def test_every_record_and_clock_method_the_tools_prompt_names_exists(rendered):
    text = rendered["tools"]  # the prose and the example tools.py alike
    for obj, api in (("db", RecordStore.TOOL_API), ("clock", Clock.TOOL_API)):
        named = set(re.findall(rf"\b{obj}\.([a-z_]+)\(", text))
        assert named and named <= api, (obj, named - api)
        undocumented = sorted(m for m in api if not documented(f"{obj}.{m}", prose(text)))
        assert not undocumented, f"tools.j2 never explains {undocumented}"
