"""How values are found in text and in tool outputs: the vocabulary the gates and hardening share.

A value "appears" in text when one of its usual spellings occurs as a whole token (case-insensitive;
commas in numbers ignored, as τ²-bench ignores them when it checks communicated values). Numbers
are spelled as written and with two decimals; whole floats also as integers.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import lru_cache
from typing import Any

from .answers import answer_form, token_pattern


def spellings(value: Any) -> set[str]:
    """The ways a value is usually written."""
    if isinstance(value, bool) or value is None:
        return set()
    if isinstance(value, (int, float)):
        forms = {str(value), f"{value:.2f}"}
        if float(value).is_integer():
            forms.add(str(int(value)))
        return forms
    return {str(value)}


def normalize_text(text: str) -> str:
    return re.sub(r"(?<=\d),(?=\d{3})", "", text).lower()


@lru_cache(maxsize=4096)
def _tokens(text: str) -> frozenset[str]:
    """Whole tokens, and the head of hyphenated ones ("3-year" says 3), as the token pattern reads them."""
    tokens = {t.rstrip(".-") for t in re.findall(r"[\w.@-]+", text)}
    return frozenset(tokens | {t.split("-")[0] for t in tokens if "-" in t})


_ONE_TOKEN = re.compile(r"[\w.@-]+")


def appears_in(value: Any, text: str) -> bool:
    """Does any spelling of `value` occur in `text` as a whole token? (`text` already normalized)."""
    tokens = _tokens(text)
    for spelling in spellings(value):
        lowered = spelling.lower()
        if _ONE_TOKEN.fullmatch(lowered):
            if lowered in tokens:
                return True
        elif spelling and token_pattern(spelling).search(text):
            return True
    return False


def leaves(output: Any) -> list[Any]:
    """Every leaf value of a JSON-like output, depth first in document order."""
    found: list[Any] = []
    stack = [output]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            stack.extend(reversed(list(node.values())))
        elif isinstance(node, list):
            stack.extend(reversed(node))
        else:
            found.append(node)
    return found


def same_value(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return float(a) == float(b)
    if isinstance(a, str) and isinstance(b, str):
        return a.strip().lower() == b.strip().lower()
    return a == b


def value_key(value: Any) -> Any:
    """A hashable form under which `same_value` values are equal."""
    kind = type(value)
    if kind is str:  # the common cases first, by exact type: this runs for every leaf of every output
        return ("s", value.strip().lower())
    if kind is int or kind is float:
        return ("n", float(value))
    if isinstance(value, bool) or value is None:
        return ("b", value)
    if isinstance(value, (int, float)):
        return ("n", float(value))
    if isinstance(value, str):
        return ("s", value.strip().lower())
    return ("o", repr(value))


def _spelled(info: str, outputs: list[Any]) -> bool:
    """Is `info` exactly how some output value is written (as is, as money with two decimals, or in
    the answer form a grader checks)?"""
    for output in outputs:
        for leaf in leaves(output):
            if isinstance(leaf, bool) or leaf is None:
                continue
            if isinstance(leaf, (int, float)) and info == f"{leaf:.2f}" or str(leaf) == info:
                return True
            written = f"{leaf:.2f}" if isinstance(leaf, float) else str(leaf)
            if answer_form(written) == info:
                return True
    return False


def derivable(info: str, outputs: list[Any]) -> bool:
    """Can a communicated string be read off the outputs? As a value, part of a value, a list's
    length, or a list of such parts ("A; B", "9-4")."""
    if _spelled(info, outputs):
        return True
    lowered = info.strip().lower()
    if len(lowered) >= 3 and any(isinstance(leaf, str) and _holds(leaf, lowered)
                                 for output in outputs for leaf in leaves(output)):
        return True
    if lowered.isdigit() and any(isinstance(node, list) and len(node) == int(lowered)
                                 for output in outputs for node in _containers(output)):
        return True
    parts = [p for p in re.split(r"\s*[;,]\s*|(?<=\d)-(?=\d)", info) if p]
    return len(parts) > 1 and all(derivable(p, outputs) for p in parts)


def _holds(leaf: str, part: str) -> bool:
    """Is `part` in `leaf`, as written or said without its commas ("Ramsey White and Dunn")?"""
    return part in leaf.lower() or part in leaf.lower().replace(",", "")


def _containers(output: Any) -> Iterator[Any]:
    yield output
    children = output.values() if isinstance(output, dict) else output if isinstance(output, list) else []
    for child in children:
        if isinstance(child, (dict, list)):
            yield from _containers(child)
