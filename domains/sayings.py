"""A fact read from a tool's output, said as a person says it: what a judge's nl_assertion states.

"The agent tells the user the railcard is valid until 16 April 2027.", not "... the valid to: 2027-04-16.".
The sentence is made from the output field's name and the record it is on (its id field names the thing:
`railcard_id` is a railcard), by rules that hold for any domain's field names (units, dates, counts,
"valid_to", "expires_on", "pickup_by"), with a few words spelled out (`_WORDS`).
"""

from __future__ import annotations

import re
from datetime import date

_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
           "November", "December")
_DATE = re.compile(r"(\d{4})-(\d{2})-(\d{2})")
_MOMENT = re.compile(r"(\d{4}-\d{2}-\d{2})[T ](\d{2}):(\d{2})(?::\d{2}(?:\.\d+)?)?")
_UNITS = {"kmh": "km/h", "c": "°C", "pct": "%", "m": "m", "km": "km", "min": "minutes", "minutes": "minutes",
          "mins": "minutes", "hours": "hours", "eur": "EUR", "usd": "USD", "gbp": "GBP", "kg": "kg", "mm": "mm",
          "days": "days", "nights": "nights"}
_WORDS = {"temp": "temperature", "precip": "precipitation", "gpa": "GPA", "spf": "SPF", "max": "maximum",
          "min": "minimum", "qty": "quantity", "num": "number", "pct": "percentage", "dob": "date of birth",
          "withdraw": "withdrawal", "avg": "average"}
_UNTIL = {"to": "until", "until": "until", "from": "from", "on": "on", "by": "by", "at": "at"}
_SAY = {"phone": "the phone number ends in {v}", "past_due": "the amount past due is {v}"}


def spoken_date(value: str) -> str:
    """"2027-04-16" as "16 April 2027", "2026-10-10T20:30:00" as "20:30 on 10 October 2026"; else as is."""
    moment = _MOMENT.fullmatch(value)
    if moment:
        return f"{moment.group(2)}:{moment.group(3)} on {spoken_date(moment.group(1))}"
    day = _DATE.fullmatch(value)
    if day:
        try:
            when = date(int(day.group(1)), int(day.group(2)), int(day.group(3)))
        except ValueError:
            return value
        return f"{when.day} {_MONTHS[when.month - 1]} {when.year}"
    return value


def _words(parts: list[str]) -> str:
    return " ".join(_WORDS.get(p, p) for p in parts)


def _noun(id_field: str | None) -> str:
    return f"the {id_field[:-3].replace('_', ' ')}" if id_field and id_field.endswith("_id") else "it"


def statement(field: str, value: str, id_field: str | None = None) -> str:
    """What the agent tells the user, in words: `value` (in answer form) read from `field` of a record
    whose id field is `id_field` ("railcard_id"), e.g. "the railcard is valid until 16 April 2027";
    `field` "dishes[]" says that the value is one of the field's listed items."""
    if field in _SAY:
        return _SAY[field].format(v=value)
    if field.endswith("[]"):  # one of a listed field's items ("dishes": ["potato salad", ...])
        return f"{spoken_date(value)} is among the {_words(field[:-2].split('_'))}"
    parts = [p for p in field.lower().split("_") if p]
    when = spoken_date(value)
    is_date = when != value or re.fullmatch(r"\d{1,2}:\d{2}", value) is not None  # a timestamp's time of day
    if len(parts) >= 2 and parts[-1] in _UNTIL and is_date:
        stem = parts[:-1]
        if stem == ["valid"]:  # valid_to, valid_from, valid_until
            return f"{_noun(id_field)} is valid {_UNTIL[parts[-1]]} {when}"
        if stem[-1].endswith("s") and len(stem) == 1:  # expires_on, departs_at, starts_at
            return f"{_noun(id_field)} {stem[0]} {parts[-1]} {when}"
        if parts[-1] == "by":  # pickup_by
            return f"the {_words(stem)} deadline is {when}"
        if parts[-1] in ("until", "to"):
            return f"the {_words(stem)} runs until {when}"
        return f"the {_words(stem)} is {parts[-1]} {when}"
    if is_date:
        return f"the {_words(parts)} is {when}" if parts[-1] in ("date", "deadline", "day") or parts == ["time"] \
            else f"the {_words(parts)} is on {when}"
    unit = ""
    if len(parts) >= 2 and parts[-1] in _UNITS and not (parts[-1] in ("days", "nights") and len(parts) == 2
                                                          and parts[0].endswith("y")):
        unit = _UNITS[parts[-1]]
        parts = parts[:-1]
        if parts[-1] in ("max", "min") and len(parts) >= 2:  # temp_max_c: the maximum temperature
            parts = [parts[-1], *parts[:-1]]
    said = f"{value}%" if unit == "%" else f"{value} {unit}" if unit else value
    if value.lower() in ("none", "null"):
        return f"there is no {_words(parts[:-1] if parts[-1] == 'status' and len(parts) > 1 else parts)}"
    if field == "status" or field.endswith("_status") and id_field and field[:-7] == id_field[:-3]:
        return f"{_noun(id_field) if id_field else 'the status'} is {value.replace('_', ' ')}"
    if not unit and re.fullmatch(r"-?\d+", value) and parts[-1].endswith("s") and not parts[-1].endswith("ss"):
        if parts[0] in ("max", "min") and len(parts) > 1:  # max_subscriptions: the maximum number of subscriptions
            return f"the {_WORDS[parts[0]]} number of {_words(parts[1:])} is {value}"
        return f"the number of {_words(parts)} is {value}"  # roster_size is a size, term_credits a count
    if not unit and re.fullmatch(r"-?\d+", value) and parts[-1] in ("left", "remaining", "affected", "behind"):
        return f"the number of {_words(parts[:-1])} {parts[-1]} is {value}"
    return f"the {_words(parts)} is {said}"
