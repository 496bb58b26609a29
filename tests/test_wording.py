"""Text a person would write: personas, the framing grammar, the skeleton measure and the wording gate."""

from __future__ import annotations

import random
import re
import statistics
from collections import defaultdict
from datetime import date

import pytest

from toolscale.domains.tasks import (Action, Description, EvaluationCriteria, Lineage, StructuredUserInstructions, Task,
                                     TaskMeta, UserScenario)
from toolscale.pipeline import phrasing
from toolscale.pipeline.templating import render_text
from toolscale.quality.gates import GateContext
from toolscale.quality.wording import WordingGate, restraints, skeleton, without_restraints, wording_defect

TODAY = date(2026, 10, 8)
PERSONA = "You are a retired teacher from Lyon who is polite and likes to double-check figures."


def _task(persona: str | None = PERSONA, communicate: tuple[str, ...] = (), **text: str) -> Task:
    fields = {"reason_for_call": "You want to know your balance.", "known_info": "Your email is ana@mail.com.",
              "unknown_info": "You do not know your customer id.",
              "task_instructions": "Ask for the balance of your savings account.", **text}
    return Task(id="t.x.000", description=Description(purpose="x"),
                user_scenario=UserScenario(persona=persona, instructions=StructuredUserInstructions(domain="bank",
                                                                                                    **fields)),
                evaluation_criteria=EvaluationCriteria(communicate_info=list(communicate)),
                meta=TaskMeta(intent="x", kind="read", difficulty="easy", lineage=Lineage(backend="offline", seed=0)))


DEFECTS = [  # (field, defective text, the same text written properly, the defect's reason)
    ("known_info", "Your email is ana@mail.com. Your email is ana@mail.com.",
     "Your email is ana@mail.com. You were born on 1990-01-02.", "repeats a sentence"),
    ("task_instructions", "Pay the bill. Pay the bill.", "Pay the bill. Then ask for the fee.", "repeats a sentence"),
    ("known_info", "Your email is {{ customer.email }}.", "Your email is ana@mail.com.", "unfilled template"),
    ("known_info", "Your phone ends in None.", "Your phone ends in 4821.", "'None'"),
    ("known_info", "The offer runs for 2 season(s).", "The offer runs for 2 seasons.", "'(s)'"),
    ("known_info", "The offer runs for 1 seasons.", "The offer runs for 1 season.", "count of 1"),
    ("reason_for_call", "You will stay 1 nights.", "You will stay 21 nights.", "count of 1"),
    ("reason_for_call", "You see a purchase on 10 days ago.", "You see a purchase from 10 days ago.", "'on N days ago'"),
    ("reason_for_call", "You want takeout today (today) at 19:00.", "You want takeout today (2026-10-08) at 19:00.",
     "glossed by itself"),
    ("known_info", "You travelled on last Saturday.", "You travelled last Saturday.", "'on last"),
    ("reason_for_call", "You want a table on tomorrow.", "You want a table tomorrow.", "'on today'"),
    ("task_instructions", "Ask the agent the agent to check the allergy.", "Ask the agent to check the allergy.",
     "said twice in a row"),
    ("task_instructions", "Ask for the balance. Once that is done: Have the card blocked.",
     "Ask for the balance. Once that is done, have the card blocked.", "capitalised 'Have'"),
]


@pytest.mark.parametrize("field, bad, good, reason", DEFECTS, ids=[f"{d[0]}:{d[3]}" for d in DEFECTS])
def test_each_text_defect_is_rejected_and_its_fix_passes(field, bad, good, reason):
    assert reason in (wording_defect(_task(**{field: bad})) or "")
    assert wording_defect(_task(**{field: good})) is None


def test_a_name_after_a_colon_is_not_a_glued_clause():
    assert wording_defect(_task(known_info="Game: Atlanta Firebirds at New York Harbor on 2026-10-12.")) is None


def test_known_and_unknown_info_may_not_say_the_same_thing():
    task = _task(known_info="You do not know your customer id.", unknown_info="You do not know your customer id.")
    assert wording_defect(task) == "known_info and unknown_info share a sentence"


def test_a_task_needs_a_persona_that_does_not_give_the_answer_away():
    assert wording_defect(_task(persona=None)) == "the task has no persona"
    leaky = _task(persona="You are a chef from Lyon.", communicate=("Lyon",))
    assert wording_defect(leaky) == "the persona gives away a communicate_info value"


def test_kind_must_say_whether_the_gold_changes_more_than_an_identity_check(bank_run):
    _, env, accepted, _ = bank_run
    read = next(t for t in accepted if t.meta.intent == "check_balance")  # verify_identity writes a check row
    write = next(t for t in accepted if t.meta.intent == "transfer_to_savings")
    gate = WordingGate()
    assert gate.check(GateContext(env, read)).passed and gate.check(GateContext(env, write)).passed
    for task, wrong in ((read, "write"), (write, "read")):
        flipped = task.model_copy(update={"meta": task.meta.model_copy(update={"kind": wrong})})
        verdict = gate.check(GateContext(env, flipped))
        assert not verdict.passed and verdict.reason.startswith(f"meta.kind is {wrong!r}")


