"""hetcc profile: the observations file it writes, its notes, frequencies restored, no partial file."""
from __future__ import annotations

import numpy as np
import pytest

import hetcc.measure.profiler as profiler
from hetcc.cli import main
from hetcc.measure.observations import read_observations
from hetcc.measure.observations import parse_profile_comments
from hetcc.runtime.manifest import sha256_file

from profile_cases import FIT, write


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_writes_one_row_per_layer_and_the_whole_model(tiny, fake_sys, tmp_path, capsys):
    out = tmp_path / "prof.csv"
    code, stdout, err = run(capsys, "profile", str(tiny), "-o", str(out), "--repeats", "3", "--layers")
    assert code == 0, err
    rows = read_observations(out)
    assert all(r.kind == "latency" and r.unit == "ms" and r.device == "cpu" and r.freq_mhz is None for r in rows)
    assert [r.layer for r in rows] == [(0, 0), (1, 1), (2, 2), (3, 3), None]
    assert {r.model_sha256 for r in rows} == {sha256_file(tiny)}
    assert [r.weight for r in rows] == [1.0, 1.0, 1.0, 1.0, 4.0]     # the whole model weighs as its layers
    assert all(r.value > 0 for r in rows)
    assert rows[0].models == (str(tiny),)             # written relative to the CSV, read back absolute
    assert rows[0].model == "models/tiny.onnx"
    assert rows[0].source.startswith("hetcc profile on ") and "onnxruntime" in rows[0].source
    head = [c for c in parse_profile_comments(out.read_text()) if "" not in c]
    merged = {k: v for c in head for k, v in c.items()}
    assert merged["board"] == "host" and merged["layers"] == "4" and merged["max_cut_tensors"] == "1"
    assert float(merged["boundary_delta_ms"]) == pytest.approx(FIT.delta_ms)
    assert float(merged["boundary_beta_ms_per_mb"]) == pytest.approx(FIT.beta_ms_per_byte * 1e6)
    assert "4 layers" in stdout and "Sigmoid" in stdout      # --layers: the per-layer table


def test_says_once_that_cpufreq_and_power_are_missing(tiny, fake_sys, tmp_path, capsys):
    code, _, err = run(capsys, "profile", str(tiny), "-o", str(tmp_path / "p.csv"), "--repeats", "2")
    assert code == 0
    lines = [l for l in err.splitlines() if l.strip()]
    assert sum("cpufreq is not writable here" in l for l in lines) == 1
    assert any("profiling at the current frequency only, 2100 MHz; θ/ρ need two frequencies" in l for l in lines)
    assert sum("no power source readable (RAPL, hwmon, INA rails): latency only" in l for l in lines) == 1
    assert "/sys/class/powercap: absent" in err


def test_named_frequencies_that_cannot_be_set_are_refused(tiny, fake_sys, tmp_path, capsys):
    out = tmp_path / "p.csv"
    code, _, err = run(capsys, "profile", str(tiny), "-o", str(out), "--freqs", "1200,2000")
    assert code == 2 and "cpufreq is not writable here" in err and "--freqs current" in err
    assert not out.exists()


@pytest.mark.parametrize("bad", ["missing-dir/p.csv", "."])
def test_an_unwritable_output_is_refused_before_profiling(tiny, fake_sys, tmp_path, capsys, monkeypatch, bad):
    monkeypatch.setattr(profiler, "interleaved_timings", lambda *a, **k: pytest.fail("profiled before checking -o"))
    before = sorted(tmp_path.rglob("*"))
    code, _, err = run(capsys, "profile", str(tiny), "-o", str(tmp_path / bad))
    assert code == 2 and err.startswith("hetcc: error: -o") and len(err.strip().splitlines()) == 1
    assert sorted(tmp_path.rglob("*")) == before      # nothing made


def test_frequencies_are_set_then_restored_and_theta_rho_fitted(tiny, cpufreq, tmp_path, capsys, monkeypatch):
    seen = []
    real = profiler.interleaved_timings

    def spy(*a, **k):
        seen.append(((cpufreq / "scaling_min_freq").read_text().strip(), (cpufreq / "scaling_max_freq").read_text().strip()))
        return real(*a, **k)

    monkeypatch.setattr(profiler, "interleaved_timings", spy)
    out = tmp_path / "p.csv"
    code, stdout, err = run(capsys, "profile", str(tiny), "-o", str(out), "--repeats", "2")
    assert code == 0, err
    assert seen == [("1000000", "1000000"), ("2000000", "2000000")]          # minmax: MOSAIC's two
    assert (cpufreq / "scaling_min_freq").read_text().strip() == "1000000"   # put back
    assert (cpufreq / "scaling_max_freq").read_text().strip() == "2000000"
    rows = read_observations(out)
    assert sorted({r.freq_mhz for r in rows}) == [1000.0, 2000.0]
    assert len(rows) == 2 * 5
    fits = [c for c in parse_profile_comments(out.read_text()) if c.get("") == "theta_rho"]
    assert [c["layer"] for c in fits] == ["model", "0", "1", "2", "3"]
    for c in fits:
        assert float(c["theta_ms_mhz"]) >= 0 and float(c["rho_ms"]) >= 0
    assert "cpufreq is not writable" not in err and "T = " in stdout


