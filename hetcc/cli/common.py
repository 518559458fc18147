"""What every ``hetcc`` command borrows: numbers on the command line (argparse types), the strict
JSON of ``--json``, and the console and tables (rich where installed, plain text on a board that
has only numpy and onnxruntime, docs/runtime-alone.md). Standard library only at import."""
from __future__ import annotations

import argparse
import json
import math
import re
import sys
from pathlib import Path
from typing import Any, Callable

__all__ = ["int_in", "float_in", "finite", "json_text", "PlainTable", "PlainConsole", "make_table", "make_console",
           "took", "fmt"]


# ---------------------------------------------------------------- numbers on the command line
def int_in(lo: int, hi: int, what: str = "") -> Callable[[str], int]:
    """An argparse ``type``: an integer in [lo, hi]; argparse names the flag in its one-line error."""
    def parse(text: str) -> int:
        try:
            value = int(text.strip())
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not an integer; give one from {lo} to {hi}{what}") from None
        if not lo <= value <= hi:
            raise argparse.ArgumentTypeError(f"{text!r} is out of range; give an integer from {lo} to {hi}{what}")
        return value
    parse.__name__ = "integer"
    return parse


def float_in(lo: float, hi: float, *, lo_open: bool = False, what: str = "") -> Callable[[str], float]:
    """An argparse ``type``: a finite number in [lo, hi] (or (lo, hi] with ``lo_open``); nan, inf
    and overflowing literals such as 1e999 are refused, naming the value."""
    low = f"above {lo:g}" if lo_open else f"from {lo:g}"

    def parse(text: str) -> float:
        try:
            value = float(text.strip())
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number; give one {low} to {hi:g}{what}") from None
        if not math.isfinite(value):
            raise argparse.ArgumentTypeError(f"{text!r} is not a finite number; give one {low} to {hi:g}{what}")
        if not ((value > lo) if lo_open else (value >= lo)) or value > hi:
            raise argparse.ArgumentTypeError(f"{text!r} is out of range; give a number {low} to {hi:g}{what}")
        return value
    parse.__name__ = "number"
    return parse


