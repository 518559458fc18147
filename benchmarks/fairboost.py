"""FairBoost's evaluation (Sec. 5.3, Figs. 9-11; decision time, Sec. 5.5): multi-DNN managers on orangepi5.

10 seeded random mixes each of 3, 4 and 5 zoo models (the paper's Figs. 9-11), analysed once for
``orangepi5`` (big, LITTLE, GPU at their top states, the board's cited ``switch_ms``). Every
manager plans every mix for ``overall`` (O = T_norm x J) and THE contention model
(``hetcc.planners.multi.contention``) scores it: normalised throughput T_norm (over every model
whole on the GPU at once), Jain's index J (t_ideal: the model alone whole on the GPU) and O, with
the manager's decision time. Managers: ``all-gpu`` (the paper's baseline), ``rr:cpu``,
``rr:gpu``, ``mosaic``, ``ga`` and ``optimum`` where its space is within ``--optimum-limit``
(the exact best of pipelines cut at 3 blocks per model) and ``optimum-2`` (2 blocks: tractable on
5 models) as exact references; ``MANAGERS`` is the list a
further manager (``fairboost``) joins. Means per mix size sit beside the paper's numbers
(``PAPER``: FairBoost's stated O gains over each manager, and J, as the text of Sec. 5.3 gives
them). ODMDEF (linear regression + k-NN) is not reproduced.

Transfer (Sec. 5.4, Figs. 12-13): the same mixes on ``--transfer`` (default ``odroid-n2plus``), planned by
the shipped agent (trained on orangepi5) unchanged and by an agent trained on that board with the shipped
agent's command for that board (run here once and cached under ``--models-dir``, or ``--transfer-agent
FILE``), each alone (``polish=false``) and as the
planner ships, beside ``all-gpu`` and ``ga``; the transferred agent's loss of mean O is the issue's measure.

    python benchmarks/fairboost.py                 # 30 mixes of zoo models (analyses cached)
    python benchmarks/fairboost.py --quick         # 2 mixes of 3 synthetic CNNs (a test runs it)
"""
from __future__ import annotations

import argparse
import pickle
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

if (HERE := str(Path(__file__).resolve().parent)) not in sys.path:  # _common.py lives beside this script
    sys.path.insert(0, HERE)
from _common import MODELS_DIR, RESULTS_DIR, machine_info, utc_now, write_json  # noqa: E402

from hetcc.planners import Objective, PlanContext, PlanningProblem, WorkloadProblem, plan  # noqa: E402

SCRIPT = Path(__file__).stem
#: the pool the mixes draw from: the zoo's CNNs nearest the paper's 18 DNNs (AlexNet, VGG, ResNet,
#: SqueezeNet, GoogLeNet, MobileNet, ShuffleNet, Inception, DenseNet, ...)
ZOO_MODELS = ("resnet18", "resnet50", "mobilenet_v2", "mobilenet_v3_small", "mnasnet1_0", "vgg16", "squeezenet1_1",
              "shufflenet_v2_x1_0", "efficientnet_b0", "googlenet", "inception_v3", "densenet121")
