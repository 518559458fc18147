"""``hetcc compile --observations``: memory rows (the size a device's runtime reports for a model)
make the device's capacity rule charge that size, as the fidelity benchmark and calibrate plan
(``PlanningProblem.with_reported_memory``); the artifact records the rule; bad rows are one line
naming the file and line; the built-in hikey970 applies MOSAIC's rows to MOSAIC's zoo models."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import onnx.helper as oh
import onnx.numpy_helper as onh
import pytest

from boards import board_text, device
from extras import needs

from hetcc.cli import main
from hetcc.compiler.api import analyse
from hetcc.core.errors import UsageError
from hetcc.measure.measured_target import load_memory_rows, shipped
from hetcc.targets import load_target

ROOT = Path(__file__).resolve().parents[1]
N = 6                     # layers of the chain
W = 64                    # each layer's weight: W x W float32 = 16384 bytes
LAYER_BYTES = W * W * 4
#: a slow CPU without a capacity and a fast accelerator holding the whole chain (98304 bytes)
BOARD = board_text("memboard", devices={
    "cpu": device(),
    "acc": device(kind="npu", peak_gflops={"conv": 50.0, "matmul": 50.0, "other": 50.0}, mem_bandwidth_gbps=50.0,
                  capacity_bytes=120_000),
})
HEADER = "kind,model,model_sha256,device,value,unit,source\n"


def _chain(path: Path) -> Path:
    rng = np.random.default_rng(0)
    nodes, inits, prev = [], [], "x"
    for i in range(N):
        inits.append(onh.from_array(rng.standard_normal((W, W)).astype(np.float32), f"w{i}"))
        nodes += [oh.make_node("MatMul", [prev, f"w{i}"], [f"m{i}"]), oh.make_node("Relu", [f"m{i}"], [f"r{i}"])]
        prev = f"r{i}"
    nodes.append(oh.make_node("Identity", [prev], ["y"]))
    graph = oh.make_graph(nodes, "memchain", [oh.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1, W])],
                          [oh.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [1, W])], inits)
    model = oh.make_model(graph, opset_imports=[oh.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return path


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    d = tmp_path_factory.mktemp("memrows")
    model = _chain(d / "chain.onnx")
    board = d / "memboard.toml"
    board.write_text(BOARD)
    return d, model, board


def rows(d: Path, body: str, name: str = "rows.csv") -> Path:
    p = d / name
    p.write_text(HEADER + body)
    return p


def slices(an, plan):
    st = an.problem.states
    return [(s.first, s.last, st.device[s.state], float(st.freq_mhz[s.state])) for s in plan.slices]


def test_rows_give_the_plan_with_reported_memory_gives(setup):
    """What benchmarks/fidelity.py and calibrate do (the problem with_reported_memory) is what a
    compile with the rows plans: the same capacities, legality and slices, latency and energy."""
    d, model, board = setup
    csv = rows(d, "memory,chain.onnx,,acc,0.2,MB,test\n")      # 200 KB: a slice holds about half the chain
    with_rows = analyse(model, board, observations=csv)
    plain = analyse(model, board, observations=None)
    fid = plain.problem.with_reported_memory("acc", 0.2e6)
    assert np.array_equal(with_rows.problem.capacity_bytes, fid.capacity_bytes)
    assert np.array_equal(with_rows.problem.legal, fid.legal)
    for metric in ("latency", "energy"):
        mine = with_rows.plan(metric, planner="dp")
        plain.problem = fid
        theirs = plain.plan(metric, planner="dp")
        assert slices(with_rows, mine) == slices(plain, theirs)
        assert mine.latency_ms == pytest.approx(theirs.latency_ms) and mine.energy_mj == pytest.approx(theirs.energy_mj)
    unchanged = analyse(model, board, observations=None).plan("latency", planner="dp")
    assert len(unchanged.slices) == 1                  # the whole chain fits the board's estimate ...
    assert len(with_rows.plan("latency", planner="dp").slices) > 1    # ... not the reported size
    rule = with_rows.reported_memory["acc"]
    assert rule.reported_bytes == 0.2e6 and rule.board_bytes == N * LAYER_BYTES and rule.source == "rows.csv line 2"


def test_a_row_with_the_models_sha256_applies_however_the_model_is_named(setup):
    d, model, board = setup
    from hetcc.runtime.manifest import sha256_file

    csv = rows(d, f"memory,other.onnx,{sha256_file(model)},acc,0.2,MB,by hash\n", "byhash.csv")
    assert analyse(model, board, observations=csv).reported_memory["acc"].source == "byhash.csv line 2"


def test_without_rows_the_artifact_is_todays(setup, tmp_path, capsys):
    """No rows for the model (a board without its own, or the built-in hikey970 and a model its rows
    do not name, or --observations none): the same bytes, no reported_memory anywhere."""
    _, model, board = setup
    for target in (str(board), "hikey970"):
        outs = []
        for extra in ([], ["--observations", "none"]):
            out = tmp_path / f"{Path(target).stem}-{len(extra)}"
            assert main(["compile", str(model), "--target", target, "-o", str(out), "-q", *extra]) == 0
            outs.append({p.name: p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()})
        assert outs[0] == outs[1]
        assert "reported_memory" not in json.loads(outs[0]["costs.json"])
    capsys.readouterr()


def test_the_artifact_records_the_rule_and_inspect_names_the_reported_size(setup, tmp_path, capsys):
    d, model, board = setup
    csv = rows(d, "memory,chain.onnx,,acc,0.2,MB,test\n")
    out = tmp_path / "split"
    assert main(["compile", str(model), "--target", str(board), "--observations", str(csv), "-o", str(out)]) == 0
    said = capsys.readouterr().out
    assert "acc capacity charged the 0.2 MB its runtime reports for the model (rows.csv line 2)" in said
    costs = json.loads((out / "costs.json").read_text())
    assert costs["reported_memory"] == [{"device": "acc", "reported_bytes": 200000, "board_bytes": N * LAYER_BYTES,
                                         "capacity_bytes": 120000, "source": "rows.csv line 2"}]
    acc = [k for k, s in enumerate(costs["states"]) if s["device"] == "acc"]
    assert costs["capacity_bytes"][acc[0]] == int(120000 * N * LAYER_BYTES / 200000)   # what the planner used
    assert main(["inspect", str(out), "--why", "--json"]) == 0
    why = json.loads(capsys.readouterr().out)
    assert why["capacity"] == [("acc: charged the 0.2 MB its runtime reports for the model (rows.csv line 2), not the "
                                "board's 0.1 MB; a slice fits where its share is within 0.1 MB")]
    notes = [s["note"] for v in why["variants"].values() for s in v["slices"]]
    assert any("acc cannot hold" in n and "0.2 MB acc's runtime reports" in n and "rows.csv line 2" in n
               for n in notes), notes


def test_a_layer_the_reported_size_takes_off_a_device_says_why(setup, tmp_path, capsys):
    """Reported 10x the board's estimate: no layer fits the accelerator alone; the legality reason
    (why.json, hetcc inspect --why) names the reported size and the row."""
    d, model, board = setup
    csv = rows(d, "memory,chain.onnx,,acc,1.0,MB,test\n", "big.csv")
    out = tmp_path / "off"
    assert main(["compile", str(model), "--target", str(board), "--observations", str(csv), "-o", str(out), "-q"]) == 0
    capsys.readouterr()
    costs = json.loads((out / "costs.json").read_text())
    acc = [k for k, s in enumerate(costs["states"]) if s["device"] == "acc"]
    matmuls = [i for i, l in enumerate(costs["layers"]) if "MatMul" in l["op_types"]]
    assert matmuls and not any(costs["legal"][i][k] for i in matmuls for k in acc)
    assert main(["inspect", str(out), "--why"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "its share of the 1 MB acc's runtime reports for the model" in text and "big.csv line 2" in text


def test_a_layer_the_reported_size_leaves_nowhere_is_infeasible(setup, tmp_path, capsys):
    """Only the accelerator runs MatMul and the reported size takes every MatMul off it: exit 3,
    one line naming a layer and the reported size."""
    d, model, _ = setup
    only = tmp_path / "only.toml"
    only.write_text(BOARD.replace('[devices.cpu]', '[devices.cpu]\nsupported_ops = ["Relu", "Identity"]', 1))
    csv = rows(d, "memory,chain.onnx,,acc,1.0,MB,test\n", "nowhere.csv")
    assert main(["compile", str(model), "--target", str(only), "--observations", "none", "-q"]) == 0
    capsys.readouterr()
    assert main(["compile", str(model), "--target", str(only), "--observations", str(csv)]) == 3
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "legal on no device" in err and "nowhere.csv line 2" in err, err


@pytest.mark.parametrize("body, line, words", [
    ("memory,chain.onnx,{bad},acc,0.2,MB,x\n", 2, "sha256"),                     # names the model, another hash
    ("memory,chain.onnx,,acc,lots,MB,x\n", 2, "column 'value'"),                  # malformed
    ("memory,chain.onnx,,gpu,0.2,MB,x\n", 2, "column 'device'"),                  # not a device of the board
    ("memory,chain.onnx,,acc,0.2,MB,x\nmemory,chain.onnx,,acc,0.3,MB,y\n", 3, "second memory row"),
    ("memory,chain.onnx,,cpu,0.2,MB,x\n", 2, "no memory capacity"),               # would change nothing
])
def test_a_bad_row_is_one_line_naming_the_file_and_line(setup, capsys, body, line, words):
    d, model, board = setup
    csv = rows(d, body.replace("{bad}", "ab" * 32), "bad.csv")
    assert main(["compile", str(model), "--target", str(board), "--observations", str(csv)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and f"bad.csv line {line}" in err and words in err, err


def test_other_refusals_are_one_line(setup, capsys):
    d, model, board = setup
    no_memory = d / "latency-only.csv"
    no_memory.write_text("kind,model,device,value,unit\nlatency,chain.onnx,cpu,3,ms\n")
    for spec, words in ((str(no_memory), "holds no memory rows"), ("nosuch", "no such file"),
                        (str(d / "absent.csv"), "cannot read the observations file")):
        assert main(["compile", str(model), "--target", str(board), "--observations", spec]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and words in err, err


def test_the_board_default_is_the_shipped_hikey970_only(tmp_path):
    hikey = load_target("hikey970")
    assert shipped(hikey) and load_memory_rows("board", hikey) is not None
    copy = tmp_path / "hikey970.toml"
    shutil.copyfile(ROOT / "targets" / "hikey970.toml", copy)
    copy.write_text(copy.read_text() + "\n# my copy\n")
    mine = load_target(copy)
    assert not shipped(mine) and load_memory_rows("board", mine) is None
    assert load_memory_rows("hikey970-mosaic", mine) is not None      # by name, on request
    assert load_memory_rows("none", hikey) is None
    with pytest.raises(UsageError, match="no such file"):
        load_memory_rows("hikey970-mosiac", hikey)


@pytest.mark.zoo
@pytest.mark.slow
def test_mosaics_model_compiled_by_zoo_name_gets_the_fidelity_plan(capsys):
    """``hetcc compile mnasnet1_0 --target hikey970``: MOSAIC's Table I size (321.9 MB) charged, as
    benchmarks/fidelity.py's Board does (with_reported_memory on the analysed zoo export)."""
    needs("zoo", "torch", "torchvision")
    plain = analyse("mnasnet1_0", "hikey970", observations=None)
    fid = plain.problem.with_reported_memory("npu", 321.9e6)
    assert main(["compile", "mnasnet1_0", "--target", "hikey970", "--objective", "energy", "--json", "-q"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["reported_memory"][0]["source"] == "hikey970-mosaic.csv line 11"
    plain.problem = fid
    theirs = plain.plan("energy", planner="dp")
    assert [(s["first_layer"], s["last_layer"], s["device"]) for s in doc["slices"]] == \
        [(a, b, dev) for a, b, dev, _ in slices(plain, theirs)]
    assert doc["energy_mj"] == pytest.approx(theirs.energy_mj)


@pytest.mark.zoo
@pytest.mark.slow
def test_hetccs_own_export_is_the_zoo_model_another_file_is_not(tmp_path):
    """A sweep compiles the zoo model's export in hetcc's cache: the rows apply there as to the
    name (so its cells agree with hetcc compile NAME); a copy elsewhere (fidelity.py's model
    files, which apply the rows themselves) gets none unless a row names it or its sha256."""
    needs("zoo", "torch", "torchvision")
    from hetcc.compiler.api import resolve_model

    export = resolve_model("mnasnet1_0", None, 0)
    assert analyse(export, "hikey970").reported_memory["npu"].reported_bytes == 321.9e6
    copy = tmp_path / "mnasnet1_0-seed0.onnx"
    shutil.copyfile(export, copy)
    assert analyse(copy, "hikey970").reported_memory == {}


@pytest.mark.slow
@pytest.mark.zoo
def test_the_compile_vs_fidelity_benchmark_runs_quick(tmp_path):
    needs("zoo", "torch", "torchvision")
    out = tmp_path / "cvf.json"
    r = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "compile_vs_fidelity.py"), "--quick", "-o", str(out)],
                       capture_output=True, text=True, timeout=1200)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    doc = json.loads(out.read_text())
    assert doc["rows"] and all(row["same"] for row in doc["rows"])
