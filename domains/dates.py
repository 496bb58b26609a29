"""Dates said the way people say them ("yesterday", "next Friday", "in 5 days"), and back.

The hardening step writes such phrases into a user's instructions; the realizability gate reads
them back against the domain's clock. One vocabulary, kept here, serves both.
"""

from __future__ import annotations

import re
from datetime import date, timedelta

WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
_FIXED = {"the day before yesterday": -2, "yesterday": -1, "today": 0, "tomorrow": 1, "the day after tomorrow": 2}


# the forms `resolve` reads back, for whoever writes dates for a user to say (the LLM's hardening step)
SAID_FORMS = ", ".join(f'"{form}"' for form in (*_FIXED, "this coming Friday", "last Friday", "in 9 days",
                                                 "10 days ago"))


def describe(day: date, today: date) -> str | None:
    """A relative phrase for `day` seen from `today`, or None when it is too far to say so."""
    delta = (day - today).days
    for phrase, offset in _FIXED.items():
        if delta == offset:
            return phrase
    if 3 <= delta <= 6:
        return f"this coming {WEEKDAYS[day.weekday()]}"
    if -6 <= delta <= -3:
        return f"last {WEEKDAYS[day.weekday()]}"
    if 7 <= delta <= 13:
        return f"in {delta} days"
    if -13 <= delta <= -7:
        return f"{-delta} days ago"
    return None


def resolve(text: str, today: date) -> set[str]:
    """Every ISO date that a relative phrase in `text` stands for."""
    lowered = text.lower()
    found: set[str] = set()
    for phrase, offset in _FIXED.items():
        if re.search(rf"\b{phrase}\b", lowered):
            found.add((today + timedelta(days=offset)).isoformat())
    for n in re.findall(r"\bin (\d{1,2}) days\b", lowered):
        found.add((today + timedelta(days=int(n))).isoformat())
    for n in re.findall(r"\b(\d{1,2}) days ago\b", lowered):
        found.add((today - timedelta(days=int(n))).isoformat())
    for i, weekday in enumerate(WEEKDAYS):
        if f"this coming {weekday.lower()}" in lowered:
            found.add((today + timedelta(days=(i - today.weekday() - 1) % 7 + 1)).isoformat())
        if f"last {weekday.lower()}" in lowered:
            found.add((today - timedelta(days=(today.weekday() - i - 1) % 7 + 1)).isoformat())
    return found


_ISO_DATE = re.compile(r"\b(on |for )?(\d{4}-\d{2}-\d{2})\b")
# "2026-04-14 (today)" made "today (today)", and "today 2026-04-14" made "today today"
_ECHO = re.compile(r"\b(today|tomorrow|yesterday) (?:\(\1\)|\1\b)", re.IGNORECASE)


def _relative(match: re.Match[str], today: date) -> str:
    phrase = describe(date.fromisoformat(match.group(2)), today)
    if phrase is None:
        return match.group(0)
    # "for tomorrow" reads well; "on 10 days ago", "on in 9 days" do not
    keeps_preposition = match.group(1) == "for " and phrase.startswith(("today", "tomorrow", "the day after"))
    return f"{match.group(1) if keeps_preposition else ''}{phrase}"


def relative_dates(text: str, today: date) -> str:
    """`text` with the ISO dates near `today` said the way people say them."""
    return _ECHO.sub(r"\1", _ISO_DATE.sub(lambda m: _relative(m, today), text))