SIZES = (3, 4, 5)
#: the managers compared: (label, planner, options); a further manager appends itself here
MANAGERS: list[tuple[str, str, dict[str, Any]]] = [
    ("all-gpu", "all-gpu", {}), ("rr:cpu", "rr:cpu", {}), ("rr:gpu", "rr:gpu", {}), ("mosaic", "mosaic", {}),
    ("ga", "ga", {}), ("optimum", "optimum", {}), ("optimum-2", "optimum", {"blocks": 2, "limit": 60_000}),
    ("optimum-j0.9", "optimum", {"min_jain": 0.9}),     # the exact best of the plans with J >= 0.9
]
#: the learning manager (torch: not in --quick, whose test stays light): the planner as shipped
#: (agent, then the annealed search seeded from its mapping and the baselines' plans), the agent's
#: mapping alone (polish=False, the paper's manager), the same search without the agent's mapping
#: (what the search reaches alone), the earlier greedy descent from the agent's mapping, and the
#: search with a fairness floor of J >= 0.85 and of J >= 0.9 (what fairness costs in O)
FAIRBOOST: list[tuple[str, str, dict[str, Any]]] = [
    ("fairboost", "fairboost", {}), ("fairboost-agent", "fairboost", {"polish": False}),
    ("fairboost-no-agent", "fairboost", {"agent_start": False}),
    ("fairboost-descent", "fairboost", {"search": "descent"}),
    ("fairboost-j0.85", "fairboost", {"min_jain": 0.85}), ("fairboost-j0.9", "fairboost", {"min_jain": 0.9}),
]
#: the transfer board's managers: (label, planner, options); AGENT_HERE is the agent trained on that board
AGENT_HERE = "{agent}"
TRANSFERRED, NATIVE = "fairboost, orangepi5's agent", "fairboost, its own agent"
TRANSFER: list[tuple[str, str, dict[str, Any]]] = [
    ("all-gpu", "all-gpu", {}), ("ga", "ga", {}),
    ("agent alone, orangepi5's", "fairboost", {"polish": False}),
    ("agent alone, its own", "fairboost", {"polish": False, "agent": AGENT_HERE}),
    (TRANSFERRED, "fairboost", {}), (NATIVE, "fairboost", {"agent": AGENT_HERE}),
]
#: the issue's bound on the transferred agent's loss of mean O against the one trained on the board
TRANSFER_LOSS_TARGET = 0.10
#: the exact references, finest first: a mix's gap to the optimum is to the first that ran on it
OPTIMA = ("optimum", "optimum-2")
#: FairBoost Sec. 5.3 as printed: FairBoost's mean O over each manager's ("x2.85" a ratio; "+54.8%" and
#: the paper's "x0.92"-style factors below 1 read as that much higher, i.e. 1.92), and mean J
PAPER: dict[str, Any] = {
    "source": "FairBoost, Sec. 5.3 (Figs. 9-11) and Sec. 5.5; the paper's text, not its bar heights",
    "o_gain_of_fairboost": {
        "3": {"all-gpu": "x2.85", "rr:cpu": "+54.8%", "rr:gpu": "+93.2%", "mosaic": "x0.92", "odmdef": "x0.91",
              "ga": "x0.47"},
        "4": {"all-gpu": "x3.26", "rr:cpu": "x2.1", "rr:gpu": "x3.7", "mosaic": "x2.52", "odmdef": "x2.26",
              "ga": "x0.53"},
        "5": {"all-gpu": "x3.61", "rr:cpu": "x1.99", "rr:gpu": "x7.27", "mosaic": "x2.08", "odmdef": "x0.99",
              "ga": "x0.55"},
    },
    "jain": {"3": {"fairboost": 0.962, "all-gpu": 0.59, "rr:cpu": 0.916, "rr:gpu": 0.874, "mosaic": 0.64,
                   "odmdef": 0.614, "ga": 0.69}},
    "jain_gain_of_fairboost": {
        "4": {"all-gpu": "+81.8%", "mosaic": "+67.6%", "odmdef": "+89.8%", "ga": "+64.3%", "rr:cpu": "-5%",
              "rr:gpu": "+27.3%"},
        "5": {"all-gpu": "x2.41", "mosaic": "x0.63", "odmdef": "x0.73", "ga": "x0.5", "rr:cpu": "-26%"},
    },
    "decision_s": {"all-gpu": 0.0, "mosaic": 1.0, "odmdef": 1.0, "ga": 300.0, "fairboost": 2.0},
}


