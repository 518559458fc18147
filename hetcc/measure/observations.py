"""Observations of a board (``hetcc.observations/1``): the CSV that ``hetcc profile`` writes,
``hetcc calibrate`` fits a board to and ``--target FILE.csv`` compiles with.

Why a module of its own: one
reader/validator for a format three commands share, so a file that one accepts the others accept
too, and every refusal is the same one line naming the file, the line, the column and the fix
(``UsageError``, exit 2). Numpy-free and scipy-free: it reads text.

One observation per row; lines starting with ``#`` are comments, the first non-comment line is
the header (column order free, unknown columns refused). Columns (docs/calibration.md):

- ``kind`` (required): ``latency`` | ``energy`` | ``power`` | ``gain`` | ``plan_uses`` | ``memory``
  (the memory a device's runtime reports for the whole model: not fitted, but the size the
  device's capacity rule charges that model, slices in proportion)
- ``model`` (required): a zoo name or a path to an .onnx file (relative to the CSV's directory);
  a ``gain`` row may join several with ``+`` (the gain over their geometric mean)
- ``value`` + ``unit`` (required): ms, mJ, mW, ``fraction`` (gain), ``bool`` (plan_uses: 1 / 0), MB
- ``model_sha256``: the sha256 of the model's ONNX bytes the numbers were taken on
- ``device``, ``freq_mhz``: the device state (empty frequency = the device's top level)
- ``layer``: empty = the whole model as one slice; ``N`` or ``N-M`` = hetcc's layers as one slice
- ``objective`` (latency | energy), ``planner`` (default ``dp``), ``baseline``: gain/plan_uses
- ``weight`` (> 0, default 1), ``source`` (free text)
"""
from __future__ import annotations

import csv
import io
import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from hetcc.core.text import csv_cell, csv_unquote
from hetcc.core.errors import UsageError

FORMAT = "hetcc.observations/1"
KINDS = ("latency", "energy", "power", "gain", "plan_uses", "memory")
#: the one unit each kind is given in
UNITS = {"latency": "ms", "energy": "mJ", "power": "mW", "gain": "fraction", "plan_uses": "bool", "memory": "MB"}
_WHAT = {"latency": "a latency is a positive number of ms", "energy": "an energy is a positive number of mJ",
         "power": "a power is a positive number of mW",
         "memory": "a model's memory is a positive number of MB (10^6 bytes), as the device's runtime reports it"}
REQUIRED = ("kind", "model", "value", "unit")
#: every column, in the order ``write_observations`` writes them
COLUMNS = ("kind", "model", "model_sha256", "device", "freq_mhz", "layer", "objective", "planner", "baseline",
           "value", "unit", "weight", "source")
OBJECTIVES = ("latency", "energy")
#: kinds measured on one device state (a run of the model or of some of its layers)
MEASURED = ("latency", "energy", "power")
#: the largest observations file read (a profile of 1000 layers x 30 levels is ~4 MB)
MAX_BYTES = 32 << 20
_SHA = re.compile(r"[0-9a-f]{64}")
_LAYER = re.compile(r"(\d+)(?:\s*-\s*(\d+))?")


