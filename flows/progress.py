"""A tiny progress channel from flows to whoever started them (the CLI shows it with rich)."""

from __future__ import annotations

from collections.abc import Callable

Listener = Callable[[str, str, dict], None]
_listeners: list[Listener] = []


def subscribe(listener: Listener) -> None:
    _listeners.append(listener)


def unsubscribe(listener: Listener) -> None:
    if listener in _listeners:
        _listeners.remove(listener)


def emit(domain: str, stage: str, **info: object) -> None:
    for listener in list(_listeners):
        listener(domain, stage, info)
