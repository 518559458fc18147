"""AutoScale on this machine: the policy runner against Opt under real co-runners and a walked signal.

    python benchmarks/autoscale_real.py                  # --model auto, 5 phases x 40 inferences, 2 passes
    python benchmarks/autoscale_real.py --quick          # a tiny conv net, 5 phases x 3 inferences (a test runs it)

The variants are what ``hetcc compile --planner autoscale`` writes for a benchmark board of this
machine (written here, ``host-autoscale``, its devices' rates scaled to the one-thread time measured
here: ``calibrated_board``): the CPU with one pinned thread (core 0) and with two
(cores 0-1), each FP32 and INT8, and a remote ``edge`` served by ``hetcc serve`` on loopback,
its traffic shaped client side at the board's Wi-Fi table for the signal of the moment. The
environment changes in phases (AutoScale Sec. 3.2's variances, made real): quiet; a CPU-bound
co-runner (a spinning process); a memory-bound co-runner (a process streaming copies of a
256 MiB buffer); and a signal walked from strong to weak (a trace, ``t,wifi_dbm,p2p_dbm``, one
row per inference). The co-runners are started and stopped here; the policy observes them
through /proc like any other process.

Per inference the policy (``Executor``'s ``PolicyRunner``) observes, chooses, runs, measures and
learns; then every variant is run once under the same observation (``PolicyRunner.evaluate``) so
that Opt, the best variant of that inference in hindsight (the highest Eq. 5 reward), and each
variant held fixed are measured beside it. This machine has no power meter: energy is Eq. 1-4
from the policy file's action table (the benchmark board's assumed powers) and the measured
latency (and measured transfer times of the offloads); the energy-efficiency proxy is
inferences per joule of that estimate. The oracle runs the variants in a shuffled order (what ran
just before warms or cools a run), and the policy's choices are also scored as the oracle measured
them (the decisions alone, free of when the policy's own run happened). A second pass repeats the
phases with the learned table; a third run starts from a table trained in simulation first
(``hetcc train autoscale`` on the same board and model). The model is chosen for this machine
(``--model auto``: one for which offloading pays at a strong signal and not at a weak one), the
passes after the first choose greedily on the learned table (``--later-epsilon``), the run from an
untrained table is repeated with other seeds (``--repeats``), and every offload is checked against
the server's request log. The runner starts a new state from its nearest learned neighbour and
explores only near the best (its defaults, ``unseen`` and ``explore_within``); ``--alg1-baseline``
(default yes) runs each seed a second time with both off (Alg. 1 as written), interleaved, for the
comparison.
Writes benchmarks/results/autoscale_real[-quick].json.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _common import (RESULTS_DIR, ServeProcess, machine_info, make_console, start_busy, stop_busy,  # noqa: E402
                     utc_now, write_json)

HETCC = [sys.executable, "-m", "hetcc.cli"]
STREAM = ("import numpy as np, time\na = np.ones(32 << 20)\nb = np.empty_like(a)\nt = time.time()\n"
          "while time.time() - t < 3600: np.copyto(b, a)\n")
TOKEN = "autoscale-real-benchmark"
QOS_MS = 100.0

#: the benchmark board (modelled powers, assumed: this machine reads no power; see the docstring)
BOARD = """schema = "hetcc.target/1"
name = "host-autoscale"
description = "this machine for AutoScale's real-environment benchmark: 1 or 2 pinned CPU threads, a loopback edge"
kind = "modelled"
base_power_mw = 500.0                     # assumed: the rest of the system while it runs

[links.wifi]                              # as mi8pro-edge-cloud's Wi-Fi Direct (targets/mi8pro-edge-cloud.toml)
kind = "wifi-direct"
signal_dbm = [-90.0, -80.0, -70.0, -60.0, -50.0]
bandwidth_mbps = [1.0, 7.8, 105.0, 281.0, 468.0]   # 802.11ac goodput by signal (derived in that file)
tx_power_mw = [1900.0, 1500.0, 1100.0, 900.0, 800.0]
rx_power_mw = [1100.0, 900.0, 700.0, 600.0, 550.0]
rtt_ms = 4.0
default_signal_dbm = -60.0

[devices.cpu1]
description = "core 0, one pinned onnxruntime thread"
kind = "cpu"
execution_provider = "CPUExecutionProvider"
affinity = [0]
freq_mhz = 2000.0
static_power_mw = 300.0                   # assumed, one core
dynamic_power_mw = 1200.0                 # assumed, one core
peak_gflops = { conv = 15.0, matmul = 12.0, other = 4.0 }
mem_bandwidth_gbps = 8.0
layer_overhead_ms = 0.02
node_overhead_ms = 0.02
transfer = { beta_ms_per_mb = 0.02, delta_ms = 0.01 }
dtypes = ["float32", "int8", "uint8"]
precisions = { float32 = 1.0, int8 = 0.7 }

[devices.cpu2]
description = "cores 0 and 1, two pinned onnxruntime threads"
kind = "cpu"
execution_provider = "CPUExecutionProvider"
affinity = [0, 1]
freq_mhz = 2000.0
static_power_mw = 600.0                   # assumed, two cores
dynamic_power_mw = 2400.0                 # assumed, two cores
peak_gflops = { conv = 28.0, matmul = 22.0, other = 7.0 }
mem_bandwidth_gbps = 12.0
layer_overhead_ms = 0.02
node_overhead_ms = 0.02
transfer = { beta_ms_per_mb = 0.02, delta_ms = 0.01 }
dtypes = ["float32", "int8", "uint8"]
precisions = { float32 = 1.0, int8 = 0.7 }

