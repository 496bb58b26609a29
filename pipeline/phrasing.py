"""Personas and varied framing for the user's text, from a small seeded phrase grammar.

The grammar rewrites only the framing of a rendered sentence (its leading verb phrase and its
connectors), never a value: the realizability gate needs every gold argument in the user's
words as rendered. `rephrase` checks this itself and keeps the original sentence when a rewrite
would lose a word other than the framing it replaced.
"""

from __future__ import annotations

import random
import re
from collections import Counter
from dataclasses import dataclass
from datetime import date
from typing import Any

from toolscale.quality.soundness import content_words

Style = str  # "terse", "neutral" or "chatty": how the user talks, and so how the text is framed

_TEMPERAMENTS = ("polite", "calm", "impatient", "anxious", "cheerful", "blunt", "easy-going", "meticulous",
                 "easily distracted", "sceptical", "warm", "hurried", "reserved", "good-humoured")
# (third person, second person, style)
_MANNERS = (
    ("speaks in short, clipped sentences", "you speak in short, clipped sentences", "terse"),
    ("gets straight to the point", "you get straight to the point", "terse"),
    ("answers only what is asked", "you answer only what you are asked", "terse"),
    ("likes to double-check figures", "you like to double-check figures", "neutral"),
    ("writes in a formal tone", "you write in a formal tone", "neutral"),
    ("asks for things to be confirmed", "you like things confirmed before moving on", "neutral"),
    ("likes to chat and explains more than needed", "you like to chat and explain more than needed", "chatty"),
    ("thinks out loud while deciding", "you think out loud while deciding", "chatty"),
    ("tends to add a bit of background to every request", "you tend to add background to every request",
     "chatty"),
)
_OCCUPATIONS = {
    "young": ("student", "apprentice electrician", "junior designer", "barista", "trainee nurse",
              "graduate starting a first job"),
    "working": ("nurse", "accountant", "software developer", "secondary-school teacher", "electrician",
                "shop owner", "project manager", "graphic designer", "civil engineer", "chef", "lawyer",
                "journalist", "social worker", "delivery driver", "physiotherapist", "translator"),
    "retired": ("retired teacher", "retired engineer", "retired nurse", "retired librarian",
                "retired bookkeeper", "retired bus driver"),
}
_UNKNOWN_USERS = ("caller", "first-time caller", "long-time user of the service", "person calling from home",
                  "person calling on a lunch break")
_COUNTRIES = {"GB": "the UK", "US": "the US", "DE": "Germany", "FR": "France", "ES": "Spain", "IT": "Italy",
              "NL": "the Netherlands", "IE": "Ireland", "BE": "Belgium", "AT": "Austria", "PT": "Portugal",
              "CH": "Switzerland"}
_DECADES = {2: "twenties", 3: "thirties", 4: "forties", 5: "fifties", 6: "sixties", 7: "seventies",
            8: "eighties", 9: "nineties"}


@dataclass(frozen=True)
class Persona:
    text: str
    style: Style


def _age(row: dict[str, Any], today: date) -> int | None:
    born = row.get("date_of_birth") or row.get("birth_date")
    try:
        born = date.fromisoformat(str(born)[:10])
    except ValueError:
        return None
    return today.year - born.year - ((today.month, today.day) < (born.month, born.day))


def _occupation(rng: random.Random, row: dict[str, Any], age: int | None) -> str:
    """What the row says the user is, else an occupation that fits their age."""
    if "program_code" in row and "year" in row:
        return f"year-{row['year']} student"
    if row.get("role"):
        return f"{str(row['role']).replace('_', ' ')} at your club"
    band = "working" if age is None else "young" if age < 25 else "retired" if age >= 67 else "working"
    occupation = rng.choice(_OCCUPATIONS[band])
    if row.get("segment") == "business":
        occupation = "small-business owner"
    return occupation


def _origin(row: dict[str, Any]) -> str:
    city = row.get("city") or row.get("home_city")
    country = _COUNTRIES.get(str(row.get("country") or row.get("nationality") or ""))
    if city and isinstance(city, str):
        return f" from {city}"
    return f" from {country}" if country else ""


def _article(phrase: str) -> str:
    return ("an " if phrase[0].lower() in "aeiou" else "a ") + phrase


