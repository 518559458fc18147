"""Small things a user notices (issue 34, item 6), one test each: '1 slice', --target's default
in --help, 'did you mean' for a planner, progress lines and readable times off a terminal, the
reported wall time being the process's, host-analytical's description, inspect's transfer
column explained, a missing --sysfs-root in one line, relative deadlines for a workload, and a
planner of the wrong kind refused before the models are analysed."""
from __future__ import annotations

import io
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

import hetcc
from hetcc.cli import main
from hetcc.core.errors import UsageError
from hetcc.planners import get_spec
from hetcc.planners.context import LineProgress, Progress, RichProgress, default_progress, format_duration
from text_models import CHAIN, IDENTITY_CHAIN


@pytest.fixture
def chain(tmp_path, write_text_model):
    return write_text_model(CHAIN, tmp_path / "chain.onnx")


@pytest.fixture
def other(tmp_path, write_text_model):
    return write_text_model(IDENTITY_CHAIN, tmp_path / "other.onnx")


def test_one_slice_is_singular(capsys, chain):
    assert main(["compile", str(chain), "--planner", "even:1"]) == 0
    out = capsys.readouterr().out
    assert "even:1: 1 slice (even:1, " in out and "1 slices" not in out
    text = hetcc.compile(chain, planner="even:1").describe()
    assert "1 slice of chain" in text and "1 slices" not in text
    assert main(["compile", str(chain), "--planner", "even:2"]) == 0
    assert "2 slices (" in capsys.readouterr().out


def test_compile_help_says_the_default_target(capsys):
    assert main(["compile", "--help"]) == 0
    help_text = " ".join(capsys.readouterr().out.split())
    assert "(default hikey970)" in help_text


def test_a_misspelled_planner_gets_a_did_you_mean(capsys, chain):
    assert main(["compile", str(chain), "--planner", "exatc"]) == 2
    err = capsys.readouterr().err
    assert "unknown planner 'exatc' (did you mean 'exact'?)" in err and len(err.strip().splitlines()) == 1
    with pytest.raises(UsageError, match=r"did you mean 'dqn'\?"):
        get_spec("dqm:x")
    with pytest.raises(UsageError) as e:
        get_spec("zzzzzz")
    assert "did you mean" not in str(e.value)


def test_off_a_terminal_long_tasks_print_a_line_every_tenth():
    sink = io.StringIO()
    progress = LineProgress(sink, after=0.0)
    with progress.task("dqn", total=200) as bar:
        for t in range(200):
            bar.update(1, best=1.5)
    lines = sink.getvalue().splitlines()
    assert [ln.split(": ")[2].split(" (")[0] for ln in lines] == [f"{p}%" for p in range(10, 101, 10)]
    assert lines[2].startswith("hetcc: dqn: 30% (60/200), ") and lines[2].endswith("ms, best 1.5")
    with progress.task("stopped by its budget", total=100) as bar:
        bar.update(42)
    assert sink.getvalue().splitlines()[-1].startswith("hetcc: stopped by its budget: ended at 42/100, ")
    with progress.task("no total") as bar:
        bar.update(5)
    assert len(sink.getvalue().splitlines()) == 10 + 2    # the budgeted task's 40% and its end; none without a total


def test_a_short_task_stays_silent_and_default_progress_off_a_terminal(monkeypatch):
    sink = io.StringIO()
    with LineProgress(sink, after=3600.0).task("quick", total=10) as bar:
        for _ in range(10):
            bar.update()
    assert sink.getvalue() == ""
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    assert type(default_progress()) is LineProgress
    assert type(default_progress(quiet=True)) is Progress
    monkeypatch.setattr(sys, "stderr", type("TTY", (io.StringIO,), {"isatty": lambda self: True})())
    assert isinstance(default_progress(), RichProgress)


def test_durations_read_in_ms_below_ten_seconds_and_s_above():
    assert format_duration(0.0123) == "12.3 ms"
    assert format_duration(9.9) == "9900.0 ms"
    assert format_duration(189.5192) == "189.5 s"


ENTRY = """
import sys, time
time.sleep({sleep})
entered = time.perf_counter()       # just before hetcc's entry is imported
sys.argv = ["hetcc", "compile", {model!r}, "--json", "-q"]
from hetcc._entry import main
try:
    main()
except SystemExit:
    print("since the entry", time.perf_counter() - entered, file=sys.stderr)
    raise
"""


