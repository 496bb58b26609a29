"""Hardening: each operator makes a harder variant whose gold is replayed afresh and gated."""

from __future__ import annotations

import dataclasses
import random
import re
from collections import Counter
from datetime import date, timedelta

import pytest

from toolscale.domains import Environment, builtin_domain, replay
from toolscale.domains.dates import describe, relative_dates, resolve
from toolscale.domains.matching import appears_in, normalize_text
from toolscale.pipeline.harden import _verify, harden
from toolscale.pipeline.operators import (_asks_about, _picked, _stake, _told, _unknown_amount, change_of_mind, compose, conditional,
                                          distractor, indirect_dates, partial, preference)
from toolscale.pipeline.phrasing import continuing, merge_sentences
from toolscale.pipeline.synthesizer import OfflineSynthesizer
from toolscale.quality.gates import GateContext
from toolscale.quality.gating import run_gates
from toolscale.quality.soundness import (SoundnessGate, _distractor_records, distractor_defect, ends_elsewhere,
                                        misfits, repeated_unknowns, stale_arguments, twin_key)
from toolscale.quality.wording import WordingGate, restraints


def _synthesized(name: str):
    """(synthesizer, domain, env, base tasks) of a built-in domain at seed 0."""
    synth = OfflineSynthesizer()
    domain = builtin_domain(name)
    rows = synth.populate(domain, seed=0)
    env = Environment.from_rows(domain, rows)
    base, _ = synth.tasks(domain, env, rows, seed=0)
    return synth, domain, env, base


@pytest.fixture(scope="module")
def bank():
    synth, domain, env, base = _synthesized("bank")
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
    assert {t.id for t in base} - ids == {t.meta.hardened_from for t in singles}  # only singles replace a base
    assert all(t.meta.hardened_from is None and t.id not in {b.id for b in base} for t in composed)


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


def test_a_reads_restraint_is_dropped_beside_a_request_that_changes_something(bank):
    _, _, base, _, _ = bank
    restrained = [(x, y) for x, y in _pairs(base) if restraints(x.user_scenario.instructions.task_instructions)]
    joined = {y.meta.kind: (x, y, made[0]) for x, y in restrained if (made := compose(x, y, random.Random(0)))}
    assert set(joined) == {"read", "write"}
    for kind, (x, y, variant) in joined.items():
        said = variant.user_scenario.instructions.task_instructions
        kept = all(r in said for r in restraints(x.user_scenario.instructions.task_instructions))
        assert kept == (kind == "read"), said  # "Do not move any money." stays beside a question, not a payment
        assert said.startswith(x.user_scenario.instructions.task_instructions.split(".")[0])


def test_a_composition_asks_each_judged_fact_once(bank):
    _, _, base, _, _ = bank
    first, second = next((x, y) for x, y in _pairs(base) if compose(x, y))
    said = "The agent tells the user the fee: 0."
    judged = [t.model_copy(update={"evaluation_criteria": t.evaluation_criteria.model_copy(
        update={"nl_assertions": [said]})}) for t in (first, second)]
    assert compose(*judged)[0].evaluation_criteria.nl_assertions == [said]


def _pairs(base):
    users = {}
    for task in base:
        users.setdefault(task.evaluation_criteria.actions[0].model_dump_json(exclude={"action_id"}), []).append(task)
    return [(x, y) for group in users.values() for x in group for y in group if x.meta.intent != y.meta.intent]


def _conditionals(bank):
    domain, env, base, _, _ = bank
    rng = random.Random(3)
    return [(x, y, m[0]) for x, y in _pairs(base)[:400] if (m := conditional(x, y, domain, env, rng))]


def _end(env, task):
    with env.fork() as fork:
        replay(fork, task.gold_calls())
        return fork.state_hash()