def persona(rng: random.Random, row: dict[str, Any] | None, today: date) -> Persona:
    """A short τ²-style persona: temperament × manner × occupation, true to the user's row."""
    age = _age(row or {}, today)
    # With no row to go by, say nothing the data could contradict (a "nurse" who is a student).
    occupation = _occupation(rng, row, age) if row else rng.choice(_UNKNOWN_USERS)
    row = row or {}
    temperament = rng.choice(_TEMPERAMENTS)
    third, second, style = rng.choice(_MANNERS)
    decade = f" in your {_DECADES[age // 10]}" if age and age // 10 in _DECADES else ""
    where = _origin(row)
    forms = (f"You are {_article(occupation)}{decade}{where} who is {temperament} and {third}.",
             f"You are {_article(temperament)} {occupation}{decade}{where}; {second}.",
             f"You're {_article(occupation)}{decade}{where}. You are {temperament}, and {second}.")
    return Persona(rng.choice(forms), style)


def user_row(context: dict[str, Any], known_info: str) -> dict[str, Any] | None:
    """The bound row that is the user: the one whose email or phone, else whose full name, the
    user's known_info gives (a player or payee named elsewhere in the text is not the caller)."""
    people = [v for v in context.values() if isinstance(v, dict) and v.get("first_name")]
    by_contact = [p for p in people if any(p.get(f) and str(p[f]) in known_info for f in ("email", "phone"))]
    by_name = [p for p in people if f"{p['first_name']} {p.get('last_name', '')}".strip() in known_info]
    return (by_contact or by_name or [None])[0]


# ---- framing -------------------------------------------------------------------------------

_GERUNDS = {"ask": "asking", "have": "having", "book": "booking", "buy": "buying", "pay": "paying",
            "cancel": "cancelling", "subscribe": "subscribing", "place": "placing", "add": "adding",
            "open": "opening", "move": "moving", "register": "registering", "order": "ordering",
            "give": "giving", "send": "sending", "check": "checking", "pre-order": "pre-ordering",
            "get": "getting", "find": "finding", "change": "changing", "report": "reporting",
            "renew": "renewing", "request": "requesting", "switch": "switching", "update": "updating"}
_WH = ("what", "how", "which", "whether", "who", "when", "if")

_REASON_FRAMES = {
    "want to know": ("You want to know {}", "You'd like to know {}", "You're wondering {}", "You want to find out {}",
                     "You're trying to find out {}"),
    "want to": ("You want to {}", "You'd like to {}", "You're calling because you want to {}",
                "You're hoping to {}", "You're getting in touch to {}"),
    "want": ("You want {}", "You'd like {}", "You're after {}", "You're calling because you want {}",
             "What you want is {}"),
    "need to": ("You need to {}", "You have to {}", "You're calling because you need to {}",
                "You've got to {}"),
    "are": ("You are {}", "You're {}"),
}
_REASON_BY_STYLE = {"terse": ("You need to {}",), "chatty": ("You were wondering whether you could {}",),
                    "neutral": ()}
_REASON_PREFIXES = ("{}", "You're calling because {}", "The reason you're calling: {}",
                    "You're contacting support since {}")
_REASON_SUFFIXES = ("{}", "{} That's why you're calling.", "{} So you're getting in touch.")

_CONNECTORS = ((r"(?<!,) and ask ", (" and ask ", " and also ask ", ", then ask ")),
               (r", then ", (", then ", ", and then ", ", and after that ", "; once that's done, ")),
               (r" and make sure you are told ", (" and make sure you are told ", " and make sure the agent tells you ")),
               (r"; then ", ("; then ", ". After that, ", "; after that, ")))
_FRAMING_WORDS = {"you", "want", "to", "ask", "have", "first", "then", "and", "after", "that", "the", "agent",
                  "for", "find", "out", "make", "sure", "tells", "told", "are", "is", "also", "once", "done",
                  "get", "request", "please", "just", "start", "by", "try", "would", "like", "need", "calling",
                  "because", "you're", "you'd", "what", "so", "since", "reason", "getting", "in", "touch",
                  "hoping", "after", "were", "wondering", "whether", "could", "see", "if", "can", "you've", "got",
                  "politely", "before", "wondering", "curious", "trying", "anything", "else", "contacting", "support", "that's", "why", "know"}


def _lower_first(sentence: str) -> str | None:
    """The sentence with its first word lowercased, when that word is framing, not a value."""
    first = sentence.split(" ", 1)[0]
    if first in ("You", "Your") or first.lower() in _GERUNDS:
        return first.lower() + sentence[len(first):]
    return None


