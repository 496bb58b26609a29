"""Text a person would write: the wording gate, the restraints a request joined to another loses,
and the sentence skeleton used to measure variety.

A skeleton is the user's request (reason_for_call and task_instructions) with every value the
task is about masked: what is left is the sentence a template or grammar produced, so counting
distinct skeletons per intent says whether an intent's tasks read as one sentence with the
values swapped.
"""

from __future__ import annotations

import re
from typing import Any

from toolscale.domains.matching import appears_in, leaves, normalize_text
from toolscale.domains.tasks import GateVerdict, Task

from .gates import GateContext, failed, passed

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_NUMBER = re.compile(r"\d+(?:[.,:]\d+)*")
_FIELDS = ("reason_for_call", "known_info", "unknown_info", "task_instructions")

# Nouns a template counts; "1 days" is a count the template did not pluralise properly.
_COUNTED = ("days", "nights", "seasons", "weeks", "months", "years", "hours", "minutes", "tickets", "seats",
            "guests", "people", "credits", "games", "items", "units", "points", "adults", "children", "rooms",
            "passengers", "travellers", "players", "courses", "bags", "tables", "refills", "doses", "packs")
_WEEKDAY = r"(?:Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday|week|weekend|month|year)"
_DEFECTS = (
    (re.compile(r"\{\{|\{%|\}\}|%\}"), "unfilled template text"),
    (re.compile(r"\bNone\b"), "'None' rendered into the text"),
    (re.compile(r"\w\(s\)"), "an unresolved '(s)' plural"),
    (re.compile(r"(?<![\d.,])\b1 (?:" + "|".join(_COUNTED) + r")\b"), "a count of 1 with a plural noun"),
    (re.compile(r"\bon \d+ (?:days|weeks|months|years) (?:ago|from now)\b"), "a broken relative date ('on N days ago')"),
    (re.compile(r"\b(today|tomorrow|yesterday) \(\1\)", re.I), "a relative date glossed by itself"),
    (re.compile(r"\bon (?:last|next|this) " + _WEEKDAY + r"\b"), "a broken relative date ('on last ...')"),
    (re.compile(r"\bon (?:today|tomorrow|yesterday)\b(?!')"), "a broken relative date ('on today')"),
    (re.compile(r"\b([a-z]+(?: [a-z]+){0,2}) \1\b"), "words said twice in a row ('the agent the agent')"),
)
# A capitalised word after a colon is a name ("Game: Atlanta Firebirds") unless it is one of
# these, which only start a new clause: "Once that is done: Have ..." is two sentences glued.
_CLAUSE_STARTS = {"have", "ask", "then", "and", "but", "the", "a", "an", "make", "find", "get", "if", "only",
                  "please", "you", "your", "book", "buy", "pay", "cancel", "check", "tell", "say", "open", "move",
                  "add", "order", "place", "subscribe", "register", "send", "give", "when", "after", "at", "do"}
_COLON_CLAUSE = re.compile(r"[a-z]: ([A-Z][a-z]*)\b")

# A restraint keeps the user from asking for more than their request: a read intent's "Do not buy
# anything." makes its user turn down an agent's offer to book. It holds for that request alone: joined
# to another intent's request that changes something, it contradicts it (pipeline/operators.py drops it).
_RESTRAINT = re.compile(r"^(?:you have not decided yet,? so |you are only researching[,;]? )?"
                        r"(?:(?:do not|don't|you do not want to|you don't want to) (?!volunteer|give|say|tell|share)\w+"
                        r"|you (?:only|just) want (?:the )?information|you are only researching)\b", re.I)
# A blanket restraint forbids every change ("Do not change anything today."), so no task that changes
# something may say it; "do not ask for anything else" restrains the other requests of a joined task.
_BLANKET = re.compile(r"\b(?:anything(?! else)|any money|want (?:the )?information|only researching)\b", re.I)
_ANYTHING_ELSE = re.compile(r"\banything else\b", re.I)
_CLAUSE_END = re.compile(r"(?<=[.!?;])\s+")


def sentences(text: str | None) -> list[str]:
    return [s.strip() for s in _SENTENCE_END.split(text or "") if s.strip()]


def restraints(text: str | None) -> list[str]:
    """The clauses of `text` (its sentences, and their parts after a ';') that are restraints."""
    return [c for c in _CLAUSE_END.split(text or "") if _RESTRAINT.match(c.strip())]