[devices.edge]
description = "hetcc serve on loopback, its traffic shaped as the Wi-Fi link"
kind = "remote"
execution_provider = "CPUExecutionProvider"
link = "wifi"
endpoint = "http://127.0.0.1:7070"        # replaced at run time by the server's port (--endpoint)
freq_mhz = 1000.0
static_power_mw = 150.0                   # assumed: the radio idle while it waits
dynamic_power_mw = 0.0
peak_gflops = { conv = 28.0, matmul = 22.0, other = 7.0 }
mem_bandwidth_gbps = 12.0
layer_overhead_ms = 0.05
node_overhead_ms = 0.05
dtypes = ["float32"]
precisions = { float32 = 1.0 }
"""

#: (name, CPU-bound co-runners, memory-bound co-runners, Wi-Fi dBm)
PHASES = [("quiet, strong signal", 0, 0, -50.0), ("CPU co-runner, strong", 1, 0, -55.0),
          ("memory co-runner, regular", 0, 1, -70.0), ("quiet, weak signal", 0, 0, -85.0),
          ("CPU co-runner, weak", 1, 0, -88.0)]


#: the zoo models ``--model auto`` picks from, lightest first (each takes one 1x3x224x224 image)
AUTO_MODELS = ("squeezenet1_1", "resnet18", "resnet50")
#: ``--model auto`` wants the edge to win by this factor of predicted energy at the strongest signal
#: (so that Opt offloads there whatever the noise) ...
AUTO_MARGIN = 1.5
#: ... and the one-thread local time to leave QoS met when a CPU co-runner halves the thread's share
AUTO_QOS_SHARE = 0.4


def _local_ms(model: Path, runs: int = 5) -> float:
    """The median time (ms) of one inference of ``model`` on one onnxruntime thread, after two warm-ups."""
    import numpy as np
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = opts.inter_op_num_threads = 1
    sess = ort.InferenceSession(str(model), opts, providers=["CPUExecutionProvider"])
    feeds = {i.name: np.random.default_rng(0).random([d if isinstance(d, int) else 1 for d in i.shape],
                                                   dtype=np.float32) for i in sess.get_inputs()}
    for _ in range(2):
        sess.run(None, feeds)
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        sess.run(None, feeds)
        times.append((time.perf_counter() - t0) * 1e3)
    return float(np.median(times))


def predicted_mj(local_ms: float, bytes_in: int, bytes_out: int, dbm: float) -> tuple[float, float]:
    """(one pinned thread, the edge) energy in mJ of an inference taking ``local_ms`` on one thread,
    by the board's figures and the runtime's Eq. 1-4 (the edge's server computes as long, on one thread)."""
    import tomllib

    from hetcc.runtime.autoscale import energy_mj, link_times_ms
    from hetcc.runtime.manifest.model import LinkInfo

    board = tomllib.loads(BOARD)
    links = {"wifi": LinkInfo(**board["links"]["wifi"])}
    cpu, edge = board["devices"]["cpu1"], board["devices"]["edge"]
    base = float(board["base_power_mw"])
    local = {"remote": False, "busy_power_mw": cpu["static_power_mw"] + cpu["dynamic_power_mw"]}
    remote = {"remote": True, "link": "wifi", "bytes_in": bytes_in, "bytes_out": bytes_out,
              "busy_power_mw": edge["static_power_mw"] + edge["dynamic_power_mw"]}
    t_tx, t_rx = link_times_ms(remote, links, dbm)
    return (energy_mj(local, local_ms, base, links),
            energy_mj(remote, t_tx + t_rx + local_ms, base, links, dbm, t_tx, t_rx))


def _float32_bytes(value_info: Any) -> int:
    """The bytes of a graph input or output as float32 (a symbolic dimension counts 1)."""
    n = 4
    for d in value_info.type.tensor_type.shape.dim:
        n *= d.dim_value or 1
    return n


def pick_model(models_dir: Path, env: dict, console: Any) -> tuple[str, Path, dict]:
    """``--model auto``: the lightest of ``AUTO_MODELS`` whose one-thread time on this machine makes
    offloading to the edge the cheaper choice at the phases' strongest signal by ``AUTO_MARGIN`` while
    leaving the local variants inside QoS under a CPU co-runner (then Opt itself moves between local
    and offloaded variants over the phases, whatever this machine's speed); the one closest to that
    when none qualifies. Returns (name, exported file, the record of the choice)."""
    import onnx

    strongest = max(dbm for *_, dbm in PHASES)
    rows = []
    for name in AUTO_MODELS:
        path = models_dir / f"{name}.onnx"
        if not path.exists():
            _hetcc("zoo", "export", name, "-o", str(path), env=env)
        graph = onnx.load(str(path), load_external_data=False).graph
        ms = _local_ms(path)
        local, edge = predicted_mj(ms, sum(map(_float32_bytes, graph.input)), sum(map(_float32_bytes, graph.output)),
                                   strongest)
        rows.append({"model": name, "local_ms": round(ms, 2), "local_mj": round(local, 2), "edge_mj": round(edge, 2),
                     "ratio": round(local / edge, 3), "fits_qos": ms <= AUTO_QOS_SHARE * QOS_MS})
        console.print(f"--model auto: {name} {ms:.1f} ms on one thread; predicted at {strongest:g} dBm: local "
                      f"{local:.1f} mJ, edge {edge:.1f} mJ", highlight=False)
    fit = [r for r in rows if r["fits_qos"]] or rows[:1]
    chosen = next((r for r in fit if r["ratio"] >= AUTO_MARGIN), max(fit, key=lambda r: r["ratio"]))
    rule = (f"the lightest of {', '.join(AUTO_MODELS)} whose one-thread time leaves QoS met at "
            f"{AUTO_QOS_SHARE:g} x {QOS_MS:g} ms and whose predicted local energy is at least {AUTO_MARGIN:g} x "
            f"the edge's at {strongest:g} dBm (else the closest)")
    return chosen["model"], models_dir / f"{chosen['model']}.onnx", {"rule": rule, "candidates": rows,
                                                                      "chosen": chosen["model"]}


#: the board's lines whose numbers ``calibrated_board`` scales: every device's peak rates and memory bandwidth
_RATE_LINE = re.compile(r"^(?:peak_gflops|mem_bandwidth_gbps) = .*$", re.M)


def calibrated_board(work: Path, model: Path, env: dict, measured_ms: float) -> tuple[str, dict]:
    """``BOARD`` with its devices' speed scaled to this machine: a compile of ``BOARD`` narrowed to
    one FP32 thread predicts that variant's time, and every device's peak rates and memory
    bandwidth are multiplied by predicted / ``measured_ms`` (the one-thread time measured here).
    The simulation (``hetcc train autoscale``) then sees this machine's speed, and so does the
    reward's reference energy; INT8's factor, the two-thread speed-up and every power stay the
    board's assumptions. Returns (the board's text, the record of the scaling)."""
    assumed = work / "board-assumed.toml"
    assumed.write_text(BOARD)
    art = work / "as-assumed"
    _hetcc("compile", str(model), "--target", str(assumed), "--planner", "autoscale", "--planner-option",
           "actions=cpu1:fp32", "--deadline", f"{QOS_MS:g}ms", "-o", str(art), "-q", env=env)
    manifest = json.loads((art / "manifest.json").read_text())
    policy = json.loads((art / manifest["policy"]["file"]).read_text())
    predicted = float(next(a["compute_ms"] for a in policy["actions"] if a["variant"] == "cpu1:fp32"))
    scale = predicted / measured_ms

    def scaled(m: re.Match) -> str:
        return re.sub(r"(?<![\w.])\d+(?:\.\d+)?", lambda n: f"{float(n.group()) * scale:.4g}", m.group())

    text = _RATE_LINE.sub(scaled, BOARD).replace(
        'kind = "modelled"', f'kind = "modelled"                          # rates scaled x{scale:.4g} to this '
        f'machine: one FP32 thread measured {measured_ms:.2f} ms, the assumed rates predicted {predicted:.2f} ms', 1)
    return text, {"measured_ms": round(measured_ms, 3), "predicted_ms": round(predicted, 3),
                  "scale": round(scale, 4)}


def tiny_model(path: Path) -> Path:
    """A small conv net (1x3x32x32 -> 10), built with onnx.helper: --quick needs no zoo export."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)

    def w(name: str, *shape: int) -> Any:
        return numpy_helper.from_array((rng.standard_normal(shape) * 0.1).astype(np.float32), name)

    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c1"], ["r1"]),
             helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c2"], ["r2"]),
             helper.make_node("GlobalAveragePool", ["r2"], ["g"]),
             helper.make_node("Flatten", ["g"], ["f"]),
             helper.make_node("Gemm", ["f", "w3", "b3"], ["y"], transB=1)]
    graph = helper.make_graph(nodes, "tiny", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 32, 32])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])],
                              [w("w1", 16, 3, 3, 3), w("b1", 16), w("w2", 32, 16, 3, 3), w("b2", 32), w("w3", 10, 32),
                               w("b3", 10)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return path


def _hetcc(*args: str, env: dict) -> str:
    p = subprocess.run([*HETCC, *args], capture_output=True, text=True, env=env, timeout=1800, check=False)
    if p.returncode != 0:
        raise SystemExit(f"hetcc {' '.join(args)} failed: {p.stderr.strip()[-800:]}")
    return p.stdout


#: a run the server answered, in its request log (one line per request: method, path, status, ...)
RUN_OK = r"POST /v1/run 200\b"


def start_server(art: Path, env: dict) -> tuple[ServeProcess | None, str | None, str]:
    """``hetcc serve ART`` (``ServeProcess``); (the server, its URL, why not)."""
    try:
        import fastapi  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError:
        return None, None, "the serve extra (fastapi, uvicorn) is not installed: the edge variant fails"
    try:
        server = ServeProcess(art, dict(env, HETCC_SERVE_TOKEN=TOKEN))
    except SystemExit as exc:
        return None, None, str(exc)
    return server, server.url, ""


def corunners(cpu: int, mem: int) -> list[subprocess.Popen]:
    return start_busy(cpu) + start_busy(mem, STREAM)


def run_pass(ex: Any, runner: Any, feeds: dict, phases: list, per_phase: int, settle_s: float, start: int) -> list:
    """Every phase's inferences under the policy, each followed by every variant once (the oracle)."""
    import numpy as np

    rng = np.random.default_rng(start)
    rows = []
    i = start
    for name, cpu, mem, _dbm in phases:
        procs = corunners(cpu, mem)
        try:
            time.sleep(settle_s)
            for _ in range(per_phase):
                runner.run(feeds)
                d = runner.last
                # every variant, in a shuffled order (what ran just before a run warms or cools it)
                order = list(rng.permutation(len(runner.policy.variants)))
                measured = {k: runner.evaluate(feeds, runner.policy.variants[k], d.observation) for k in order}
                oracle = [measured[k] for k in range(len(runner.policy.variants))]
                rows.append({"i": i, "phase": name, "decision": d.to_json(), "oracle": oracle})
                i += 1
        finally:
            stop_busy(procs)
    return rows


def summarise_passes(run: dict, qos_ms: float) -> list[dict]:
    """``summarise`` of each pass of an ``experiment``."""
    return [summarise(rows, run["variants"], run["allowed"], qos_ms) for rows in run["rows_by_pass"]]


def summarise(rows: list, variants: tuple, allowed: list, qos_ms: float) -> dict:
    """Energy, QoS and efficiency of the policy, Opt and each fixed variant over ``rows``."""
    def agg(picks: list[dict]) -> dict:
        ok = [p for p in picks if p.get("ok", True) and p.get("energy_mj") is not None]
        energy = sum(p["energy_mj"] for p in ok)
        lat = sorted(p["latency_ms"] for p in ok)
        return {"inferences": len(picks), "failed": len(picks) - len(ok), "energy_mj": round(energy, 3),
                "energy_mj_per_inference": round(energy / max(1, len(ok)), 3),
                "inferences_per_joule": round(len(ok) / (energy / 1e3), 3) if energy > 0 else None,
                "latency_ms_p50": round(lat[len(lat) // 2], 3) if lat else None,
                "qos_violations": sum(p["latency_ms"] >= qos_ms for p in ok),
                "reward_mean": round(sum(p["reward"] for p in picks) / max(1, len(picks)), 3)}

    policy = [{"ok": True, "energy_mj": r["decision"]["energy_mj"],
               "latency_ms": r["decision"]["latency_ms"], "reward": r["decision"]["reward"]} for r in rows]
    opt = []
    for r in rows:
        cands = [o for o, a in zip(r["oracle"], allowed) if a and o["ok"]]
        opt.append(max(cands, key=lambda o: o["reward"]) if cands else {"ok": False, "reward": 0.0})
    index = {v: k for k, v in enumerate(variants)}
    chosen = [r["oracle"][index[r["decision"]["ran"]]] for r in rows]
    out = {"policy": agg(policy), "opt": agg(opt), "policy_choices_measured_by_oracle": agg(chosen)}
    out["fixed"] = {v: agg([r["oracle"][k] for r in rows]) for k, v in enumerate(variants) if allowed[k]}
    pe, oe = out["policy"]["energy_mj"], out["opt"]["energy_mj"]
    out["policy_efficiency_vs_opt"] = round(oe / pe, 4) if pe > 0 else None
    ce = out["policy_choices_measured_by_oracle"]["energy_mj"]
    # the decisions alone: the policy's choices as the oracle measured them, beside Opt's
    out["choice_efficiency_vs_opt"] = round(oe / ce, 4) if ce > 0 else None
    ok = {v: f for v, f in out["fixed"].items() if not f["failed"]}
    best = min(ok, key=lambda v: ok[v]["energy_mj"]) if ok else None
    out["best_fixed"] = best
    out["policy_efficiency_vs_best_fixed"] = round(ok[best]["energy_mj"] / pe, 4) if best and pe > 0 else None
    out["opt_choices"] = {}
    out["policy_choices"] = {}
    out["policy_matches_opt"] = 0
    for r, o in zip(rows, opt):
        if o.get("ok"):
            out["opt_choices"][o["variant"]] = out["opt_choices"].get(o["variant"], 0) + 1
        ran = r["decision"]["ran"]
        out["policy_choices"][ran] = out["policy_choices"].get(ran, 0) + 1
        out["policy_matches_opt"] += int(o.get("variant") == ran)
    return out


def replay_only(path: Path, out: Path, models_dir: Path | None) -> int:
    """``--replay-only``: the replay section of an existing result file (its board and model
    compiled once, without measuring, for the reference energy when the file lacks it)."""
    doc = json.loads(path.read_text())
    ref = doc.get("energy_ref_mj")
    if ref is None:
        from hetcc.runtime.autoscale import Policy

        with tempfile.TemporaryDirectory(prefix="hetcc-autoscale-replay-") as tmp:
            work = Path(tmp)
            env = dict(os.environ, HETCC_CACHE_DIR=str(work / "cache"), HETCC_PROGRESS_AFTER="never")
            name = doc["args"]["model"]
            model = (models_dir / f"{name}.onnx") if models_dir else work / f"{name}.onnx"
            if name == "tiny-conv":
                model = tiny_model(work / "tiny.onnx")
            elif not model.exists():
                _hetcc("zoo", "export", name, "-o", str(model), env=env)
            (work / "board.toml").write_text(doc.get("board_toml") or BOARD)
            _hetcc("compile", str(model), "--target", str(work / "board.toml"), "--planner", "autoscale",
                   "--deadline", f"{doc['qos_ms']:g}ms", "-o", str(work / "as"), "-q", env=env)
            manifest = json.loads((work / "as" / "manifest.json").read_text())
            ref = Policy.load(work / "as" / manifest["policy"]["file"]).energy_ref_mj
    doc["replay"] = replay(doc, float(ref), seed=int(doc["args"].get("seed", 0)))
    for name, rows in doc["replay"]["rewards"].items():
        print(f"replay, reward {name}: efficiency vs Opt per sweep "
              + ", ".join(f"{r['efficiency_vs_opt']:.1%}" for r in rows if r["efficiency_vs_opt"]))
    write_json(doc, out)
    print(f"wrote {out}")
    return 0


def _terminate(signum: int, _frame: Any) -> None:
    raise SystemExit(128 + signum)     # the finally blocks stop the co-runners and the server


def replay(doc: dict, energy_ref_mj: float, sweeps: int = 3, seed: int = 0) -> dict:
    """Q-learning (Alg. 1 as written: random starts, uniform exploration with epsilon 0.1 in every
    sweep) replayed over a run's recorded steps (each step's recorded state and every
    variant's oracle measurement), once per reward: the current Eq. 5 (energy in reference energies,
    a QoS miss penalised) and Eq. 5 with the energy in mJ and no miss penalty (the reward before the
    units were made explicit). Same data, same states: what the reward alone changes."""
    import numpy as np

    from hetcc.runtime.autoscale import Hyper, QTable, reward

    variants, qos = list(doc["variants"]), float(doc["qos_ms"])
    acc = {a["variant"]: float(a.get("accuracy", 1.0)) for a in doc["actions"]}
    allowed = np.array(doc["allowed"], dtype=bool)
    steps = doc["decisions"]
    hyper = Hyper()

    def current(v: str, lat: float, e: float) -> float:
        return reward(lat, e, acc[v], qos, 0.0, hyper, energy_ref_mj)

    def in_mj(v: str, lat: float, e: float) -> float:
        base = -e + hyper.beta * 100.0 * acc[v]
        return base + hyper.alpha * (qos - lat) if lat < qos else base

    out = {}
    for name, rf in (("current", current), ("mJ, no miss penalty", in_mj)):
        q, rng, rows = QTable(variants, hyper), np.random.default_rng(seed), []
        for _ in range(sweeps):
            chosen_e = opt_e = 0.0
            misses = same = 0
            for k, st in enumerate(steps):
                ok = [v for v, a in zip(variants, allowed) if a and st["oracle"].get(v) is not None]
                if not ok:
                    continue
                a = q.choose(st["state"], rng, allowed)
                m = st["oracle"].get(variants[a])
                r = rf(variants[a], *m) if m is not None else -100.0
                q.update(st["state"], a, r, steps[min(k + 1, len(steps) - 1)]["state"], allowed)
                best = max(ok, key=lambda v: rf(v, *st["oracle"][v]))
                opt_e += st["oracle"][best][1]
                if m is not None:
                    chosen_e += m[1]
                    misses += m[0] >= qos
                same += variants[a] == best
            rows.append({"efficiency_vs_opt": round(opt_e / chosen_e, 4) if chosen_e > 0 else None,
                         "qos_misses": misses, "same_as_opt": same, "steps": len(steps)})
        out[name] = rows
    return {"sweeps": sweeps, "seed": seed, "energy_ref_mj": round(energy_ref_mj, 4), "rewards": out}


#: the runner's departures from Alg. 1 switched off (``--alg1-baseline``): random starts, uniform exploration
ALG1 = {"unseen": "random", "explore_within": float("inf")}


def experiment(work: Path, model: Path, env: dict, passes: int, per_phase: int, settle: float, seed: int,
               qtable: Path | None = None, name: str = "as", later_epsilon: float | None = None,
               options: dict | None = None) -> dict:
    """Compile the policy artifact (shipping ``qtable`` when given), serve it, and run ``passes``
    passes over the phases under the policy with the oracle after every inference; the passes after
    the first explore with ``later_epsilon`` (None: the table's own, Alg. 1's 0.1); ``options``:
    PolicyOptions fields (the runner's defaults otherwise)."""
    from hetcc.runtime import Executor, random_inputs
    from hetcc.runtime.observe import Observer
    from hetcc.runtime.policy_run import PolicyOptions, PolicyRunner

    art = work / name
    t0 = time.perf_counter()
    _hetcc("compile", str(model), "--target", str(work / "board.toml"), "--planner", "autoscale",
           "--deadline", f"{QOS_MS:g}ms", "-o", str(art), "-q",
           *(["--planner-option", f"qtable={qtable}"] if qtable is not None else []), env=env)
    compile_s = time.perf_counter() - t0
    server, url, why = start_server(art, env)
    rows_by_pass: list[list] = []
    warm: list[dict] = []
    try:
        trace = work / f"{name}-rssi.csv"
        lines = ["t,wifi_dbm,p2p_dbm"]
        for _p in range(passes):
            for _n, _c, _m, dbm in PHASES:
                lines += [f"{len(lines) - 1},{dbm},{dbm}" for _ in range(per_phase)]
        trace.write_text("\n".join(lines) + "\n")
        ex = Executor(art, endpoints={"edge": url} if url else None, token=TOKEN, timeout=10.0)
        runner = PolicyRunner(ex, PolicyOptions(seed=seed, persist=0, **(options or {})),
                              observer=Observer(trace, "inference", mem_baseline=True))
        feeds = random_inputs(ex.inputs, seed=seed)
        for v in runner.policy.variants:                 # warm every variant (sessions, caches)
            warm.append(runner.evaluate(feeds, v))
        try:
            for p in range(passes):
                if p == 1 and later_epsilon is not None:     # learned: choose greedily, keep updating
                    runner.hyper = runner.hyper.replace(epsilon=later_epsilon)
                rows_by_pass.append(run_pass(ex, runner, feeds, PHASES, per_phase, settle, p * len(PHASES) * per_phase))
        finally:
            runner.close()
    finally:
        if server is not None:
            server.stop()
    policy = runner.policy
    remote = {str(a["variant"]) for a in policy.actions if a.get("remote")}
    # the offloads the client made and saw answered: the policy's own runs of a remote variant (a
    # fallback ran a local one instead), every successful oracle and warm-up run of one
    offloads = sum(r["decision"]["ran"] in remote for rows in rows_by_pass for r in rows)
    offloads += sum(o["ok"] and o["variant"] in remote for rows in rows_by_pass for r in rows for o in r["oracle"])
    offloads += sum(bool(o.get("ok")) and o.get("variant") in remote for o in warm)
    served = {"offloads": offloads, "server_runs_ok": server.count(RUN_OK) if server else None,
              "server_log_lines": len(server.lines) if server else None}
    return {"rows_by_pass": rows_by_pass, "variants": policy.variants, "allowed": [bool(a) for a in runner.allowed],
            "policy": policy, "summary": runner.summary(), "url": url, "why": why, "compile_s": compile_s,
            "served": served}


def phase_rows(rows_by_pass: list, variants: tuple, allowed: list, qos_ms: float) -> list[dict]:
    out = []
    for p, rows in enumerate(rows_by_pass):
        for name, *_ in PHASES:
            sub = [r for r in rows if r["phase"] == name]
            s = summarise(sub, variants, allowed, qos_ms)
            fixed = {v: f for v, f in s["fixed"].items() if not f["failed"]}
            best = min(fixed, key=lambda v: fixed[v]["energy_mj"]) if fixed else None
            decide = sorted(r["decision"]["decide_us"] for r in sub)
            decide_cpu = sorted(r["decision"]["decide_cpu_us"] for r in sub)
            out.append({"pass": p + 1, "phase": name, "policy_mj": s["policy"]["energy_mj_per_inference"],
                        "opt_mj": s["opt"]["energy_mj_per_inference"],
                        "efficiency_vs_opt": s["policy_efficiency_vs_opt"],
                        "choice_efficiency_vs_opt": s["choice_efficiency_vs_opt"],
                        "best_fixed": best,
                        "best_fixed_mj": fixed[best]["energy_mj_per_inference"] if best else None,
                        "efficiency_vs_best_fixed": (round(fixed[best]["energy_mj"] / s["policy"]["energy_mj"], 4)
                                                     if best and s["policy"]["energy_mj"] > 0 else None),
                        "decide_us_p50": round(decide[len(decide) // 2], 1) if decide else None,
                        "decide_cpu_us_p50": round(decide_cpu[len(decide_cpu) // 2], 1) if decide else None,
                        "policy_choices": s["policy_choices"], "opt_choices": s["opt_choices"],
                        "policy_qos_violations": s["policy"]["qos_violations"],
                        "states": sorted({r["decision"]["state"] for r in sub})})
    return out


def print_phases(console: Any, title: str, rows: list[dict], results: list[dict]) -> None:
    from rich.table import Table

    t = Table(title=title)
    for col in ("pass", "phase", "policy mJ", "Opt mJ", "policy/Opt efficiency", "best fixed (mJ)", "policy ran",
                "Opt picked"):
        t.add_column(col, justify="left" if col in ("phase", "policy ran", "Opt picked", "best fixed (mJ)") else "right")
    for r in rows:
        t.add_row(str(r["pass"]), r["phase"], f"{r['policy_mj']:.2f}", f"{r['opt_mj']:.2f}",
                  f"{r['efficiency_vs_opt']:.1%}" if r["efficiency_vs_opt"] else "-",
                  f"{r['best_fixed']} ({r['best_fixed_mj']:.2f})" if r["best_fixed"] else "-",
                  ", ".join(f"{k} {v}" for k, v in sorted(r["policy_choices"].items())),
                  ", ".join(f"{k} {v}" for k, v in sorted(r["opt_choices"].items())))
    console.print(t)
    for p, res in enumerate(results):
        console.print(f"pass {p + 1}: policy {res['policy']['energy_mj_per_inference']:.2f} mJ/inference, Opt "
                      f"{res['opt']['energy_mj_per_inference']:.2f}: efficiency {res['policy_efficiency_vs_opt']:.1%} "
                      f"of Opt (its choices as the oracle measured them: {res['choice_efficiency_vs_opt']:.1%}), "
                      f"{res['policy_efficiency_vs_best_fixed']:.1%} of the best fixed variant "
                      f"({res['best_fixed']}); matches Opt {res['policy_matches_opt']}/{res['policy']['inferences']}; QoS "
                      f"violations {res['policy']['qos_violations']} (Opt {res['opt']['qos_violations']})")


def main(argv: list[str] | None = None) -> int:
    import signal

    previous = signal.signal(signal.SIGTERM, _terminate)
    try:
        return _main(argv)
    finally:   # a caller in the same process (the --quick test) gets its own handler back
        signal.signal(signal.SIGTERM, previous)


def _main(argv: list[str] | None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="a tiny conv net, 3 inferences per phase, one pass")
    ap.add_argument("--model", default="auto", help="zoo model, or auto (default): the lightest of "
                    f"{', '.join(AUTO_MODELS)} for which Opt offloads at a strong signal on this machine")
    ap.add_argument("--per-phase", type=int, default=None, help="inferences per phase (default 40; --quick 3)")
    ap.add_argument("--passes", type=int, default=None, help="passes over the phases (default 2; --quick 1)")
    ap.add_argument("--simulated-start", choices=("yes", "no"), default=None,
                    help="also run one pass starting from a table trained in simulation (hetcc train autoscale on "
                    "the same board and model; default yes, --quick no)")
    ap.add_argument("--later-epsilon", type=float, default=0.0,
                    help="exploration in the passes after the first (default 0: the learned table chosen greedily "
                    "and still updated, as the simulated evaluation does, AutoScale Sec. 4.2; 0.1: Alg. 1's "
                    "throughout)")
    ap.add_argument("--repeats", type=int, default=None,
                    help="runs from an untrained table, seeds SEED, SEED+1, ... (default 3; --quick 1): the first "
                    "in full, the others as their per-pass summaries (a run's outcome varies with the noise)")
    ap.add_argument("--alg1-baseline", choices=("yes", "no"), default=None,
                    help="also run each run from an untrained table with the runner's departures from Alg. 1 off "
                    "(unseen=random, explore_within=all), same seed, interleaved (default yes, --quick no)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--models-dir", type=Path, default=None, help="exported zoo models (reused)")
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--replay-only", type=Path, default=None, metavar="JSON",
                    help="measure nothing: add the replay (Q-learning over the recorded steps, each reward) to a "
                    "result file of this script (compiling its board and model once for the reference energy)")
    args = ap.parse_args(argv)
    if not 0.0 <= args.later_epsilon <= 1.0:
        ap.error(f"--later-epsilon {args.later_epsilon:g}: expected a probability in [0, 1]")
    if args.repeats is not None and args.repeats < 1:
        ap.error(f"--repeats {args.repeats}: expected 1 or more")
    if args.replay_only is not None:
        return replay_only(args.replay_only, args.out or args.replay_only, args.models_dir)
    per_phase = args.per_phase or (3 if args.quick else 40)
    passes = args.passes or (1 if args.quick else 2)
    simulated = (args.simulated_start or ("no" if args.quick else "yes")) == "yes"
    alg1 = (args.alg1_baseline or ("no" if args.quick else "yes")) == "yes"
    settle = 0.3 if args.quick else 1.5
    started, machine = utc_now(), machine_info()
    os.environ["HETCC_SERVE_TOKEN"] = TOKEN
    sim: dict | None = None
    with tempfile.TemporaryDirectory(prefix="hetcc-autoscale-real-") as tmp:
        work = Path(tmp)
        env = dict(os.environ, HETCC_CACHE_DIR=str(work / "cache"), HETCC_PROGRESS_AFTER="never")
        choice = None
        if args.quick:
            model_name, model = "tiny-conv", tiny_model(work / "tiny.onnx")
        elif args.model == "auto":
            model_name, model, choice = pick_model(args.models_dir or work, env, make_console())
        else:
            model_name = args.model
            model = (args.models_dir / f"{args.model}.onnx") if args.models_dir else work / f"{args.model}.onnx"
            if not model.exists():
                _hetcc("zoo", "export", args.model, "-o", str(model), env=env)
        measured = (next(c["local_ms"] for c in choice["candidates"] if c["model"] == model_name) if choice
                    else _local_ms(model))
        board, calibration = calibrated_board(work, model, env, measured)
        (work / "board.toml").write_text(board)
        repeats, baseline = [], []
        for k in range(args.repeats or (1 if args.quick else 3)):    # interleaved: the same machine for both
            repeats.append(experiment(work, model, env, passes, per_phase, settle, args.seed + k,
                                      later_epsilon=args.later_epsilon, name=f"as-{k}"))
            if alg1:
                baseline.append(experiment(work, model, env, passes, per_phase, settle, args.seed + k,
                                           later_epsilon=args.later_epsilon, name=f"alg1-{k}", options=ALG1))
        fresh = repeats[0]
        if simulated:
            t0 = time.perf_counter()
            _hetcc("train", "autoscale", "--target", str(work / "board.toml"), "--models", str(model), "--runs", "20",
                   "--seed", str(args.seed), "-o", str(work / "qtable.json"), "--quiet", env=env)
            train_s = time.perf_counter() - t0
            trained_states = len(json.loads((work / "qtable.json").read_text())["q"])
            sim = experiment(work, model, env, 1, per_phase, settle, args.seed, work / "qtable.json", "as-sim")
            sim.update(train_s=train_s, trained_states=trained_states)
    variants, allowed, policy, summary = fresh["variants"], fresh["allowed"], fresh["policy"], fresh["summary"]
    rows_by_pass, url, why = fresh["rows_by_pass"], fresh["url"], fresh["why"]
    # each run's summary per pass, once (the first run is the one detailed)
    summaries = [summarise_passes(rep, policy.qos_ms) for rep in repeats]
    baseline_summaries = [summarise_passes(rep, policy.qos_ms) for rep in baseline]
    results = summaries[0]
    per_phase_rows = phase_rows(rows_by_pass, variants, allowed, policy.qos_ms)
    console = make_console()
    print_phases(console, f"AutoScale on this machine: {model_name}, {len(PHASES)} phases x {per_phase} inferences, "
                 f"{passes} pass(es) from an untrained table; energy per inference (mJ, Eq. 1-4 proxy)",
                 per_phase_rows, results)
    o = summary["overhead_us"]
    console.print(f"decision overhead: observe+choose p50 {o['decide']['p50']:.1f} us (CPU {o['decide_cpu']['p50']:.1f}), "
                  f"update p50 {o['update']['p50']:.1f} us (CPU {o['update_cpu']['p50']:.1f}); {summary['fallbacks']} "
                  "fallback(s)" + (f"; {why}" if why else ""))
    def run_rows(reps: list[dict], sums: list[list[dict]], label: str) -> list[dict]:
        out = []
        for k, (rep, res) in enumerate(zip(reps, sums)):
            out.append({"seed": args.seed + k, "passes": [{key: r[key] for key in (
                "policy_efficiency_vs_opt", "choice_efficiency_vs_opt", "policy_efficiency_vs_best_fixed",
                "best_fixed", "policy_matches_opt", "policy_choices", "opt_choices")}
                | {"qos_violations": r["policy"]["qos_violations"]} for r in res],
                "served": rep["served"], "fallbacks": rep["summary"]["fallbacks"]})
            console.print(f"{label} run {k + 1} (seed {args.seed + k}): efficiency vs Opt by pass "
                          + ", ".join(f"{r['policy_efficiency_vs_opt']:.1%}" for r in res)
                          + f"; offloads {rep['served']['offloads']}, in the server's log "
                            f"{rep['served']['server_runs_ok']}",
                          highlight=False)
        return out

    runs = run_rows(repeats, summaries, "runner defaults:")
    baseline_runs = run_rows(baseline, baseline_summaries, "Alg. 1 (unseen=random, explore_within=all):")
    served = fresh["served"]
    console.print(f"offloads: {served['offloads']} made and answered by the client, "
                  f"{served['server_runs_ok']} answered runs in the server's request log"
                  + ("" if served["offloads"] == served["server_runs_ok"] else " (MISMATCH)"), highlight=False)
    sim_doc = None
    if sim is not None:
        sim_results = summarise_passes(sim, policy.qos_ms)
        sim_rows = phase_rows(sim["rows_by_pass"], sim["variants"], sim["allowed"], policy.qos_ms)
        print_phases(console, "the same, one pass from a table trained in simulation (hetcc train autoscale)",
                     sim_rows, sim_results)
        sim_doc = {"train_s": round(sim["train_s"], 2), "trained_states": sim["trained_states"], "runs": 20,
                   "served": sim["served"],
                   "passes": sim_results, "per_phase": sim_rows, "fallbacks": sim["summary"]["fallbacks"]}

    def decisions(rows_by_pass: list) -> list:
        return [{"i": r["i"], "phase": r["phase"], **{k: r["decision"][k] for k in (
            "state", "variant", "ran", "explored", "latency_ms", "energy_mj", "reward", "decide_us", "update_us",
            "decide_cpu_us", "update_cpu_us")},
            "fallback": r["decision"].get("fallback"),
            "oracle": {o["variant"]: (None if not o["ok"] else [round(o["latency_ms"], 3), round(o["energy_mj"], 3)])
                       for o in r["oracle"]}} for rows in rows_by_pass for r in rows]

    from hetcc.runtime.policy_run import PolicyOptions

    defaults = PolicyOptions()
    doc = {"script": "autoscale_real", "started": started, "machine": machine,
           "args": {"quick": args.quick, "model": model_name, "per_phase": per_phase, "passes": passes,
                    "repeats": len(repeats), "alg1_baseline": "yes" if alg1 else "no",
                    "later_epsilon": args.later_epsilon,
                    "seed": args.seed, "simulated_start": "yes" if simulated else "no"},
           "model_choice": choice, "board_calibration": calibration, "board_toml": board,
           "qos_ms": policy.qos_ms, "compile_s": round(fresh["compile_s"], 2), "server": url is not None,
           "served": served, "runs": runs, "alg1_runs": baseline_runs,
           "policy_options": {"unseen": defaults.unseen, "explore_within": defaults.explore_within},
           "server_note": why, "variants": list(variants), "allowed": allowed,
           "actions": [{k: a[k] for k in ("variant", "compute_ms", "busy_power_mw", "accuracy")} for a in policy.actions],
           "phases": [{"name": n, "cpu_corunners": c, "mem_corunners": m, "wifi_dbm": d} for n, c, m, d in PHASES],
           "passes": results, "per_phase": per_phase_rows,
           "overhead_us": summary["overhead_us"], "fallbacks": summary["fallbacks"],
           "energy_source": summary["energy_source"], "simulated_start": sim_doc,
           "decisions": decisions(rows_by_pass)}
    if sim is not None:
        doc["simulated_start"]["decisions"] = decisions(sim["rows_by_pass"])
    doc["energy_ref_mj"] = policy.energy_ref_mj
    doc["replay"] = replay(doc, policy.energy_ref_mj, seed=args.seed)
    for name, rows in doc["replay"]["rewards"].items():
        console.print(f"replay of the recorded steps, reward {name}: efficiency vs Opt per sweep "
                      + ", ".join(f"{r['efficiency_vs_opt']:.1%}" for r in rows if r["efficiency_vs_opt"]))
    out = args.out or RESULTS_DIR / f"autoscale_real{'-quick' if args.quick else ''}.json"
    write_json(doc, out)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