def test_conditional_branches_between_two_goals_that_end_in_different_states(bank):
    _, env, _, _, _ = bank
    made = _conditionals(bank)
    taken = Counter()
    assert made
    for a, b, variant in made:
        said = variant.user_scenario.instructions.task_instructions
        assert continuing(a.user_scenario.instructions.task_instructions) in said  # both branches are goals
        assert continuing(b.user_scenario.instructions.task_instructions) in said
        asked = said.split(":")[0]  # "the balance on your account", "the fee of the booking"
        assert "'s " not in asked and ("on your" in asked or " of the " in asked)
        end, end_a, end_b = _end(env, variant), _end(env, a), _end(env, b)
        assert end_a != end_b and end in (end_a, end_b), (a.id, b.id)  # the wrong branch ends elsewhere
        taken["a" if end == end_a else "b"] += 1
    assert taken["a"] and taken["b"]


def test_conditional_amount_is_one_the_user_does_not_know(bank):
    domain, _, _, _, _ = bank
    for a, b, _ in _conditionals(bank):
        told = _told(a, b)
        _, key, field, record = _unknown_amount(a, domain, told, random.Random(0))
        assert not appears_in(record[field], told) and not field.endswith("_id")
        assert record[key] in [v for x in b.evaluation_criteria.actions for v in x.arguments.values()]  # same record


def test_conditional_refuses_two_goals_with_the_same_end(bank):
    domain, env, _, _, _ = bank
    a, _, _ = _conditionals(bank)[0]
    twin = a.model_copy(update={"meta": a.meta.model_copy(update={"intent": "twin"})})
    assert all(conditional(a, twin, domain, env, random.Random(seed)) is None for seed in range(20))


def test_indirect_dates_say_dates_relative_to_the_clock(bank):
    domain, _, base, _, _ = bank
    today = domain.spec.clock.date()
    made = [m for t in base if (m := indirect_dates(t, today))]
    assert made
    variant, _ = made[0]
    text = variant.user_scenario.instructions.reason_for_call + variant.user_scenario.instructions.known_info
    assert resolve(text, today)


def _distracted(env, base):
    rng = random.Random(1)
    return [(t, m[0]) for t in base if (m := distractor(t, env, rng))][:20]


def _right_and_wrong(variant):
    before, correction = variant.user_scenario.instructions.task_instructions.rsplit(" Once the agent has found it", 1)
    right, wrong = correction.removeprefix(", before you agree to any change, correct yourself: you meant ").removesuffix(
        ".").split(", not ")
    return before, right, wrong


def test_distractor_names_a_wrong_record_the_text_does_not_contradict(bank):
    _, env, base, _, _ = bank
    made = _distracted(env, base)
    assert made
    for task, variant in made:
        said = variant.user_scenario.instructions
        before, right, wrong = _right_and_wrong(variant)
        earlier = normalize_text(" ".join(filter(None, [said.reason_for_call, said.known_info, before])))
        assert not appears_in(right, earlier) and appears_in(wrong, earlier), task.id


def test_acting_on_the_distractor_record_changes_the_state(bank):
    _, env, base, _, _ = bank
    for task, variant in _distracted(env, base):
        _, right, wrong = _right_and_wrong(variant)
        lists = [o for o in task.meta.expected_outputs if isinstance(o, list)]
        pairs = [(r, w) for o in lists for r in o for w in o if right in r.values() and wrong in w.values()]
        right_record, wrong_record = pairs[0]
        ids = {v: wrong_record[f] for f, v in right_record.items() if f.endswith("_id") and v != wrong_record[f]}
        calls = [(n, {k: ids.get(v, v) if isinstance(v, str) else v for k, v in args.items()})
                 for n, args in task.gold_calls()]
        with env.fork() as fork:  # the tools accept it (a refusal tests nothing) and it ends elsewhere
            results = replay(fork, calls)
            assert all(r.ok for r in results) and fork.state_hash() != task.meta.final_state_hash, task.id