def _prefixed(sentence: str) -> list[str]:
    lowered = _lower_first(sentence)
    return [p.format(lowered) for p in _REASON_PREFIXES[1:]] if lowered else []


def _reason_options(sentence: str, style: Style) -> list[str]:
    for key, frames in _REASON_FRAMES.items():
        head = f"You {key} "
        if sentence.startswith(head):
            rest = sentence[len(head):]
            extra = _REASON_BY_STYLE[style] if key in ("want to", "need to") else ()
            if rest.split(" ", 1)[0] not in _WH:  # "wondering your balance" is not English
                frames = tuple(f for f in frames if "wondering" not in f)
            return [*(f.format(rest) for f in (*frames, *extra)), *_prefixed(sentence)]
    lowered = _lower_first(sentence)
    if lowered is not None:
        return [sentence, *_prefixed(sentence)]
    return [s.format(sentence) for s in _REASON_SUFFIXES]


def _instruction_options(sentence: str, style: Style) -> list[str]:
    """Framings of one instruction led by an imperative ("Ask what ...", "First book ...")."""
    words = sentence.split(" ", 2)
    if words[0] == "First" and len(words) > 2 and words[1] in _GERUNDS:
        rest = " ".join(words[2:])
        return [sentence, f"First, {words[1]} {rest}", f"Start by {_GERUNDS[words[1]]} {rest}",
                f"Before anything else, {words[1]} {rest}"]
    verb = words[0].lower()
    if verb not in _GERUNDS or len(words) < 2:
        return [sentence]
    rest = sentence[len(words[0]) + 1:]
    options = [sentence, f"You'd like to {verb} {rest}", f"Make sure you {verb} {rest}"]
    named = rest.startswith("the agent ")  # "Ask the agent to check ..." is not asked of "the agent" twice
    if verb == "ask":
        if not named:
            options.append(f"Ask the agent {rest}")
        if words[1] in _WH:
            options += [f"Find out {rest}", f"Make sure the agent tells you {rest}"]
        elif words[1] == "for":
            options.append(f"Request {rest[4:]}")
    else:
        options += [f"Ask the agent to {verb} {rest}", f"Try to {verb} {rest}"]
        if verb == "have":
            options.append(f"Get {rest}")
    if style == "terse":
        options.append(f"Just {verb} {rest}")
    elif style == "chatty":
        options += [f"Politely ask {rest}" if named else f"Politely ask the agent {rest}"] if verb == "ask" else [
            f"See if you can {verb} {rest}", f"Politely ask the agent to {verb} {rest}"]
    return options


def _connect(sentence: str, rng: random.Random) -> str:
    for pattern, choices in _CONNECTORS:
        if re.search(pattern, sentence):
            sentence = re.sub(pattern, rng.choice(choices), sentence, count=1)
    return sentence


def _words(text: str) -> Counter[str]:
    return Counter(w.strip(".,;:!?'\"()").casefold() for w in text.split())


def _kept(original: str, rewritten: str) -> bool:
    """Every word of the original other than framing is still in the rewrite, spelled the same."""
    lost = _words(original) - _words(rewritten)
    return all(w in _FRAMING_WORDS or not w for w in lost) and all(
        token in rewritten for token in original.split() if any(c.isdigit() or c == "@" for c in token))


_SENTENCES = re.compile(r"(?<=[.!?])\s+(?=[A-Z])")


def _choose(rng: random.Random, original: str, options: list[str]) -> str:
    choice = rng.choice(options)
    return choice if _kept(original, choice) else original


def reason_for_call(text: str, rng: random.Random, style: Style) -> str:
    """The reason with its first sentence framed anew."""
    first, *rest = _SENTENCES.split(text.strip(), maxsplit=1)
    if not first:
        return text
    return " ".join([_choose(rng, first, _reason_options(first, style)), *rest])


def task_instructions(text: str, rng: random.Random, style: Style) -> str:
    """The instructions with each sentence's framing and connectors drawn anew.

    No sentence is added (a closing "Keep it short."): composition joins two tasks' instructions,
    and the same added sentence would then be said twice.
    """
    out = []
    for sentence in _SENTENCES.split(text.strip()):
        framed = _choose(rng, sentence, _instruction_options(sentence, style))
        out.append(_choose(rng, framed, [_connect(framed, rng)]))
    return " ".join(out)


