"""The answer gate: every value a task asks the agent to say is one τ²-bench's check can grade."""

from __future__ import annotations

from toolscale.domains.answers import WHY, answer_form, weakness
from toolscale.domains.tasks import GateVerdict

from .gates import GateContext, failed, passed


class CheckabilityGate:
    """Each communicate_info value is in answer form, once, and neither brittle nor vacuous.

    Brittle: a correct reply can miss it ("17000000.00" when the agent says "17,000,000"). Vacuous:
    a wrong reply contains it ("0", "W", a number the user said). Synthesis shapes values this way
    (domains/answers.py); this gate is the net for whatever reaches it unshaped.
    """

    name = "checkable"

    def check(self, ctx: GateContext) -> GateVerdict:
        values = ctx.task.evaluation_criteria.communicate_info
        user_text = ctx.task.user_scenario.text()
        for info in values:
            if values.count(info) > 1:
                return failed(f"communicate_info {info!r} is listed twice")
            if answer_form(info) != info:
                return failed(f"communicate_info {info!r} is not in answer form (a correct reply need only "
                              f"contain {answer_form(info)!r})")
            kind = weakness(info, user_text, values, ctx.first_replay.outputs)
            if kind:
                return failed(f"communicate_info {info!r} cannot be graded: {WHY[kind]}")
        return passed()