RESTRAINED = [  # (a request with its restraints, the request alone, the request without "nothing else")
    ("Ask the price of a monthly season ticket. Do not buy anything.", "Ask the price of a monthly season ticket.",
     "Ask the price of a monthly season ticket. Do not buy anything."),
    ("Ask why you cannot register; do not ask for anything else.", "Ask why you cannot register.",
     "Ask why you cannot register."),
    ("Ask how late the train was. Do not make a claim today; you only want the information.",
     "Ask how late the train was.", "Ask how late the train was. Do not make a claim today; you only want the information."),
    ("Ask for the next tour. You are only researching; do not book anything.", "Ask for the next tour.",
     "Ask for the next tour. You are only researching; do not book anything."),
    ("Ask the refund. You have not decided yet, so do not cancel. Ask the fee too.", "Ask the refund. Ask the fee too.",
     "Ask the refund. You have not decided yet, so do not cancel. Ask the fee too."),
    ("Do not pay yet; ask what is due at Wolff e.K. today.", "Ask what is due at Wolff e.K. today.",
     "Do not pay yet; ask what is due at Wolff e.K. today."),
    # not restraints: what the user holds back, a detail of the request itself
    ("Ask for the balance. Do not volunteer your email; give it only when asked.",) * 3,
    ('Have 1 x "Yoga Mat" added to your cart (do not check out) and ask the total.',) * 3,
]


@pytest.mark.parametrize("text, alone, no_more", RESTRAINED)
def test_a_request_joined_to_another_loses_the_restraints_that_would_contradict_it(text, alone, no_more):
    assert without_restraints(text, all_of_them=True) == alone
    assert without_restraints(text, all_of_them=False) == no_more
    assert bool(restraints(text)) == (alone != text)


def _told_also(task: Task, sentence: str) -> Task:
    said = task.user_scenario.instructions
    told = said.model_copy(update={"task_instructions": f"{said.task_instructions} {sentence}"})
    return task.model_copy(update={"user_scenario": task.user_scenario.model_copy(update={"instructions": told})})


def test_a_task_that_changes_something_may_not_tell_its_user_to_change_nothing(bank_run):
    _, env, accepted, _ = bank_run
    write = next(t for t in accepted if t.meta.intent == "transfer_to_savings")
    read = next(t for t in accepted if t.meta.intent == "check_balance")
    gate = WordingGate()
    assert gate.check(GateContext(env, _told_also(read, "Do not change anything today."))).passed
    assert gate.check(GateContext(env, _told_also(write, "Do not change anything else."))).passed
    verdict = gate.check(GateContext(env, _told_also(write, "Do not change anything today.")))
    assert not verdict.passed and verdict.reason == "the user is told 'Do not change anything today.', yet the gold " \
                                                   "changes the state"


def test_plural_filter_follows_the_count():
    assert render_text("{{ n }} {{ 'season'|plural(n) }}", {"n": 1}) == "1 season"
    assert render_text("{{ n }} {{ 'season'|plural(n) }}", {"n": 3}) == "3 seasons"
    assert render_text("{{ 'entry'|plural(2) }} {{ 'person'|plural(2) }} {{ 'pass'|plural(2) }}", {}) == \
        "entries people passes"


SENTENCES = ["You want to pay 301.40 EUR to Henck AG from your checking account.",
             "Pay Henck AG exactly 301.40, then ask whether any fee was charged.",
             "First ask for the date and how many seats are left; then buy 2 lower bowl tickets.",
             "Have Dumont S.A. saved as a rent payee and ask for the new balance of ACC-000134.",
             "Your booking at Maison Cerise on 2026-10-14 at 21:00 is for 3, but you will now be 6."]


def _values(text: str) -> list[str]:
    """Words the grammar must keep as they are: anything with a digit, an @ or a capital past the start."""
    words = text.split()
    return [w.strip(".,;") for i, w in enumerate(words) if re.search(r"[\d@]", w) or (i and w[0].isupper())]


@pytest.mark.parametrize("style", ["terse", "neutral", "chatty"])
def test_the_grammar_keeps_every_value(style):
    for sentence in SENTENCES:
        for seed in range(40):
            rng = random.Random(seed)
            for rewritten in (phrasing.reason_for_call(sentence, rng, style),
                              phrasing.task_instructions(sentence, rng, style)):
                assert all(v in rewritten for v in _values(sentence)), (sentence, rewritten)


@pytest.mark.parametrize("style", ["terse", "neutral", "chatty"])
def test_a_request_already_put_to_the_agent_is_not_put_to_it_twice(style):
    said = {phrasing.task_instructions("Ask the agent to check the allergy on your profile.", random.Random(seed), style)
            for seed in range(60)}
    assert len(said) > 2 and not [s for s in said if wording_defect(_task(task_instructions=s))], said


def test_wondering_frames_only_a_question():
    asks = {phrasing.reason_for_call("You want to know what your balance is.", random.Random(s), "neutral")
            for s in range(60)}
    names = {phrasing.reason_for_call("You want to know your balance.", random.Random(s), "neutral")
             for s in range(60)}
    assert "You're wondering what your balance is." in asks
    assert not any("wondering" in n for n in names)


