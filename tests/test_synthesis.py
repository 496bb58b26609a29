"""Offline task synthesis: templates bound to real rows, gold replayed, τ²-bench fields exact."""

from __future__ import annotations

from toolscale.domains import Environment, builtin_domain, replay
from toolscale.domains.spec import Intent
from toolscale.pipeline.synthesizer import OfflineSynthesizer

TAU2_TASK_FIELDS = {"id", "description", "user_scenario", "initial_state", "evaluation_criteria"}
TAU2_INSTRUCTION_FIELDS = {"domain", "reason_for_call", "known_info", "unknown_info", "task_instructions"}
TAU2_ACTION_FIELDS = {"action_id", "requestor", "name", "arguments", "info", "compare_args"}


def test_bank_yields_at_least_300_accepted_tasks(bank_run):
    _, _, accepted, _ = bank_run
    assert len(accepted) >= 300
    assert len({t.meta.intent for t in accepted}) >= 10
    assert len({t.id for t in accepted}) == len(accepted)


def test_tasks_use_tau2_field_names(bank_run):
    _, _, accepted, _ = bank_run
    record = accepted[0].tau2()
    assert set(record) == TAU2_TASK_FIELDS
    assert set(record["user_scenario"]["instructions"]) == TAU2_INSTRUCTION_FIELDS
    assert set(record["evaluation_criteria"]) == {"actions", "env_assertions", "communicate_info",
                                                  "nl_assertions", "reward_basis"}
    assert set(record["evaluation_criteria"]["actions"][0]) == TAU2_ACTION_FIELDS
    assert record["evaluation_criteria"]["reward_basis"] == ["DB", "COMMUNICATE"]


def test_every_accepted_gold_replays_to_its_recorded_hash(bank_run):
    _, env, accepted, _ = bank_run
    for task in accepted:
        with env.fork() as fork:
            results = replay(fork, task.gold_calls())
            assert all(r.ok for r in results), task.id
            assert [r.output for r in results] == task.meta.expected_outputs
            assert fork.state_hash() == task.meta.final_state_hash


def test_communicate_info_comes_from_real_outputs(bank_run):
    _, _, accepted, _ = bank_run
    balance = next(t for t in accepted if t.meta.intent == "check_balance")
    listed = balance.meta.expected_outputs[2]
    assert balance.evaluation_criteria.communicate_info[0] in {f"{a['balance']:.2f}" for a in listed}
    assert all(t.evaluation_criteria.communicate_info for t in accepted if t.meta.kind == "read")


def test_ids_the_user_cannot_know_come_from_earlier_outputs(bank_run):
    _, _, accepted, _ = bank_run
    for task in accepted:
        customer_id = task.evaluation_criteria.actions[1].arguments["customer_id"]
        assert customer_id == task.meta.expected_outputs[0]["customer_id"]
        assert customer_id not in task.user_scenario.instructions.known_info


def test_a_template_whose_gold_fails_becomes_a_recorded_rejection(bank_run):
    domain, env, _, _ = bank_run
    broken = domain.spec.intents[0].model_copy(deep=True)
    step = broken.template.actions[1]
    object.__setattr__(step, "arguments", {**step.arguments, "phone_last4": "0000x"})
    rows = {t: [dict(r) for r in rs] for t, rs in env.dump().items()}
    from toolscale.pipeline.instantiate import instantiate
    tasks, rejected = instantiate(domain, env, rows, broken, seed=0)
    assert not tasks and rejected
    assert all(r.gate == "synthesis" and "verify_identity" in r.reason for r in rejected)


def test_a_template_with_a_typo_is_rejected_not_crashed(bank_run):
    domain, env, _, _ = bank_run
    data = domain.spec.intents[0].model_dump()
    data["template"]["task_instructions"] = "Ask about {{ acount.balance }}"
    typo = Intent.model_validate(data)
    rows = {t: [dict(r) for r in rs] for t, rs in env.dump().items()}
    from toolscale.pipeline.instantiate import instantiate
    tasks, rejected = instantiate(domain, env, rows, typo, seed=0)
    assert not tasks
    assert "acount" in rejected[0].reason


def test_same_seed_same_tasks_other_seed_other_tasks():
    def run(seed):
        synth = OfflineSynthesizer()
        domain = builtin_domain("bank")
        rows = synth.populate(domain, seed)
        with Environment.from_rows(domain, rows) as env:
            return [t.model_dump_json() for t in synth.tasks(domain, env, rows, seed)[0][:60]]

    assert run(4) == run(4)
    assert run(4) != run(5)


def test_a_binding_that_errors_becomes_a_recorded_rejection(bank_run):
    domain, env, _, _ = bank_run
    data = domain.spec.intents[0].model_dump()
    data["template"]["let"] = {"pick_from_nothing": "pick([])"}
    empty = Intent.model_validate(data)
    rows = {t: [dict(r) for r in rs] for t, rs in env.dump().items()}
    from toolscale.pipeline.instantiate import instantiate
    tasks, rejected = instantiate(domain, env, rows, empty, seed=0)
    assert not tasks and len(rejected) == empty.template.count
    assert "pick() got nothing to choose from" in rejected[0].reason


def test_task_lines_are_the_text_json_dumps_writes_and_read_back_the_same(bank_run):
    """dumps_line writes tasks with pydantic's serializer: the artifacts' text must stay what
    json.dumps over model_dump wrote (resumed runs compare it), odd values included."""
    import json
    import math

    from toolscale.domains.tasks import Rejection, Task
    from toolscale.pipeline.export import dumps_line

    def by_json(record) -> str:
        return json.dumps(record.model_dump(mode="json"), ensure_ascii=False, separators=(",", ":"))

    _, _, accepted, rejected = bank_run
    text = "Zoë \u2028 \x00 \x7f \" \\ / 😀"
    odd = accepted[0].model_copy(update={"meta": accepted[0].meta.model_copy(update={"expected_outputs": [
        math.nan, math.inf, -math.inf, 1e16, -0.0, 0.1 + 0.2, 2**70, text, {"nested": [None, True, 1.5]}]})})
    written = json.dumps([None, None, None, 1e16, -0.0, 0.1 + 0.2, 2**70, text, {"nested": [None, True, 1.5]}],
                         ensure_ascii=False, separators=(",", ":"))
    assert f'"expected_outputs":{written}' in dumps_line(odd)  # NaN and infinities as null, as model_dump gave
    for record in [*accepted, *rejected, odd]:
        assert dumps_line(record) == by_json(record), record.id if isinstance(record, Task) else record.task.id
        assert dumps_line(type(record).model_validate_json(dumps_line(record))) == dumps_line(record)
    assert isinstance(Rejection.model_validate_json(dumps_line(rejected[0])), Rejection)