def test_userspace_governor_is_used_where_offered_and_put_back(tiny, cpufreq, tmp_path, capsys):
    write(cpufreq / "scaling_available_governors", "performance userspace schedutil\n")
    write(cpufreq / "scaling_setspeed", "<unsupported>\n")
    code, _, err = run(capsys, "profile", str(tiny), "-o", str(tmp_path / "p.csv"), "--repeats", "1",
                       "--freqs", "1500")
    assert code == 0, err
    assert (cpufreq / "scaling_governor").read_text().strip() == "schedutil"
    assert {r.freq_mhz for r in read_observations(tmp_path / "p.csv")} == {1500.0}


def test_an_interrupt_leaves_no_file_and_restores_the_clock(tiny, cpufreq, tmp_path, capsys, monkeypatch):
    calls = []
    real = profiler.interleaved_timings

    def interrupted(*a, **k):
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(*a, **k)

    monkeypatch.setattr(profiler, "interleaved_timings", interrupted)
    out = tmp_path / "p.csv"
    code, _, err = run(capsys, "profile", str(tiny), "-o", str(out), "--repeats", "1")
    assert code == 130
    assert not out.exists() and not list(tmp_path.glob(".p.csv*"))
    assert (cpufreq / "scaling_min_freq").read_text().strip() == "1000000"
    assert (cpufreq / "scaling_max_freq").read_text().strip() == "2000000"


def test_power_rows_beside_latency_rows_where_a_meter_reads(tiny, fake_sys, tmp_path, capsys):
    hw = fake_sys / "class/hwmon/hwmon0"
    write(hw / "name", "ina226\n")
    write(hw / "power1_input", "4500000\n")            # uW
    out = tmp_path / "p.csv"
    code, _, err = run(capsys, "profile", str(tiny), "-o", str(out), "--repeats", "2")
    assert code == 0 and "no power source" not in err
    rows = read_observations(out)
    power = [r for r in rows if r.kind == "power"]
    assert len(power) == 5 and all(r.unit == "mW" and r.value == pytest.approx(4500.0) for r in power)
    assert [r.layer for r in power] == [r.layer for r in rows if r.kind == "latency"]
    assert any("INA" in c.get("power", "") for c in parse_profile_comments(out.read_text()))


def test_a_zoo_name_is_written_as_given(monkeypatch, tmp_path):
    from hetcc.cli.profile import _model_column

    class P:
        source_path = tmp_path / "squeezenet1_1.onnx"

    monkeypatch.chdir(tmp_path)
    assert _model_column("squeezenet1_1", P(), tmp_path / "x.csv") == "squeezenet1_1"
    assert _model_column(str(tmp_path / "m.onnx"), type("Q", (), {"source_path": tmp_path / "m.onnx"})(),
                         tmp_path / "out" / "x.csv") == "../m.onnx"


def test_rounds_time_every_session_the_same_number_of_times(tiny, fake_sys):
    from hetcc.measure.profile import load_program
    from hetcc.compiler.program import LAYERS
    from hetcc.targets import load_target

    program = load_program(str(tiny), load_target("host"))
    so = profiler.session_options(1)
    sessions = [profiler.layer_session(program, l, so) for l in program.get(LAYERS)]
    ts = profiler.interleaved_timings(sessions + [profiler.model_session(program, so)], min_runs=6,
                                      min_seconds=0.0, max_runs=50)
    assert [t.runs for t in ts] == [6] * 5 and all(t.ms > 0 for t in ts)


def test_measurements_carry_the_run_count_and_median(tiny, fake_sys):
    from hetcc.measure.profile import load_program
    from hetcc.compiler.program import LAYERS
    from hetcc.targets import load_target

    program = load_program(str(tiny), load_target("host"))
    so = profiler.session_options(1)
    ts = profiler.layer_timings(program, program.get(LAYERS), so, min_runs=7, min_seconds=0.0, max_runs=7)
    assert [t.runs for t in ts] == [7] * 4 and all(np.isfinite(t.ms) and t.power_mw is None for t in ts)
