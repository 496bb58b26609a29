"""The task stage's validator: a task answer becomes a Task only if its gold replays.

Replay follows the offline path (pipeline/instantiate.py): arguments are rendered one action at a
time against the outputs so far (`{{ out[2].payee_id }}`), each call runs on a fork of the
initial database, the first failure rejects the candidate, and `communicate_info` is rendered
from the real outputs afterwards, so nothing a task asks the agent to say is made up by the model.
A task whose intent tests an agent rule also carries `naive`, the literal request's calls, which
become meta.naive_actions as on the offline path; the policy gate, run by the screen, replays them.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from toolscale.domains import Domain, Environment
from toolscale.domains.answers import with_checkable_answers
from toolscale.domains.rules import agent_rules
from toolscale.domains.spec import PolicyRule
from toolscale.domains.tasks import (Action, Description, EvaluationCriteria, Lineage, StructuredUserInstructions, Task,
                                     TaskMeta, UserScenario)
from toolscale.quality.difficulty import task_difficulty

from ..instantiate import naive_actions
from ..phrasing import persona
from ..templating import TemplateError, derive_seed, render_text, render_value
from .answers import IntentProposal, TaskAnswer
from .dialogue import MAX_PROBLEMS, Invalid, Problem, Unrepairable


class Declined(Unrepairable):
    """The model said no task fits: a rejection at once, with no repair round."""


def _instructions(domain: Domain, answer: TaskAnswer | None) -> StructuredUserInstructions:
    if answer is None or answer.infeasible is not None:
        return StructuredUserInstructions(domain=domain.name, reason_for_call="", task_instructions="")
    return StructuredUserInstructions(domain=domain.name, reason_for_call=answer.reason_for_call,
                                      known_info=answer.known_info or None, unknown_info=answer.unknown_info or None,
                                      task_instructions=answer.task_instructions)


def _persona(domain: Domain, task_id: str, lineage: Lineage) -> str:
    """A persona from the offline grammar, seeded by the task; the model's text names no row to fit."""
    return persona(random.Random(derive_seed(lineage.seed, task_id)), None, domain.spec.clock.date()).text


def _task(domain: Domain, intent: IntentProposal, task_id: str, lineage: Lineage, answer: TaskAnswer | None,
          actions: list[Action], communicate: list[str], outputs: list[Any], final_hash: str | None,
          naive: list[Action] | None = None) -> Task:
    scenario = UserScenario(persona=_persona(domain, task_id, lineage), instructions=_instructions(domain, answer))
    meta = TaskMeta(intent=intent.name, kind=intent.kind, difficulty=task_difficulty(domain, scenario, actions),
                    lineage=lineage, expected_outputs=outputs, final_state_hash=final_hash,
                    tests_rule=intent.tests_rule, naive_actions=naive or [])
    return Task(id=task_id, description=Description(purpose=intent.description), user_scenario=scenario,
                evaluation_criteria=EvaluationCriteria(actions=actions, communicate_info=communicate,
                                                       nl_assertions=list(answer.nl_assertions) if answer else []),
                meta=meta)


Screen = Callable[[Task, Environment], tuple[str, str] | None]  # (gate, reason) of the first gate failed


def tested_rule(domain: Domain, rule_id: str | None) -> PolicyRule | None:
    """The agent rule `rule_id` names (None: none, or no such rule)."""
    return next((rule for rule in agent_rules(domain.spec) if rule.id == rule_id), None)


def _naive(domain: Domain, intent: IntentProposal, tools: list[str], answer: TaskAnswer, gold: list[Action],
           outputs: list[Any]) -> list[Action]:
    """meta.naive_actions, built as the offline path builds them (the gold's lookups, then the answer's
    `naive` calls, rendered against the gold's outputs); Invalid when an intent that tests a rule has
    none, one that tests none has some, or a call names a tool not offered or a bad reference."""
    rule = tested_rule(domain, intent.tests_rule)
    if rule is None:
        if answer.naive:
            raise Invalid([Problem("naive_not_asked", "`naive` is only for an intent that tests a rule the agent "
                                                      "applies, and this one tests none: leave it empty", "naive")])
        return []
    if not answer.naive:
        raise Invalid([Problem("naive_missing", f"the intent tests rule {rule.id!r} ({rule.rule}): give `naive`, the "
                                                "calls an agent that does exactly what the user literally asks would "
                                                "make after the gold's lookups, which break that rule", "naive")])
    problems, literal = [], []
    for j, step in enumerate(answer.naive):
        if step.name not in tools:
            problems.append(Problem("unknown_tool", f"naive[{j}] calls {step.name!r}, which is not one of the tools "
                                                    f"offered ({', '.join(tools)})", f"naive.{j}"))
            continue
        try:
            literal.append((step.name, render_value(step.arguments, {"out": outputs})))
        except TemplateError as exc:
            problems.append(Problem("bad_reference", f"naive[{j}] ({step.name}): {exc}", f"naive.{j}"))
    if problems:
        raise Invalid(problems[:MAX_PROBLEMS])
    return naive_actions(domain, gold, literal)