def finite(obj: Any) -> Any:
    """``obj`` with every non-finite float (inf, nan) as None and numpy scalars/arrays as Python
    values, so that the JSON we print is strict JSON (no Infinity/NaN tokens)."""
    if isinstance(obj, dict):
        return {str(k): finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [finite(v) for v in obj]
    if isinstance(obj, bool) or obj is None or isinstance(obj, (int, str)):
        return obj
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    tolist = getattr(obj, "tolist", None)      # numpy scalars and arrays
    if tolist is not None:
        return finite(tolist())
    try:
        return finite(float(obj))
    except (TypeError, ValueError):
        return str(obj)


def json_text(doc: Any) -> str:
    """The JSON every ``--json`` prints: non-finite numbers as null, ``allow_nan=False``."""
    return json.dumps(finite(doc), indent=2, allow_nan=False)


_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def screen(text: str) -> str:
    """``text`` with terminal control characters (an escape sequence from a model or manifest
    string, a bidirectional override) written as visible escapes; line breaks and tabs kept."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}" if ord(m.group()) < 0x100 else
                        f"\\u{ord(m.group()):04x}", text)


def shown(text: Any) -> str:
    """A user-controlled string (a model, target, device or file name) to put inside a rich
    markup line: control characters escaped (``screen``) and ``[`` markup made literal."""
    t = screen(str(text))
    try:
        from rich.markup import escape
    except ImportError:      # the runtime installed alone: PlainConsole prints no markup
        return t
    return escape(t)


class PlainTable:
    """A table as aligned text columns (``PlainConsole``); rich's ``Table`` otherwise."""

    def __init__(self, columns: list[str], left: set[str]) -> None:
        self.columns, self.left, self.rows = columns, left, []

    def add_row(self, *cells: str) -> None:
        self.rows.append([screen(str(c)) for c in cells])

    def render(self) -> str:
        lines = [self.columns, *self.rows]
        widths = [max(len(r[i]) for r in lines) for i in range(len(self.columns))]
        fmt = [(str.ljust if c in self.left else str.rjust) for c in self.columns]
        out = [" | ".join(f(cell, w) for f, cell, w in zip(fmt, row, widths)).rstrip() for row in lines]
        out.insert(1, "-+-".join("-" * w for w in widths))
        return "\n".join(out)


class PlainConsole:
    """What ``run`` and ``inspect`` print without rich (a board with only numpy and onnxruntime,
    docs/runtime-alone.md): the same lines, ``[bold]`` markup dropped, tables as text columns."""

    def __init__(self, stderr: bool = False) -> None:
        self.file = sys.stderr if stderr else sys.stdout

    def print(self, obj: Any = "", markup: bool = True) -> None:
        text = obj.render() if isinstance(obj, PlainTable) else screen(str(obj))
        if markup and not isinstance(obj, PlainTable):
            text = text.replace("[bold]", "").replace("[/bold]", "")
        print(text, file=self.file)


def make_table(console: Any, columns: list[str], left: set[str]) -> Any:
    """A table for ``console``: columns named in ``left`` left-aligned, the others right-aligned."""
    if isinstance(console, PlainConsole):
        return PlainTable(columns, left)
    from rich.table import Table

    class ScreenedTable(Table):          # every cell's control characters made visible
        def add_row(self, *cells: Any, **kw: Any) -> None:
            super().add_row(*(screen(c) if isinstance(c, str) else c for c in cells), **kw)

    table = ScreenedTable(show_edge=False)
    for col in columns:
        table.add_column(col, justify="left" if col in left else "right")
    return table


def make_console(stderr: bool = False) -> Any:
    try:
        from rich.console import Console
    except ImportError:      # the runtime installed alone: plain text
        return PlainConsole(stderr)

    class ScreenedConsole(Console):      # control characters in printed strings made visible
        def print(self, *objects: Any, **kw: Any) -> None:
            super().print(*(screen(o) if isinstance(o, str) else o for o in objects), **kw)

    console = ScreenedConsole(stderr=stderr, highlight=False, soft_wrap=True, emoji=False)
    if not console.is_terminal:  # piped or captured: do not squeeze tables into 80 columns
        console = ScreenedConsole(stderr=stderr, highlight=False, soft_wrap=True, emoji=False, width=160)
    return console


def took(planner: Any, timed: float | None = None) -> str:
    """`` (12.3 ms)``: how long the planner ran, where the manifest still records it (older
    artifacts) or ``timings.json`` does (``timed``: compile --timings)."""
    seconds = getattr(planner, "seconds", None)
    seconds = timed if seconds is None else seconds
    if seconds is None:
        return ""
    return f" ({seconds * 1e3:.1f} ms)" if seconds < 10 else f" ({seconds:.1f} s)"   # as format_duration


def fmt(x: float | None, digits: int = 2) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


def check_output_file(given: str | Path, example: str) -> Path:
    """The ``-o`` file, refused before minutes of work, not after, when it cannot be written: an empty
    name (checked as given: ``Path("")`` reads as the current folder), a folder or a non-file in the
    way, a missing or unwritable folder (one line each, exit 2)."""
    import os

    from hetcc.core.errors import UsageError
    from hetcc.files.atomic import check_replaceable_file

    if not str(given).strip():
        raise UsageError(f"-o '': give a file name, e.g. -o {example}")
    path = Path(given)
    if path.is_dir() and not path.is_symlink():
        raise UsageError(f"-o {path}: a directory; give a file name, e.g. -o {path / example}")
    check_replaceable_file(path, "-o")
    parent = path.parent
    if not parent.is_dir():
        raise UsageError(f"-o {path}: the directory {parent} does not exist; create it or choose another path")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise UsageError(f"-o {path}: the directory {parent} is not writable; choose another path")
    return path
