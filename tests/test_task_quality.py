"""The report's task-quality figures count what they say: checkable answers, judged facts, skeletons,
personas and operator yields."""

from __future__ import annotations

import pytest

from toolscale.domains.tasks import Rejection
from toolscale.quality.task_quality import combined, task_quality


@pytest.fixture(scope="module")
def tasks(library_tasks):
    return library_tasks[1]


def _changed(task, communicate=None, hardening=None, judged=None, persona=""):
    criteria = task.evaluation_criteria.model_copy(update={"communicate_info": communicate
                                                           if communicate is not None else task.evaluation_criteria.communicate_info})
    meta = task.meta.model_copy(update={"hardening": hardening if hardening is not None else task.meta.hardening,
                                        "judged_answers": judged if judged is not None else task.meta.judged_answers})
    scenario = task.user_scenario.model_copy(update={"persona": persona or task.user_scenario.persona})
    return task.model_copy(update={"evaluation_criteria": criteria, "meta": meta, "user_scenario": scenario})


def test_answer_figures_count_brittle_values_and_judged_facts(tasks):
    sound = task_quality(tasks, [])["answers"]
    assert sound["values"] == sound["checkable"] > 0 and sound["share"] == 1.0
    brittle = [_changed(tasks[0], communicate=["14.00", "0"], judged=["date", "short"]), *tasks[1:]]
    figures = task_quality(brittle, [])["answers"]
    assert figures["checkable"] == sound["checkable"] - 1 and figures["values"] == sound["values"] + 1
    assert figures["judged"] == {"date": 1, "short": 1} and figures["tasks_with_judged"] == 1


def test_skeletons_count_distinct_framings_of_base_tasks_only(tasks):
    quality = task_quality(tasks, [])
    assert set(quality["skeletons"]["per_intent"]) == {t.meta.intent for t in tasks}
    one = [_changed(t, hardening=["distractor"]) if i else t for i, t in enumerate(tasks)]
    assert task_quality(one, [])["skeletons"]["per_intent"] == {tasks[0].meta.intent: 1}
    assert task_quality(one, [])["skeletons"]["base_tasks_below_2"] == 1


def test_operator_yield_and_the_run_totals(tasks):
    accepted = [_changed(tasks[0], hardening=["conditional"]), *tasks[1:]]
    rejected = [Rejection(task=_changed(t, hardening=["conditional"]), gate="checkable", reason="r") for t in tasks[:3]]
    quality = task_quality(accepted, rejected)
    assert quality["operators"]["conditional"] == {"accepted": 1, "rejected": 3, "yield": 0.25,
                                                    "mean_actions": float(len(tasks[0].evaluation_criteria.actions))}
    run = combined([quality, quality])
    assert run["operators"]["conditional"] == {"accepted": 2, "rejected": 6, "yield": 0.25}
    assert run["persona_share"] == quality["personas"] / quality["tasks"]
