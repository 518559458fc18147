"""hetcc sweep and hetcc tune: spec validation (one line, exit 2), a sweep on embedded Ray that
agrees with single compiles, resumption after an interrupt, failure isolation, a mix on Ray, the
--address path from a second driver process, and a small tune run. One embedded Ray serves the
whole module (its start-up, seconds of CPU, was most of these tests' time): one worker runs this
file's tests (tests/ordering.py, TOGETHER), in file order."""
from __future__ import annotations

import csv
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from extras import needs

pytestmark = [pytest.mark.sweep, pytest.mark.slow, pytest.mark.timeout(900)]
ray = needs("sweep", "ray")

import hetcc  # noqa: E402
from hetcc.core.errors import UsageError  # noqa: E402
from hetcc.experiments.sweep import COLUMNS, load_spec, read_table, run_sweep  # noqa: E402
from hetcc.experiments.sweep.table import FINAL  # noqa: E402
from sweep_rows import assert_rows_agree_with_compile  # noqa: E402
from text_models import CHAIN, IDENTITY_CHAIN  # noqa: E402

WIDE = """<ir_version: 8, opset_import: ["" : 17]>
wide (float[1,64,32,32] x) => (float[1,64,32,32] y)
<float[64,64,3,3] w1, float[64,64,3,3] w2> {
    a = Conv <pads = [1,1,1,1]> (x, w1)
    b = Relu(a)
    c = Conv <pads = [1,1,1,1]> (b, w2)
    y = Relu(c)
}
"""


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    import numpy as np
    import onnx
    import onnx.parser
    from onnx import numpy_helper

    d = tmp_path_factory.mktemp("sweep-models")
    onnx.save(onnx.parser.parse_model(CHAIN), str(d / "chain.onnx"))
    onnx.save(onnx.parser.parse_model(IDENTITY_CHAIN), str(d / "identity.onnx"))
    m = onnx.parser.parse_model(WIDE)
    rng = np.random.default_rng(0)
    for name in ("w1", "w2"):
        m.graph.initializer.append(numpy_helper.from_array(rng.standard_normal((64, 64, 3, 3)).astype("float32"), name))
    onnx.save(m, str(d / "wide.onnx"))
    (d / "broken.onnx").write_bytes(b"not a model")
    return d


@pytest.fixture(scope="module", autouse=True)
def shutdown_ray():
    yield
    if ray.is_initialized():
        ray.shutdown()


def write_spec(d: Path, text: str, name: str = "spec.toml") -> Path:
    p = d / name
    p.write_text(text)
    return p


# two boards with different device lists, so that single:* expands per target (odroid-n2plus, not
# a board with frequency knobs such as jetson-tx2: there exact's knob search made this sweep 8 s of
# planning more; the knobs have tests of their own)
SPEC = """models = ["chain.onnx", "wide.onnx"]
targets = ["hikey970", "odroid-n2plus"]
objectives = ["latency", "energy", "edp"]
deadlines = ["none", "medium"]
planners = ["dp", "exact", "single:*"]
"""


