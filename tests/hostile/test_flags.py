"""Hostile command-line cases that the catalogue (cases_flags.py) cannot express: a signal during
start-up, a plan that is wrong only for some inputs (monkeypatched), an output of the wrong shape
in --json, a FIFO as --input."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from harness import compiled
from hetcc.cli import main
from hetcc.runtime import executor, verify
from text_models import CHAIN

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def art(tmp_path_factory) -> Path:
    work = tmp_path_factory.mktemp("flags")
    compiled(CHAIN)(work)
    return work / "art"


def run(capsys, *argv) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def one_line(err: str) -> str:
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("hetcc: "), err
    return lines[0]


# ---------------------------------------------------------------- signals during start-up
#: how the console script starts (what pip writes into bin/hetcc for hetcc._entry:main) and
#: python -m hetcc.cli (runpy, as -m does it), which the catalogue's child cases use
STARTS = {"console-script": "import sys; from hetcc._entry import main; sys.exit(main())",
          "python-m": "import runpy; runpy.run_module('hetcc.cli', run_name='__main__', alter_sys=True)"}
#: a child that sends itself SIG when MODULE is first looked up, i.e. during that import
BOMB = """
import os, signal, sys
class Bomb:
    armed = True
    def find_spec(self, name, path=None, target=None):
        if name == {module!r} and Bomb.armed:
            Bomb.armed = False
            os.kill(os.getpid(), signal.{sig})
        return None
