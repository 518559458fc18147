"""Signals for every ``hetcc`` command: Ctrl-C (SIGINT) ends with ``hetcc: interrupted`` and exit
130, SIGTERM with ``hetcc: terminated (SIGTERM)`` and 143, SIGHUP with 129, never a traceback.

``hetcc._entry`` imports this first (before the CLI and its heavy imports), so it imports only
``_thread``, ``signal``, ``sys`` and ``time`` (built into the interpreter: no typing, contextlib or
threading, each of which costs milliseconds under load). It also keeps when the command started,
so ``hetcc compile``'s "wrote DIR in X s" counts the time the user waited.
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
    else now (``hetcc.cli.app.main`` called directly). Taken once, so a second call starts afresh."""
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
    that is ignored (nohup) or handled by someone else is left alone, except by a handler marked
    ``hands_over`` (``hetcc._entry``'s, for the start-up), which is replaced and, on exit, followed
    by the signal's default action; an interrupt raised where
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
            if current == (signal.default_int_handler if name == "SIGINT" else signal.SIG_DFL) or \
                    getattr(current, "hands_over", False):
                try:
                    previous = signal.signal(signum, _on_signal)
                except ValueError:      # not the main thread: signals are not ours to handle
                    break
                # a start-up handler that hands over (hetcc._entry's) is replaced with no moment
                # in between; on exit the command is over, and a signal ends the process at once
                self.previous[signum] = signal.SIG_DFL if getattr(previous, "hands_over", False) else previous
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


def started_at(t: float, received: list) -> None:
    """Record the command's start (``perf_counter``) and take ``received``, the list in which
    ``hetcc._entry`` records the signals it catches, as this module's own: a signal that lands
    while one handler replaces the other is recorded in the one list either way."""
    global _received
    _started[:] = [t]
    if received is not _received:
        received.extend(_received)
        _received = received

