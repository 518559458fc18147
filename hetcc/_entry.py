"""The entry of the ``hetcc`` console script and of ``python -m hetcc.cli``.

Importing the CLI (and, from there, numpy, onnx and onnxruntime) takes a while; a Ctrl-C in that
time used to print a traceback, because the script imported ``hetcc.cli`` before ``main`` could
catch anything. Here the imports run inside the same handling as a command: Ctrl-C (SIGINT) ends
with ``hetcc: interrupted`` and exit 130, SIGTERM with ``hetcc: terminated (SIGTERM)`` and 143,
SIGHUP with 129. This module imports only the standard library's smallest modules.
"""
from __future__ import annotations

import contextlib
import signal
import sys
import threading
from typing import Any, Iterator

#: signals received by ``_on_signal`` and not yet reported (a KeyboardInterrupt stands for them)
_received: list[int] = []


def _on_signal(signum: int, frame: Any) -> None:
    _received.append(signum)
    raise KeyboardInterrupt


@contextlib.contextmanager
def terminate_as_interrupt() -> Iterator[None]:
    """Inside, SIGTERM and SIGHUP raise KeyboardInterrupt like SIGINT does, so that whatever is
    being written is cleaned up the same way; a signal that is ignored (nohup) or already
    handled (an enclosing use of this) is left alone. The old handlers come back on exit."""
    previous: dict[int, Any] = {}
    if threading.current_thread() is threading.main_thread():
        for name in ("SIGTERM", "SIGHUP"):
            signum = getattr(signal, name, None)
            if signum is not None and signal.getsignal(signum) == signal.SIG_DFL:
                previous[signum] = signal.signal(signum, _on_signal)
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def interrupted() -> int:
    """Print the one line of an interrupted command; return its exit code, 128 + the signal."""
    signum = _received[-1] if _received else signal.SIGINT
    _received.clear()
    word = "interrupted" if signum == signal.SIGINT else f"terminated ({signal.Signals(signum).name})"
    print(f"hetcc: {word}", file=sys.stderr)
    return 128 + int(signum)


def _quiet_exit(code: int) -> None:
    """Exit with ``code``; a signal from now on ends the process at once, without a traceback."""
    if threading.current_thread() is threading.main_thread():
        for name in ("SIGINT", "SIGTERM", "SIGHUP"):
            signum = getattr(signal, name, None)
            if signum is not None and signal.getsignal(signum) in (signal.default_int_handler, _on_signal):
                signal.signal(signum, signal.SIG_DFL)
    sys.exit(code)


def main() -> None:
    """``hetcc`` itself: import the CLI and run it, with the start-up under the signal handling."""
    try:
        with terminate_as_interrupt():
            from hetcc.cli import main as cli_main

            code = cli_main()
    except KeyboardInterrupt:
        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGINT, signal.SIG_DFL)   # a second Ctrl-C now just ends it
        code = interrupted()
    _quiet_exit(code)
