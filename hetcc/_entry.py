"""The entry of the ``hetcc`` console script and of ``python -m hetcc.cli``.

Importing the CLI (and, from there, numpy, onnx and onnxruntime) takes a while; a Ctrl-C in that
time must not print a traceback. So the first statement below, before any other import, installs
a handler for SIGINT, SIGTERM and SIGHUP from ``_signal`` (compiled into the interpreter and
already initialised, so importing it runs no Python code); from then on every signal is recorded
and becomes a ``KeyboardInterrupt`` that ``main`` reports as one line with exit code 128 + the
signal. ``hetcc.cli.signals`` then takes over for the command itself.
"""
import _signal

_early: list = []          # signals received before hetcc.cli.signals took over


def _early_handler(signum, frame):  # noqa: ANN001, ANN202 (typing is not imported here)
    _early.append(signum)
    raise KeyboardInterrupt


_installed: dict = {}
for _name in ("SIGINT", "SIGTERM", "SIGHUP"):
    _num = getattr(_signal, _name, None)
    if _num is not None and _signal.getsignal(_num) in (_signal.default_int_handler, _signal.SIG_DFL):
        _installed[_num] = _signal.signal(_num, _early_handler)

import sys  # noqa: E402  (after the handler, on purpose)
import time  # noqa: E402

_T0 = time.perf_counter()


def _restore_early() -> None:
    for num, previous in _installed.items():
        if _signal.getsignal(num) is _early_handler:
            _signal.signal(num, previous)


def _early_exit() -> None:
    signum = _early[-1] if _early else _signal.SIGINT
    word = "interrupted" if signum == _signal.SIGINT else \
        f"terminated ({ {2: 'SIGINT', 15: 'SIGTERM', 1: 'SIGHUP'}.get(signum, signum) })"
    print(f"hetcc: {word}", file=sys.stderr)
    sys.exit(128 + int(signum))


def main() -> None:
    """``hetcc`` itself: import the CLI and run it, with the start-up under the signal handling.
    Once the command is over, a signal ends the process at once (no traceback at exit)."""
    try:
        from hetcc.cli import signals
    except KeyboardInterrupt:
        _early_exit()
    except Exception:
        if not _early:
            raise
        _early_exit()
    signals.started_at(_T0, _early)
    _restore_early()        # terminate_as_interrupt installs its own handler where the default is
    try:
        with signals.terminate_as_interrupt():
            if signals.pending():
                raise KeyboardInterrupt
            from hetcc.cli.app import main as cli_main

            code = cli_main()
    except KeyboardInterrupt:
        code = None
    except Exception:
        if not signals.pending():
            raise
        code = None
    for name in ("SIGINT", "SIGTERM", "SIGHUP"):
        num = getattr(_signal, name, None)
        if num is not None and _signal.getsignal(num) in (_signal.default_int_handler, signals.on_signal,
                                                             _early_handler):
            _signal.signal(num, _signal.SIG_DFL)
    sys.exit(signals.interrupted() if code is None else code)