@pytest.mark.slow
def test_the_reported_time_is_the_process_wall_time(chain, tmp_path):
    """Time spent before hetcc's entry (here a sleep; in life the interpreter's start-up and the
    console script's imports) is time the user waited: the reported compile_seconds counts it,
    so it is more than everything from the entry to the end, and no more than the time the
    process took as its parent saw it."""
    sleep = 0.5
    t0 = time.perf_counter()
    r = subprocess.run([sys.executable, "-c", ENTRY.format(sleep=sleep, model=str(chain))], capture_output=True,
                       text=True, timeout=300, cwd=tmp_path)
    wall = time.perf_counter() - t0
    assert r.returncode == 0, r.stderr
    since_entry = float(r.stderr.split("since the entry")[1])
    reported = json.loads(r.stdout)["compile_seconds"]
    assert since_entry < reported <= wall and reported >= sleep


def test_host_analytical_does_not_claim_to_be_this_machine(capsys):
    t = hetcc.load_target("host-analytical")
    assert not t.description.startswith("this machine")
    assert "analytical model" in t.description and "hetcc calibrate" in t.description


def test_inspect_help_explains_the_transfer_column(capsys):
    assert main(["inspect", "--help"]) == 0
    help_text = " ".join(capsys.readouterr().out.split())
    assert "transfer: the share of the slice's predicted latency spent moving its input in and its output out" \
        in help_text


def test_a_missing_sysfs_root_is_one_line_and_exit_2(capsys, chain, tmp_path):
    out = tmp_path / "tx2"
    assert main(["compile", str(chain), "--target", "jetson-tx2", "-o", str(out), "-q"]) == 0
    capsys.readouterr()
    missing = tmp_path / "no-such-root"
    assert main(["run", str(out), "--apply-hardware", "--sysfs-root", str(missing)]) == 2
    captured = capsys.readouterr()
    assert captured.err.strip().splitlines() == [
        f"hetcc: error: --sysfs-root {missing} does not exist; give the directory that stands for / (one holding "
        "sys/), or leave --sysfs-root out to set the real board"]
    assert captured.out == ""


def test_a_workload_takes_a_preset_deadline_per_model(capsys, chain, other):
    code = main(["compile", str(chain), str(other), "--deadline", "medium", "--objective", "energy", "--json"])
    assert code == 0, capsys.readouterr().err
    doc = json.loads(capsys.readouterr().out)
    assert (doc["deadline_ms"], doc["deadline_spec"]) == (None, "medium")
    own = {name: hetcc.analyse(path).objective("energy", "medium").deadline_ms
           for name, path in (("chain", chain), ("other", other))}
    assert own["chain"] != own["other"]
    assert {n: m["deadline_ms"] for n, m in doc["models"].items()} == pytest.approx(own)
    assert main(["compile", str(chain), str(other), "--deadline", "1.5x"]) == 0
    assert "deadline 1.5x of each model" in capsys.readouterr().out


def test_a_planner_of_the_wrong_kind_is_refused_before_the_models_are_analysed(capsys, chain, tmp_path):
    absent = tmp_path / "absent.onnx"        # analysing it would fail: the planner is refused first
    with pytest.raises(UsageError, match="planner 'dp' plans a model, not a workload"):
        hetcc.compile_workload([chain, absent], planner="dp")
    with pytest.raises(UsageError, match="planner 'independent' plans a workload, not a model"):
        hetcc.compile(absent, planner="independent")
    assert main(["compile", str(chain), str(absent), "--planner", "exact"]) == 2
    assert "plans a model, not a workload" in capsys.readouterr().err


def test_progress_lines_start_after_the_environment_s_seconds(monkeypatch):
    """HETCC_PROGRESS_AFTER: seconds before the first line off a terminal, or never (the suite's
    setting, so that no command's output depends on the machine's load); 5 s otherwise."""
    import io
    import sys

    monkeypatch.setattr(sys, "stderr", io.StringIO())
    for text, want in (("never", float("inf")), ("0", 0.0), ("2.5", 2.5), ("", 5.0), ("junk", 5.0), ("-1", 5.0)):
        monkeypatch.setenv("HETCC_PROGRESS_AFTER", text)
        assert default_progress().after == want
