"""``hetcc compile --depfile FILE``: the files a compile read, as a Make rule (docs/build-systems.md).

The rule names ``OUT/manifest.json`` (written last into the artifact, so it stands for all of
it) and every input of the compile: each model file, each external-data file the model refers
to, the target's TOML file (a built-in's file inside the installed package; for a measurement
file ``--target FILE.csv``, the file and its board's TOML) and hetcc's
version stamp, the installed ``hetcc/__init__.py``. That file holds ``__version__``, so a new
version always rewrites it, and installing, upgrading or reinstalling hetcc (pip, an editable
install) writes it anew, so its time changes whenever the compiler a build ran may have; it is
in every install, wheel or editable, without packaging anything extra. Each prerequisite also
gets an empty rule of its own (``gcc -MP``): a file that is gone makes the artifact out of date
instead of stopping ``make`` with "No rule to make target".

Paths are written as given (relative ones relative to where hetcc ran, as ``make`` sees them),
escaped for Make: a space, ``#`` and ``:`` take a backslash, ``$`` is doubled; a path holding a
newline cannot be written in Make syntax and is refused, as is an ``-o`` holding ``%`` (it would
make the rule a pattern rule; a prerequisite holding one is literal and gets no empty rule). The file is written atomically, only
once the artifact has been written.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Iterable, Sequence

from hetcc import __version__
from hetcc.core.errors import UsageError

__all__ = ["check_depfile", "depfile_text", "make_escape", "model_inputs", "version_stamp", "write_depfile"]


def version_stamp() -> Path:
    """The file standing for hetcc's version in a depfile: the installed ``hetcc/__init__.py``."""
    import hetcc

    return Path(os.path.abspath(hetcc.__file__))


def make_escape(path: str, what: str = "--depfile") -> str:
    """``path`` as one word of a Make rule: ``\\`` before a space, tab, ``#`` or ``:``, ``$$`` for
    ``$``, and a backslash that would escape one of those doubled (GNU make rules, as gcc -MD)."""
    if "\n" in path or "\r" in path or not path:
        raise UsageError(f"{what}: {path!r} cannot be written in Make syntax (a newline or an empty name); "
                         "rename the file")
    out = []
    backslashes = 0
    for ch in path:
        if ch == "\\":
            backslashes += 1
            continue
        if ch in " \t#:":
            out.append("\\" * (2 * backslashes) + "\\" + ch)
        else:
            out.append("\\" * backslashes + ("$$" if ch == "$" else ch))
        backslashes = 0
    out.append("\\" * (2 * backslashes))  # a trailing backslash must not escape the separator after it
    return "".join(out)


def model_inputs(model: str | os.PathLike) -> list[str]:
    """``model`` and the external-data files it refers to (as paths beside it, spelled from
    ``model`` as given), each once, in the order the model names them."""
    import onnx

    from hetcc.compiler.frontend import external_info, iter_tensor_protos

    model = os.fspath(model)
    proto = onnx.load(model, load_external_data=False)
    base = os.path.dirname(model)
    found = [model]
    for t, _ in iter_tensor_protos(proto):
        info = external_info(t)
        if info is not None and info[0]:
            p = os.path.normpath(os.path.join(base, info[0]))
            if p not in found:
                found.append(p)
    return found


def depfile_text(output_dir: str | os.PathLike, inputs: Sequence[str]) -> str:
    """The Make rule ``OUTPUT_DIR/manifest.json: INPUTS...`` plus an empty rule per input."""
    target = (os.fspath(output_dir).rstrip("/") or "/") + "/manifest.json"
    deps = [make_escape(p) for p in dict.fromkeys(inputs)]
    lines = [f"# written by hetcc {__version__} (hetcc compile --depfile): the files this artifact was built from",
             make_escape(target) + ":" + "".join(f" \\\n  {d}" for d in deps), ""]
    lines += [f"{d}:" for d in deps if "%" not in d]  # as a target, '%' would make a pattern rule
    return "\n".join(lines) + "\n"


def check_depfile(depfile: str | None, output_dir: str | None, inputs: Iterable[Any] = ()) -> Path | None:
    """Refuse a ``--depfile`` that cannot be written, before the compile: no ``-o`` (nothing is
    built), a directory, symlink or special file in its place, one of the files the compile reads
    (``inputs``), or a path inside ``-o`` (the new artifact's files would replace it)."""
    if depfile is None:
        return None
    from hetcc.files.atomic import check_not_an_input, check_replaceable_file

    if not str(depfile).strip():
        raise UsageError("--depfile '': name a file, e.g. --depfile out.d")
    if not output_dir:
        raise UsageError("--depfile needs -o DIR: the depfile describes the artifact a compile writes")
    path = Path(depfile)
    check_replaceable_file(path, "--depfile")
    check_not_an_input(path, "--depfile", inputs, within=[output_dir])
    make_escape(str(output_dir), "-o")
    if "%" in str(output_dir):
        raise UsageError(f"--depfile: -o {output_dir!r} holds '%', which makes a Make rule a pattern rule; "
                         "choose an -o without '%'")
    return path


def write_depfile(depfile: Path, output_dir: str | os.PathLike, models: Iterable[str | os.PathLike],
                  target_files: Iterable[str | os.PathLike]) -> Path:
    """Write the depfile of a finished compile (atomically: a temporary file renamed over it);
    ``target_files``: what the target was read from (a measurement file and its board's TOML)."""
    from hetcc.files.atomic import check_not_an_input, write_file

    inputs: list[str] = []
    for m in models:
        inputs += model_inputs(m)
    inputs += [os.fspath(t) for t in target_files]
    check_not_an_input(depfile, "--depfile", inputs)    # a model's data file, a board the target named
    inputs.append(str(version_stamp()))
    text = depfile_text(output_dir, inputs)
    return write_file(depfile, text, "--depfile", "the artifact was written; choose another --depfile")
