"""AutoScale's evaluation in simulation (Sec. 6, Figs. 9, 11, 13, 14): energy efficiency, QoS, selection, convergence.

Per board (``mi8pro-edge-cloud``, ``galaxy-s10e``, ``motox-force``): the zoo models standing for
the paper's Table 3 networks get their action tables from the compiler
(``hetcc.compiler.autoscale.action_table``); a Q-table is trained by Sec. 5.3's protocol (100
inferences per network per runtime-variance state of Table 1; ``hetcc train autoscale`` does the
same); then every network runs 100 inferences in each environment of Table 4 (S1-S5 static,
D1-D3 dynamic) from its own copy of the table (greedy, still learning). AutoScale, the baselines
(Edge(CPU FP32), Edge(Best), Cloud, Connected edge) and the oracles (Opt: per inference the best
action in expectation for the state that inference saw, known in hindsight: the least energy
meeting QoS, the fastest when none does; Opt(hindsight): the same criterion on the inference's
noisy outcomes; Opt(reward): the largest Eq. 5 reward in hindsight) see the same inferences.
Reported: energy efficiency (inferences per joule) normalised to Edge(CPU FP32) and the
QoS-violation ratio (Figs. 9, 11), AutoScale's selection accuracy (Fig. 13: the same action as
Opt; and within 1% of Opt's energy), the runs until the reward converges from a fresh table and from one
trained on mi8pro-edge-cloud (Fig. 14), and the decision overhead in µs (Sec. 6.3), the paper's
numbers beside ours. The targets are printed met or missed.

    python benchmarks/autoscale.py            # three boards, the five zoo networks (about a minute)
    python benchmarks/autoscale.py --quick    # two tiny synthetic CNNs on mi8pro-edge-cloud (a test runs it)
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

if (HERE := str(Path(__file__).resolve().parent)) not in sys.path:  # _common.py lives beside this script
    sys.path.insert(0, HERE)
from _common import RESULTS_DIR, machine_info, utc_now, write_json  # noqa: E402

from hetcc.experiments.autoscale.environments import DYNAMIC, ENVIRONMENTS, STATIC  # noqa: E402
from hetcc.runtime.autoscale import Hyper  # noqa: E402
from hetcc.experiments.autoscale.models import DEFAULT_MODELS, PAPER_MODELS, load_board  # noqa: E402
from hetcc.experiments.autoscale.sim import CPU_SLOWDOWN, MEM_SLOWDOWN, NOISE_SIGMA  # noqa: E402
from hetcc.experiments.autoscale.train import (BASELINES, POLICIES, convergence, decision_us, evaluate,  # noqa: E402
                                               summarize, train)

SCRIPT = Path(__file__).stem
BOARDS = ("mi8pro-edge-cloud", "galaxy-s10e", "motox-force")
#: the board every other board's transferred table comes from (AutoScale Sec. 6.3: "the model trained on Mi8Pro")
SOURCE_BOARD = "mi8pro-edge-cloud"
#: the paper's numbers (AutoScale Sec. 6)
PAPER = {
    "efficiency_gap_vs_opt": 0.032,          # Sec. 6.1: "the energy efficiency difference between AutoScale and Opt is only 3.2%"
    "qos_gap_vs_opt": 0.019,                 # Sec. 6.1: "the QoS violation ratio difference ... is only 1.9%"
    "gain_static": {"Edge(CPU FP32)": 9.8, "Edge(Best)": 2.3, "Cloud": 1.6, "Connected edge": 2.7},   # Fig. 9
    "gain_dynamic": {"Edge(CPU FP32)": 10.4, "Edge(Best)": 2.2, "Cloud": 1.4, "Connected edge": 3.2},  # Fig. 11
    "selection_accuracy": 0.979,             # Fig. 13
    "converge_runs": "40-50",                # Fig. 14
    "transfer_time_saving": 0.212,           # Sec. 6.3: transfer reduces the training time by 21.2%
    "decision_us_training": 10.6,            # Sec. 6.3
    "decision_us_trained": 7.3,              # Sec. 6.3
}
TARGETS = {"efficiency_gap_vs_opt": 0.05, "selection_accuracy": 0.95, "converge_runs": 50, "decision_us": 20.0}


def tiny_models(folder: Path) -> list[str]:
    """Two small CNNs (a conv stack, global pooling, one FC) written as ONNX into ``folder``."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    out = []
    for name, width, depth in (("tinycnn16", 16, 3), ("tinycnn48", 48, 6)):
        nodes, inits, prev, cin = [], [], "input", 3
        for i in range(depth):
            w = numpy_helper.from_array(rng.standard_normal((width, cin, 3, 3)).astype(np.float32) * 0.1, f"w{i}")
            inits.append(w)
            nodes += [helper.make_node("Conv", [prev, f"w{i}"], [f"c{i}"], pads=[1, 1, 1, 1],
                                       strides=[2, 2] if i < 2 else [1, 1]),
                      helper.make_node("Relu", [f"c{i}"], [f"r{i}"])]
            prev, cin = f"r{i}", width
        inits += [numpy_helper.from_array(rng.standard_normal((10, width)).astype(np.float32), "wf"),
                  numpy_helper.from_array(np.zeros(10, np.float32), "bf")]
        nodes += [helper.make_node("GlobalAveragePool", [prev], ["g"]), helper.make_node("Flatten", ["g"], ["f"]),
                  helper.make_node("Gemm", ["f", "wf", "bf"], ["output"], transB=1)]
        graph = helper.make_graph(nodes, name, [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, 224, 224])],
                                  [helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, 10])], inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
        model.ir_version = 8
        path = folder / f"{name}.onnx"
        onnx.save(model, str(path))
        out.append(str(path))
    return out