def build_task(domain: Domain, env: Environment, intent: IntentProposal, tools: list[str], answer: TaskAnswer,
               task_id: str, lineage: Lineage, screen: Screen | None = None) -> Task:
    """The replayed Task, or Invalid naming the unknown tool, the failing call, the bad reference or
    the quality gate `screen` finds it fails (so the model can repair what the gate stage would reject)."""
    if answer.infeasible is not None:
        raise Declined([Problem("declined", f"the model found no feasible task: {answer.infeasible}")])
    unknown = [(i, a.name) for i, a in enumerate(answer.actions) if a.name not in tools]
    if unknown:
        raise Invalid([Problem("unknown_tool", f"action {i} calls {name!r}, which is not one of the tools offered "
                                               f"({', '.join(tools)})", f"actions.{i}") for i, name in unknown])
    actions: list[Action] = []
    outputs: list[Any] = []
    with env.fork() as fork:
        for i, step in enumerate(answer.actions):
            try:
                arguments = render_value(step.arguments, {"out": outputs})
            except TemplateError as exc:
                raise Invalid([Problem("bad_reference", f"action {i} ({step.name}): {exc}", f"actions.{i}")]) from None
            result = fork.call(step.name, arguments)
            if not result.ok:
                raise Invalid([Problem("replay_failed", f"action {i} ({step.name}) failed: "
                                                        f"{result.error_type}: {result.error} (the calls after "
                                                        f"it were not replayed)", f"actions.{i}")])
            actions.append(Action(action_id=str(i), name=step.name, arguments=arguments))
            outputs.append(result.output)
        final_hash = fork.state_hash()
    communicate, problems = [], []
    for j, source in enumerate(answer.communicate):
        try:
            value = render_text(source, {"out": outputs}).strip()
        except TemplateError as exc:
            problems.append(Problem("bad_reference", f"communicate[{j}]: {exc}", f"communicate.{j}"))
            continue
        if not value:
            problems.append(Problem("bad_reference", f"communicate[{j}] {source!r} renders empty", f"communicate.{j}"))
        communicate.append(value)
    if problems:
        raise Invalid(problems[:MAX_PROBLEMS])
    naive = _naive(domain, intent, tools, answer, actions, outputs)
    task = with_checkable_answers(_task(domain, intent, task_id, lineage, answer, actions, communicate, outputs,
                                        final_hash, naive))
    screened(task, env, screen)
    return task


def screened(task: Task, env: Environment, screen: Screen | None) -> None:
    """Invalid with the first quality gate `screen` finds the task fails, as a problem the model can repair."""
    failed = screen(task, env) if screen else None
    if failed:
        raise Invalid([gate_problem(*failed, rule=tested_rule(env.domain, task.meta.tests_rule))])


def gate_problem(gate: str, reason: str, rule: PolicyRule | None = None) -> Problem:
    """A quality gate's rejection as a problem the model can repair. The policy gate's complaint about
    the literal request of a task that tests `rule` is about `naive`, and says what that must be."""
    if gate == "policy" and rule is not None and "literal" in reason:
        return Problem("gate_policy", f"the policy check rejects the task: {reason}. The task tests rule "
                                      f"{rule.id!r} ({rule.rule.rstrip('.')}): `naive` holds the calls an agent "
                                      "that does exactly what the user literally asks would make after the gold's "
                                      "lookups; the tools accept them, they break that rule, and they end in "
                                      "another state than the gold", "naive")
    return Problem(f"gate_{gate}", f"the {gate} check rejects the task: {reason}", GATE_FIELDS.get(gate, ""))


# the part of a task answer each gate's complaint is about, for the repair message's grouping
GATE_FIELDS = {"effect": "communicate", "realizability": "actions", "ambiguity": "known_info", "leakage": "communicate",
               "wording": "task_instructions", "checkable": "communicate", "policy": "actions", "necessity": "actions",
               "soundness": "unknown_info"}


def unbuilt_task(domain: Domain, intent: IntentProposal, task_id: str, lineage: Lineage,
                 answer: TaskAnswer | None) -> Task:
    """The candidate as the model last wrote it (unreplayed), kept so its rejection can be read."""
    actions = [Action(action_id=str(i), name=a.name, arguments=a.arguments)
               for i, a in enumerate(answer.actions)] if answer else []
    communicate = list(answer.communicate) if answer else []
    return _task(domain, intent, task_id, lineage, answer, actions, communicate, [], None)
