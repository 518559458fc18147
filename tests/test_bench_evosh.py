"""benchmarks/evosh.py --quick runs (in a subprocess) and writes a self-consistent JSON and its plots.

Only that it works and its numbers hang together is checked here (no search beats the space's
exact optimum, best-so-far curves never get worse, the enumerated optima agree, the targets carry
measured numbers); the figures come from full runs by hand.
"""
from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from extras import needs

pytestmark = [pytest.mark.zoo, pytest.mark.plot, pytest.mark.slow, pytest.mark.timeout(2400)]
needs("zoo", "torch", "torchvision")
needs("plot", "matplotlib")

ROOT = Path(__file__).resolve().parents[1]
ALGORITHMS = ("evosh", "evolution", "random")
RTOL = 1e-9


@pytest.fixture(scope="module")
def models_dir(tmp_path_factory):
    """EfficientNet-B0 (--quick's only model), from the session's zoo cache (tests/zoo_models.py)."""
    from zoo_models import linked_zoo_models

    return linked_zoo_models(tmp_path_factory.mktemp("evosh-models"), ["efficientnet_b0"])


def _inf(x):
    return math.inf if x is None else x


def test_evosh_quick(tmp_path, models_dir):
    out = tmp_path / "e.json"
    md = tmp_path / "e.md"
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "evosh.py"), "--quick", "--models-dir",
                           str(models_dir), "--out", str(out), "--markdown", str(md)],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    doc = json.loads(out.read_text())
    a = doc["args"]
    assert doc["script"] == "evosh" and a["quick"] is True and doc["target"] == "jetson-tx2"
    assert a["steps"] == 50 and a["fig4_blocks"] == {"B0": 9} and a["hw_models"] == ["B0"]
    assert a["hw_runs"] == 2 and a["hw_caps"] == 2 and a["layer_exact_seconds"] == 1.0    # --quick's sizes
    assert doc["machine"]["cpu_count"] >= 1 and doc["total_s"] > 0
    cases = doc["cases"]
    # every search run was a cell of one `hetcc sweep` (its table beside the JSON)
    from hetcc.experiments.sweep import read_table

    table = read_table(tmp_path / "e-sweep" / "cells.csv")
    assert len(table) == doc["sweep"]["cells"] > 0 and not [r for r in table if r["status"] == "error"]
    assert {r["planner"] for r in table} == {"evosh", "exact"}
    assert [c["part"] for c in cases] == ["fig4"] * 2 + ["fig5"] * 2 + ["hardware"] * a["hw_caps"]
    steps = a["steps"]
    for c in cases:
        opt = c["optimum"]["latency_ms"]
        assert opt > 0 and c["cap_mw"] > 0 and c["optimum"]["power_mw"] <= c["cap_mw"] * (1 + RTOL), c["optimum"]
        assert c["optimum"]["fps"] == pytest.approx(1000 / opt)
        # the exact optimum agrees with enumerating the space (every case here is small enough / hardware)
        assert c["enumerated_optimum_ms"] == pytest.approx(opt, rel=1e-9), c["part"]
        assert 0 < c["feasible_configs"] <= c["space_size"]
        if c["space"] == "mapping":
            assert c["space_size"] == 2 ** c["blocks"] == 512
            assert c["power_all_cpu_mw"] < c["cap_mw"] < c["power_all_gpu_mw"]
            le = c["layer_exact"]
            if le.get("optimal"):  # layer granularity with DVFS can only do better than the block optimum
                assert le["latency_ms"] <= opt * (1 + RTOL) and le["power_mw"] <= c["cap_mw"] * (1 + 1e-6)
        else:
            assert c["space_size"] == 308_880 and 1 < c["distinct_latency_power"] <= c["space_size"]
            lo, hi = c["power_range_mw"]
            assert lo < c["cap_mw"] < hi
        runs = c["runs"]
        keep = runs["curve_steps"]
        assert keep == sorted(keep) and keep[-1] == steps
        for alg in ALGORITHMS:
            r, s = runs[alg], c["summary"][alg]
            n = len(r["seed"])
            assert n == s["runs"] and n == (a["hw_runs"] if c["part"] == "hardware" else
                                            a["fig4_seeds"] if c["part"] == "fig4" else a["fig5_runs"])
            for i in range(n):
                best, curve = _inf(r["best_ms"][i]), [_inf(x) for x in r["curve_gap"][i]]
                assert best >= opt * (1 - RTOL), (c["part"], alg, best, opt)  # nothing beats the optimum
                assert curve[-1] >= -1e-9 and all(x >= y for x, y in zip(curve, curve[1:])), curve  # never worsens
                assert curve[-1] == pytest.approx(best / opt - 1, abs=1e-6) if math.isfinite(best) else \
                    curve[-1] == math.inf
                reached = r["reached_optimum_step"][i]
                assert (reached is not None) == (best <= opt * (1 + RTOL))
                assert reached is None or 1 <= reached <= steps
                assert 1 <= r["steps_run"][i] <= steps
                assert r["eval_s"][i] > 0 and r["overhead_s"][i] > 0
            assert s["reached_optimum"] == sum(x is not None for x in r["reached_optimum_step"])
            if s["final_ms"] is not None:
                f = s["final_ms"]
                assert f["lo"] <= f["mean"] <= f["hi"] and f["mean"] >= opt * (1 - RTOL)
                assert s["gap_mean"] == pytest.approx(f["mean"] / opt - 1)
            fm = [x or 0.0 for x in s["curve_fps"]["mean"]]
            assert all(h is not None and h >= 0 for h in s["curve_fps"]["half"])
            assert s["overhead_s_median"] <= s["overhead_s_max"] and s["eval_s_median"] > 0
            assert len(fm) == steps and all(x <= y + 1e-9 for x, y in zip(fm, fm[1:]))  # mean FPS never drops
            assert max(fm) <= c["optimum"]["fps"] * (1 + 1e-4)  # (5 significant digits)
    hw = [c for c in cases if c["part"] == "hardware"]
    caps = [c["cap_mw"] for c in hw]
    assert caps == sorted(caps)
    opts = [c["optimum"]["latency_ms"] for c in hw]  # a looser cap can only be faster
    assert all(x >= y * (1 - RTOL) for x, y in zip(opts, opts[1:]))
    tg = {t["id"]: t for t in doc["targets"]}
    assert set(tg) == {1, 2, 3, 4} and all(isinstance(t["pass"], bool) and t["measured"] for t in tg.values())
    assert len(doc["plots"]) == 4 and all(Path(p).stat().st_size > 0 for p in doc["plots"])
    assert all(Path(p).parent == tmp_path and Path(p).name.startswith("e-fig") for p in doc["plots"])
    for text in ("Fig. 4", "Fig. 5", "Fig. 6", "Fig. 7", "MISS (1)" if not tg[1]["pass"] else "PASS (1)"):
        assert text in proc.stdout and text in md.read_text()
