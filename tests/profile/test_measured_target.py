"""--target FILE.csv: the cost table comes from the file (the builder of the profile cache), and a
file of another model, another layering or missing a layer is refused in one line."""
from __future__ import annotations

import numpy as np
import pytest

import hetcc
import hetcc.measure.profiler as profiler
from hetcc.cli import main
from hetcc.measure.observations import read_observations
from hetcc.compiler.program import COSTS, LAYERS, LEGALITY
from hetcc.runtime.manifest import sha256_file
from hetcc.targets import load_target
from profile_cases import FIT

LAYER_MS = [0.5, 0.2, 0.3, 0.1]
MODEL_MS = 0.9


def csv_text(model: str, sha: str, layers=LAYER_MS, whole=MODEL_MS, comments: str = "", freq: str = "") -> str:
    rows = [f"latency,{model},{sha},cpu,{freq},{i},{v},ms" for i, v in enumerate(layers)]
    rows.append(f"latency,{model},{sha},cpu,{freq},,{whole},ms")
    return (f"# hetcc.observations/1\n{comments}kind,model,model_sha256,device,freq_mhz,layer,value,unit\n"
            + "\n".join(rows) + "\n")


@pytest.fixture(autouse=True)
def never_profile(monkeypatch):
    def fail(*a, **k):
        raise AssertionError("--target FILE.csv profiled the model")

    for name in ("layer_timings", "model_timing", "interleaved_timings", "measure_session"):
        monkeypatch.setattr(profiler, name, fail)


def test_the_table_is_the_files_through_the_profile_builder(tiny, tmp_path):
    csv = tmp_path / "models" / "prof.csv"
    csv.write_text(csv_text("tiny.onnx", sha256_file(tiny),
                            comments="# hetcc.profile boundary_delta_ms=0.02 boundary_beta_ms_per_mb=0.1\n"))
    a = hetcc.analyse(str(tiny), str(csv))
    table = a.program.get(COSTS)
    want = profiler.costs_from_profile(a.program.get(LAYERS), load_target("host"), a.program.get(LEGALITY).mask,
                                       LAYER_MS, MODEL_MS, FIT)   # FIT: delta 0.02 ms, beta 0.1 ms/MB
    for k in ("latency_ms", "transfer_in_ms", "transfer_out_ms"):
        np.testing.assert_allclose(getattr(table, k), getattr(want, k))
    assert a.target.name == "host" and table.source == "measured"
    plan = a.plan("latency")
    assert len(plan.slices) == 1     # one device: cutting only adds boundaries
    assert plan.latency_ms == pytest.approx(float(want.transfer_in_ms[0, 0] + want.latency_ms[:, 0].sum()
                                                  + want.transfer_out_ms[-1, 0]))


def test_the_top_frequency_and_the_median_of_repeats_are_used(tiny, tmp_path):
    sha = sha256_file(tiny)
    text = csv_text("tiny.onnx", sha, layers=[9, 9, 9, 9], freq="1000")
    text += "".join(f"latency,tiny.onnx,{sha},cpu,2000,{i},{v},ms\n" for i, v in enumerate(LAYER_MS))
    text += "".join(f"latency,tiny.onnx,{sha},cpu,2000,{i},{v * 3},ms\n" for i, v in enumerate(LAYER_MS))
    text += "".join(f"latency,tiny.onnx,{sha},cpu,2000,{i},{v},ms\n" for i, v in enumerate(LAYER_MS))
    text += f"latency,tiny.onnx,{sha},cpu,2000,,{MODEL_MS},ms\n"
    csv = tmp_path / "models" / "p.csv"
    csv.write_text(text)
    a = hetcc.analyse(str(tiny), str(csv))
    want = profiler.costs_from_profile(a.program.get(LAYERS), load_target("host"), a.program.get(LEGALITY).mask,
                                       LAYER_MS, MODEL_MS, profiler.BoundaryFit(0.05, 0.3e-6))  # host.toml's transfer
    np.testing.assert_allclose(a.program.get(COSTS).latency_ms, want.latency_ms)


