"""The fitted file: ``fitted_text`` writes fitted (or ``--set``) values into the board file's own
text with tomlkit, every comment kept, each changed number (or the line holding it) annotated
with the fit and its old value.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping, Sequence

from hetcc.core.errors import UsageError
from hetcc.measure.calibrate.params import DIGITS, MISSING_EXTRA, Board, node_at

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np


def _note(sources: str, n_obs: int) -> str:
    return f"fitted by hetcc calibrate from {sources} ({n_obs} observations)"


def _old_comment(text: str) -> str:
    """A trailing comment's text without its '#' and without an earlier fit's note."""
    t = text.lstrip("#").strip()
    if t.startswith("fitted by hetcc calibrate"):
        t = t.split(" -- ", 1)[1] if " -- " in t else ""
    return t


def _set_comment(item: Any, note: str) -> None:
    old = _old_comment(item.trivia.comment or "")
    item.trivia.comment = "# " + note + (f" -- {old}" if old else "")
    if not item.trivia.comment_ws:
        item.trivia.comment_ws = "  "


def fitted_text(board: Board, values: np.ndarray, changed: Sequence[int], sources: str, n_obs: int,
                scaled: Mapping[int, str] | None = None, given: Mapping[int, float] | None = None) -> str:
    """The board file with ``values`` of the ``changed`` parameters written in, every comment kept,
    each changed number (or the line holding it) annotated with the fit and its old value;
    ``scaled``: parameters that followed another (int8 rates: ``int8_ties``), by its name;
    ``given``: parameters set by ``--set`` (their old value), annotated as set, not fitted."""
    try:
        import tomlkit
        from tomlkit.items import Array, Comment, InlineTable
    except ImportError:
        raise UsageError(MISSING_EXTRA) from None
    doc = tomlkit.parse(board.text)
    note = _note(sources, n_obs)
    # anchor id -> (item holding the comment, [fragments], the note: fitted or set)
    anchors: dict[int, tuple[Any, list[str], str]] = {}
    groups: dict[tuple[int, int], list[str]] = {}
    given = given or {}

    def anchor(item: Any, frag: str, why: str) -> None:
        anchors.setdefault(id(item), (item, [], why))[1].append(frag)

    for j in changed:
        p = board.params[j]
        x = float(values[j])
        why = f"set by hetcc calibrate --set {p.name}={x:g}" if j in given else note
        old_x = given.get(j, p.x0)

        for path, scale in p.slots:
            new_v = float(f"{x * scale:.{DIGITS}g}")
            node = node_at(doc, path[:-1])
            old = node[path[-1]]
            new = tomlkit.item(new_v)
            if hasattr(old, "trivia"):
                new.trivia.indent, new.trivia.comment_ws = old.trivia.indent, old.trivia.comment_ws
                new.trivia.comment, new.trivia.trail = old.trivia.comment, old.trivia.trail
            node[path[-1]] = new
            old_v = old.as_string().strip() if hasattr(old, "as_string") else f"{float(old):g}"
            # where the note goes: the number's own line if it sits in a table, else the line of
            # the key holding the inline table / array (and an array element's own comment)
            holder_i = next((i for i in range(len(path) - 1)
                             if isinstance(node_at(doc, path[:i + 1]), (InlineTable, Array))), None)
            if holder_i is None:
                anchor(node[path[-1]], f"was {old_v}", why)
                continue
            holder = node_at(doc, path[:holder_i + 1])
            inner = ".".join(str(k) for k in path[holder_i + 1:] if not isinstance(k, int))
            if isinstance(holder, Array) and p.name.endswith(".static_power_mw"):
                how = f"x{x / old_x:.4g}" if old_x > 0 else f"set from {x:g}"
                anchor(holder, f"static_power_mw {how} on every level ({p.name} was {old_x:g})", why)
            elif isinstance(holder, Array):
                anchor(holder, f"{p.name} was {old_v}", why)
            elif scaled and j in scaled:
                anchor(holder, f"{inner} was {old_v}, scaled with {scaled[j]} (the int8 speed-up kept)", why)
            else:
                anchor(holder, f"{inner} was {old_v}", why)
            if isinstance(holder, Array):
                groups.setdefault((id(holder), int(path[holder_i + 1])), []).append(f"{inner} was {old_v}")
    for item, frags, why in anchors.values():
        frags = list(dict.fromkeys(frags))
        if len(frags) == 1 and frags[0].startswith("was "):
            _set_comment(item, f"{why}, {frags[0]}")
        else:
            _set_comment(item, f"{why}: {', '.join(frags)}")
    # an array element's own trailing comment (a dvfs level on its own line) says its old value too
    for (arr_id, i), frags in groups.items():
        arr = anchors[arr_id][0]
        try:
            grp = [g for g in arr._value if getattr(g, "value", None) is not None and not g.is_whitespace()][i]
        except (AttributeError, IndexError, TypeError):   # another tomlkit layout: the array's note says it
            continue
        com = getattr(grp, "comment", None)
        if isinstance(com, Comment) and com.trivia.comment:
            old = _old_comment(com.trivia.comment)
            com.trivia.comment = "# fitted: " + ", ".join(frags) + (f" -- {old}" if old else "")
    return tomlkit.dumps(doc)