@pytest.mark.parametrize("text, needle", [
    ('models = ["nosuchnet"]', "models[0] 'nosuchnet'"),
    ('models = ["chain.onnx"]\ntargets = ["mars"]', "targets[0] 'mars'"),
    ('models = ["chain.onnx"]\nplanners = ["quantum"]', "unknown planner 'quantum'"),
    ('models = ["chain.onnx"]\nplanners = ["exact"]\n[options.exact]\nwarp = 9', "no option 'warp'"),
    ('models = ["chain.onnx"]\nobjectives = ["speed"]', "objectives[0] 'speed'"),
    ('models = ["chain.onnx"]\ndeadlines = ["soon"]', "deadlines[0]"),
    ('models = ["chain.onnx"]\nseeds = [-1]', "'seeds'"),
    ('models = ["chain.onnx"]\ncolour = "red"', "unknown key 'colour'"),
    ('models = ["missing.onnx"]', "no such file"),
    ('models = "chain.onnx" = 1', "not valid TOML"),
    ('models = ["chain.onnx"]\nplanners = ["dp"]\n[options.exact]\nbeam = 4', "[options.exact]"),
    ('models = ["chain.onnx"]\ndevices = ["big+warp"]', "devices[0] 'big+warp'"),
    ('models = ["chain.onnx"]\nplanners = ["single:big governor"]', "key=value"),
    ('models = ["chain.onnx"]\nplanners = ["single:big governor=lazy"]', "governor"),
    ('models = ["chain.onnx"]\nbudget_seconds = 0', "'budget_seconds'"),
    ('models = ["chain.onnx"]\n[[grid]]\nplanets = ["dp"]', "grid[0].planets"),
    ('models = ["chain.onnx"]\n[[grid]]\nobjectives = ["speed"]', "grid[0].objectives[0]"),
    ('grid = 3\nmodels = ["chain.onnx"]', "'grid'"),
])
def test_bad_specs_are_one_line_errors_with_exit_2(models, tmp_path, capsys, text, needle):
    spec = write_spec(models, text, f"bad-{abs(hash(text))}.toml")
    with pytest.raises(UsageError, match=None) as e:
        load_spec(spec)
    assert needle in str(e.value) and str(spec) in str(e.value)
    from hetcc.cli import main

    assert main(["sweep", str(spec), "-o", str(tmp_path / "out"), "-q"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("hetcc: error: ") and needle in err[0]
    assert not (tmp_path / "out").exists()


def test_a_sweep_agrees_with_single_compiles_and_resumes(models, tmp_path):
    spec = load_spec(write_spec(models, SPEC))
    cells = spec.cells()
    # single:* expands to each target's devices: hikey970 has 4, odroid-n2plus 3
    assert len(cells) == 2 * 3 * 2 * sum(2 + len(hetcc.targets.load_target(t).devices) for t in spec.targets)
    out = tmp_path / "out"
    first = run_sweep(spec, out, workers=2, progress=False)
    assert first.ran == len(cells) and first.skipped_done == 0
    rows = read_table(out / "cells.csv")
    assert len(rows) == len(cells) and list(rows[0]) == list(COLUMNS)
    assert {r["status"] for r in rows} <= {"ok", "infeasible", "skipped"}
    assert all(r["status"] == "skipped" for r in rows if r["planner"] == "dp" and r["objective"] == "edp")
    exact = [r for r in rows if r["planner"] == "exact" and r["status"] == "ok"]
    assert exact and all(float(r["gap_pct"]) == 0 for r in exact)
    assert all(float(r["gap_pct"]) >= -1e-6 for r in rows if r["gap_pct"])       # nothing beats the optimum
    # sampled cells agree with `hetcc compile` (same analysis, planner and objective)
    assert_rows_agree_with_compile(rows, models, every=17)
    assert (out / "summary.csv").is_file() and (out / "gap.png").is_file()

    # an interrupted sweep: the last rows are missing and the last line is cut short
    text = (out / "cells.csv").read_text().splitlines(keepends=True)
    (out / "cells.csv").write_text("".join(text[:-5]) + text[-5][:20])
    again = run_sweep(spec, out, workers=2, progress=False)
    assert again.ran == 5 and again.skipped_done == len(cells) - 5
    rows2 = read_table(out / "cells.csv")
    assert sorted(r["cell"] for r in rows2) == sorted(r["cell"] for r in rows)
    # nothing left to do: every cell has a final status, which a next run skips (a third run, which
    # planned nothing, only repeated the summary and its plots)
    assert {r["status"] for r in rows2} <= set(FINAL)


GRIDS = """models = ["chain.onnx"]
targets = ["hikey970"]
deadlines = ["medium"]
objectives = ["energy"]

[[grid]]                                   # HERTI's versions under the deadline
planners = ["single:big", "single:big governor=ondemand", "exact", "evosh steps=5"]
devices = ["all", "big+gpu"]

[[grid]]                                   # deadline-oblivious, a budget, and a duplicate cell
objectives = ["latency", "energy"]
deadlines = ["none"]
planners = ["dp", "exact"]
budget_steps = 50

[[grid]]
planners = ["exact"]                       # the same cell as in the first grid: planned once
"""


def test_grids_inline_options_device_subsets_and_budgets(models, tmp_path):
    spec = load_spec(write_spec(models, GRIDS, "grids.toml"))
    cells = spec.cells()
    assert len(cells) == 4 * 2 + 2 * 2 and len({c.key for c in cells}) == len(cells)
    rows = {(r["planner"], r["options"], r["device_set"], r["objective"], r["deadline"]): r
            for r in run_sweep(spec, tmp_path / "out", workers=2, progress=False).rows}
    assert len(rows) == len(cells) and all(r["layers"] and r["states"] for r in rows.values())
    perf = rows[("single:big", "{}", "all", "energy", "medium")]
    ondemand = rows[("single:big", '{"governor": "ondemand"}', "all", "energy", "medium")]
    assert perf["status"] in ("ok", "infeasible") and ondemand["status"] in ("ok", "infeasible")
    assert perf["energy_mj"] != ondemand["energy_mj"]             # the inline option reached the planner
    sub = rows[("exact", "{}", "big+gpu", "energy", "medium")]
    assert set(sub["devices"].split(",")) <= {"big", "gpu"}        # the subset's plan uses only those
    full = rows[("exact", "{}", "all", "energy", "medium")]
    # the preset is the subset's own: Eq. 12 on what big+gpu alone can do, not on every device
    from hetcc.experiments.sweep import restrict
    analysis = hetcc.analyse(models / "chain.onnx", "hikey970")
    own = restrict(analysis, "big+gpu").objective("energy", "medium").deadline_ms
    assert float(sub["deadline_ms"]) == pytest.approx(own, rel=1e-9)
    assert own != pytest.approx(analysis.objective("energy", "medium").deadline_ms, rel=1e-6)
    assert float(full["deadline_ms"]) == pytest.approx(analysis.objective("energy", "medium").deadline_ms, rel=1e-9)
    assert rows[("exact", "{}", "all", "latency", "none")]["budget"] == "steps=50"
    evo = rows[("evosh", '{"steps": 5}', "all", "energy", "medium")]
    assert evo["status"] == "skipped" or json.loads(evo["stats"])["steps"] <= 5
    dp = rows[("dp", "{}", "all", "latency", "none")]
    assert float(dp["latency_ms"]) <= float(full["latency_ms"]) + 1e-9


def test_a_table_from_an_older_hetcc_resumes(models, tmp_path):
    spec = load_spec(write_spec(models, 'models = ["chain.onnx"]\nplanners = ["dp", "exact"]\n', "old.toml"))
    out = tmp_path / "out"
    run_sweep(spec, out, workers=2, progress=False)
    old = [c for c in COLUMNS if c not in ("device_set", "budget", "layers", "states", "stats")]
    with open(out / "cells.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    with open(out / "cells.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=old, extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)
    again = run_sweep(spec, out, workers=2, progress=False)
    assert again.ran == 0 and len(again.rows) == len(rows)
    assert list(read_table(out / "cells.csv")[0]) == list(COLUMNS)


def test_a_failing_cell_is_recorded_and_the_sweep_goes_on(models, tmp_path):
    spec = load_spec(write_spec(models, 'models = ["chain.onnx", "broken.onnx"]\nplanners = ["dp", "exact"]\n',
                                "fail.toml"))
    result = run_sweep(spec, tmp_path / "out", workers=2, progress=False)
    by = {}
    for r in result.rows:
        by.setdefault(r["model"], []).append(r)
    assert {r["status"] for r in by["chain.onnx"]} == {"ok"}
    assert {r["status"] for r in by["broken.onnx"]} == {"error"}
    assert all("analysis" in r["error"] for r in by["broken.onnx"])
    # the next run retries the failed cells only
    assert run_sweep(spec, tmp_path / "out", workers=2, progress=False).ran == len(by["broken.onnx"])


def test_tune_writes_options_that_compile_reads(models, tmp_path, capsys):
    from hetcc.cli import main
    from hetcc.experiments.tune import load_tune_spec

    # one problem, one trial: each trial is a Ray actor in a fresh worker process (4 s of CPU, its
    # imports), each problem a 1000-sample run of the defaults in the driver; the way from the spec
    # through Tune's best result to best.toml and compile is the same for any number of them
    spec = write_spec(models, 'models = ["chain.onnx"]\nobjectives = ["energy"]\n'
                      'samples = 1\n[space]\nsamples = {int = [1, 60]}\n', "tune.toml")
    assert load_tune_spec("random", spec).space == {"samples": ("int", 1, 60)}
    best = tmp_path / "best.toml"
    assert main(["tune", "random", str(spec), "-o", str(best), "--workers", "2"]) == 0
    out = capsys.readouterr().out
    assert "median gap to exact" in out
    text = best.read_text()
    n = int(next(line for line in text.splitlines() if line.startswith("samples")).split("=")[1])
    assert 1 <= n <= 60
    art = tmp_path / "art"
    assert main(["compile", str(models / "chain.onnx"), "--planner", "random", "--planner-option", f"@{best}",
                 "-o", str(art), "-q"]) == 0
    import json

    doc = json.loads((art / "manifest.json").read_text())
    assert doc["variants"][doc["default_variant"]]["planner"]["options"]["samples"] == n


@pytest.mark.parametrize("text, needle", [
    ("[space]\nlr = {uniform = [1, 0]}", "lo < hi"),
    ("[space]\nwarp = {choice = [1]}", "no such option"),
    ("[space]\nlr = {normal = [0, 1]}", "use one of"),
    ("scheduler = \"bohb\"", "'scheduler'"),
    ("[fixed]\nlr = \"fast\"", "lr"),
])
def test_bad_tune_specs_are_one_line(models, text, needle):
    from hetcc.experiments.tune import load_tune_spec

    spec = write_spec(models, 'models = ["chain.onnx"]\n' + text, f"tbad-{abs(hash(text))}.toml")
    with pytest.raises(UsageError) as e:
        load_tune_spec("dqn", spec)
    assert needle in str(e.value)


def test_exact_planners_have_nothing_to_tune(models):
    from hetcc.experiments.tune import load_tune_spec

    with pytest.raises(UsageError, match="nothing to tune"):
        load_tune_spec("exact", write_spec(models, 'models = ["chain.onnx"]\n', "tex.toml"))


def test_a_measurement_file_is_a_target(models, tmp_path):
    # the spec names a `hetcc profile` CSV beside it: the sweep plans with its numbers, as compile does
    from hetcc.measure.observations import write_observations
    from hetcc.runtime.manifest import sha256_file

    d = tmp_path / "spec"
    d.mkdir()
    chain = d / "chain.onnx"
    chain.write_bytes((models / "chain.onnx").read_bytes())
    layers = hetcc.analyse(str(chain), "hikey970").problem.num_layers
    row = dict(kind="latency", model="chain.onnx", model_sha256=sha256_file(chain), device="cpu", unit="ms")
    write_observations(d / "prof.csv", [{**row, "layer": i, "value": 0.5 + 0.1 * i} for i in range(layers)]
                       + [{**row, "value": float(layers)}])
    spec = load_spec(write_spec(d, 'models = ["chain.onnx"]\ntargets = ["prof.csv"]\nplanners = ["dp"]\n'
                                'objectives = ["latency"]\ndeadlines = ["none"]\n', "csv.toml"))
    assert spec.devices["prof.csv"] == ["cpu"] and spec.idents["prof.csv"] == sha256_file(d / "prof.csv")[:16]
    result = run_sweep(spec, tmp_path / "out", workers=1, progress=False)
    assert [r["status"] for r in result.rows] == ["ok"]
    want = hetcc.analyse(str(chain), str(d / "prof.csv")).plan("latency", planner="dp")
    assert float(result.rows[0]["latency_ms"]) == pytest.approx(want.latency_ms, rel=1e-6)


MIX = """models = [["chain.onnx", "identity.onnx"]]
targets = ["orangepi5"]
objectives = ["overall", "fairness", "latency"]
planners = ["auto", "optimum", "independent", "ga population=6 generations=3"]
"""


@pytest.mark.multi
def test_a_mix_sweep_on_embedded_ray(models, tmp_path, capsys):
    """A mix planned by workload planners in Ray tasks, through the command line (the rest of the
    mixes' tests, without Ray, are in tests/test_sweep_workloads.py). Here, on the module's
    embedded Ray: a Ray start of its own was most of its time."""
    needs("multi")
    from hetcc.cli import main

    out = tmp_path / "sweep"
    assert main(["sweep", str(write_spec(models, MIX, "mix.toml")), "-o", str(out), "--workers", "2", "-q"]) == 0
    text = capsys.readouterr().out
    assert "optimum (mix)" in text and "median O" in text
    rows = read_table(out / "cells.csv")
    assert len(rows) == 12 and {r["mix_models"] for r in rows} == {"2"}
    ok = [r for r in rows if r["objective"] == "overall" and r["planner"] != "independent"]
    assert all(r["status"] == "ok" for r in ok), [(r["planner"], r["status"], r["error"]) for r in ok]
    assert all(r["status"] == "ok" and float(r["overall"]) > 0 for r in ok)
    assert "median_overall" in (out / "summary.csv").read_text().splitlines()[0]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_the_address_path_runs_on_a_cluster_another_process_started(models, tmp_path):
    """`hetcc sweep --address HOST:PORT` in a process of its own, on the Ray cluster this module
    started (its embedded Ray, a head like any other to a second driver): the probe, the
    connection and the tasks on workers it did not start. Not a `ray start --head` of its own:
    a second Ray start cost this file a quarter of its time, and it tested Ray's launcher, not hetcc."""
    import psutil

    from hetcc.experiments.sweep import init_ray

    init_ray(None, 2)                                 # started by the tests above; here if run alone
    address = ray.get_runtime_context().gcs_address
    [raylet] = [p for p in psutil.Process().children() if p.name() == "raylet"]
    spec = write_spec(models, 'models = ["chain.onnx"]\nplanners = ["dp", "exact"]\n', "addr.toml")
    out = tmp_path / "out"
    env = dict(os.environ, RAY_USAGE_STATS_ENABLED="0")
    # the worker processes of this cluster, polled while the other driver runs: they are the
    # raylet's children (a Ray that the driver started itself would have a raylet of its own); a
    # worker lives for seconds (its imports, then until that driver leaves), a poll costs ms of CPU
    ours: set[int] = set()
    with open(tmp_path / "driver.log", "w+") as log:
        driver = subprocess.Popen([sys.executable, "-m", "hetcc.cli", "sweep", str(spec), "-o", str(out), "-q",
                                   "--address", address], stdout=log, stderr=subprocess.STDOUT, env=env)
        deadline = time.monotonic() + 600
        try:
            while driver.poll() is None and time.monotonic() < deadline:
                ours |= {p.pid for p in raylet.children()}
                time.sleep(0.1)
        finally:
            if driver.poll() is None:
                driver.kill()
            driver.wait(timeout=60)
        log.seek(0)
        assert driver.returncode == 0, log.read()[-3000:]
    rows = read_table(out / "cells.csv")
    assert len(rows) == 2 and {r["status"] for r in rows} == {"ok"}
    workers = {int(r["worker"].split(":")[1]) for r in rows}
    assert workers and workers <= ours - {driver.pid}, (workers, ours)   # planned on this cluster's workers


# last in the file: it shuts the module's embedded Ray down (the tests above share it)
def test_an_unreachable_address_is_one_line(models, tmp_path, capsys):
    if ray.is_initialized():
        ray.shutdown()
    from hetcc.cli import main

    spec = write_spec(models, 'models = ["chain.onnx"]\nplanners = ["dp"]\n', "unreach.toml")
    assert main(["sweep", str(spec), "-o", str(tmp_path / "out"), "-q", "--address", f"127.0.0.1:{_free_port()}"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--address" in err[0]