@dataclass(frozen=True)
class Observation:
    """One row, parsed: ``layer`` is (first, last) inclusive or None (the whole model);
    ``freq_mhz`` None = the device's top level; ``planner`` is set (default ``dp``) for gain and
    plan_uses rows, None otherwise; ``models`` holds each model of ``model`` resolved: a zoo name
    as written, a file as an absolute path; ``line`` and ``file`` say where the row stands."""

    kind: str
    model: str
    value: float
    unit: str
    model_sha256: str | None = None
    device: str | None = None
    freq_mhz: float | None = None
    layer: tuple[int, int] | None = None
    objective: str | None = None
    planner: str | None = None
    baseline: str | None = None
    weight: float = 1.0
    source: str = ""
    line: int = 0
    file: str = ""
    models: tuple[str, ...] = field(default=())

    @property
    def where(self) -> str:
        """``FILE line N``: how errors about this row begin."""
        return f"{self.file} line {self.line}"

    @property
    def layer_text(self) -> str:
        """The layer column as written back: '' / 'N' / 'N-M'."""
        if self.layer is None:
            return ""
        a, b = self.layer
        return str(a) if a == b else f"{a}-{b}"

    @property
    def state_text(self) -> str:
        """``gpu@767`` / ``gpu`` (top level) / '' (no device)."""
        if self.device is None:
            return ""
        return self.device if self.freq_mhz is None else f"{self.device}@{self.freq_mhz:g}"

    def hashes(self) -> tuple[str | None, ...]:
        """The expected sha256 of each model of ``models`` (None where not given)."""
        if self.model_sha256 is None:
            return (None,) * len(self.models)
        return tuple(self.model_sha256.split("+"))


# --- reading --------------------------------------------------------------------------------------

def is_model_path(name: str) -> bool:
    """A model given as a file (``x.onnx``, ``dir/x``) rather than a zoo name."""
    return name.endswith(".onnx") or "/" in name or "\\" in name or name.startswith(".")


def check_model_hash(obs: Observation, model: str, actual_sha256: str) -> None:
    """UsageError when ``obs`` gives a sha256 for ``model`` (one of its ``models``) and
    ``actual_sha256`` differs: the measurements were taken on another model."""
    for m, want in zip(obs.models, obs.hashes()):
        if m == model and want is not None and want != actual_sha256.lower():
            raise UsageError(f"{obs.where}: model {_shown_model(obs, model)} has sha256 {actual_sha256[:12]}…, "
                             f"the measurements were taken on {want[:12]}…; profile this model again "
                             "(or fix the model_sha256 column)")


def reported_memory(observations: Iterable[Observation]) -> dict[str, dict[str, float]]:
    """The ``memory`` rows of ``observations`` as {model (resolved): {device: bytes}}: what each
    device's runtime reports a model takes (``PlanningProblem.with_reported_memory`` applies one);
    a second row for one model on one device is refused (UsageError naming its line)."""
    out: dict[str, dict[str, float]] = {}
    for o in observations:
        if o.kind != "memory":
            continue
        sizes = out.setdefault(o.models[0], {})
        if o.device in sizes:
            shown = Path(o.model).stem if is_model_path(o.model) else o.model
            raise UsageError(f"{o.where}: a second memory row for {shown} on {o.device}; give one")
        sizes[o.device] = o.value * 1e6
    return out


def _shown_model(obs: Observation, resolved: str) -> str:
    names = obs.model.split("+")
    for name, m in zip(names, obs.models):
        if m == resolved:
            return name
    return resolved


def read_observations(path: str | os.PathLike, board: Any = None, *, check_files: bool = True
                      ) -> list[Observation]:
    """The observations of ``path``, validated (UsageError naming file, line, column and the fix).

    ``board`` (a ``hetcc.targets.Target``) also checks each device name and DVFS level.
    ``check_files``: model files must exist, and their sha256 match ``model_sha256``."""
    return parse_observations(read_text(path), str(path), Path(path).parent, board=board, check_files=check_files)


def read_text(path: str | os.PathLike) -> str:
    """The text of an observations file, at most MAX_BYTES read (UsageError, one line, when it
    cannot be read, is too large or is not UTF-8)."""
    from hetcc.core.read import read_regular

    label = str(path)
    data = read_regular(path, label, MAX_BYTES, fix="give an observations file (.csv)", noun="the observations file",
                        too_large=f"{label}: larger than {MAX_BYTES >> 20} MiB; an observations file is a few "
                                  "hundred KB (is this the right file?)")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise UsageError(f"{label}: not UTF-8 text (byte {e.start}); save it as UTF-8 CSV") from None
    return text