def paper_ratio(text: str) -> float:
    """The paper's gain as a ratio: ``x2.85`` -> 2.85, ``x0.47`` -> 1.47 (a factor below 1 is how much
    higher), ``+54.8%`` -> 1.548, ``-5%`` -> 0.95."""
    if text.startswith("x"):
        k = float(text[1:])
        return k if k >= 1 else 1.0 + k
    return 1.0 + float(text.rstrip("%")) / 100.0


def zoo_problems(names: list[str], target: str, models_dir: Path) -> dict[str, PlanningProblem]:
    """Each zoo model analysed for ``target`` once; the PlanningProblem cached under ``models_dir``."""
    import hetcc
    from _common import model_path

    out = {}
    cache = models_dir / "problems"
    cache.mkdir(parents=True, exist_ok=True)
    for name in names:
        path = cache / f"{name}-{target}.pkl"
        if path.is_file():
            out[name] = pickle.loads(path.read_bytes())
            continue
        print(f"analysing {name} for {target}", file=sys.stderr, flush=True)
        out[name] = hetcc.analyse(str(model_path(name, models_dir)), target).problem
        path.write_bytes(pickle.dumps(out[name]))
    return out


def synthetic_problems(n: int, target: str) -> dict[str, PlanningProblem]:
    from synthetic import synthetic_problem

    rng = np.random.default_rng(1234)
    return {f"cnn{i}": synthetic_problem(int(rng.integers(10, 31)), seed=i, target=target) for i in range(n)}


def with_switch(problems: dict[str, PlanningProblem], target: str) -> dict[str, PlanningProblem]:
    """The problems carrying the board's switch costs (what ``hetcc compile`` attaches)."""
    from hetcc.targets import load_target

    by = {d.name: d.switch_ms for d in load_target(target).devices}
    return {n: p.replace(switch_ms=np.array([by.get(d, 0.0) for d in p.states.device])) for n, p in problems.items()}


def run_mix(size: int, i: int, seed: int, pool: dict[str, PlanningProblem], managers: list, options: dict,
            optimum_limit: int) -> dict[str, Any]:
    rng = np.random.default_rng([seed, size, i])
    names = [str(x) for x in rng.choice(sorted(pool), size=size, replace=False)]
    workload = WorkloadProblem(tuple(pool[n] for n in names), tuple(names))
    row: dict[str, Any] = {"size": size, "mix": i, "models": names, "managers": {}}
    for label, planner, opts in managers:
        given = {**options.get(planner.split(":")[0], {}), **opts}
        if planner == "optimum" and "limit" not in opts:
            given.setdefault("limit", optimum_limit)
        t0 = time.perf_counter()
        try:
            wp = plan(workload, Objective("overall"), planner, given, PlanContext(seed + i))
        except Exception as exc:          # a manager that refuses (optimum's bound) is recorded, not fatal
            row["managers"][label] = {"error": str(exc).splitlines()[0]}
            continue
        sc = wp.stats["score"]
        row["managers"][label] = {"T_norm": sc["T_norm"], "J": sc["J"], "O": sc["O"], "T_w": sc["T_w"],
                                  "decision_s": time.perf_counter() - t0, "pipelines": wp.stats["pipelines"]}
        if wp.stats.get("search"):        # fairboost's search: where it went on from, what it spent
            row["managers"][label]["search"] = wp.stats["search"]
    return row