# merging the texts of two tasks (the hardening operators) ------------------------------
def _sentence_words(sentence: str) -> frozenset[str]:
    return frozenset(w.rstrip("s") for w in re.findall(r"[\w@.-]+", sentence.lower().rstrip(".!?")))


_NOT_KNOWN = re.compile(r"You do not know ([^.;()]+)\.")  # a plain list: "your customer id or loan id"


def _unknowns(sentence: str) -> list[str] | None:
    """What a "You do not know A, B or C." sentence lists, or None for any other sentence."""
    listed = _NOT_KNOWN.fullmatch(sentence)
    if listed is None or " and " in listed.group(1):  # "..., and you no longer remember ..." is no list
        return None
    return re.split(r", | or ", listed.group(1))


_CLAUSE = re.compile(r"(?:, and| and) (?=you |are not )")


def _clauses(sentence: str) -> list[str]:
    """A sentence of clauses the user says of themselves as one sentence each: "You do not know your
    traveler id, and you no longer remember ..." is two, so that what each does not know is merged with
    the other texts' lists (and said once)."""
    parts = _CLAUSE.split(sentence)
    if len(parts) == 1 or not sentence.startswith("You "):
        return [sentence]
    said = [parts[0].rstrip(",") + "."]
    for part in parts[1:]:
        said.append("You " + (part[4:] if part.startswith("you ") else part))
    return [p if p.endswith((".", "!", "?")) else p + "." for p in said[:-1]] + [said[-1]]


def _one_list(items: list[str]) -> str:
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} or {items[-1]}"


def merge_sentences(*texts: str | None) -> str:
    """The sentences of `texts` once each: one whose words another kept sentence already holds
    ("... customer id." beside "... customer id or account numbers.") is dropped, and the "You do
    not know ..." lists are said as one, each thing once."""
    kept: list[tuple[str, frozenset[str]]] = []
    for text in texts:
        for sentence in (part for whole in re.split(r"(?<=[.!?])\s+", text or "") for part in _clauses(whole)):
            words = _sentence_words(sentence)
            if not words or any(words <= other for _, other in kept):
                continue
            kept = [(s, w) for s, w in kept if not w <= words] + [(sentence, words)]
    said = [s for s, _ in kept]
    lists = [(i, items) for i, s in enumerate(said) if (items := _unknowns(s))]
    if lists:
        # one thing once: "the booking number" and "booking numbers", "the price" and "the exact price",
        # "your exact points balance" and "the points balance on your account" (the more specific is kept)
        unknown: list[tuple[frozenset[str], str]] = []
        for _, items in lists:
            for item in items:
                words = content_words(item)
                if any(words <= other for other, _ in unknown):
                    continue
                at = next((n for n, (other, _) in enumerate(unknown) if other <= words), None)
                unknown = [u for u in unknown if not u[0] <= words]
                unknown.insert(len(unknown) if at is None else at, (words, item))
        said[lists[0][0]] = f"You do not know {_one_list([item for _, item in unknown])}."
        merged_away = {j for j, _ in lists[1:]}
        said = [s for i, s in enumerate(said) if i not in merged_away]
    return " ".join(said)


_FRAMED = re.compile("|".join(re.escape(p.format("")) for p in _REASON_PREFIXES[1:]))


_CLOSING = re.compile("|".join(re.escape(" " + s.format("").strip()) for s in _REASON_SUFFIXES[1:]))


def unframed(reason: str) -> str:
    """A reason without the framing `reason_for_call` may have put around it ("The reason you're calling:
    ...", "... That's why you're calling."), to go on after another one's ("In the same call, the reason
    you're calling: ..." was not English)."""
    framed = _FRAMED.match(reason)
    return unclosed(reason[framed.end():] if framed else reason)


def unclosed(reason: str) -> str:
    """A reason without the closing `reason_for_call` may have put after its first sentence ("So you're
    getting in touch."): another reason goes on after it ("... So you're getting in touch. In the same
    call, ..." said it mid-way)."""
    return _CLOSING.sub("", reason, count=1)


def continuing(text: str) -> str:
    """`text` to go on after a comma or colon: its first letter lowercased unless it starts a name or acronym."""
    return text[:1].lower() + text[1:] if text[1:2].islower() or len(text) < 2 else text