sys.meta_path.insert(0, Bomb())
sys.argv = ['hetcc'] + sys.argv[1:]
{start}
"""
WORDS = {signal.SIGINT: "hetcc: interrupted", signal.SIGTERM: "hetcc: terminated (SIGTERM)"}


def child(code: str, argv: list[str], cwd: Path) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    return subprocess.Popen([sys.executable, "-c", code, *argv], cwd=cwd, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


#: (start, module): python -m looks hetcc.cli up in runpy before any line of hetcc runs, so
#: that one import is Python's own and not a case
IMPORTS = [(start, module) for start in STARTS
           for module in ("hetcc.cli.app", "hetcc.cli.artifact", "hetcc.core.errors", "argparse", "numpy", "onnxruntime")
           if (start, module) != ("python-m", "hetcc.cli")]


@pytest.mark.parametrize("sig", ["SIGINT", "SIGTERM"])
@pytest.mark.parametrize("start, module", IMPORTS)
def test_signal_during_a_start_up_import_is_one_line(art, start, module, sig):
    """The signal lands while MODULE is being imported (deterministic, not a race): one line,
    128 + the signal, no traceback."""
    p = child(BOMB.format(module=module, sig=sig, start=STARTS[start]), ["run", str(art), "--repeat", "3"],
              art.parent)
    out, err = p.communicate(timeout=120)
    signum = getattr(signal, sig)
    assert "Traceback" not in out + err, err
    assert p.returncode == 128 + signum and err.strip() == WORDS[signum], f"exit {p.returncode}\n{err}"


#: how a user starts hetcc: the console script pip wrote, and python -m hetcc.cli
COMMANDS = {"console-script": [str(Path(sys.executable).with_name("hetcc"))],
            "python-m": [sys.executable, "-m", "hetcc.cli"]}
#: seconds after hetcc._entry's first statement ran: in the entry, the imports, the parse, the run
DELAYS = (0.0, 0.001, 0.003, 0.01, 0.03, 0.1, 0.2, 0.3)


def catches_sigterm(pid: int) -> bool | None:
    """Whether process ``pid`` has a handler for SIGTERM (Linux: /proc/PID/status, SigCgt); None
    once it is gone. Python itself installs none: a handler means hetcc._entry's first statement
    ran. Before that the interpreter is starting (site, the console script's own lines, python -m
    finding hetcc.cli) and a Ctrl-C is Python's to report, not hetcc's."""
    try:
        with open(f"/proc/{pid}/status") as f:
            mask = next(line for line in f if line.startswith("SigCgt:")).split()[1]
    except (FileNotFoundError, ProcessLookupError, StopIteration):
        return None
    return bool(int(mask, 16) & (1 << (signal.SIGTERM - 1)))


def default_signals() -> None:
    """In the child: SIGINT, SIGTERM and SIGHUP at their defaults, as a terminal gives them (a
    shell's background job starts with SIGINT ignored, and hetcc leaves an ignored signal alone)."""
    for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(s, signal.SIG_DFL)


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/status").is_file(), reason="reads /proc/PID/status (Linux)")
@pytest.mark.parametrize("sig", ["SIGINT", "SIGTERM"])
@pytest.mark.parametrize("start", list(COMMANDS))
def test_a_signal_at_any_moment_after_start_is_one_line(art, start, sig):
    """The real commands, a real signal from outside at a spread of moments once hetcc's entry
    holds the signals (its SIGTERM handler shows in /proc; no clock decides what is checked): a
    long ``run`` each time, so every outcome is the one line and 128 + the signal, never a
    traceback, whatever the moment hits (the entry's own lines, an import, the parse, the loop)."""
    signum = getattr(signal, sig)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    for delay in DELAYS:
        p = subprocess.Popen([*COMMANDS[start], "run", str(art), "--repeat", "100000"], cwd=art.parent, env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=default_signals)
        try:
            while catches_sigterm(p.pid) is False:
                time.sleep(0.0002)
            time.sleep(delay)
            p.send_signal(signum)
            out, err = p.communicate(timeout=120)
        finally:
            if p.poll() is None:
                p.kill()
                p.communicate()
        assert "Traceback" not in out + err, f"{delay} s after the entry:\n{err}"
        assert p.returncode == 128 + signum and err.strip() == WORDS[signum], \
            f"{delay} s after the entry: exit {p.returncode}\n{err}"


# ---------------------------------------------------------------- --verify on several inputs
@pytest.fixture
def wrong_off_seed0(monkeypatch):
    """Pipelines whose output is right for seed 0's random inputs only (what a cut whose value
    depends on the data could do)."""
    real = executor.Pipeline.run
    seed0 = None

    def run(self, feeds):
        nonlocal seed0
        if seed0 is None:
            from hetcc.runtime import random_inputs

            seed0 = random_inputs(self.inputs, seed=0)
        out = real(self, feeds)
        if any(not np.array_equal(feeds[k], v) for k, v in seed0.items()):
            out = {k: v + np.float32(1.0) for k, v in out.items()}
        return out

    monkeypatch.setattr(executor.Pipeline, "run", run)


def test_verify_catches_a_plan_wrong_only_for_other_inputs(capsys, art, wrong_off_seed0):
    code, out, err = run(capsys, "run", str(art), "--verify")
    assert code == 4, out + err
    line = one_line(err)
    assert "output 'y'" in line and "seed 1" in line and "rtol" in line, line
    assert "MISMATCH" in out and "worst of 3 input sets: seed 1" in out
    # one input set (what --verify did before) cannot see it
    code, out, err = run(capsys, "run", str(art), "--verify", "--verify-inputs", "1")
    assert code == 0 and "outputs match" in out and not err


def test_verify_api_reports_the_worst_input_set(art, wrong_off_seed0):
    report = verify(str(art), inputs=4, seed=0)
    assert not report.ok and report.inputs == ("seed 0", "seed 1", "seed 2", "seed 3")
    (y,) = report.outputs
    assert y.name == "y" and not y.ok and y.input in report.inputs[1:] and y.rel_diff > 0.1
    assert verify(str(art)).ok                  # the default, one input set (seed 0), cannot see it


def test_verify_needs_a_positive_number_of_input_sets(art):
    with pytest.raises(ValueError, match="inputs must be a positive integer"):
        verify(str(art), inputs=0)


def test_verify_shape_mismatch_is_strict_json_null(capsys, art, monkeypatch):
    """An output of another shape is an infinite difference: --json prints null, never Infinity."""
    real = executor.Pipeline.run
    monkeypatch.setattr(executor.Pipeline, "run", lambda self, feeds: {k: np.concatenate([v, v])
                                                                        for k, v in real(self, feeds).items()})
    code, out, err = run(capsys, "run", str(art), "--verify", "--json")
    assert code == 4 and "another shape" in one_line(err)

    def refuse(token):
        raise AssertionError(f"non-standard JSON token {token}")
    doc = json.loads(out, parse_constant=refuse)
    (y,) = doc["verify"]["outputs"]
    assert y["ok"] is False and y["max_abs_diff"] is None and y["rel_diff"] is None


def test_verify_failure_exits_4(capsys, art, monkeypatch):
    """A sliced output off by a little more than --rtol: exit 4, one line naming output and input."""
    real = executor.Pipeline.run
    monkeypatch.setattr(executor.Pipeline, "run", lambda self, feeds: {k: v * np.float32(1.01)
                                                                        for k, v in real(self, feeds).items()})
    code, out, err = run(capsys, "run", str(art), "--verify", "--rtol", "0.001")
    assert code == 4 and "verify: FAILED" in out
    assert "output 'y'" in one_line(err) and "on input seed " in one_line(err)
    code, out, err = run(capsys, "run", str(art), "--verify", "--rtol", "0.1")
    assert code == 0 and not err


# ---------------------------------------------------------------- --input that would block
def test_input_fifo_is_refused_without_opening_it(art):
    """A FIFO named as --input: refused from its stat (opening it would wait for a writer)."""
    fifo = art.parent / "p.npy"
    if not fifo.exists():
        os.mkfifo(fifo)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    p = subprocess.run([sys.executable, "-m", "hetcc.cli", "run", str(art), "--input", f"x={fifo}"],
                       capture_output=True, text=True, timeout=60, env=env, cwd=ROOT)
    assert p.returncode == 2 and "not a regular file" in one_line(p.stderr), p.stderr
