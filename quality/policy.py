"""The policy gate: the gold keeps every rule of the policy that no tool enforces (the step checks and
the agent checks of domain.yaml), and a task built to test an agent rule really tests it: doing what
the user literally asks runs in the tools, breaks that rule and ends in another state."""

from __future__ import annotations

from toolscale.domains.rules import RuleError, agent_rules, replay_watched, rules_broken
from toolscale.domains.tasks import GateVerdict

from .gates import GateContext, failed, passed


class PolicyGate:
    """Every `check` and `agent` check of the domain's rules holds on the gold sequence of calls; a
    task with `tests_rule` has naive calls that the tools accept, that break the rule and that end
    in a state other than the gold's."""

    name = "policy"

    def check(self, ctx: GateContext) -> GateVerdict:
        return self._steps(ctx) or self._agent_rules(ctx) or self._tested(ctx) or passed()

    @staticmethod
    def _steps(ctx: GateContext) -> GateVerdict | None:
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
        return None

    @staticmethod
    def _agent_rules(ctx: GateContext) -> GateVerdict | None:
        try:
            broken = rules_broken(ctx.env, ctx.task.gold_calls())
        except RuleError as exc:
            return failed(f"an agent rule could not be checked on the gold: {exc}")
        if broken:
            index, rule = broken[0]
            name = ctx.task.evaluation_criteria.actions[index].name
            return failed(f"rule {rule!r}: action {index} ({name}) breaks it, and no tool refuses it")
        return None

    @staticmethod
    def _tested(ctx: GateContext) -> GateVerdict | None:
        meta = ctx.task.meta
        if meta.tests_rule is None:
            return None
        rules = [r for r in agent_rules(ctx.env.domain.spec) if r.id == meta.tests_rule]
        if not rules:
            return failed(f"the task tests {meta.tests_rule!r}, which is no agent rule of the domain")
        naive = [(a.name, a.arguments) for a in meta.naive_actions]
        try:
            results, broken, end = replay_watched(ctx.env, naive, rules)  # one replay for all three checks
        except RuleError as exc:
            return failed(f"rule {meta.tests_rule!r} could not be checked on the literal request: {exc}")
        refused = next((r for r in results if not r.ok), None)
        if refused is not None:
            return failed(f"doing what the user literally asks is refused by the tools ({refused.name}: "
                          f"{refused.error}), so rule {meta.tests_rule!r} is not the agent's to apply")
        if end == meta.final_state_hash:
            return failed("doing what the user literally asks ends in the gold's state: it tests no judgement")
        if not broken:
            return failed(f"doing what the user literally asks keeps rule {meta.tests_rule!r}")
        return None