def test_a_rewrite_that_would_lose_a_value_keeps_the_original():
    original = "Pay Henck AG exactly 301.40."
    assert phrasing._choose(random.Random(0), original, ["Pay them exactly 301.40."]) == original
    assert phrasing._choose(random.Random(0), original, ["Ask the agent to pay Henck AG exactly 301.40."]) != original


def test_the_grammar_varies_the_framing_across_seeds():
    sentence = SENTENCES[1]
    framings = {phrasing.task_instructions(sentence, random.Random(s), "neutral") for s in range(40)}
    assert len(framings) >= 5
    assert phrasing.task_instructions(sentence, random.Random(7), "neutral") == \
        phrasing.task_instructions(sentence, random.Random(7), "neutral")


def test_phrasing_follows_the_persona_style():
    chatty = {phrasing.task_instructions(SENTENCES[1], random.Random(s), "chatty") for s in range(60)}
    terse = {phrasing.task_instructions(SENTENCES[1], random.Random(s), "terse") for s in range(60)}
    chatty_marks = ("Politely", "See if you can")
    assert any(m in t for t in chatty for m in chatty_marks)
    assert not any(m in t for t in terse for m in chatty_marks)
    assert any(t.startswith("Just ") for t in terse) and not any(t.startswith("Just ") for t in chatty)


ROW = {"first_name": "Ana", "last_name": "Ruiz", "date_of_birth": "1950-03-01", "city": "Granada", "country": "ES"}


def test_personas_are_deterministic_and_vary_across_seeds():
    assert phrasing.persona(random.Random(3), ROW, TODAY) == phrasing.persona(random.Random(3), ROW, TODAY)
    assert len({phrasing.persona(random.Random(s), ROW, TODAY).text for s in range(30)}) >= 15


def test_a_persona_agrees_with_the_users_row():
    for seed in range(20):
        text = phrasing.persona(random.Random(seed), ROW, TODAY).text
        assert "seventies" in text and "from Granada" in text
        assert "retired" in text or "pensioner" in text
    student = {"first_name": "Li", "date_of_birth": "2004-05-01", "program_code": "CS", "year": 2}
    assert "year-2 student in your twenties" in phrasing.persona(random.Random(1), student, TODAY).text
    unknown = phrasing.persona(random.Random(1), None, TODAY).text
    assert not any(o in unknown for band in phrasing._OCCUPATIONS.values() for o in band)


def test_the_user_row_is_the_one_the_text_names():
    other = {"first_name": "Bo", "last_name": "Lund", "email": "bo@x.io"}
    context = {"payee": {"name": "Dumont"}, "other": other, "customer": ROW}
    assert phrasing.user_row(context, "Your name is Ana Ruiz.") is ROW
    assert phrasing.user_row(context, "Your email is bo@x.io.") is other
    assert phrasing.user_row(context, "You ask about Ana Ruiz. Your email is bo@x.io.") is other
    assert phrasing.user_row(context, "Nothing about anyone.") is None


def test_every_synthesized_task_has_a_persona_and_clean_text(bank_run):
    _, _, accepted, _ = bank_run
    assert all(t.user_scenario.persona for t in accepted)
    assert [t.id for t in accepted if wording_defect(t)] == []


def test_skeleton_masks_the_values():
    task = _task(reason_for_call="You want to pay 301.40 EUR to Henck AG.",
                 task_instructions="Pay exactly 301.40 and ask for the fee.")
    task.evaluation_criteria.actions.append(Action(action_id="0", name="pay",
                                                   arguments={"payee": "Henck AG", "amount": 301.4}))
    assert skeleton(task) == "You want to pay <v> EUR to <v>. || Pay exactly <v> and ask for the fee."


def test_real_intents_have_at_least_five_skeletons(bank_run):
    _, _, accepted, _ = bank_run
    by_intent = defaultdict(set)
    for task in accepted:
        by_intent[task.meta.intent].add(skeleton(task))
    counts = {intent: len(s) for intent, s in by_intent.items()}
    assert statistics.median(counts.values()) >= 5
    assert [i for i, n in counts.items() if n < 2] == []


def test_the_llm_path_gives_each_task_a_seeded_persona():
    from toolscale.domains import builtin_domain
    from toolscale.pipeline.llm.answers import IntentProposal
    from toolscale.pipeline.llm.tasks import unbuilt_task

    domain = builtin_domain("bank")
    intent = IntentProposal(name="ask_balance", description="d", kind="read", anchor_table="accounts",
                            tools=["list_accounts"])

    def persona(task_id: str, seed: int) -> str | None:
        lineage = Lineage(backend="llm", seed=seed)
        return unbuilt_task(domain, intent, task_id, lineage, None).user_scenario.persona

    assert persona("bank.ask_balance.000", 0) == persona("bank.ask_balance.000", 0)
    assert len({persona(f"bank.ask_balance.{k:03d}", 0) for k in range(20)}) >= 10
