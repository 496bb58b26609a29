"""Stopping a run on SIGTERM or Ctrl-C within seconds, leaving no process behind.

A signal interrupts the main thread with `Stopped` (a BaseException, so neither click's Ctrl-C
handling nor an `except Exception` swallows it); the flows that registered with `when_stopped` mark
their Prefect runs Cancelled. Worker threads cannot be interrupted: one may be in the middle of a stage or waiting on
an LLM request (whose timeout can be hours), and Python, like Prefect's task runner, would wait for
it. So from the moment the signal arrives a watchdog gives the main thread GRACE_S to unwind; then,
or as soon as it has unwound, the process stops its children (Prefect's local server, process-pool
workers) and ends with os._exit. Nothing is lost: the stage store publishes an artifact only when it
is complete, so the next run resumes from the stages stored. A second signal ends it at once.

A thread hears of each signal through Python's wakeup fd (written by the C-level handler whichever
Python handler is in force), because Prefect installs its own SIGTERM handler while a flow runs: the
watchdog starts when the signal arrives, not when Prefect's task runner is done waiting for stages.
"""

from __future__ import annotations

import os
import signal
import socket
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import psutil

GRACE_S = 3.0
CHILD_GRACE_S = 3.0


class Stopped(BaseException):
    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def stop_children() -> None:
    """Terminate this process's descendants, then kill the ones still there after CHILD_GRACE_S."""
    children = psutil.Process().children(recursive=True)
    for child in children:
        try:
            child.terminate()
        except psutil.NoSuchProcess:
            pass
    _, alive = psutil.wait_procs(children, timeout=CHILD_GRACE_S)
    for child in alive:
        try:
            child.kill()
        except psutil.NoSuchProcess:
            pass


_on_stop: list[Callable[[str], None]] = []


def when_stopped(callback: Callable[[str], None]) -> Callable[[], None]:
    """Call `callback(signal name)` if the process is stopped (before its children are: Prefect's
    local server still answers); returns the function that takes it back."""
    _on_stop.append(callback)
    return lambda: _on_stop.remove(callback) if callback in _on_stop else None


def _end(signum: int) -> None:
    """Run the stop callbacks, stop the children and exit with status 128 + `signum`."""
    for callback in list(_on_stop):
        try:
            callback(signal.Signals(signum).name)
        except Exception:  # noqa: BLE001 - stopping must go on whatever a callback meets
            pass
    stop_children()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(128 + signum)


@contextmanager
def stopping_cleanly(say: Callable[[str], None]) -> Iterator[None]:
    """Run the body so that SIGTERM or Ctrl-C ends the process within seconds, exit status 128 +
    the signal's number, `say`ing how to resume. Outside the main thread it does nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    received: list[int] = []

    def notice(signum: int) -> None:
        """Start stopping on the first signal; on a later one, end now."""
        if received:
            _end(received[0])
        received.append(signum)
        say(f"stopping on {signal.Signals(signum).name}: the stages already stored are kept; run the same "
            "command again to resume")
        watchdog = threading.Timer(GRACE_S, _end, args=(signum,))
        watchdog.daemon = True
        watchdog.start()

    def handler(signum: int, frame: object) -> None:
        raise Stopped(signum)

    def listen(reader: socket.socket) -> None:
        while data := reader.recv(64):
            for signum in data:
                if signum in (signal.SIGINT, signal.SIGTERM):
                    notice(signum)

    reader, writer = socket.socketpair()
    writer.setblocking(False)
    previous = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)}
    previous_fd = signal.set_wakeup_fd(writer.fileno(), warn_on_full_buffer=False)
    threading.Thread(target=listen, args=(reader,), name="toolscale-signals", daemon=True).start()
    try:
        yield
    except Stopped as stop:
        _end(stop.signum)
    except BaseException:  # e.g. Prefect's TerminationSignal, raised by its handler while a flow runs
        if received:
            _end(received[0])
        raise
    finally:
        signal.set_wakeup_fd(previous_fd)
        for s, old in previous.items():
            signal.signal(s, old)