def test_compile_cli_with_a_profile_file(tiny, fake_sys, tmp_path, capsys, monkeypatch):
    csv = tmp_path / "models" / "prof.csv"
    csv.write_text(csv_text("tiny.onnx", sha256_file(tiny)))
    assert main(["compile", str(tiny), "--target", str(csv), "-o", str(tmp_path / "art"), "--quiet"]) == 0
    assert (tmp_path / "art" / "manifest.json").is_file()


def test_a_mismatched_hash_is_refused(tiny, tmp_path, capsys):
    csv = tmp_path / "models" / "prof.csv"
    csv.write_text(csv_text("tiny.onnx", "0" * 64))
    assert main(["compile", str(tiny), "--target", str(csv)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "line 3: model tiny.onnx has sha256" in err and "profile this model again" in err


def test_a_missing_layer_is_refused(tiny, tmp_path, capsys):
    csv = tmp_path / "models" / "prof.csv"
    csv.write_text("\n".join(l for l in csv_text("tiny.onnx", sha256_file(tiny)).splitlines() if ",cpu,,2," not in l))
    assert main(["compile", str(tiny), "--target", str(csv)]) == 2
    err = capsys.readouterr().err
    assert "no latency of layer 2 of tiny (3 of 4 layers measured)" in err and "hetcc profile" in err


def test_another_layering_or_model_or_device_is_refused(tiny, tmp_path, capsys):
    sha = sha256_file(tiny)
    cases = {
        "# hetcc.profile board=host layers=4 max_cut_tensors=2 layering=0123456789abcdef\n": "another layering",
        "# hetcc.profile board=hikey970\n": "a profile of board 'hikey970'",
    }
    for comment, msg in cases.items():
        csv = tmp_path / "models" / "p.csv"
        csv.write_text(csv_text("tiny.onnx", sha, comments=comment))
        assert main(["compile", str(tiny), "--target", str(csv)]) == 2
        assert msg in capsys.readouterr().err
    csv.write_text(csv_text("squeezenet1_1", "1" * 64))
    assert main(["compile", str(tiny), "--target", str(csv)]) == 2
    assert "no latency measurements of tiny" in capsys.readouterr().err
    csv.write_text(csv_text("tiny.onnx", sha).replace(",cpu,", ",gpu,"))
    assert main(["compile", str(tiny), "--target", str(csv)]) == 2
    assert "'gpu' is not a device of host (cpu)" in capsys.readouterr().err


def test_a_profile_round_trips_into_a_compile(tiny, fake_sys, tmp_path, capsys, monkeypatch):
    """hetcc profile's own file plans the same as its numbers (what the compile cache would do)."""
    monkeypatch.undo()      # profile for real here
    import hetcc.runtime.power as power

    monkeypatch.setattr(power, "SYSFS_ROOT", fake_sys)
    monkeypatch.setattr(profiler, "boundary_fit", lambda use_cache=True: FIT)
    csv = tmp_path / "p.csv"
    assert main(["profile", str(tiny), "-o", str(csv), "--repeats", "2", "-q"]) == 0
    a = hetcc.analyse(str(tiny), str(csv))
    rows = read_observations(csv)
    layer_ms = [r.value for r in rows if r.layer is not None]
    model_ms = [r.value for r in rows if r.layer is None][0]
    want = profiler.costs_from_profile(a.program.get(LAYERS), load_target("host"), a.program.get(LEGALITY).mask,
                                       layer_ms, model_ms, FIT)
    np.testing.assert_allclose(a.program.get(COSTS).latency_ms, want.latency_ms, rtol=1e-5)


def test_the_depfile_of_a_profile_target_names_the_file_and_its_board(tiny, fake_sys, tmp_path):
    csv = tmp_path / "models" / "prof.csv"
    csv.write_text(csv_text("tiny.onnx", sha256_file(tiny)))
    dep = tmp_path / "art.d"
    assert main(["compile", str(tiny), "--target", str(csv), "-o", str(tmp_path / "art"), "--quiet",
                 "--depfile", str(dep)]) == 0
    rule = dep.read_text().split("\n\n")[0]
    deps = " ".join(ln.rstrip("\\").strip() for ln in rule.splitlines() if not ln.startswith("#")).split(": ")[1]
    assert deps.split()[1:3] == [str(csv), str(load_target("host").path)]