def test_distractor_refuses_reads_and_wrong_records_the_user_already_names(bank):
    _, env, base, _, _ = bank
    reads = [t for t in base if t.meta.kind == "read"]
    assert reads and not any(distractor(t, env, random.Random(1)) for t in reads)  # a wrong read ends in the same state
    task, variant = _distracted(env, base)[0]
    _, _, wrong = _right_and_wrong(variant)
    said = task.user_scenario.instructions
    naming = said.model_copy(update={"known_info": f"{said.known_info} It is not {wrong}."})
    contradicted = task.model_copy(update={"user_scenario": task.user_scenario.model_copy(
        update={"instructions": naming})})
    made = distractor(contradicted, env, random.Random(1))
    assert made is None or wrong not in _right_and_wrong(made[0])[2]


def test_partial_changes_only_the_user(bank):
    _, _, base, _, _ = bank
    quiet = next(m for t in base if (m := partial(t)))[0]
    assert "Do not volunteer your" in quiet.user_scenario.instructions.task_instructions


def test_composition_reads_as_one_conversation(bank):
    _, _, base, _, _ = bank
    first = next(t for t in base if t.meta.intent == "check_balance")
    second = next(t for t in base if t.meta.intent != "check_balance"
                  and t.evaluation_criteria.actions[0] == first.evaluation_criteria.actions[0])
    joins = set()
    for seed in range(8):
        said = compose(first, second, random.Random(seed))[0].user_scenario.instructions
        join = said.task_instructions.removeprefix(first.user_scenario.instructions.task_instructions).split()
        assert ":" not in join[:3] and join[0][0].isupper() and join[1][0].islower()  # "After that, ask ..."
        joins.add(join[0])
        for field in (said.known_info, said.unknown_info):
            sentences = [s.lower().rstrip(".") for s in field.split(". ")]
            assert len(sentences) == len(set(sentences))
    assert len(joins) > 1  # the seeded rng varies the join


def test_a_joined_reason_drops_the_framing_of_the_second(bank):
    _, _, base, _, _ = bank
    first, second = next((x, y) for x, y in _pairs(base) if compose(x, y))
    framed = second.user_scenario.instructions.model_copy(
        update={"reason_for_call": "The reason you're calling: you want to pay your rent."})
    second = second.model_copy(update={"user_scenario": second.user_scenario.model_copy(update={"instructions": framed})})
    said = compose(first, second)[0].user_scenario.instructions.reason_for_call
    assert said.endswith(" In the same call, you want to pay your rent."), said


def _with_reason(task, reason: str):
    said = task.user_scenario.instructions.model_copy(update={"reason_for_call": reason})
    return task.model_copy(update={"user_scenario": task.user_scenario.model_copy(update={"instructions": said})})


def test_a_joined_reason_says_no_closing_mid_way(bank):
    """"... So you're getting in touch. In the same call, ..." closed the call half-way through it."""
    _, _, base, _, _ = bank
    first, second = next((x, y) for x, y in _pairs(base) if compose(x, y))
    first = _with_reason(first, "Your card was declined. So you're getting in touch. It happened this morning.")
    second = _with_reason(second, "You want to pay your rent. That's why you're calling.")
    said = compose(first, second)[0].user_scenario.instructions.reason_for_call
    assert said == "Your card was declined. It happened this morning. In the same call, you want to pay your rent."


def test_merged_info_keeps_each_sentence_once():
    merged = merge_sentences("You do not know your customer id. Your email is a@b.org.",
                        "You do not know your customer id or account numbers. Your email is a@b.org.")
    assert merged == "Your email is a@b.org. You do not know your customer id or account numbers."


def test_merged_info_says_what_the_user_does_not_know_in_one_list():
    merged = merge_sentences("Your email is a@b.org. You do not know your member id or booking number.",
                             "You do not know the booking number. You were born in 1990.",
                             "You do not know the balance on your account.")
    assert merged == ("Your email is a@b.org. You do not know your member id, booking number or the balance on your "
                      "account. You were born in 1990.")
    clauses = "You do not know your traveler id, and you no longer remember the old passport number."
    assert merge_sentences(clauses, "You do not know the balance.") == (
        "You do not know your traveler id or the balance. You no longer remember the old passport number.")