def parse_observations(text: str, label: str, base_dir: str | os.PathLike = ".", *, board: Any = None,
                       check_files: bool = True) -> list[Observation]:
    """``read_observations`` of text already read (``label`` names it in errors, relative model
    paths are relative to ``base_dir``)."""
    header: list[str] | None = None
    out: list[Observation] = []
    hashes: dict[str, str] = {}
    for n, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip() or raw.lstrip().startswith("#"):
            continue
        where = f"{label} line {n}"
        cells = _split(raw, where)
        if header is None:
            header = _header(cells, where)
            continue
        if len(cells) != len(header):
            raise UsageError(f"{where}: {len(cells)} fields, the header has {len(header)} "
                             f"({','.join(header)}); quote a field that holds a comma")
        row = {h: c.strip() for h, c in zip(header, cells)}
        obs = _row(row, where, label, n, Path(base_dir))
        if board is not None:
            check_board(obs, board)
        if check_files:
            _check_files(obs, hashes)
        out.append(obs)
    if header is None:
        raise UsageError(f"{label}: no header row; the first line that is not a '#' comment names the columns, "
                         f"e.g. {','.join(REQUIRED)}")
    if not out:
        raise UsageError(f"{label}: holds no observations (only the header); add rows below it")
    return out


def _split(raw: str, where: str) -> list[str]:
    try:
        rows = list(csv.reader([raw], strict=True))
    except csv.Error as e:
        raise UsageError(f"{where}: not a CSV row ({e}); quote fields with '\"' and keep a row on one line") from None
    return [csv_unquote(c) for c in rows[0]] if rows else []


def _header(cells: list[str], where: str) -> list[str]:
    names = [c.strip() for c in cells]
    unknown = [c for c in names if c not in COLUMNS]
    if unknown:
        raise UsageError(f"{where}: unknown column{'s' if len(unknown) > 1 else ''} "
                         f"{', '.join(repr(c) for c in unknown)}; the columns are {', '.join(COLUMNS)}")
    dup = sorted({c for c in names if names.count(c) > 1})
    if dup:
        raise UsageError(f"{where}: column {dup[0]!r} appears twice in the header; keep one")
    missing = [c for c in REQUIRED if c not in names]
    if missing:
        raise UsageError(f"{where}: missing required column{'s' if len(missing) > 1 else ''} "
                         f"{', '.join(repr(c) for c in missing)}; every row needs {', '.join(REQUIRED)}")
    return names


def _bad(where: str, column: str, value: str, why: str) -> UsageError:
    shown = value if len(value) <= 60 else value[:57] + "..."
    return UsageError(f"{where}: column {column!r}: {shown!r} {why}")


def _number(where: str, column: str, text: str, what: str) -> float:
    try:
        x = float(text)
    except ValueError:
        raise _bad(where, column, text, f"is not a number; {what}") from None
    if not math.isfinite(x):
        raise _bad(where, column, text, f"is not finite; {what}")
    return x


def _only_for(where: str, row: Mapping[str, str], kind: str, columns: Sequence[str], kinds: str) -> None:
    for c in columns:
        if row.get(c):
            raise _bad(where, c, row[c], f"is only for {kinds} rows, this is a {kind} row; leave it empty")


