"""The rewards module on its own (no trainer): τ²'s outcome, the preference reward, the group filter."""

from __future__ import annotations

import math

import pytest

from toolscale.domains import Task
from toolscale.agents.scoring import RolloutStats, UnsupportedRewardBasis, communicated, score_outcome
from toolscale.trainer.rewards import group_advantages, preference_rewards, summarize

PREF = {"outcome": 1.0, "cost": 0.5, "latency": 0.3}


def make_task(communicate=("76.81",), basis=("DB", "COMMUNICATE"), final_hash="abc", actions=None) -> Task:
    return Task.model_validate({
        "id": "bank.check_balance.000",
        "user_scenario": {"instructions": {"domain": "bank", "reason_for_call": "r", "task_instructions": "t"}},
        "evaluation_criteria": {"actions": actions or [{"action_id": "0", "name": "list_accounts",
                                                        "arguments": {"customer_id": "CUS-1"}}],
                                "communicate_info": list(communicate), "reward_basis": list(basis)},
        "meta": {"intent": "check_balance", "kind": "read", "difficulty": "easy",
                 "lineage": {"backend": "offline", "seed": 0}, "final_state_hash": final_hash}})


def ok(**kw) -> RolloutStats:
    return RolloutStats(outcome=1.0, **kw)


# outcome, as τ²-bench scores it -----------------------------------------------------------------
def test_outcome_needs_the_gold_final_state_and_every_value_said():
    task = make_task(communicate=("76.81", "EUR"))
    assert score_outcome(task, "abc", ["Your balance is 76.81 eur."]).reward == 1.0
    wrong_state = score_outcome(task, "other", ["Your balance is 76.81 EUR."])
    assert (wrong_state.reward, wrong_state.db, wrong_state.communicate) == (0.0, False, True)
    unsaid = score_outcome(task, "abc", ["Your balance is 76.81."])
    assert (unsaid.reward, unsaid.missing_info) == (0.0, ["EUR"])


def test_communicate_check_strips_commas_from_the_message_as_tau2_does():
    assert communicated("1234.50", ["It is 1,234.50 dollars"])
    assert communicated("walker james", ["Payee: WALKER, JAMES"])
    # τ² strips commas from the message only: an info string holding a comma can never be matched
    assert not communicated("Walker, James", ["Payee: Walker, James"])


def test_only_the_components_in_reward_basis_count():
    task = make_task(basis=("COMMUNICATE",))
    assert score_outcome(task, "any-state", ["76.81"]).reward == 1.0
    action_task = make_task(basis=("ACTION",))
    assert score_outcome(action_task, "x", [], [("list_accounts", {"customer_id": "CUS-1"})]).reward == 1.0
    assert score_outcome(action_task, "x", [], [("list_accounts", {"customer_id": "CUS-2"})]).reward == 0.0


def test_nl_assertions_cannot_be_scored_offline():
    with pytest.raises(UnsupportedRewardBasis, match="NL_ASSERTION"):
        score_outcome(make_task(basis=("DB", "NL_ASSERTION")), "abc", [])


# preference reward -------------------------------------------------------------------------------
def test_cheaper_rollout_gets_the_higher_reward():
    rewards = preference_rewards([ok(cost=0.10), ok(cost=0.02)], [PREF, PREF], group_size=2)
    assert rewards[1] > rewards[0]
    assert rewards == [0.0, pytest.approx(0.5)]  # cheapest: (max - x) / (max - min) = 1, times the weight


def test_faster_rollout_gets_the_higher_reward():
    rewards = preference_rewards([ok(latency=1.0), ok(latency=9.0)], [PREF, PREF], group_size=2)
    assert rewards[0] > rewards[1]
    assert rewards[0] == pytest.approx(0.3)


def test_failed_rollout_scores_zero_even_when_cheapest_and_fastest():
    stats = [RolloutStats(outcome=0.0, cost=0.0, latency=0.0), ok(cost=1.0, latency=5.0)]
    rewards = preference_rewards(stats, [PREF, PREF], group_size=2)
    assert rewards[0] == 0.0
    assert rewards[1] == pytest.approx(1.0)  # the outcome feature varies: (1 - 0) / (1 - 0), weight 1