@pytest.mark.parametrize("texts,said", [
    (["You do not know the price or the exact price."], "You do not know the price."),
    (["You do not know your exact points balance.", "You do not know the points balance on your account."],
     "You do not know your exact points balance."),
    (["You do not know the savings balance.", "You do not know the balance on your account."],
     "You do not know the savings balance."),
    (["You do not know your traveler id or booking reference.", "You do not know your traveler id, and you no longer "
      "remember the old passport number."],
     "You do not know your traveler id or booking reference. You no longer remember the old passport number."),
])
def test_merged_unknowns_list_each_thing_once_near_duplicates_too(texts, said):
    merged = merge_sentences(*texts)
    assert merged == said and not repeated_unknowns(merged)


@pytest.mark.parametrize(("text", "said"), [
    ("It was on 2026-06-05.", "It was 10 days ago."),
    ("Go on 2026-06-24.", "Go in 9 days."),
    ("A table for 2026-06-16.", "A table for tomorrow."),
    ("Pay it on 2026-06-15 (today).", "Pay it today."),
    ("Send what you see right now, today 2026-06-15.", "Send what you see right now, today."),
    ("Born on 1990-01-02.", "Born on 1990-01-02.")])
def test_relative_dates_read_as_speech(text, said):
    assert relative_dates(text, date(2026, 6, 15)) == said


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


@pytest.fixture(scope="module")
def railway():
    _, domain, env, base = _synthesized("railway")
    yield domain, env, base
    env.close()


def test_preference_drops_the_naming_detail_and_asks_for_the_unique_extreme(railway):
    _, env, base = railway
    made = [(t, m[0]) for t in base if (m := preference(t, env))]
    assert made
    for task, variant in made:
        said = variant.user_scenario.instructions
        assert "earliest" in said.known_info or "latest" in said.known_info or "cheapest" in said.known_info
        service = next(o for o in task.meta.expected_outputs if isinstance(o, list) and len(o) > 1)
        chosen = next(r for r in service if r["service_id"] in {a.arguments.get("service_id")
                                                                 for a in task.evaluation_criteria.actions})
        time = chosen["departs_at"][11:16]
        assert not appears_in(time, normalize_text(said.known_info)), task.id
        departures = [r["departs_at"] for r in service]
        assert departures.count(chosen["departs_at"]) == 1
        accepted, rejected = run_gates([variant], env)
        assert accepted or rejected[0].gate not in ("ambiguity", "realizability"), rejected[0].reason


def test_preference_refuses_when_the_goal_itself_names_the_record(railway):
    _, env, base = railway
    task, variant = next((t, m[0]) for t in base if (m := preference(t, env)))
    service = next(o for o in task.meta.expected_outputs if isinstance(o, list) and len(o) > 1)
    used = {a.arguments.get("service_id") for a in task.evaluation_criteria.actions}
    time = next(r["departs_at"][11:16] for r in service if r["service_id"] in used)
    said = task.user_scenario.instructions
    named = said.model_copy(update={"task_instructions": f"{said.task_instructions} Take the {time} departure."})
    assert preference(task.model_copy(update={"user_scenario": task.user_scenario.model_copy(
        update={"instructions": named})}), env) is None


def test_a_variants_kind_is_what_its_gold_does(bank):
    _, env, _, hardened, _ = bank
    variants = [t for t in hardened if t.meta.hardening]
    assert {t.meta.kind for t in variants} == {"read", "write"}  # bank's identity check alone is no write
    for task in variants:
        verdict = WordingGate().check(GateContext(env, task))
        assert verdict.passed or not verdict.reason.startswith("meta.kind"), (task.id, verdict.reason)


def test_change_of_mind_does_b_once_the_agent_quotes_what_a_charges(railway):
    domain, env, base = railway
    rng = random.Random(0)
    made = [(x, y, m[0]) for x, y in _pairs(base)[:1500] if (m := change_of_mind(x, y, domain, env, rng))]
    assert made
    for a, b, variant in made:
        gold, last_a, last_b = variant.gold_calls(), a.gold_calls()[-1], b.gold_calls()[-1]
        assert last_a not in gold and gold[-1] == last_b  # B is done, A's write is not
        assert _end(env, a) != _end(env, variant), (a.id, b.id)  # going ahead with A ends elsewhere
        said = variant.user_scenario.instructions.task_instructions
        assert said.startswith(a.user_scenario.instructions.task_instructions) and "change your mind" in said