def _mean(xs: list[float]) -> float:
    return float(statistics.fmean(xs)) if xs else float("nan")


def run_board(target: str, models: list[str], args: argparse.Namespace, source_table: Any) -> tuple[dict, Any]:
    t0 = time.perf_counter()
    board = load_board(target, models)
    load_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    qt = train(board, runs=args.runs, seed=args.seed)
    train_s = time.perf_counter() - t0
    envs: dict[str, Any] = {}
    for name in (*STATIC, *DYNAMIC):
        recs = evaluate(board, qt, name, per_model=args.per_model, seed=args.seed)
        s = summarize(recs, board)
        per_model = []
        for r in recs:
            def mode(policy: str, r=r) -> str | None:
                c = r.choices.get(policy)
                return None if c is None else board.actions[int(np.bincount(c).argmax())]
            per_model.append({"model": r.model, "autoscale": mode("AutoScale"), "opt": mode("Opt"),
                              "opt_hindsight": mode("Opt(hindsight)"), "opt_reward": mode("Opt(reward)"),
                              "edge_best": mode("Edge(Best)"),
                              "selection": float(np.mean(r.choices["AutoScale"] == r.choices["Opt"])),
                              **{f"{p}_stats": r.stats(p) for p in ("AutoScale", "Opt") if p in r.choices}})
        envs[name] = {"description": ENVIRONMENTS[name].description, "source": ENVIRONMENTS[name].source,
                      "policies": {p: s[p] for p in POLICIES if p in s}, "selection": s["selection"],
                      "models": per_model}
    conv_envs = STATIC
    scratch = [convergence(board, e, m, runs=args.converge_runs, seed=args.seed)[0]
               for e in conv_envs for m in range(len(board.models))]
    conv: dict[str, Any] = {"environments": list(conv_envs), "runs_limit": args.converge_runs,
                            "scratch": scratch, "scratch_median": float(np.median(scratch))}
    if source_table is not None:
        init = source_table.transfer(board.action_info)
        moved = [convergence(board, e, m, runs=args.converge_runs, seed=args.seed, qtable=init)[0]
                 for e in conv_envs for m in range(len(board.models))]
        conv.update({"transfer_from": SOURCE_BOARD, "transfer": moved, "transfer_median": float(np.median(moved)),
                     "time_saving": 1.0 - float(np.mean(moved)) / float(np.mean(scratch))})
    dec = {"trained_us": decision_us(board, qt, n=args.decisions, seed=args.seed),
           "training_us": decision_us(board, qt, n=args.decisions, seed=args.seed, training=True)}
    # summaries over the environments
    def gap(ref: str, names: tuple[str, ...]) -> float:
        return _mean([envs[e]["policies"]["AutoScale"]["efficiency"] / envs[e]["policies"][ref]["efficiency"] - 1.0
                      for e in names if ref in envs[e]["policies"]])

    def qos(p: str, names: tuple[str, ...]) -> float:
        return _mean([envs[e]["policies"][p]["qos_violation"] for e in names if p in envs[e]["policies"]])

    every = (*STATIC, *DYNAMIC)
    summary = {
        "efficiency_gap_vs_opt": gap("Opt", every),
        "efficiency_gap_vs_opt_hindsight": gap("Opt(hindsight)", every),
        "efficiency_gap_vs_opt_reward": gap("Opt(reward)", every),
        "frozen_efficiency_gap_vs_opt": _mean([envs[e]["policies"]["AutoScale(frozen)"]["efficiency"]
                                               / envs[e]["policies"]["Opt"]["efficiency"] - 1.0 for e in every]),
        "qos_violation": {p: qos(p, every) for p in ("AutoScale", "AutoScale(frozen)", "Opt", "Opt(hindsight)",
                                                     "Opt(reward)")},
        "selection": {k: _mean([envs[e]["selection"][k] for e in every]) for k in envs[every[0]]["selection"]},
        "gain_static": {b: gap(b, STATIC) + 1.0 for b in BASELINES},
        "gain_dynamic": {b: gap(b, DYNAMIC) + 1.0 for b in BASELINES},
    }
    doc = {"target": target, "models": [m.name for m in board.models],
           "features": {m.name: dict(m.features) for m in board.models}, "states": {m.name: m.key(ENVIRONMENTS["S1"].draw(None, 0))
                                                                                  for m in board.models},
           "actions": list(board.actions), "load_s": load_s, "train_s": train_s,
           "train_inferences": qt.trained.get("inferences"), "states_learned": len(qt.states),
           "environments": envs, "convergence": conv, "decision": dec, "summary": summary}
    return doc, qt


