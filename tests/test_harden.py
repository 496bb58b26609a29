"""Hardening: each operator makes a harder variant whose gold is replayed afresh and gated."""

from __future__ import annotations

import random
from collections import Counter
from datetime import date, timedelta

import pytest

from toolscale.domains import Environment, builtin_domain, replay
from toolscale.domains.dates import describe, resolve
from toolscale.pipeline.harden import compose, conditional, distractor, harden, indirect_dates, partial
from toolscale.pipeline.synthesizer import OfflineSynthesizer
from toolscale.quality.gates import run_gates


@pytest.fixture(scope="module")
def bank():
    synth = OfflineSynthesizer()
    domain = builtin_domain("bank")
    rows = synth.populate(domain, seed=0)
    env = Environment.from_rows(domain, rows)
    base, _ = synth.tasks(domain, env, rows, seed=0)
    hardened, failed = synth.harden(domain, env, base, seed=0)
    yield domain, env, base, hardened, failed
    env.close()


def test_every_operator_yields_gated_variants(bank):
    domain, env, base, hardened, _ = bank
    accepted, _ = run_gates(hardened, env)
    operators = Counter(op for t in accepted for op in t.meta.hardening)
    assert set(operators) == {"composition", "conditional", "indirect", "distractor", "partial"}
    share = sum(1 for t in accepted if t.meta.hardening) / len(accepted)
    assert share >= 0.3
    assert {t.meta.difficulty for t in accepted} == {"easy", "medium", "hard"}


def test_variants_replay_to_their_recorded_state(bank):
    _, env, _, hardened, _ = bank
    for task in [t for t in hardened if t.meta.hardening][:80]:
        with env.fork() as fork:
            results = replay(fork, task.gold_calls())
            assert all(r.ok for r in results), task.id
            assert fork.state_hash() == task.meta.final_state_hash


def test_a_variant_replaces_its_base_but_a_composition_keeps_both(bank):
    _, _, base, hardened, _ = bank
    ids = {t.id for t in hardened}
    composed = [t for t in hardened if t.meta.hardening == ["composition"]]
    singles = [t for t in hardened if t.meta.hardening and "composition" not in t.meta.hardening]
    assert composed and singles
    assert len([t for t in hardened if not t.meta.hardening]) == len(base) - len(singles)
    assert all(t.id in ids for t in composed)


def test_composition_joins_two_requests_of_one_user(bank):
    _, _, base, _, _ = bank
    first = next(t for t in base if t.meta.intent == "check_balance")
    second = next(t for t in base if t.meta.intent != "check_balance"
                  and t.evaluation_criteria.actions[0] == first.evaluation_criteria.actions[0])
    variant, check = compose(first, second)
    names = [a.name for a in variant.evaluation_criteria.actions]
    assert names.count("verify_identity") == 1
    assert variant.meta.intent == f"check_balance+{second.meta.intent}"
    assert "In the same call" in variant.user_scenario.instructions.reason_for_call
    assert set(first.evaluation_criteria.communicate_info) <= set(variant.evaluation_criteria.communicate_info)


def test_conditional_fixes_the_branch_from_the_database(bank):
    domain, _, base, _, _ = bank
    rng = random.Random(3)
    branches = Counter()
    for task in [t for t in base if t.meta.kind == "write"][:60]:
        made = conditional(task, domain, rng)
        if made is None:
            continue
        variant, _ = made
        assert "Only if the" in variant.user_scenario.instructions.task_instructions
        full = len(variant.evaluation_criteria.actions) == len(task.evaluation_criteria.actions)
        branches["go" if full else "stop"] += 1
        if not full:
            assert not any(domain.toolkit.specs[a.name].kind == "write" and a.name != "verify_identity"
                           for a in variant.evaluation_criteria.actions)
            assert len(variant.evaluation_criteria.communicate_info) == 1
    assert branches["go"] and branches["stop"]


def test_indirect_dates_say_dates_relative_to_the_clock(bank):
    domain, _, base, _, _ = bank
    today = domain.spec.clock.date()
    made = [m for t in base if (m := indirect_dates(t, today))]
    assert made
    variant, _ = made[0]
    text = variant.user_scenario.instructions.reason_for_call + variant.user_scenario.instructions.known_info
    assert resolve(text, today)


def test_distractor_and_partial_change_only_the_user(bank):
    _, _, base, _, _ = bank
    rng = random.Random(1)
    tricky = next(m for t in base if (m := distractor(t, rng)))[0]
    assert "correct yourself" in tricky.user_scenario.instructions.task_instructions
    assert tricky.evaluation_criteria.nl_assertions[-1].startswith("The agent does not act on")
    quiet = next(m for t in base if (m := partial(t)))[0]
    assert "Do not volunteer your" in quiet.user_scenario.instructions.task_instructions


def test_hardening_is_deterministic(bank):
    domain, env, base, hardened, _ = bank
    again, _ = harden(domain, env, base, seed=0)
    assert [t.model_dump_json() for t in again] == [t.model_dump_json() for t in hardened]


@pytest.mark.parametrize("offset", range(-13, 14))
def test_relative_dates_round_trip(offset):
    today = date(2026, 6, 15)
    day = today + timedelta(days=offset)
    phrase = describe(day, today)
    assert phrase is not None
    assert day.isoformat() in resolve(f"It was {phrase}.", today)
    assert describe(today + timedelta(days=40), today) is None