def without_restraints(text: str, *, all_of_them: bool) -> str:
    """`text` for a request joined to another: without its "nothing else" restraints, and with
    `all_of_them`, without any (the other request changes something)."""
    kept: list[str] = []
    dropped = False
    for clause in _CLAUSE_END.split(text.strip()):
        if _RESTRAINT.match(clause) and (all_of_them or _ANYTHING_ELSE.search(clause)):
            if kept and kept[-1].endswith(";") and clause[-1] in ".!?":  # "... first; do not ask for more."
                kept[-1] = kept[-1][:-1] + clause[-1]
            dropped = True
            continue
        if dropped and (not kept or kept[-1][-1] in ".!?"):  # "Do not pay yet; ask ..." starts anew
            clause = clause[:1].upper() + clause[1:]
        kept.append(clause)
        dropped = False
    return " ".join(kept)


def _values(task: Task) -> list[str]:
    """Texts of the values the task is about: gold arguments, outputs and communicated facts,
    longest first so that a value is masked before any part of it."""
    found = {str(v) for v in leaves([a.arguments for a in task.evaluation_criteria.actions])}
    found |= {str(v) for v in leaves(task.meta.expected_outputs)}
    found |= set(task.evaluation_criteria.communicate_info)
    return sorted((v for v in found if len(v) >= 2 and v not in ("None", "True", "False")), key=len, reverse=True)


def skeleton(task: Task, extra_values: list[Any] = ()) -> str:
    """reason_for_call + task_instructions with every value of the task masked as `<v>`.

    `extra_values` are more values to mask, such as the bound rows' fields at synthesis; numbers
    are masked too, as they are always values, never framing.
    """
    instructions = task.user_scenario.instructions
    text = f"{instructions.reason_for_call} || {instructions.task_instructions}"
    values = sorted({*_values(task), *(str(v) for v in leaves(list(extra_values)) if len(str(v)) >= 2)},
                    key=len, reverse=True)
    for value in values:
        if value in text:  # whole values only: 301.4 is not masked inside 301.40
            text = re.sub(rf"(?<!\w){re.escape(value)}(?!\w)", "<v>", text)
    return _NUMBER.sub("<v>", text)


def wording_defect(task: Task) -> str | None:
    """The first defect of the task's text as one short line, or None."""
    instructions = task.user_scenario.instructions
    for field in _FIELDS:
        text = getattr(instructions, field) or ""
        said = sentences(text)
        if len(said) != len(set(said)):
            return f"{field} repeats a sentence"
        for pattern, defect in _DEFECTS:
            if pattern.search(text):
                return f"{field}: {defect}"
        clause = next((m.group(1) for m in _COLON_CLAUSE.finditer(text) if m.group(1).lower() in _CLAUSE_STARTS), None)
        if clause:
            return f"{field}: a capitalised '{clause}' continues a sentence after a colon"
    if set(sentences(instructions.known_info)) & set(sentences(instructions.unknown_info)):
        return "known_info and unknown_info share a sentence"
    persona = task.user_scenario.persona
    if not persona:
        return "the task has no persona"
    if any(appears_in(info, normalize_text(persona)) for info in task.evaluation_criteria.communicate_info):
        return "the persona gives away a communicate_info value"
    return None


class WordingGate:
    """The user's text has no template artifacts, no repeated sentences and a persona;
    `meta.kind` is "write" exactly when a gold call other than an identity check changes the state,
    and the user of a task that changes something is not told to change nothing."""

    name = "wording"

    def check(self, ctx: GateContext) -> GateVerdict:
        defect = wording_defect(ctx.task)
        if defect:
            return failed(defect)
        specs, hashes = ctx.env.domain.toolkit.specs, ctx.first_replay.step_hashes
        writes = any(specs[a.name].changes_what_users_want and hashes[i] != hashes[i + 1]
                     for i, a in enumerate(ctx.task.evaluation_criteria.actions) if i + 1 < len(hashes))
        if writes != (ctx.task.meta.kind == "write"):
            return failed(f"meta.kind is {ctx.task.meta.kind!r} but the gold {'changes' if writes else 'does not change'}"
                          " the state")
        request = ctx.task.user_scenario.instructions
        blanket = next((r for r in restraints(f"{request.reason_for_call} {request.task_instructions}")
                        if _BLANKET.search(r)), None)
        if writes and blanket:
            return failed(f"the user is told {blanket.strip()!r}, yet the gold changes the state")
        return passed()
