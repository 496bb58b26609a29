"""The answer gate: every value a task asks the agent to say is one τ²-bench's check can grade."""

from __future__ import annotations

from toolscale.domains.answers import WHY, answer_form, asks_something, raw_label, weakness
from toolscale.domains.tasks import GateVerdict

from .gates import GateContext, failed, passed


class CheckabilityGate:
    """Each communicate_info value answers a question of the user's, is in answer form, once, and is
    neither brittle nor vacuous (nor held in another value the conversation shows); each nl_assertion is
    listed once and says its fact in words, not with a field's raw label.

    Brittle: a correct reply can miss it ("17000000.00" when the agent says "17,000,000"). Vacuous:
    a wrong reply contains it ("0", "W", a number the user said). Synthesis shapes values this way
    (domains/answers.py); this gate is the net for whatever reaches it unshaped.
    """

    name = "checkable"

    def check(self, ctx: GateContext) -> GateVerdict:
        values = ctx.task.evaluation_criteria.communicate_info
        user_text = ctx.task.user_scenario.text()
        request = ctx.task.user_scenario.instructions
        if values and not asks_something(f"{request.reason_for_call} {request.task_instructions}"):
            return failed(f"the user asks to be told nothing, yet {values[0]!r} must be said")
        for info in values:
            if values.count(info) > 1:
                return failed(f"communicate_info {info!r} is listed twice")
            if answer_form(info) != info:
                return failed(f"communicate_info {info!r} is not in answer form (a correct reply need only "
                              f"contain {answer_form(info)!r})")
            kind = weakness(info, user_text, values, ctx.first_replay.outputs)
            if kind:
                return failed(f"communicate_info {info!r} cannot be graded: {WHY[kind]}")
        assertions = ctx.task.evaluation_criteria.nl_assertions
        twice = next((a for a in assertions if assertions.count(a) > 1), None)
        if twice:
            return failed(f"nl_assertion {twice!r} is listed twice")
        labelled = next((a for a in assertions if raw_label(a, ctx.first_replay.outputs)), None)
        if labelled:
            return failed(f"nl_assertion {labelled!r} gives a field's raw label, not words a person would write")
        return passed()
