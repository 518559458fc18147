"""A reader that closes hetcc's output early (``hetcc targets --json | head -1``): every command
that prints stops quietly, exit 141 (128 + SIGPIPE, as SIGPIPE ends other Unix tools) or 0 when
everything was written before the reader left; never a traceback or "Exception ignored"."""
from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

from hetcc.cli.app import CLOSED_PIPE_EXIT, main
from text_models import CHAIN

NOISE = ("Traceback", "BrokenPipe", "Exception", "Errno", "error")


class ClosedPipe(io.TextIOBase):
    """stdout whose reader is gone before the first write: every write fails with EPIPE."""

    encoding = "utf-8"

    def __init__(self) -> None:
        self._fd = os.open(os.devnull, os.O_WRONLY)   # rich points it at /dev/null itself
        self.writes = 0

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return False

    def fileno(self) -> int:
        return self._fd

    def write(self, text: str) -> int:
        self.writes += 1
        raise BrokenPipeError(32, "Broken pipe")

    def close(self) -> None:
        os.close(self._fd)
        super().close()


@pytest.fixture(scope="module")
def artifact(tmp_path_factory) -> tuple[Path, Path]:
    import onnx
    import onnx.parser

    root = tmp_path_factory.mktemp("pipes")
    model = root / "chain.onnx"
    onnx.save(onnx.parser.parse_model(CHAIN), str(model))
    assert main(["compile", str(model), "-o", str(root / "out"), "--planner", "even:2", "-q"]) == 0
    return model, root / "out"


COMMANDS = {
    "compile": ["compile", "{model}"],
    "compile -o --verbose": ["compile", "{model}", "-o", "{new}", "--verbose"],
    "compile --json": ["compile", "{model}", "--json"],
    "workload": ["compile", "{model}", "{model2}"],
    "inspect": ["inspect", "{out}"],
    "inspect --json --costs": ["inspect", "{out}", "--json", "--costs"],
    "run --verify": ["run", "{out}", "--verify"],
    "targets": ["targets"],
    "targets --json": ["targets", "--json"],
    "targets NAME": ["targets", "hikey970"],
    "targets NAME --json": ["targets", "hikey970", "--json"],
    "planners": ["planners"],
    "planners --json": ["planners", "--json"],
    "zoo list": ["zoo", "list"],
}


@pytest.mark.parametrize("name", list(COMMANDS))
def test_every_printing_command_stops_quietly(name, artifact, tmp_path, capsys, monkeypatch):
    model, out = artifact
    model2 = tmp_path / "other.onnx"
    model2.write_bytes(model.read_bytes())
    argv = [a.format(model=model, model2=model2, out=out, new=tmp_path / "new") for a in COMMANDS[name]]
    pipe = ClosedPipe()
    monkeypatch.setattr(sys, "stdout", pipe)
    try:
        code = main(argv)
    finally:
        monkeypatch.undo()
        pipe.close()
    err = capsys.readouterr().err
    assert pipe.writes >= 1                      # it did try to print
    assert code == CLOSED_PIPE_EXIT, err
    assert not [line for line in err.splitlines() if any(n in line for n in NOISE)], err


def test_help_into_a_closed_pipe(capsys, monkeypatch):
    """argparse drops a failed write of its help itself: 0, and still nothing on stderr."""
    pipe = ClosedPipe()
    monkeypatch.setattr(sys, "stdout", pipe)
    try:
        code = main(["--help"])
    finally:
        monkeypatch.undo()
        pipe.close()
    assert code in (0, CLOSED_PIPE_EXIT) and pipe.writes == 1 and capsys.readouterr().err == ""


def _spawn(*argv: str, cwd: Path, stdout) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "hetcc.cli", *argv], stdout=stdout, stderr=subprocess.PIPE,
                            cwd=cwd, text=True)


@pytest.mark.parametrize("argv", [["targets", "--json"], ["inspect", "{out}", "--json", "--costs"]],
                         ids=["targets --json | head -1", "inspect --json --costs | head -1"])
def test_head_one_in_a_real_pipe(argv, artifact, tmp_path):
    """The two commands of the report, read one line at a time and closed, as head -1 does."""
    _, out = artifact
    proc = _spawn(*[a.format(out=out) for a in argv], cwd=tmp_path, stdout=subprocess.PIPE)
    first = proc.stdout.readline()
    proc.stdout.close()
    err = proc.stderr.read()
    code = proc.wait(timeout=120)
    assert first.strip() in ("[", "{")
    assert code in (0, CLOSED_PIPE_EXIT) and err == "", err


@pytest.mark.slow
def test_a_reader_gone_before_the_first_line(artifact, tmp_path):
    """A compile whose stdout reader left at once: the artifact is written (the summary comes
    after it), the process ends 141, and nothing reaches stderr, not even at the interpreter's
    last flush."""
    model, _ = artifact
    read, write = os.pipe()
    os.close(read)
    try:
        proc = _spawn("compile", str(model), "-o", str(tmp_path / "o"), cwd=tmp_path, stdout=write)
    finally:
        os.close(write)
    err = proc.stderr.read()
    assert proc.wait(timeout=120) == CLOSED_PIPE_EXIT and err == "", err
    assert (tmp_path / "o" / "manifest.json").is_file()
