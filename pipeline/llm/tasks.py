"""The task stage's validator: a task answer becomes a Task only if its gold replays.

Replay follows the offline path (pipeline/instantiate.py): arguments are rendered one action at a
time against the outputs so far (`{{ out[2].payee_id }}`), each call runs on a fork of the
initial database, the first failure rejects the candidate, and `communicate_info` is rendered
from the real outputs afterwards, so nothing a task asks the agent to say is made up by the model.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from toolscale.domains import Domain, Environment
from toolscale.domains.answers import with_checkable_answers
from toolscale.domains.tasks import (Action, Description, EvaluationCriteria, Lineage, StructuredUserInstructions, Task,
                                     TaskMeta, UserScenario)
from toolscale.quality.difficulty import task_difficulty

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
          actions: list[Action], communicate: list[str], outputs: list[Any], final_hash: str | None) -> Task:
    scenario = UserScenario(persona=_persona(domain, task_id, lineage), instructions=_instructions(domain, answer))
    meta = TaskMeta(intent=intent.name, kind=intent.kind, difficulty=task_difficulty(domain, scenario, actions),
                    lineage=lineage, expected_outputs=outputs, final_state_hash=final_hash)
    return Task(id=task_id, description=Description(purpose=intent.description), user_scenario=scenario,
                evaluation_criteria=EvaluationCriteria(actions=actions, communicate_info=communicate,
                                                       nl_assertions=list(answer.nl_assertions) if answer else []),
                meta=meta)


Screen = Callable[[Task, Environment], tuple[str, str] | None]  # (gate, reason) of the first gate failed


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
    task = with_checkable_answers(_task(domain, intent, task_id, lineage, answer, actions, communicate, outputs,
                                        final_hash))
    failed = screen(task, env) if screen else None
    if failed:
        raise Invalid([gate_problem(*failed)])
    return task


def gate_problem(gate: str, reason: str) -> Problem:
    """A quality gate's rejection as a problem the model can repair."""
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