def board_agent(target: str, given: Path | None, models_dir: Path, shipped: str) -> dict[str, Any]:
    """The agent trained on ``target``: ``given``, else the one this script trained before (cached under
    ``models_dir``), else trained now as a user runs it, with the shipped agent's command (``shipped``,
    e.g. ``hetcc train fairboost --target orangepi5 -o agent.pt --seed 0 --steps 20000``) for ``target``;
    resumable: a run cut short goes on from its checkpoint. Returns its path, sha256 and command."""
    import hashlib
    import shlex
    import subprocess

    from hetcc.planners.fairboost.agent import sha256_of

    words = shlex.split(shipped)
    if words[:3] != ["hetcc", "train", "fairboost"] or "--target" not in words or "-o" not in words:
        raise SystemExit(f"fairboost: the shipped agent's command {shipped!r} is not a hetcc train fairboost command")
    words[words.index("--target") + 1] = target
    command = " ".join(words)
    path = given or models_dir / "agents" / (
        f"fairboost-{target}-{hashlib.sha256(command.encode()).hexdigest()[:12]}.pt")
    words[words.index("-o") + 1] = str(path)
    if not path.is_file():
        if given is not None:
            raise SystemExit(f"fairboost: --transfer-agent {given} does not exist; train one with {command}")
        path.parent.mkdir(parents=True, exist_ok=True)
        resume = ["--resume"] if Path(str(path) + ".ckpt").is_file() else []
        print(f"training the {target} agent: {' '.join(words + resume)}", file=sys.stderr, flush=True)
        t0 = time.perf_counter()
        if subprocess.run([sys.executable, "-m", "hetcc.cli", *words[1:], *resume]).returncode != 0:
            raise SystemExit(f"fairboost: training the {target} agent failed (its message above); "
                             f"a run cut short resumes from {path}.ckpt")
        print(f"trained in {time.perf_counter() - t0:.0f} s", file=sys.stderr, flush=True)
    return {"path": str(path), "sha256": sha256_of(path),
            "command": command if given is None else None}


def training_record(path: Path, command: str | None = None) -> dict[str, Any]:
    """What an agent file says of its training run (FairBoost Fig. 7): the command, the run's size and
    time, and its curve (final reward minus the all-gpu baseline's, per 50 environment steps)."""
    import torch

    from hetcc.planners.fairboost.agent import sha256_of

    state = torch.load(path, map_location="cpu", weights_only=True)
    curve = [{k: float(c[k]) for k in ("step", "min", "mean", "max")} for c in state.get("curve") or []]
    return {"file": path.name, "sha256": sha256_of(path),
            "command": state.get("command") or command, "target": state.get("target"), "seed": state.get("seed"),
            "reward": (state.get("train_config") or {}).get("reward", "alg1"),   # before --reward: Alg. 1
            "steps": state.get("steps"), "updates": state.get("updates"), "episodes": state.get("episodes"),
            "seconds": state.get("seconds"), "curve": curve}


def plot(out: Path, summary: dict[str, Any], labels: list[str], transfer: dict[str, Any] | None,
         training: dict[str, Any]) -> list[str]:
    """The paper's figures from the results: O per manager and mix size (Figs. 9-11), the transfer
    (Figs. 12-13) and the training curves (Fig. 7); PNGs beside ``out``. None without matplotlib."""
    try:
        import matplotlib
    except ImportError:
        return []
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    paths: list[str] = []

    def bars(ax, summ: dict[str, Any], names: list[str], title: str) -> None:
        sizes = list(summ)
        width = 0.8 / max(1, len(names))
        for j, label in enumerate(names):
            ys = [summ[k].get(label, {}).get("O", 0.0) for k in sizes]
            ax.bar([i + j * width for i in range(len(sizes))], ys, width, label=label, color=plt.cm.tab20(j % 20))
        ax.set_xticks([i + 0.4 - width / 2 for i in range(len(sizes))], [f"{k} models" for k in sizes])
        ax.set_ylabel("mean O = T_norm x J", fontsize=8)
        ax.set_title(title, fontsize=9)
        ax.legend(fontsize=6, loc="upper left", bbox_to_anchor=(1.0, 1.0))

    def save(fig, name: str) -> None:
        fig.tight_layout()
        paths.append(str(out.with_name(f"{out.stem}-{name}.png")))
        fig.savefig(paths[-1], dpi=90, bbox_inches="tight")
        plt.close(fig)

    fig, ax = plt.subplots(figsize=(9, 3.6))
    bars(ax, summary, [x for x in labels if x not in ("fairboost-descent",)], "managers (FairBoost Figs. 9-11)")
    save(fig, "managers")
    if transfer:
        fig, ax = plt.subplots(figsize=(8, 3.4))
        bars(ax, transfer["summary"], [m["label"] for m in transfer["managers"]],
             f"transfer to {transfer['target']} (FairBoost Figs. 12-13)")
        save(fig, "transfer")
    if any(t.get("curve") for t in training.values()):
        fig, ax = plt.subplots(figsize=(7, 3.2))
        for board, t in training.items():
            xs = [c["step"] for c in t["curve"]]
            ys = np.convolve([c["mean"] for c in t["curve"]], np.ones(20) / 20, mode="same") if xs else []
            ax.plot(xs, ys, label=f"{board} (moving mean of 20 points)")
        ax.axhline(0.0, color="grey", lw=0.5)
        ax.set_xlabel("environment step", fontsize=8)
        ax.set_ylabel("final reward - all-gpu's", fontsize=8)
        ax.set_title("training (FairBoost Fig. 7)", fontsize=9)
        ax.legend(fontsize=6)
        save(fig, "training")
    return paths