def _row(row: Mapping[str, str], where: str, label: str, line: int, base: Path) -> Observation:
    kind = row["kind"]
    if kind not in KINDS:
        raise _bad(where, "kind", kind, f"is not a kind of observation; use one of {', '.join(KINDS)}")
    model = row["model"]
    if not model:
        raise _bad(where, "model", model, "is empty; give a zoo name (hetcc zoo list) or a path to an .onnx file")
    names = model.split("+")
    if len(names) > 1 and kind != "gain":
        raise _bad(where, "model", model, "joins models with '+', which only a gain row does; give one model")
    if any(not m.strip() for m in names):
        raise _bad(where, "model", model, "has an empty name between '+'; join model names as a+b+c")
    models = tuple(_resolve_model(m.strip(), where, model, base) for m in names)
    unit = row["unit"]
    if unit != UNITS[kind]:
        raise _bad(where, "unit", unit, f"is not the unit of a {kind}; write {UNITS[kind]!r}"
                   + (f" ({_WHAT[kind]})" if kind in _WHAT else ""))
    value = _value(where, kind, row["value"])

    sha = row.get("model_sha256") or None
    if sha is not None:
        sha = sha.lower()
        parts = sha.split("+")
        if len(parts) != len(models) or not all(_SHA.fullmatch(s) for s in parts):
            raise _bad(where, "model_sha256", row["model_sha256"],
                       "is not a sha256 (64 hex digits" + (", one per model joined by '+'" if len(models) > 1
                                                           else "") + "); leave it empty or give the model's")
    device = row.get("device") or None
    freq = None
    if row.get("freq_mhz"):
        freq = _number(where, "freq_mhz", row["freq_mhz"], "give the DVFS level in MHz or leave it empty (top level)")
        if freq <= 0:
            raise _bad(where, "freq_mhz", row["freq_mhz"], "is not positive; give the DVFS level in MHz")
        if device is None:
            raise _bad(where, "freq_mhz", row["freq_mhz"], "needs a device; fill the device column")
    layer = None
    if row.get("layer"):
        m = _LAYER.fullmatch(row["layer"])
        if not m:
            raise _bad(where, "layer", row["layer"], "is not a layer; write N or N-M (0-based, inclusive) or leave "
                       "it empty (the whole model)")
        a = int(m.group(1))
        b = int(m.group(2)) if m.group(2) is not None else a
        if b < a:
            raise _bad(where, "layer", row["layer"], f"ends before it starts; write {b}-{a}")
        layer = (a, b)
    weight = 1.0
    if row.get("weight"):
        weight = _number(where, "weight", row["weight"], "a weight is a positive number (default 1)")
        if weight <= 0:
            raise _bad(where, "weight", row["weight"], "is not positive; a weight is a positive number (default 1)")

    objective = planner = baseline = None
    if kind == "memory":
        if device is None:
            raise _bad(where, "device", "", "is empty; a memory row names the device whose runtime reported it")
        if freq is not None:
            raise _bad(where, "freq_mhz", row["freq_mhz"], "is for latency, energy, power and plan_uses rows; a "
                       "model's memory does not depend on the clock: leave it empty")
        _only_for(where, row, kind, ("layer",), "latency, energy and power")
        _only_for(where, row, kind, ("objective", "planner", "baseline"), "gain and plan_uses")
    elif kind in MEASURED:
        if device is None:
            raise _bad(where, "device", "", f"is empty; a {kind} is measured on one device: name it")
        _only_for(where, row, kind, ("objective", "planner", "baseline"), "gain and plan_uses")
    else:
        _only_for(where, row, kind, ("layer",), "latency, energy and power")
        objective = row.get("objective") or ""
        if objective not in OBJECTIVES:
            raise _bad(where, "objective", objective, f"is not an objective; a {kind} row needs "
                       f"{' or '.join(OBJECTIVES)}")
        planner = row.get("planner") or "dp"
        _check_planner(where, "planner", planner)
        if kind == "gain":
            if device is not None:
                raise _bad(where, "device", device, "is for latency, energy, power and plan_uses rows; a gain "
                           "compares whole plans: leave it empty")
            baseline = row.get("baseline") or ""
            if not baseline:
                raise _bad(where, "baseline", baseline, "is empty; a gain row needs the plan it is over, e.g. "
                           "single:npu or 'single:gpu governor=ondemand'")
            _check_planner(where, "baseline", baseline)
        else:
            if device is None:
                raise _bad(where, "device", "", "is empty; a plan_uses row names the device (and freq_mhz) "
                           "the plan uses or not")
            _only_for(where, row, kind, ("baseline",), "gain")
    return Observation(kind=kind, model=model, value=value, unit=unit, model_sha256=sha, device=device,
                       freq_mhz=freq, layer=layer, objective=objective, planner=planner, baseline=baseline,
                       weight=weight, source=row.get("source", ""), line=line, file=label, models=models)