def test_change_of_mind_refuses_where_the_policy_does_not_quote_charges(railway):
    domain, env, base = railway
    a, b = next((x, y) for x, y in _pairs(base)[:1500] if change_of_mind(x, y, domain, env, random.Random(0)))
    silent = dataclasses.replace(domain, policy="- Before any change, get the passenger's explicit confirmation.")
    assert change_of_mind(a, b, silent, env, random.Random(0)) is None


# ---- soundness by replay (issue 39, item 3) ----------------------------------------------------

def _replayed(env, variant):
    """The variant with its gold replayed: its outputs and end state recorded as _verify records them."""
    with env.fork() as fork:
        results = replay(fork, variant.gold_calls())
        assert all(r.ok for r in results)
        state = fork.state_hash()
    return variant.model_copy(update={"meta": variant.meta.model_copy(
        update={"expected_outputs": [r.output for r in results], "final_state_hash": state})})


def _stale_composition(bank):
    """A+B where A's write changes the balance B's literal amount was read from before it."""
    _, env, base, _, _ = bank
    for a, b in _pairs(base):
        if a.meta.kind == "write" and "convert" in b.meta.intent + " ".join(x.name for x in
                                                                         b.evaluation_criteria.actions):
            draft = compose(a, b)
            if draft and stale_arguments(env, _replayed(env, draft[0])):
                return a, b, draft
    raise AssertionError("no composition reads a balance before a write changes it")


def test_a_composition_that_converts_a_balance_read_before_a_transfer_is_stale(bank):
    domain, env, _, _, _ = bank
    a, b, draft = _stale_composition(bank)
    stale = stale_arguments(env, _replayed(env, draft[0]))
    assert "read again before action" in stale[0]
    assert not stale_arguments(env, b) and not stale_arguments(env, a)  # each alone reads what it uses
    task, rejection = _verify(domain, env, draft, "bank.composition.999")
    assert task is None and "read again before action" in rejection.reason


def test_no_order_twins_are_drafted(bank):
    _, _, _, hardened, _ = bank
    keys = [twin_key(t) for t in hardened if twin_key(t) is not None]
    assert keys and len(keys) == len(set(keys))


def test_a_distractor_the_tools_would_refuse_is_not_drafted(bank):
    """A sibling the tools refuse (a frozen account, a closed one) tests nothing: it is never the wrong record."""
    _, env, base, _, _ = bank
    refused = drafted = 0
    for task in [t for t in base if t.meta.kind == "write"][:150]:
        actions = task.evaluation_criteria.actions
        for at, output in enumerate(task.meta.expected_outputs):
            if (picked := _picked(output, actions[at + 1:])) is None:
                continue
            chosen, key = picked
            stuck = {o[key] for o in output if o is not chosen and not ends_elsewhere(env, task, at, chosen[key], o[key])}
            refused += len(stuck)
            if stuck and (made := distractor(task, env, random.Random(1))):
                _, right, wrong_value = _right_and_wrong(made[0])
                _, _, _, wrong = _distractor_records(task, right, wrong_value)
                assert wrong[key] not in stuck, task.id
                drafted += 1
            break
    assert refused and drafted  # the bank has such siblings, and distractors were drafted beside them


def _at(task, record):
    return next(i for i, o in enumerate(task.meta.expected_outputs) if isinstance(o, list) and record in o)


def test_every_detail_before_the_correction_fits_the_wrong_record(bank):
    _, env, base, _, _ = bank
    made = _distracted(env, base)
    for task, variant in made:
        assert distractor_defect(env, _replayed(env, variant)) is None, task.id