def sensitivity(target: str, models: list[str], args: argparse.Namespace) -> list[dict[str, Any]]:
    """Sec. 5.3's sensitivity test: learning rate and discount each at 0.1, 0.5 and 0.9 (the paper
    finds a higher learning rate and a lower discount better and picks 0.9 and 0.1)."""
    rows = []
    for lr in (0.1, 0.5, 0.9):
        for disc in (0.1, 0.5, 0.9):
            board = load_board(target, models, hyper=Hyper(learning_rate=lr, discount=disc))
            qt = train(board, runs=args.runs, seed=args.seed)
            sums = [summarize(evaluate(board, qt, e, per_model=args.per_model // 2, seed=args.seed), board)
                    for e in (*STATIC, *DYNAMIC)]
            rows.append({"learning_rate": lr, "discount": disc,
                         "efficiency_gap_vs_opt": _mean([x["AutoScale"]["efficiency"] / x["Opt"]["efficiency"] - 1
                                                         for x in sums]),
                         "selection": _mean([x["selection"]["opt"] for x in sums]),
                         "near_opt": _mean([x["selection"]["near_opt"] for x in sums]),
                         "selection_reward": _mean([x["selection"]["reward_expected"] for x in sums])})
            print(f"  sensitivity lr {lr} discount {disc}: efficiency vs Opt {rows[-1]['efficiency_gap_vs_opt']:+.1%}, "
                  f"selection {rows[-1]['selection']:.1%} (within 1% {rows[-1]['near_opt']:.1%}; as Eq. 5's best "
                  f"{rows[-1]['selection_reward']:.1%})")
    return rows


def what_if(target: str, models: list[str], args: argparse.Namespace) -> list[dict[str, Any]]:
    """Where the selection accuracy goes: the same training and evaluation on ``target`` without the
    latency noise, with Eq. 5's slack and accuracy terms off (alpha = beta = 0: the reward then ranks
    the actions meeting QoS by energy alone, as Opt does), and both (diagnostics, not results: the
    shipped environment has the noise and the paper's weights of 0.1)."""
    rows = []
    for label, sigma, hyper in (("as shipped", None, None), ("no latency noise", 0.0, None),
                                ("Eq. 5 without its slack and accuracy terms (alpha = beta = 0)", None,
                                 Hyper(alpha=0.0, beta=0.0)),
                                ("both", 0.0, Hyper(alpha=0.0, beta=0.0))):
        kw: dict[str, Any] = {} if sigma is None else {"noise_sigma": sigma}
        if hyper is not None:
            kw["hyper"] = hyper
        board = load_board(target, models, **kw)
        qt = train(board, runs=args.runs, seed=args.seed)
        sums = [summarize(evaluate(board, qt, e, per_model=args.per_model, seed=args.seed), board)
                for e in (*STATIC, *DYNAMIC)]
        row = {"case": label, "efficiency_gap_vs_opt": _mean([x["AutoScale"]["efficiency"] / x["Opt"]["efficiency"] - 1
                                                            for x in sums]),
               "qos_violation": _mean([x["AutoScale"]["qos_violation"] for x in sums])}
        row.update({k: _mean([x["selection"][k] for x in sums]) for k in ("opt", "near_opt", "reward_ceiling",
                                                                           "reward_expected", "target")})
        rows.append(row)
        print(f"  what-if {label}: same as Opt {row['opt']:.1%} (within 1% {row['near_opt']:.1%}); Eq. 5's best is "
              f"Opt's {row['reward_ceiling']:.1%}, AutoScale picks it {row['reward_expected']:.1%}; efficiency vs Opt "
              f"{row['efficiency_gap_vs_opt']:+.1%}")
    return rows


#: Figs. 10 and 12's scenarios: the streaming use case (30 FPS: 33.3 ms QoS, Sec. 5.2) and a higher
#: accuracy target (the paper's 50% / 65% top-1; here an agreement with FP32 of 0.98, which leaves
#: out the INT8 actions at their assumed 0.97 and keeps FP16 at 0.999)
SCENARIOS = (("non-streaming, 50 ms (Fig. 9, 11)", {}), ("streaming, 33.3 ms (Fig. 10)", {"qos_ms": 1000.0 / 30.0}),
             ("accuracy target 0.98 (Fig. 12)", {"min_accuracy": 0.98}))


def scenarios(target: str, models: list[str], args: argparse.Namespace) -> list[dict[str, Any]]:
    """Figs. 10 and 12 on ``target``: each scenario trained and evaluated over S1-S5, D1-D3."""
    rows = []
    for label, kw in SCENARIOS:
        board = load_board(target, models, **kw)
        qt = train(board, runs=args.runs, seed=args.seed)
        sums = [summarize(evaluate(board, qt, e, per_model=args.per_model // 2, seed=args.seed), board)
                for e in (*STATIC, *DYNAMIC)]
        row: dict[str, Any] = {"scenario": label, **kw}
        for p in ("AutoScale", "Edge(Best)", "Cloud", "Connected edge", "Opt"):
            row[p] = {"efficiency": _mean([x[p]["efficiency"] for x in sums if p in x]),
                      "qos_violation": _mean([x[p]["qos_violation"] for x in sums if p in x])}
        row["selection"] = _mean([x["selection"]["opt"] for x in sums])
        row["near_opt"] = _mean([x["selection"]["near_opt"] for x in sums])
        rows.append(row)
        print(f"  {label}: AutoScale {row['AutoScale']['efficiency']:.2f}x / QoS {row['AutoScale']['qos_violation']:.0%}, "
              f"Opt {row['Opt']['efficiency']:.2f}x / {row['Opt']['qos_violation']:.0%}, Edge(Best) "
              f"{row['Edge(Best)']['efficiency']:.2f}x, Cloud {row['Cloud']['efficiency']:.2f}x (over Edge(CPU FP32))")
    return rows


def verdicts(board: dict[str, Any]) -> list[dict[str, Any]]:
    s, conv, dec = board["summary"], board["convergence"], board["decision"]
    return [
        {"target": "energy efficiency within 5% of Opt (mean over S1-S5, D1-D3)", "paper": "3.2%",
         "ours": s["efficiency_gap_vs_opt"], "met": s["efficiency_gap_vs_opt"] >= -TARGETS["efficiency_gap_vs_opt"]},
        {"target": "selection accuracy >= 95% (the same action as Opt)", "paper": "97.9%",
         "ours": s["selection"]["opt"], "met": s["selection"]["opt"] >= TARGETS["selection_accuracy"]},
        {"target": "reward converged within 50 runs (median, fresh table, S1-S5)", "paper": "40-50",
         "ours": conv["scratch_median"], "met": conv["scratch_median"] <= TARGETS["converge_runs"]},
        {"target": "decision <= 20 µs (median, trained table)", "paper": "7.3 µs",
         "ours": dec["trained_us"], "met": dec["trained_us"] <= TARGETS["decision_us"]},
    ]


def print_board(b: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console(width=160)
    t = Table(title=f"{b['target']}: energy efficiency over Edge(CPU FP32) / QoS violations", show_edge=False)
    t.add_column("env")
    for p in POLICIES:
        t.add_column(p, justify="right")
    t.add_column("selection", justify="right")
    for e, v in b["environments"].items():
        pol = v["policies"]
        t.add_row(e, *[f"{pol[p]['efficiency']:.2f} {pol[p]['qos_violation']:4.0%}" if p in pol else "-"
                       for p in POLICIES], f"{v['selection']['opt']:.0%}")
    console.print(t)
    s, c, d = b["summary"], b["convergence"], b["decision"]
    sel = s["selection"]
    qv = s["qos_violation"]
    console.print(f"  efficiency vs Opt {s['efficiency_gap_vs_opt']:+.1%} (paper -3.2%; frozen table "
                  f"{s['frozen_efficiency_gap_vs_opt']:+.1%}), vs Opt(reward) {s['efficiency_gap_vs_opt_reward']:+.1%}; "
                  f"QoS violations AutoScale {qv['AutoScale']:.1%} (frozen {qv['AutoScale(frozen)']:.1%}), Opt "
                  f"{qv['Opt']:.1%}, Opt(hindsight) {qv['Opt(hindsight)']:.1%}, Opt(reward) {qv['Opt(reward)']:.1%}",
                  highlight=False)
    console.print(f"  selection: same action as Opt {sel['opt']:.1%} (paper 97.9%; frozen {sel['frozen_opt']:.1%}), "
                  f"within 1% of Opt's energy {sel['near_opt']:.1%}, same execution target "
                  f"{sel.get('target', float('nan')):.1%}; Eq. 5's best in expectation is Opt's {sel['reward_ceiling']:.1%}, "
                  f"AutoScale picks it {sel['reward_expected']:.1%}; as Opt(hindsight) {sel['opt_hindsight']:.1%} "
                  f"(Opt is Opt(hindsight)'s {sel['ceiling']:.1%}); a fixed choice per Table 1 state can match "
                  f"{sel['state_ceiling']:.1%}; another action within 0.1% / 1% of Opt in {sel['tie_0.001']:.1%} / "
                  f"{sel['tie_0.01']:.1%} of the inferences", highlight=False)
    gains = ", ".join(f"{k} {s['gain_static'][k]:.2f}x/{s['gain_dynamic'][k]:.2f}x" for k in BASELINES)
    console.print(f"  gain static/dynamic: {gains} (paper Edge(CPU FP32) 9.8x/10.4x, Edge(Best) 2.3x/2.2x, Cloud "
                  "1.6x/1.4x, Connected edge 2.7x/3.2x)", highlight=False)
    tr = (f", transferred from {c['transfer_from']} {c['transfer_median']:.0f} ({c['time_saving']:.0%} fewer runs; "
          "paper 21.2%)") if "transfer" in c else ""
    console.print(f"  convergence (median runs): fresh {c['scratch_median']:.0f} (paper 40-50){tr}; decision "
                  f"{d['trained_us']:.1f} µs trained, {d['training_us']:.1f} µs with the update (paper 7.3 / 10.6); "
                  f"training {b['train_s']:.1f} s for {b['train_inferences']} inferences", highlight=False)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="two tiny synthetic CNNs on mi8pro-edge-cloud, few runs")
    ap.add_argument("--boards", default=None, help=f"comma-separated boards (default {','.join(BOARDS)})")
    ap.add_argument("--models", default=None, help="comma-separated zoo models or .onnx paths (default: the Table 3 "
                    f"networks the zoo has: {','.join(DEFAULT_MODELS)})")
    ap.add_argument("--runs", type=int, default=None, help="training inferences per network per state (default 100)")
    ap.add_argument("--per-model", type=int, default=None, help="inferences per network per environment (default 100)")
    ap.add_argument("--converge-runs", type=int, default=None, help="runs per convergence trial (default 200)")
    ap.add_argument("--decisions", type=int, default=None, help="decisions timed (default 5000)")
    ap.add_argument("--no-sensitivity", action="store_true",
                    help="skip Sec. 5.3's learning-rate x discount test and Figs. 10 and 12's scenarios (always "
                         "skipped with --quick)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", "-o", type=Path, default=None,
                    help=f"JSON path (default benchmarks/results/{SCRIPT}.json, {SCRIPT}-quick.json with --quick)")
    args = ap.parse_args(argv)
    q = args.quick
    args.runs = args.runs or (3 if q else 100)
    args.per_model = args.per_model or (20 if q else 100)
    args.converge_runs = args.converge_runs or (60 if q else 200)
    args.decisions = args.decisions or (300 if q else 5000)
    boards = [b.strip() for b in (args.boards or (SOURCE_BOARD if q else ",".join(BOARDS))).split(",") if b.strip()]
    date = utc_now()
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="hetcc-autoscale-") as tmp:
        if args.models:
            models = [m.strip() for m in args.models.split(",") if m.strip()]
        elif q:
            models = tiny_models(Path(tmp))
        else:
            models = list(DEFAULT_MODELS)
        results: dict[str, Any] = {}
        source = None
        ordered = sorted(boards, key=lambda b: b != SOURCE_BOARD)    # the source board trains first
        for b in ordered:
            doc, qt = run_board(b, models, args, source if b != SOURCE_BOARD else None)
            if b == SOURCE_BOARD:
                source = qt
            results[b] = doc
            doc["verdicts"] = verdicts(doc)
            print_board(doc)
        sens = [] if q or args.no_sensitivity else sensitivity(SOURCE_BOARD, models, args)
        whatif = [] if q or args.no_sensitivity else what_if(SOURCE_BOARD, models, args)
        scen = [] if q or args.no_sensitivity else scenarios(SOURCE_BOARD, models, args)
    for v in results.get(SOURCE_BOARD, next(iter(results.values())))["verdicts"]:
        print(f"{'met   ' if v['met'] else 'MISSED'} {v['target']}: ours {v['ours']:.4g} (paper {v['paper']})")
    out = args.out or RESULTS_DIR / (f"{SCRIPT}-quick.json" if q else f"{SCRIPT}.json")
    write_json({"script": SCRIPT, "date": date, "machine": machine_info(),
                "argv": list(sys.argv[1:] if argv is None else argv),
                "args": {"quick": q, "boards": boards, "models": [Path(m).stem if m.endswith(".onnx") else m
                                                                  for m in models],
                         "runs": args.runs, "per_model": args.per_model, "converge_runs": args.converge_runs,
                         "decisions": args.decisions, "seed": args.seed, "sensitivity": bool(sens)},
                "model": {"cpu_slowdown": CPU_SLOWDOWN, "mem_slowdown": MEM_SLOWDOWN, "noise_sigma": NOISE_SIGMA,
                          "hyper": Hyper().to_json(), "qos_penalty": Hyper().qos_penalty,
                          "paper_models": PAPER_MODELS},
                "paper": PAPER, "targets": TARGETS, "boards": results, "sensitivity": sens, "what_if": whatif,
                "scenarios": scen,
                "wall_s": time.perf_counter() - t0}, out)
    print(f"wrote {out} in {time.perf_counter() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
