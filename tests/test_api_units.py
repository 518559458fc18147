"""The Python API speaks the CLI's units: ``deadline=`` / ``power_cap=`` read as ``--deadline`` /
``--power-cap``; bare numbers go to ``deadline_ms=`` / ``power_cap_mw=``; nothing ambiguous is
guessed. Its public names come from ``hetcc`` itself, plans read with device names, and a
torch.nn.Module compiles under any input name without leaving temporary files."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile

import pytest

from extras import needs

import hetcc
from hetcc.compiler.api import limits
from hetcc.cli import main
from hetcc.core.errors import UsageError
from text_models import CHAIN


@pytest.fixture
def chain(tmp_path, write_text_model):
    return write_text_model(CHAIN, tmp_path / "chain.onnx")


@pytest.mark.parametrize("kwargs,mw", [
    ({"power_cap": "5W"}, 5000.0), ({"power_cap": "5000mW"}, 5000.0), ({"power_cap": "5"}, 5000.0),   # as the CLI
    ({"power_cap_mw": 5}, 5.0), ({"power_cap_mw": 2500.0}, 2500.0),                                  # the name's unit
    ({"power_cap_mw": "5W"}, 5000.0), ({"power_cap_mw": "300 mW"}, 300.0),                           # a unit given
])
def test_power_cap_units(kwargs, mw):
    assert limits(**kwargs)[1] == pytest.approx(mw)


@pytest.mark.parametrize("kwargs,ms,spec", [
    ({"deadline": "170ms"}, 170.0, None), ({"deadline": "0.17s"}, 170.0, None), ({"deadline": 170}, 170.0, None),
    ({"deadline": "170"}, 170.0, None), ({"deadline_ms": 170}, 170.0, None), ({"deadline_ms": "0.17s"}, 170.0, None),
    ({"deadline": "medium"}, None, "medium"), ({"deadline_ms": "1.3x"}, None, "1.3x"),
])
def test_deadline_units(kwargs, ms, spec):
    got_ms, got_spec = limits(**kwargs)[0]
    assert got_spec == spec and (got_ms == pytest.approx(ms) if ms is not None else got_ms is None)


@pytest.mark.parametrize("kwargs,needle", [
    ({"power_cap": 5}, "power_cap_mw=5"),                   # W or mW? refused, both fixes named
    ({"power_cap": 5.0}, "power_cap='5W'"),
    ({"power_cap_mw": "5000"}, "needs its unit"),          # '5000' would be 5000 W as --power-cap
    ({"power_cap_mw": True}, "number of mW"),
    ({"power_cap_mw": 0}, "out of range"),
    ({"power_cap_mw": float("nan")}, "not a finite number"),
    ({"power_cap": "5W", "power_cap_mw": 5000}, "not both"),
    ({"deadline": "170ms", "deadline_ms": 170}, "not both"),
])
def test_ambiguous_or_bad_limits_are_refused(kwargs, needle):
    with pytest.raises(UsageError, match=None) as info:
        limits(**kwargs)
    assert needle in str(info.value) and "\n" not in str(info.value)


def test_api_and_cli_agree_on_the_same_words(chain, capsys):
    """``power_cap="3W"`` is ``--power-cap 3`` (W) is ``power_cap_mw=3000``."""
    api = hetcc.compile(chain, "hikey970", "latency", deadline="medium", power_cap="3W")
    assert main(["compile", str(chain), "--deadline", "medium", "--power-cap", "3", "--json"]) == 0
    cli = json.loads(capsys.readouterr().out)
    assert api.objective.power_cap_mw == cli["power_cap_mw"] == 3000.0
    assert api.objective.deadline_ms == pytest.approx(cli["deadline_ms"])
    by_number = hetcc.compile(chain, "hikey970", "latency", deadline_ms=api.objective.deadline_ms, power_cap_mw=3000)
    assert by_number.plan.slices == api.plan.slices
    session = api.analysis
    assert session.objective("latency", power_cap="3W") == session.objective("latency", power_cap_mw=3000)
    with pytest.raises(UsageError, match="bare number"):
        session.plan("latency", power_cap=2)


@pytest.mark.slow
def test_public_names_from_hetcc_without_heavy_imports():
    probe = ("import sys, hetcc; names = sorted(hetcc.__all__); "
             "heavy = sorted(m for m in ('numpy', 'onnx', 'torch', 'onnxruntime') if m in sys.modules); "
             "[getattr(hetcc, n) for n in names]; print(heavy, 'torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["[]", "False"]       # light to import; no torch even once used
    for name in ("analyse", "compile", "compile_workload", "Objective", "Plan", "PlanContext", "Budget",
                 "Progress", "RichProgress", "UsageError", "InfeasibleError", "HetccError", "CompileResult",
                 "Analysis", "limits", "load_target"):
        assert name in hetcc.__all__ and getattr(hetcc, name) is not None
    assert hetcc.Objective is __import__("hetcc.planners", fromlist=["Objective"]).Objective
    with pytest.raises(AttributeError, match="no attribute 'nonsense'"):
        hetcc.nonsense


def test_a_plan_reads_with_device_names_and_mhz(chain):
    result = hetcc.compile(chain, "hikey970", "energy")
    states = result.analysis.problem.states
    text = str(result)
    assert text == result.describe() and len(text.splitlines()) == 1 + len(result.plan.slices)
    for s, row in zip(result.plan.slices, result.analysis.slices(result.plan)):
        assert row["device"] == states.device[s.state] and row["device"] in text
        assert (row["first_layer"], row["last_layer"]) == (s.first, s.last)
        if row["frequency_mhz"]:
            assert f"{row['frequency_mhz']:g} MHz" in text


def _hetcc_temp_entries(root: str) -> set[str]:
    """What lies in the temporary directory, less torch's own fixed-name cache (torchinductor_USER,
    made once by torch.onnx's imports, not per compile)."""
    return {n for n in os.listdir(root) if not n.startswith("torchinductor_")}


@pytest.mark.zoo
@pytest.mark.slow
def test_a_torch_module_under_any_input_name_leaves_no_temp_files(tmp_path, monkeypatch):
    torch = needs("zoo", "torch")

    class Net(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc = torch.nn.Linear(8, 8)

        def forward(self, features):
            return torch.relu(self.fc(features)).sigmoid()

    tmp = tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setenv("TMPDIR", str(tmp))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    monkeypatch.setenv("HETCC_CACHE_DIR", str(tmp_path / "cache"))
    before = _hetcc_temp_entries(str(tmp))
    net = Net()
    by_signature = hetcc.compile(net, "hikey970", input_shapes=(1, 8), output_dir=tmp_path / "a")
    named = hetcc.compile(net, "hikey970", input_shapes={"x": (1, 8)})
    assert [v.name for v in by_signature.program.graph.inputs] == ["features"]
    assert [v.name for v in named.program.graph.inputs] == ["x"]
    assert _hetcc_temp_entries(str(tmp)) == before
    # the exported model sits in the cache, once per distinct export, for run --verify
    assert by_signature.program.source_path.is_file()
    assert str(by_signature.program.source_path).startswith(str(tmp_path / "cache" / "modules"))
    again = hetcc.compile(net, "hikey970", input_shapes=(1, 8))
    assert again.program.source_path == by_signature.program.source_path
    assert [t.name for t in by_signature.timings][:2] == ["export", "load"]
    assert main(["run", str(tmp_path / "a"), "--verify", "--random-missing"]) == 0
    with pytest.raises(UsageError, match="needs its input's shape"):
        hetcc.compile(net, "hikey970")