def transfer_losses(summary: dict[str, Any]) -> dict[str, Any]:
    """Per mix size: the transferred planner's and agent's loss of mean O against the native one's."""
    out = {}
    for size, per in summary.items():
        row = {}
        for key, moved, native in (("planner", TRANSFERRED, NATIVE),
                                   ("agent_alone", "agent alone, orangepi5's", "agent alone, its own")):
            a, b = per.get(moved, {}).get("O"), per.get(native, {}).get("O")
            row[key] = 1.0 - a / b if a is not None and b else None
        row["planner_met"] = row["planner"] is not None and row["planner"] <= TRANSFER_LOSS_TARGET
        out[size] = row
    return out


def summarise(rows: list[dict[str, Any]], labels: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for size in sorted({r["size"] for r in rows}):
        mine = [r for r in rows if r["size"] == size]
        per: dict[str, Any] = {}
        for label in labels:
            ok = [r["managers"][label] for r in mine if "O" in r["managers"].get(label, {})]
            if not ok:
                per[label] = {"mixes": 0}
                continue
            per[label] = {"mixes": len(ok), **{k: statistics.fmean(x[k] for x in ok) for k in ("T_norm", "J", "O")},
                          "decision_s": statistics.median(x["decision_s"] for x in ok)}
        # each manager's gap to the finest optimum that ran on a mix (median of O / O_optimum - 1)
        refs = {id(r): next((o for o in OPTIMA if "O" in r["managers"].get(o, {})), None) for r in mine}
        for label in labels:
            gaps = [r["managers"][label]["O"] / r["managers"][refs[id(r)]]["O"] - 1.0 for r in mine
                    if refs[id(r)] and "O" in r["managers"].get(label, {}) and r["managers"][refs[id(r)]]["O"] > 0]
            if gaps and label in per:
                per[label]["gap_to_optimum_median"] = statistics.median(gaps)
        per["optimum_reference"] = sorted({v for v in refs.values() if v})
        out[str(size)] = per
    return out


def show(summary: dict[str, Any], labels: list[str]) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console(width=160)
    for size, per in summary.items():
        t = Table(title=f"mixes of {size} models: means (FairBoost Table 3 metrics, contention model)")
        for col in ("manager", "mixes", "T_norm", "J", "O", "O vs optimum", "decision s", "paper J",
                    "paper: FairBoost's O over it"):
            t.add_column(col, justify="left" if col == "manager" else "right")
        for label in labels:
            v = per.get(label, {})
            if not v.get("mixes"):
                t.add_row(label, "0", *["-"] * 7)
                continue
            gap = v.get("gap_to_optimum_median")
            t.add_row(label, str(v["mixes"]), f"{v['T_norm']:.3f}", f"{v['J']:.3f}", f"{v['O']:.3f}",
                      "-" if gap is None else f"{gap:+.1%}", f"{v['decision_s']:.3g}",
                      str(PAPER["jain"].get(size, {}).get(label, "-")),
                      PAPER["o_gain_of_fairboost"].get(size, {}).get(label, "-"))
        console.print(t)


def board_pool(args: argparse.Namespace, target: str, source: str) -> dict[str, PlanningProblem]:
    """The pool the mixes draw from, analysed for ``target``: the zoo models (``--models``) or synthetic CNNs."""
    if source == "zoo":
        names = [m.strip() for m in args.models.split(",")] if args.models else list(ZOO_MODELS)
        return zoo_problems(names, target, args.models_dir)
    return synthetic_problems(6, target)


def run_mixes(what: str, args: argparse.Namespace, sizes: tuple[int, ...], mixes: int,
              pool: dict[str, PlanningProblem], managers: list, ga: dict[str, int]) -> list[dict[str, Any]]:
    """Every seeded mix of every size planned by every manager (``what`` prefixes the progress lines)."""
    rows = []
    for size in sizes:
        for i in range(mixes):
            print(f"{what}mix of {size}: {i + 1}/{mixes}", file=sys.stderr, flush=True)
            rows.append(run_mix(size, i, args.seed, pool, managers, {"ga": ga}, args.optimum_limit))
    return rows


def run_transfer(args: argparse.Namespace, sizes: tuple[int, ...], mixes: int, ga: dict[str, int],
                 source: str, shipped: str) -> dict[str, Any]:
    """Sec. 5.4: the same seeded mixes on ``args.transfer``, the shipped agent (trained by the command
    ``shipped``) against one trained there."""
    agent = board_agent(args.transfer, args.transfer_agent, args.models_dir, shipped)
    pool = with_switch(board_pool(args, args.transfer, source), args.transfer)
    managers = [(label, planner, {k: agent["path"] if v == AGENT_HERE else v for k, v in opts.items()})
                for label, planner, opts in TRANSFER]
    labels = [label for label, _, _ in managers]
    rows = run_mixes(f"transfer to {args.transfer}, ", args, sizes, mixes, pool, managers, ga)
    summary = summarise(rows, labels)
    show(summary, labels)
    losses = transfer_losses(summary)
    for size, v in losses.items():
        loss = {k: "-" if v[k] is None else f"{v[k]:.1%}" for k in ("planner", "agent_alone")}
        print(f"transfer, {size} models: the orangepi5 agent loses {loss['planner']} of mean O against the "
              f"{args.transfer} agent's (target <= {TRANSFER_LOSS_TARGET:.0%}); "
              f"the agents alone: {loss['agent_alone']}")
    return {"target": args.transfer, "agent": {k: v for k, v in agent.items() if k != "path"},
            "training": training_record(Path(agent["path"]), agent["command"]),
            "agent_file": Path(agent["path"]).name,
            "managers": [{"label": label, "planner": p, "options": {k: ("AGENT" if v == agent["path"] else v)
                                                                    for k, v in o.items()}}
                         for label, p, o in managers],
            "loss_target": TRANSFER_LOSS_TARGET, "losses": losses, "summary": summary, "mixes": rows}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="2 mixes of 3 synthetic CNNs, a small GA")
    ap.add_argument("--mixes", type=int, default=10, help="mixes per size (default 10)")
    ap.add_argument("--sizes", default="3,4,5", help="models per mix (default 3,4,5)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--target", default="orangepi5")
    ap.add_argument("--source", choices=("zoo", "synthetic"), default=None,
                    help="zoo: the pool of zoo CNNs analysed for the target (default); synthetic: random CNNs "
                         "(the default with --quick)")
    ap.add_argument("--models", default=None, help="comma-separated zoo models (default: the pool above)")
    ap.add_argument("--ga-population", type=int, default=40)
    ap.add_argument("--ga-generations", type=int, default=40)
    ap.add_argument("--optimum-limit", type=int, default=20_000,
                    help="optimum runs on mixes whose space is at most this many combinations (default 20000)")
    ap.add_argument("--models-dir", type=Path, default=MODELS_DIR, help="exported-model and analysis cache")
    ap.add_argument("--transfer", default=None, metavar="TARGET",
                    help="board the orangepi5 agent is transferred to (default odroid-n2plus, none with --quick; "
                         "none: skip)")
    ap.add_argument("--transfer-agent", type=Path, default=None, metavar="FILE",
                    help="an agent trained on the transfer board (default: trained here once, cached)")
    ap.add_argument("--out", "-o", type=Path, default=None,
                    help=f"JSON path (default benchmarks/results/{SCRIPT}.json, {SCRIPT}-quick.json with --quick)")
    args = ap.parse_args(argv)
    source = args.source or ("synthetic" if args.quick else "zoo")
    mixes = 2 if args.quick else args.mixes
    sizes = (3,) if args.quick else tuple(int(s) for s in args.sizes.split(","))
    ga = {"population": 8, "generations": 4} if args.quick else {"population": args.ga_population,
                                                                  "generations": args.ga_generations}
    if mixes < 1 or min(sizes) < 2:
        print("error: --mixes must be >= 1 and every --sizes entry >= 2", file=sys.stderr)
        return 2
    args.transfer = args.transfer or ("none" if args.quick else "odroid-n2plus")
    for flag, board in (("--target", args.target), ("--transfer", args.transfer)):
        if board != "none":
            from hetcc.core.errors import HetccError
            from hetcc.targets import load_target

            try:
                load_target(board)
            except HetccError as exc:      # before any mix is planned, not after
                print(f"error: {flag} {board}: {exc}", file=sys.stderr)
                return 2
    date = utc_now()
    pool = board_pool(args, args.target, source)
    if max(sizes) > len(pool):
        print(f"error: a mix of {max(sizes)} models needs a pool of as many; it has {len(pool)}", file=sys.stderr)
        return 2
    pool = with_switch(pool, args.target)
    managers = MANAGERS + ([] if args.quick else FAIRBOOST)
    labels = [label for label, _, _ in managers]
    rows = run_mixes("", args, sizes, mixes, pool, managers, ga)
    summary = summarise(rows, labels)
    show(summary, labels)
    transfer, training = None, {}
    if not args.quick or args.transfer != "none":       # the shipped agent's file, read once
        from hetcc.planners.fairboost import DEFAULT_AGENT

        shipped = training_record(DEFAULT_AGENT)
        if not args.quick:
            training["orangepi5"] = shipped
    if args.transfer != "none":
        transfer = run_transfer(args, sizes, mixes, ga, source, shipped["command"])
        training[transfer["target"]] = transfer.pop("training")
    out = args.out or RESULTS_DIR / (f"{SCRIPT}-quick.json" if args.quick else f"{SCRIPT}.json")
    plots = [] if args.quick else plot(out, summary, labels, transfer, training)
    write_json({"script": SCRIPT, "date": date, "machine": machine_info(),
                "args": {"quick": args.quick, "mixes": mixes, "sizes": list(sizes), "seed": args.seed,
                         "target": args.target, "source": source, "models": sorted(pool), "ga": ga,
                         "optimum_limit": args.optimum_limit},
                "argv": [a for a in (sys.argv[1:] if argv is None else argv)],
                "managers": [{"label": label, "planner": p, "options": o} for label, p, o in managers],
                "objective": "overall", "paper": PAPER,
                "paper_ratios": {size: {k: paper_ratio(v) for k, v in d.items()}
                                 for size, d in PAPER["o_gain_of_fairboost"].items()},
                "summary": summary, "mixes": rows, "transfer": transfer, "training": training,
                "plots": [Path(x).name for x in plots]}, out)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
