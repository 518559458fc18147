"""The entry of the ``hetcc`` console script and of ``python -m hetcc.cli``.

Importing the CLI (and, from there, numpy, onnx and onnxruntime) takes a while; a Ctrl-C in that
time used to print a traceback, because the script imported ``hetcc.cli`` before ``main`` could
catch anything. Here the imports run inside the same handling as a command: Ctrl-C (SIGINT) ends
with ``hetcc: interrupted`` and exit 130, SIGTERM with ``hetcc: terminated (SIGTERM)`` and 143,
SIGHUP with 129.

This module runs before the handlers are in place, so it imports only ``_thread``, ``signal``,
``sys`` and ``time`` (built into the interpreter; no typing, contextlib or threading: under load
each costs milliseconds in which a signal would still get Python's traceback).

It also notes when the command started, before the imports, so ``hetcc compile``'s "wrote DIR in
X s" counts the time the user waited.
"""
from __future__ import annotations

import _thread
import signal
import sys
import time

#: signals received and not yet reported (a KeyboardInterrupt, or what an import turned it into)
_received: list[int] = []
_NAMES = ("SIGINT", "SIGTERM", "SIGHUP")
#: when ``main`` began (perf_counter), taken once by ``take_start``
_started: list[float] = []


def take_start() -> float:
    """When this command started: ``main``'s first line if the console script entered there,
    else now (``hetcc.cli.main`` called directly). Taken once, so a second call starts afresh."""
    return _started.pop() if _started else time.perf_counter()


def _on_signal(signum: int, frame: object) -> None:
    _received.append(signum)
    raise KeyboardInterrupt


def pending() -> bool:
    """Whether a signal arrived that is not reported yet: an exception raised meanwhile is its
    consequence (a C extension being imported turns a KeyboardInterrupt into an ImportError)."""
    return bool(_received)


class terminate_as_interrupt:
    """Inside, SIGINT, SIGTERM and SIGHUP raise KeyboardInterrupt and are recorded, so whatever
    is being written is cleaned up the same way and the exit code names the signal. A signal
    that is ignored (nohup) or handled by someone else is left alone; an interrupt raised where
    Python ignores exceptions (a finaliser, a weakref callback in importlib) is delivered to the
    main thread again instead of printing "Exception ignored". Restored on exit; nestable."""

    def __enter__(self) -> "terminate_as_interrupt":
        self.previous: dict[int, object] = {}
        self.hook = sys.unraisablehook
        for name in _NAMES:
            signum = getattr(signal, name, None)
            if signum is None:
                continue
            current = signal.getsignal(signum)
            if current == (signal.default_int_handler if name == "SIGINT" else signal.SIG_DFL):
                try:
                    self.previous[signum] = signal.signal(signum, _on_signal)
                except ValueError:      # not the main thread: signals are not ours to handle
                    break
        if self.previous and not getattr(self.hook, "redelivers", False):
            sys.unraisablehook = _redeliver(self.hook)
        return self

    def __exit__(self, *exc: object) -> None:
        sys.unraisablehook = self.hook
        for signum, handler in self.previous.items():
            signal.signal(signum, handler)


def _redeliver(previous):  # noqa: ANN001, ANN202 (typing is not imported here)
    def hook(unraisable) -> None:  # noqa: ANN001
        if unraisable.exc_type is not None and issubclass(unraisable.exc_type, KeyboardInterrupt):
            # from another thread, 50 ms later: raised here (in the hook, on the main thread) it
            # would be "ignored in sys.unraisablehook" with a traceback, and lost
            _thread.start_new_thread(_interrupt_later, (_received[-1] if _received else signal.SIGINT,))
            return
        previous(unraisable)
    hook.redelivers = True
    return hook


def _interrupt_later(signum: int) -> None:
    wait = _thread.allocate_lock()
    wait.acquire()
    wait.acquire(True, 0.05)                 # a sleep without importing time
    _thread.interrupt_main(signum)


def interrupted() -> int:
    """Print the one line of an interrupted command; return its exit code, 128 + the signal."""
    signum = _received[-1] if _received else signal.SIGINT
    _received.clear()
    word = "interrupted" if signum == signal.SIGINT else f"terminated ({signal.Signals(signum).name})"
    print(f"hetcc: {word}", file=sys.stderr)
    return 128 + int(signum)


def main() -> None:
    """``hetcc`` itself: import the CLI and run it, with the start-up under the signal handling.
    Once the command is over, a signal ends the process at once (no traceback at exit)."""
    _started[:] = [time.perf_counter()]
    try:
        with terminate_as_interrupt():
            from hetcc.cli import main as cli_main

            code = cli_main()
    except KeyboardInterrupt:
        code = None
    except Exception:
        if not pending():
            raise
        code = None
    for name in _NAMES:
        signum = getattr(signal, name, None)
        if signum is not None and signal.getsignal(signum) in (signal.default_int_handler, _on_signal):
            signal.signal(signum, signal.SIG_DFL)
    sys.exit(interrupted() if code is None else code)
