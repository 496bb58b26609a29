"""The policy gate: the gold path keeps the step rules of policy.md that no tool enforces."""

from __future__ import annotations

from toolscale.domains.tasks import GateVerdict

from .gates import GateContext, failed, passed


class PolicyGate:
    """Every `check` of the domain's rules holds on the gold sequence of calls."""

    name = "policy"

    def check(self, ctx: GateContext) -> GateVerdict:
        names = [a.name for a in ctx.task.evaluation_criteria.actions]
        for rule in ctx.env.domain.spec.rules:
            check = rule.check
            if check is None:
                continue
            if check.kind == "before":
                for i, name in enumerate(names):
                    if name in check.then and not any(n in check.first for n in names[:i]):
                        return failed(f"rule {rule.id!r}: action {i} ({name}) comes before any of "
                                      f"{', '.join(check.first)}")
            elif sum(name in check.then for name in names) > check.times:
                return failed(f"rule {rule.id!r}: {', '.join(check.then)} called more than {check.times} time(s)")
        return passed()