def test_a_date_inside_a_timestamp_counts_as_a_detail_the_user_gives():
    right = {"showing_id": "S-1", "title": "Neon Harbor", "starts_at": "2026-07-12T20:30:00"}
    wrong = {"showing_id": "S-2", "title": "Tiny Giants", "starts_at": "2026-07-15T20:30:00"}
    said = normalize_text("Your Tiny Giants showing on 2026-07-12 at 20:30.")
    assert misfits(said, right, wrong, {"showing_id"}) == ["starts_at 2026-07-12"]
    assert misfits(normalize_text("Your Tiny Giants showing at 20:30."), right, wrong, {"showing_id"}) == []


def made_pair(made, variant):
    return next((a, b) for a, b, v in made if v is variant)


def test_a_conditional_switches_on_what_the_user_pays_or_pays_from_and_asks_once(bank):
    domain, _, _, _, _ = bank
    made = _conditionals(bank)
    assert made
    for a, _, variant in made:
        said = variant.user_scenario.instructions.task_instructions
        asked = re.match(r"First ask the agent what (.+?) is\.", said).group(1)
        label = re.sub(r" (on your|of the) .*", "", asked.removeprefix("the "))
        assert said.count(asked) == 1 and not _asks_about(label, *(x.user_scenario.instructions.task_instructions
                                                                   for x in made_pair(made, variant)))
        field = label.replace(" ", "_")
        criteria = variant.evaluation_criteria  # the amount is told: graded, or judged when short
        said = [float(x) for x in re.findall(r"\d+(?:\.\d+)?", " ".join([*criteria.communicate_info,
                                                                          *criteria.nl_assertions]))]
        assert any(_stake(a, domain, field, amount) in ("cost", "held") for amount in said), asked
    # an amount A neither costs nor spends from gives no reason to choose, nor a price A's write does not charge
    assert _stake(made[0][0], domain, "overdraft_limit", 100.0) is None
    assert _stake(made[0][0], domain, "price", 123456.78) is None


def test_a_conditional_whose_request_already_asks_the_amount_is_not_drafted(bank):
    domain, env, _, _, _ = bank
    a, b, variant = _conditionals(bank)[0]
    asked = re.match(r"First ask the agent what (.+?) is\.", variant.user_scenario.instructions.task_instructions)
    label = re.sub(r" (on your|of the) .*", "", asked.group(1).removeprefix("the "))
    text = a.user_scenario.instructions.model_copy(update={
        "task_instructions": f"{a.user_scenario.instructions.task_instructions} Ask what the {label} is."})
    asking = a.model_copy(update={"user_scenario": a.user_scenario.model_copy(update={"instructions": text})})
    assert all(conditional(asking, b, domain, env, random.Random(seed)) is None for seed in range(20))


def test_the_soundness_gate_fails_a_stale_gold_and_passes_the_requests_alone(bank):
    _, env, _, _, _ = bank
    a, b, draft = _stale_composition(bank)
    stale = _replayed(env, draft[0])
    assert "stale gold" in SoundnessGate().check(GateContext(env, stale)).reason
    assert SoundnessGate().check(GateContext(env, a)).passed and SoundnessGate().check(GateContext(env, b)).passed


def test_the_soundness_gate_fails_a_distractor_whose_words_fit_no_record(bank):
    _, env, base, _, _ = bank
    for task, variant in _distracted(env, base):
        variant = _replayed(env, variant)
        _, right, wrong_value = _right_and_wrong(variant)
        _, key, chosen, wrong = _distractor_records(variant, right, wrong_value)
        detail = next((v for f, v in chosen.items() if f != key and isinstance(v, str) and len(v) >= 4
                       and v != wrong.get(f) and v not in wrong.values()), None)
        if detail is None:
            continue
        assert SoundnessGate().check(GateContext(env, variant)).passed
        said = variant.user_scenario.instructions
        mixed = variant.model_copy(update={"user_scenario": variant.user_scenario.model_copy(update={
            "instructions": said.model_copy(update={"known_info": f"{said.known_info} It is the one with {detail}."})})})
        assert "do not fit" in SoundnessGate().check(GateContext(env, mixed)).reason
        return
    raise AssertionError("no distractor with a detail the wrong record lacks")