def _value(where: str, kind: str, text: str) -> float:
    if kind in MEASURED or kind == "memory":
        x = _number(where, "value", text, _WHAT[kind])
        if x < 0:
            raise _bad(where, "value", text, f"is negative; {_WHAT[kind]}")
        if x == 0:
            raise _bad(where, "value", text, f"is zero; {_WHAT[kind]}")
        return x
    if kind == "gain":
        x = _number(where, "value", text, "a gain is a fraction below 1 (0.292 = 29.2 % lower than the baseline)")
        if x >= 1:
            raise _bad(where, "value", text, "is not below 1; a gain is a fraction (0.292 = 29.2 % lower than the "
                       "baseline), 1 would be a cost of zero")
        return x
    if text not in ("0", "1"):
        raise _bad(where, "value", text, "is not 0 or 1; a plan_uses value says whether the plan uses the state")
    return float(text)


def _resolve_model(name: str, where: str, written: str, base: Path) -> str:
    if is_model_path(name):
        p = Path(name)
        return str(p if p.is_absolute() else (base / p).absolute())
    from hetcc.compiler.zoo import ZOO

    if name not in ZOO:
        import difflib

        close = difflib.get_close_matches(name, ZOO, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise _bad(where, "model", written, f"names no zoo model{hint} and is no .onnx path; `hetcc zoo list` "
                   "shows the zoo, a file is written as path/to/model.onnx")
    return name


def _check_planner(where: str, column: str, spec: str) -> None:
    from hetcc.planners.registry import parse_options, parse_planner_entry, split_name

    try:
        name, ps, given = parse_planner_entry(spec)
        parse_options(ps, split_name(name, ps, given))
    except UsageError as e:
        raise _bad(where, column, spec, f"is not a planner spec ({e})") from None


def planner_spec(spec: str) -> tuple[str, dict[str, str]]:
    """(name, options) of a planner column: ``single:gpu governor=ondemand`` ->
    ('single:gpu', {'governor': 'ondemand'})."""
    name, *pairs = spec.split()
    return name, dict(p.partition("=")[::2] for p in pairs)


def check_board(obs: Observation, board: Any) -> None:
    if obs.device is None:
        return
    names = board.device_names
    if obs.device not in names:
        raise _bad(obs.where, "device", obs.device, f"is not a device of {board.name} (its devices: "
                   f"{', '.join(names)}); use one of them")
    if obs.freq_mhz is None:
        return
    dev = board.device(obs.device)
    levels = [lvl.freq_mhz for lvl in dev.dvfs if lvl.freq_mhz is not None]
    if not levels:
        raise _bad(obs.where, "freq_mhz", f"{obs.freq_mhz:g}", f"is given, but {board.name}'s {obs.device} has no "
                   "documented clock; leave it empty")
    if board.state_index(obs.device, obs.freq_mhz) is None:
        raise _bad(obs.where, "freq_mhz", f"{obs.freq_mhz:g}", f"is not a DVFS level of {board.name}'s "
                   f"{obs.device} ({', '.join(f'{f:g}' for f in levels)} MHz); use one or leave it empty "
                   "(top level)")


def _check_files(obs: Observation, cache: dict[str, str]) -> None:
    from hetcc.runtime.manifest import sha256_file

    for m, want in zip(obs.models, obs.hashes()):
        if not is_model_path(m):
            continue
        p = Path(m)
        if not p.is_file():
            written = _shown_model(obs, m)
            raise _bad(obs.where, "model", written, f"is not a file ({m}); relative paths are relative to the "
                       "observations file's directory")
        if want is not None:
            if m not in cache:
                try:
                    cache[m] = sha256_file(p)
                except OSError as e:
                    raise UsageError(f"{obs.where}: cannot read model {m} ({e.strerror or e})") from None
            check_model_hash(obs, m, cache[m])


# --- writing --------------------------------------------------------------------------------------

def _cell(column: str, value: Any) -> str:
    if value is None:
        return ""
    if column == "layer" and isinstance(value, (tuple, list)):
        a, b = value
        return str(a) if a == b else f"{a}-{b}"
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, float):
        if column == "value" and value in (0.0, 1.0):
            return f"{value:g}"
        return repr(value)
    return str(value)