def test_every_tool_call_counts_not_only_the_first_of_a_turn():
    pref = {"outcome": 1.0, "tool:list_accounts": 0.2}
    stats = [ok(tool_calls={"list_accounts": 3}), ok(tool_calls={"list_accounts": 1}), ok()]
    rewards = preference_rewards(stats, [pref] * 3, group_size=3)
    assert rewards == [pytest.approx(0.2), pytest.approx(0.2 / 3), 0.0]


def test_expert_use_is_a_feature_of_its_own():
    pref = {"outcome": 1.0, "expert:expert-1": 0.4}
    rewards = preference_rewards([ok(expert_calls={"expert-1": 1}), ok()], [pref] * 2, group_size=2)
    assert rewards == [pytest.approx(0.4), 0.0]


def test_normalization_is_within_each_group_unless_asked_for_the_batch():
    stats = [ok(cost=1.0), ok(cost=2.0), ok(cost=10.0), ok(cost=20.0)]
    pref = [{"cost": 1.0}] * 4
    assert preference_rewards(stats, pref, group_size=2) == [1.0, 0.0, 1.0, 0.0]
    batch = preference_rewards(stats, pref, group_size=2, normalize_over="batch")
    assert batch == pytest.approx([1.0, 18 / 19, 10 / 19, 0.0])


def test_each_rollout_uses_its_own_preference_vector():
    rewards = preference_rewards([ok(cost=1.0), ok(cost=2.0)], [{"cost": 1.0}, {"cost": 0.0, "outcome": 1.0}], 2)
    assert rewards == [1.0, 0.0]


def test_mismatched_inputs_are_refused():
    with pytest.raises(ValueError, match="groups of 3"):
        preference_rewards([ok(), ok()], [PREF, PREF], group_size=3)
    with pytest.raises(ValueError, match="preference vectors"):
        preference_rewards([ok()], [PREF, PREF], group_size=1)


# advantages and the group filter -------------------------------------------------------------------
def test_low_spread_group_is_dropped_and_the_other_normalized():
    rewards = [0.50, 0.52, 0.51, 0.49,   # std 0.011 < 0.1: filtered
               1.00, 0.00, 0.00, 1.00]
    advantages, keep = group_advantages(rewards, group_size=4, min_group_std=0.1)
    assert keep == [False] * 4 + [True] * 4
    assert advantages[:4] == [0.0] * 4
    assert advantages[4:] == pytest.approx([1.0, -1.0, -1.0, 1.0], abs=1e-5)


def test_all_equal_group_is_dropped_even_without_a_threshold():
    advantages, keep = group_advantages([0.0, 0.0, 1.0, 0.0], group_size=2, min_group_std=0.0)
    assert keep == [False, False, True, True]


def test_advantages_are_clipped():
    rewards = [1.0] + [0.0] * 15  # the lone success sits sqrt(15) ~ 3.9 standard deviations out
    advantages, _ = group_advantages(rewards, group_size=16, min_group_std=0.1, clip=3.0)
    assert advantages[0] == 3.0
    assert all(-3.0 <= a < 0 for a in advantages[1:])
    unclipped, _ = group_advantages(rewards, group_size=16, min_group_std=0.1, clip=100.0)
    assert unclipped[0] == pytest.approx(math.sqrt(15), rel=1e-4)


def test_summary_reports_each_component():
    stats = [ok(cost=0.2, latency=1.0, tool_calls={"a": 2}, db=True, communicate=True),
             RolloutStats(outcome=0.0, cost=0.0, latency=3.0, tool_errors=1, db=False)]
    summary = summarize(stats)
    assert summary["reward/outcome"] == 0.5
    assert summary["reward/cost_usd"] == pytest.approx(0.1)
    assert summary["reward/latency_s"] == 2.0
    assert summary["rollout/tool_calls"] == 1.0
    assert summary["rollout/tool_errors"] == 0.5
