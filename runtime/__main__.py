"""``python -m hetcc.runtime run DIR`` / ``inspect DIR``: the artifact commands on a board that has
only numpy and onnxruntime (docs/runtime-alone.md).

The same options and output as ``hetcc run`` / ``hetcc inspect`` (``hetcc.cli.artifact``, which
imports neither onnx nor the compiler; without rich the tables print as plain text). Errors are
one line on stderr, ``hetcc: error: ...``, exit 2 (4: ``--verify`` found a difference);
Ctrl-C ends with ``hetcc: interrupted`` and exit 130.
"""
from __future__ import annotations

import argparse
import logging
import os
import sys
from typing import Sequence


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:   # one line, exit 2, like hetcc's own parser
        self.exit(2, f"hetcc: error: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    from hetcc.cli.artifact import add_inspect_arguments, add_run_arguments, cmd_inspect, cmd_run

    p = _Parser(prog="python -m hetcc.runtime",
                description="Run or inspect a hetcc artifact with onnxruntime (no compiler needed).")
    p.add_argument("--debug", action="store_true", help="log debug messages and show tracebacks")
    sub = p.add_subparsers(dest="cmd", required=True, parser_class=_Parser)
    add_run_arguments(sub.add_parser("run", help="execute a compiled artifact")).set_defaults(func=cmd_run)
    add_inspect_arguments(sub.add_parser("inspect", help="show which layers run where")).set_defaults(func=cmd_inspect)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    from hetcc.core.errors import is_user_error

    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
    logging.basicConfig(level=logging.DEBUG if args.debug else logging.WARNING,
                        format="hetcc: %(levelname)s: %(message)s")
    try:
        return args.func(args)
    except KeyboardInterrupt:
        print("hetcc: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:   # `... | head`: the reader left; nothing more to say
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
    except Exception as exc:
        if args.debug or not is_user_error(exc):
            raise
        print(f"hetcc: error: {' '.join(str(exc).split())}", file=sys.stderr)
        return exc.exit_code


if __name__ == "__main__":
    sys.exit(main())