def _as_mapping(row: Observation | Mapping[str, Any]) -> dict[str, Any]:
    if isinstance(row, Observation):
        d = {c: getattr(row, c) for c in COLUMNS}
        if row.weight == 1.0:
            d["weight"] = None
        if row.kind in MEASURED:
            d["planner"] = None
        return d
    unknown = sorted(set(row) - set(COLUMNS))
    if unknown:
        raise ValueError(f"observation rows have unknown columns {unknown}; columns: {', '.join(COLUMNS)}")
    return dict(row)


def format_observations(rows: Iterable[Observation | Mapping[str, Any]], comments: Sequence[str] = ()) -> str:
    """The CSV text of ``rows`` (Observations or column -> value mappings; a layer may be a
    (first, last) tuple), headed by the ``# hetcc.observations/1`` line and ``comments``.
    Only the columns some row fills are written (the required ones always)."""
    maps = [_as_mapping(r) for r in rows]
    used = [c for c in COLUMNS if c in REQUIRED or any(m.get(c) not in (None, "") for m in maps)]
    buf = io.StringIO()
    buf.write(f"# {FORMAT} (columns: docs/calibration.md)\n")
    for c in comments:
        for line in str(c).splitlines() or [""]:
            buf.write(f"# {line}\n")
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(used)
    for m in maps:
        w.writerow([csv_cell(_cell(c, m.get(c))) for c in used])
    return buf.getvalue()


def write_observations(path: str | os.PathLike, rows: Iterable[Observation | Mapping[str, Any]],
                       comments: Sequence[str] = (), *, base_dir: str | os.PathLike | None = None) -> Path:
    """Write ``rows`` to ``path`` atomically (the whole file or nothing). The text is read back
    through the same validator first, so a file this writes is one ``read_observations`` accepts
    (a bad row is a UsageError naming its line, and nothing is written). Model paths in the rows
    are written as given; ``base_dir`` (default: ``path``'s directory) resolves them for that check."""
    from hetcc.files.atomic import write_file

    text = format_observations(rows, comments)
    base = Path(base_dir) if base_dir is not None else Path(path).parent
    parse_observations(text, str(path), base, check_files=False)
    return write_file(path, text, "writing observations", "choose a writable path")


__all__ = ["COLUMNS", "FORMAT", "KINDS", "MEASURED", "Observation", "REQUIRED", "UNITS", "check_model_hash",
           "format_observations", "is_model_path", "parse_observations", "planner_spec", "read_observations", "read_text",
           "write_observations"]


# ---------------------------------------------------------------- hetcc profile's comment lines
#: the prefix of the machine-readable comment lines (``parse_profile_comments`` reads them)
COMMENT_TAG = "hetcc.profile"


_TOKEN = re.compile(r"(\w+)=(\S+)")


def parse_profile_comments(text: str) -> list[dict[str, str]]:
    """The ``# hetcc.profile KEY=VALUE ...`` comment lines of an observations file's text, each as
    a dict (a bare word after the tag, e.g. ``theta_rho``, is under the key ``""``)."""
    out = []
    for line in text.splitlines():
        s = line.strip()
        if not s.startswith("#"):
            continue
        body = s[1:].strip()
        if not body.startswith(COMMENT_TAG + " "):
            continue
        body = body[len(COMMENT_TAG):].strip()
        entry = dict(_TOKEN.findall(body))
        words = [w for w in body.split() if "=" not in w]
        if words:
            entry[""] = words[0]
        out.append(entry)
    return out

