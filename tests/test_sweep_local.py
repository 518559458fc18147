"""``hetcc sweep --workers 0``: every group planned in this process, without Ray. The table is the
one Ray writes (every column but the worker and the planner's own seconds), a rerun resumes it,
mixes run too, and nothing of Ray is imported (it need not be installed)."""
from __future__ import annotations

import subprocess
import sys

import pytest

from extras import needs
from hetcc.experiments.sweep import load_spec, read_table, run_sweep
from sweep_rows import assert_rows_agree_with_compile
from text_models import CHAIN, IDENTITY_CHAIN

pytestmark = pytest.mark.plot          # the summary plots of a finished sweep
needs("plot", "matplotlib")            # a finished sweep draws its summary plots

SPEC = """models = ["chain.onnx"]
targets = ["hikey970", "orangepi5"]
objectives = ["latency", "energy", "edp"]
deadlines = ["none", "medium"]
planners = ["dp", "exact", "single:*"]
"""


@pytest.fixture
def models(tmp_path, write_text_model):
    write_text_model(CHAIN, tmp_path / "chain.onnx")
    write_text_model(IDENTITY_CHAIN, tmp_path / "b.onnx")
    return tmp_path


def test_a_sweep_in_this_process_plans_every_cell_agrees_with_compile_and_resumes(models):
    spec_path = models / "spec.toml"
    spec_path.write_text(SPEC)
    spec = load_spec(spec_path)
    out = models / "out"
    first = run_sweep(spec, out, workers=0, progress=False)
    n = len(spec.cells())
    assert first.ran == n and first.skipped_done == 0 and n > 20
    rows = read_table(out / "cells.csv")
    assert len(rows) == n and {r["status"] for r in rows} <= {"ok", "infeasible", "skipped"}
    assert all(float(r["gap_pct"]) == 0 for r in rows if r["planner"] == "exact" and r["status"] == "ok")
    assert_rows_agree_with_compile(rows, models, every=7)
    # cut short: the rerun plans only what is missing
    text = (out / "cells.csv").read_text().splitlines(keepends=True)
    (out / "cells.csv").write_text("".join(text[:-3]))
    again = run_sweep(spec, out, workers=0, progress=False)
    assert again.ran == 3 and again.skipped_done == n - 3
    assert sorted(r["cell"] for r in read_table(out / "cells.csv")) == sorted(r["cell"] for r in rows)


@pytest.mark.multi
def test_a_mix_sweeps_in_this_process(models):
    needs("multi")
    spec_path = models / "mix.toml"
    spec_path.write_text('models = [["chain.onnx", "b.onnx"]]\ntargets = ["orangepi5"]\n'
                         'objectives = ["overall"]\nplanners = ["optimum", "auto"]\n')
    result = run_sweep(load_spec(spec_path), models / "mix", workers=0, progress=False)
    assert result.ran == 2
    rows = read_table(models / "mix" / "cells.csv")
    assert {r["status"] for r in rows} == {"ok"} and all(float(r["overall"]) > 0 for r in rows)
    opt = next(r for r in rows if r["planner"] == "optimum")
    assert all(float(r["overall"]) <= float(opt["overall"]) * (1 + 1e-9) for r in rows)


@pytest.mark.slow
def test_the_command_runs_without_importing_ray(models):
    (models / "s.toml").write_text('models = ["chain.onnx"]\nplanners = ["dp", "exact"]\n')
    probe = ("import sys; sys.argv = ['hetcc', 'sweep', 's.toml', '-o', 'o', '-q', '--workers', '0'];\n"
             "from hetcc.cli import main\n"
             "rc = main(sys.argv[1:]); print(rc, 'ray' in sys.modules)")
    p = subprocess.run([sys.executable, "-c", probe], cwd=models, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    assert p.stdout.strip().splitlines()[-1] == "0 False"
    assert len(read_table(models / "o" / "cells.csv")) == 2


def test_workers_0_with_an_address_is_one_line(models, capsys):
    from hetcc.cli import main

    (models / "s.toml").write_text('models = ["chain.onnx"]\n')
    assert main(["sweep", str(models / "s.toml"), "-o", str(models / "o"), "--workers", "0",
                 "--address", "127.0.0.1:1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--workers sizes the embedded Ray (0: none)" in err[0]
    assert main(["sweep", str(models / "s.toml"), "-o", str(models / "o"), "--workers", "-1"]) == 2
    assert "--workers" in capsys.readouterr().err
    assert not (models / "o").exists()
