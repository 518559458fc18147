"""The entry of the ``hetcc`` console script and of ``python -m hetcc.cli``.

Importing the CLI (and, from there, numpy, onnx and onnxruntime) takes a while; a Ctrl-C in that
time must not print a traceback. So the first statement below, before any other import, installs
a handler for SIGINT, SIGTERM and SIGHUP from ``_signal`` (compiled into the interpreter and
already initialised, so importing it runs no Python code). Until ``main`` starts, the handler only
records a signal (a KeyboardInterrupt raised in this module's body, or in the console script's
lines between its import and ``main()``, would end in a traceback); ``main`` reports a recorded
signal at once, and from then on every signal becomes a ``KeyboardInterrupt`` that ``main``
reports as one line with exit code 128 + the signal. ``hetcc.cli.signals`` then takes over for the
command itself: its handler replaces this one with no moment in between, and both record into one
list. Before this module's first statement (the interpreter's start-up, the console script's
``import re``, ``python -m``'s import of ``hetcc.cli``) Python's own handling applies.
"""
import _signal

_early: list = []          # signals received before hetcc.cli.signals took over (then its list)
_armed: list = []          # non-empty once main runs: from then on a signal interrupts


def _early_handler(signum, frame):  # noqa: ANN001, ANN202 (typing is not imported here)
    _early.append(signum)
    if _armed:
        raise KeyboardInterrupt


_early_handler.hands_over = True    # hetcc.cli.signals.terminate_as_interrupt replaces it

for _name in ("SIGINT", "SIGTERM", "SIGHUP"):
    _num = getattr(_signal, _name, None)
    if _num is not None and _signal.getsignal(_num) in (_signal.default_int_handler, _signal.SIG_DFL):
        _signal.signal(_num, _early_handler)

import sys  # noqa: E402  (after the handler, on purpose)
import time  # noqa: E402

_T0 = time.perf_counter()
_unraisable = sys.unraisablehook


def _early_unraisable(unraisable) -> None:  # noqa: ANN001
    """A KeyboardInterrupt raised where Python ignores exceptions (a weakref callback of the import
    system) while hetcc.cli.signals is imported: the signal is recorded and ``main`` reports it
    right after that import, so nothing is printed ("Exception ignored ... Traceback" was)."""
    if _early and unraisable.exc_type is not None and issubclass(unraisable.exc_type, KeyboardInterrupt):
        return
    _unraisable(unraisable)


sys.unraisablehook = _early_unraisable


def _early_exit() -> int:
    """The one line for a signal that came before ``hetcc.cli.signals`` took over; its exit code.
    A second signal now ends the process at once."""
    for name in ("SIGINT", "SIGTERM", "SIGHUP"):
        num = getattr(_signal, name, None)
        if num is not None and _signal.getsignal(num) is _early_handler:
            _signal.signal(num, _signal.SIG_DFL)
    signum = _early[-1] if _early else _signal.SIGINT
    word = "interrupted" if signum == _signal.SIGINT else \
        f"terminated ({ {2: 'SIGINT', 15: 'SIGTERM', 1: 'SIGHUP'}.get(signum, signum) })"
    print(f"hetcc: {word}", file=sys.stderr)
    return 128 + int(signum)


def main() -> None:
    """``hetcc`` itself: import the CLI and run it, with the start-up under the signal handling.
    Once the command is over, a signal ends the process at once (no traceback at exit)."""
    signals = None
    code = None
    try:
        _armed.append(True)     # a signal from here on raises; one before it was recorded
        if _early:
            raise KeyboardInterrupt
        from hetcc.cli import signals

        signals.started_at(_T0, _early)
        with signals.terminate_as_interrupt():
            if signals.pending():
                raise KeyboardInterrupt
            from hetcc.cli.app import main as cli_main

            code = cli_main()
    except KeyboardInterrupt:
        code = None
    except Exception:
        if not _early:          # not a consequence of a signal (an import it cut short)
            raise
        code = None
    if code is None:
        # hetcc.cli.signals reports once it holds the signals (its list is then _early itself)
        code = signals.interrupted() if signals is not None and signals.pending() else _early_exit()
    # CPython remembers a KeyboardInterrupt that left an exec() of a string (dataclasses and
    # namedtuple build their methods so) and then ends the process by SIGINT whatever the exit
    # code: hetcc has reported the interrupt, and running a string of code clears that memory
    exec("")  # noqa: S102
    sys.exit(code)
