"""Text from users' files made safe to show and to write (standard library only).

``printable`` escapes terminal control characters in a string read from a manifest, a model or
a file before it is printed (an escape sequence in a model name must not rewrite the user's
terminal). ``csv_cell`` / ``csv_unquote`` keep a CSV cell that a spreadsheet would run as a
formula (``=``, ``+``, ``-``, ``@``, a tab or carriage return first) inert: it is written with a
leading apostrophe, which the readers of every CSV hetcc writes take off again, so the file
still round-trips."""
from __future__ import annotations

import re
from typing import Any

#: C0 controls (but none of the text's own line breaks are allowed through either), DEL, C1
#: controls, and the Unicode bidirectional overrides that reorder what a terminal shows
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
_FORMULA = ("=", "+", "-", "@", "\t", "\r")


def printable(text: Any) -> str:
    """``str(text)`` with every control character written as a ``\\xNN`` / ``\\uNNNN`` escape."""
    s = str(text)
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}" if ord(m.group()) < 0x100 else
                        f"\\u{ord(m.group()):04x}", s)


def _number(s: str) -> bool:
    try:
        float(s)
    except ValueError:
        return False
    return True


def csv_cell(value: Any) -> Any:
    """``value`` as a CSV cell no spreadsheet runs as a formula (see the module docstring);
    numbers (``-1.5``) and everything else are unchanged."""
    if isinstance(value, str) and (value.startswith(_FORMULA) or value.startswith("'")) and not _number(value):
        return "'" + value
    return value


def csv_unquote(cell: str) -> str:
    """The value ``csv_cell`` wrote (its leading apostrophe taken off)."""
    if isinstance(cell, str) and cell.startswith("'") and len(cell) > 1 and (cell[1] in "=+-@\t\r'"):
        return cell[1:]
    return cell
