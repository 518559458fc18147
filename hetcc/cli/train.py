"""``hetcc train fairboost --target orangepi5 -o agent.pt`` (FairBoost's agent),
``hetcc train vqvae -o vqvae.pt`` (its VQ-VAE): the command line of ``hetcc.planners.fairboost.train``;
and ``hetcc train autoscale --target mi8pro-edge-cloud -o qtable.json`` (AutoScale's Q-table, trained
in the simulated environment of ``hetcc.experiments.autoscale``; ``--runs``, ``--transfer-from``,
``--hyper``).

The models are the zoo's (``--models`` picks some), analysed for the target once and cached
(``$HETCC_CACHE_DIR/fairboost/``); the VQ-VAE is the shipped one unless ``--vqvae`` names another.
Training is seeded, shows a progress bar with the reward, writes a checkpoint beside the output
(``OUTPUT.ckpt``) every 1,000 steps and on Ctrl-C, and ``--resume`` continues from it.
"""
from __future__ import annotations

import hashlib
import io
import pickle
import sys
import time
from pathlib import Path
from typing import Any

from hetcc.cli.common import check_output_file
from hetcc.core.errors import UsageError
from hetcc.core.limits import SEED_MAX

#: the most --steps takes
STEPS_MAX = 10_000_000


def add_arguments(parser: Any) -> Any:
    from hetcc.cli.common import int_in

    parser.add_argument("what", choices=("fairboost", "vqvae", "autoscale"),
                        help="fairboost: the Rainbow-DQN agent; vqvae: the layer encoder it reads through; "
                             "autoscale: AutoScale's Q-table (hetcc.qtable/1 JSON)")
    parser.add_argument("--target", "-t", help="board the agent learns (default orangepi5; autoscale: "
                        "mi8pro-edge-cloud)")
    parser.add_argument("-o", "--output", required=True, help="file to write (torch.save; read with weights_only; "
                        "autoscale: JSON)")
    parser.add_argument("--seed", type=int_in(0, SEED_MAX), default=0, help="seed of the whole run (default 0)")
    parser.add_argument("--steps", type=int_in(1, STEPS_MAX),
                        help="environment steps (fairboost, default 20000) or gradient steps (vqvae, default 1500)")
    parser.add_argument("--models", metavar="A,B,...", help="zoo models to learn on (default: every zoo model; "
                        "autoscale: the zoo's networks of AutoScale Table 3, and .onnx files too)")
    parser.add_argument("--min-models", type=int_in(1, 64), default=3, help="fewest models in a training mix (3)")
    parser.add_argument("--max-models", type=int_in(1, 64), default=5,
                        help="most models in a mix, and what the agent's observation holds (5, the paper's)")
    parser.add_argument("--warmup", type=int_in(0, STEPS_MAX), help="steps before learning starts (default 1000)")
    parser.add_argument("--vqvae", metavar="FILE", help="VQ-VAE state (default: the shipped one)")
    parser.add_argument("--reward", choices=("overall", "alg1"), default=None,
                        help="fairboost: what the agent learns to raise: overall, log O = T_norm x J (default; the "
                             "planners' objective), or alg1, FairBoost's Algorithm 1 reward")
    parser.add_argument("--resume", action="store_true", help="continue from OUTPUT.ckpt (same options)")
    parser.add_argument("--runs", type=int_in(1, 100_000),
                        help="autoscale: inferences per network per runtime-variance state (default 100, AutoScale "
                             "Sec. 5.3)")
    parser.add_argument("--transfer-from", metavar="QTABLE",
                        help="autoscale: start from a table trained on another board (AutoScale Fig. 14's transfer)")
    parser.add_argument("--hyper", action="append", metavar="KEY=VALUE", default=None,
                        help="autoscale: a hyper-parameter the table is trained with and keeps (repeatable): "
                             "learning_rate (lr), discount, epsilon (Alg. 1; 0.9, 0.1, 0.1), alpha, beta (Eq. 5's "
                             "weights of the QoS slack and the accuracy; 0.1 each), qos_penalty (100)")
    parser.add_argument("--quiet", "-q", action="store_true", help="no progress bar")
    return parser


def _names(args: Any) -> list[str]:
    from hetcc.compiler.zoo import ZOO

    if not args.models and args.what == "autoscale":
        from hetcc.experiments.autoscale.models import DEFAULT_MODELS

        return list(DEFAULT_MODELS)
    if not args.models:
        return list(ZOO)
    names = [n.strip() for n in args.models.split(",") if n.strip()]
    bad = [n for n in names if n not in ZOO and not (args.what == "autoscale" and n.endswith(".onnx")
                                                     and Path(n).is_file())]
    if bad:
        raise UsageError(f"--models: {bad[0]!r} is not a zoo model (hetcc zoo list)"
                         + (" nor an .onnx file" if args.what == "autoscale" else ""))
    if len(set(names)) < 2 and args.what == "fairboost":
        raise UsageError("--models: give at least two models to mix")
    return names


def _problems(names: list[str], target: str, console: Any) -> dict[str, Any]:
    """name -> the PlanningProblem of the zoo model on ``target`` (with the board's switch costs),
    from the cache when this version analysed it before."""
    import hetcc
    from hetcc.compiler.api import analyse, workload_problem
    from hetcc.core.paths import cache_dir
    from hetcc.files.atomic import atomic_write_bytes

    tpath = Path(target)
    board = tpath.read_bytes() if tpath.is_file() else target.encode()
    out: dict[str, Any] = {}
    for name in names:
        key = hashlib.sha256(b"\0".join([hetcc.__version__.encode(), board, name.encode()])).hexdigest()[:24]
        path = cache_dir() / "fairboost" / f"{name}-{key}.pkl"
        if path.is_file():
            try:
                out[name] = pickle.loads(path.read_bytes())
                continue
            except Exception:   # noqa: BLE001 - a stale or torn cache entry is analysed again
                pass
        if console is not None:
            console.print(f"analysing {name} for {target}", highlight=False)
        problem = workload_problem([analyse(name, target)]).problems[0].replace(hardware=None, name=name)
        atomic_write_bytes(path, pickle.dumps(problem, protocol=pickle.HIGHEST_PROTOCOL))
        out[name] = problem
    return out


def _bar(quiet: bool, total: int, what: str) -> Any:
    if quiet:
        return None
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    return Progress(TextColumn(f"[bold]{what}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                    TextColumn("{task.fields[status]}"), transient=False)


def _save(state: dict, out: Path) -> str:
    import torch

    from hetcc.files.atomic import atomic_write_bytes

    buf = io.BytesIO()
    torch.save(state, buf)
    data = buf.getvalue()
    atomic_write_bytes(out, data)
    return hashlib.sha256(data).hexdigest()


def _command(args: Any, steps: int) -> str:
    parts = ["hetcc train", args.what]
    if args.what == "fairboost":
        parts += ["--target", args.target]
    parts += ["-o", Path(args.output).name, "--seed", str(args.seed), "--steps", str(steps)]
    if args.models:
        parts += ["--models", args.models]
    if args.what == "fairboost":
        if (args.min_models, args.max_models) != (3, 5):
            parts += ["--min-models", str(args.min_models), "--max-models", str(args.max_models)]
        if args.warmup is not None:
            parts += ["--warmup", str(args.warmup)]
        if args.vqvae:
            parts += ["--vqvae", Path(args.vqvae).name]
        if args.reward not in (None, "overall"):
            parts += ["--reward", args.reward]
    return " ".join(parts)


def cmd_train(args: Any) -> int:
    out = check_output_file(args.output, "agent.pt")     # before any model is analysed, not at the first checkpoint
    if args.reward is not None and args.what != "fairboost":
        raise UsageError(f"--reward is an option of hetcc train fairboost; {args.what} has no reward to choose")
    if args.what == "autoscale":
        return _train_autoscale(args, out, time.perf_counter())
    for flag, value in (("--runs", args.runs), ("--transfer-from", args.transfer_from), ("--hyper", args.hyper)):
        if value is not None:
            raise UsageError(f"{flag} is an option of hetcc train autoscale; {args.what} takes --steps")
    if args.target is None:
        args.target = "orangepi5"
    if args.min_models > args.max_models:
        raise UsageError(f"--min-models {args.min_models} is more than --max-models {args.max_models}")
    names = _names(args)
    try:
        import torch  # noqa: F401
        import torchrl  # noqa: F401
        import gymnasium  # noqa: F401
    except ImportError as exc:
        raise UsageError(f"hetcc train needs the learn extra ({exc.name} is missing): pip install 'hetcc[learn]'") \
            from None
    from rich.console import Console

    console = None if args.quiet else Console(stderr=True)
    t0 = time.perf_counter()
    problems = _problems(names, args.target, console)
    if args.what == "vqvae":
        return _train_vqvae(args, problems, out, t0)
    return _train_fairboost(args, problems, out, t0)


def _train_vqvae(args: Any, problems: dict[str, Any], out: Path, t0: float) -> int:
    import numpy as np

    from hetcc.planners.fairboost.features import layer_vectors
    from hetcc.planners.fairboost.vqvae import PAPER_DNNS, train_vqvae

    steps = args.steps or 1500
    vectors = np.concatenate([layer_vectors(p) for p in problems.values()])
    bar = _bar(args.quiet, steps, "vqvae")
    task = bar.add_task("vqvae", total=steps, status="") if bar is not None else None

    def progress(step: int, loss: float) -> None:
        if bar is not None:
            bar.update(task, completed=step, status=f"mse {loss:.2e}")

    missing = sorted(k for k, v in PAPER_DNNS.items() if v is None)
    meta = {"command": _command(args, steps), "models": sorted(problems), "paper_dnns": dict(PAPER_DNNS),
            "paper_dnns_missing": missing}
    if bar is not None:
        with bar:
            result = train_vqvae(vectors, seed=args.seed, steps=steps, progress=progress, meta=meta)
    else:
        result = train_vqvae(vectors, seed=args.seed, steps=steps, meta=meta)
    digest = _save(result.state, out)
    print(f"wrote {out} (sha256 {digest}) in {time.perf_counter() - t0:.0f} s: {len(vectors)} layers of "
          f"{len(problems)} models, test MSE {result.test_mse:.2e}, perplexity {result.perplexity:.1f} "
          f"({result.used_codes} codes used)")
    return 0


def _train_fairboost(args: Any, problems: dict[str, Any], out: Path, t0: float) -> int:
    import torch

    from hetcc.planners.fairboost import DEFAULT_AGENT
    from hetcc.planners.fairboost.agent import NetConfig, sha256_of
    from hetcc.planners.fairboost.env import ROWS
    from hetcc.planners.fairboost.train import Pool, TrainConfig, train_agent
    from hetcc.planners.fairboost.vqvae import Codec
    from hetcc.planners.multi.plans import mix_of
    from hetcc.planners.problem import WorkloadProblem

    vq_path = Path(args.vqvae) if args.vqvae else DEFAULT_AGENT.with_name("vqvae.pt")
    if not vq_path.is_file():
        raise UsageError(f"--vqvae {str(vq_path)!r} does not exist; train one with hetcc train vqvae -o FILE")
    try:
        vq_state = torch.load(vq_path, map_location="cpu", weights_only=True)
        codec = Codec(vq_state)
    except Exception as exc:   # noqa: BLE001 - an unreadable state is one sentence
        raise UsageError(f"--vqvae {str(vq_path)!r} is not a FairBoost VQ-VAE state ({exc})") from None
    first = next(iter(problems.values()))
    devices = mix_of(WorkloadProblem((first,), ("m",))).devices
    steps = args.steps or TrainConfig.steps
    config = TrainConfig(steps=steps, seed=args.seed, min_models=args.min_models, max_models=args.max_models,
                         reward=args.reward or "overall",
                         **({"warmup": args.warmup} if args.warmup is not None else {}))
    net = NetConfig(devices=len(devices), max_models=args.max_models, rows=ROWS)
    pool = Pool.build(problems, codec, net.rows)
    bar = _bar(args.quiet, steps, "fairboost")
    task = bar.add_task("fairboost", total=steps, status="") if bar is not None else None

    def progress(step: int, info: dict) -> None:
        if bar is not None and (step % 25 == 0 or step == steps):
            bar.update(task, completed=step, status=f"episodes {info['episodes']}  reward {info['reward']:+.3f}  "
                                                     f"loss {info['loss']:.3f}  cache {info['cache_hits']:.0%}")

    meta = {"command": _command(args, steps), "target": args.target, "seed": args.seed,
            "vqvae_sha256": sha256_of(vq_path)}
    ckpt = out.with_name(out.name + ".ckpt")
    if bar is not None:
        with bar:
            state = train_agent(pool, vq_state, config, net, checkpoint=ckpt, resume=args.resume, progress=progress,
                                meta=meta)
    else:
        state = train_agent(pool, vq_state, config, net, checkpoint=ckpt, resume=args.resume, meta=meta)
    digest = _save(state, out)
    curve = state["curve"][-20:]
    gain = sum(c["mean"] for c in curve) / len(curve) if curve else float("nan")
    print(f"wrote {out} (sha256 {digest}) in {time.perf_counter() - t0:.0f} s: {state['steps']} steps, "
          f"{state['episodes']} episodes, last 1000 steps' final reward {gain:+.3f} over the all-gpu baseline's; "
          f"checkpoint {ckpt}", file=sys.stdout)
    return 0


#: ``--hyper`` names the fields of ``hetcc.runtime.autoscale.Hyper``; ``lr`` is short for learning_rate
HYPER_ALIASES = {"lr": "learning_rate"}


def _hyper(items: list[str], base: Any = None) -> Any:
    """The ``Hyper`` of ``--hyper KEY=VALUE`` items over ``base`` (the defaults, or a transferred
    table's); UsageError naming the item that is not one."""
    import dataclasses

    from hetcc.runtime.autoscale import Hyper
    from hetcc.runtime.errors import PolicyError

    names = [f.name for f in dataclasses.fields(Hyper)]
    changes: dict[str, float] = {}
    for item in items:
        key, sep, value = item.partition("=")
        key = HYPER_ALIASES.get(key.strip(), key.strip())
        if not sep or key not in names:
            raise UsageError(f"--hyper {item!r}: expected KEY=VALUE with KEY one of {', '.join(names)} (or lr)")
        try:
            changes[key] = float(value)
        except ValueError:
            raise UsageError(f"--hyper {item!r}: {value.strip()!r} is not a number") from None
    try:
        return (base or Hyper()).replace(**changes)
    except PolicyError as e:
        raise UsageError(f"--hyper: {e}") from None


def _train_autoscale(args: Any, out: Path, t0: float) -> int:
    import json

    if args.steps is not None:
        raise UsageError("--steps: hetcc train autoscale counts --runs (inferences per network per runtime-variance "
                         "state, default 100)")
    if args.target is None:
        args.target = "mi8pro-edge-cloud"
    names = _names(args)
    try:
        import gymnasium  # noqa: F401
    except ImportError:
        raise UsageError("hetcc train autoscale needs gymnasium (the learn extra): pip install 'hetcc[learn]'") from None
    from hetcc.experiments.autoscale.models import load_board
    from hetcc.experiments.autoscale.train import train
    from hetcc.files.atomic import atomic_write_bytes
    from hetcc.runtime.autoscale import QTable
    from hetcc.runtime.errors import PolicyError

    init = None
    if args.transfer_from:
        try:
            init = QTable.load(args.transfer_from)
        except PolicyError as e:
            raise UsageError(f"--transfer-from: {e}") from None
    hyper = _hyper(args.hyper or [], init.hyper if init is not None else None)
    board = load_board(args.target, names, hyper=hyper)
    if init is not None:
        init = init.transfer(board.action_info)
        init.hyper = hyper
    runs = args.runs or 100
    total = 64 * len(board.models) * runs
    bar = _bar(args.quiet, total, "autoscale")
    task = bar.add_task("autoscale", total=total, status="") if bar is not None else None

    def progress(done: int, _total: int) -> None:
        if bar is not None:
            bar.update(task, completed=done)

    if bar is not None:
        with bar:
            qt = train(board, runs=runs, seed=args.seed, qtable=init, progress=progress)
    else:
        qt = train(board, runs=runs, seed=args.seed, qtable=init)
    qt.trained["command"] = " ".join(["hetcc train autoscale --target", args.target, "-o", out.name, "--seed",
                                      str(args.seed), "--runs", str(runs)]
                                     + (["--models", args.models] if args.models else [])
                                     + (["--transfer-from", Path(args.transfer_from).name]
                                        if args.transfer_from else [])
                                     + [f"--hyper {item}" for item in args.hyper or []])
    if args.transfer_from:
        qt.trained["transfer_from"] = Path(args.transfer_from).name
    data = (json.dumps(qt.to_json(), indent=1, allow_nan=False) + "\n").encode()
    atomic_write_bytes(out, data)
    digest = hashlib.sha256(data).hexdigest()
    print(f"wrote {out} (sha256 {digest}) in {time.perf_counter() - t0:.1f} s: {qt.trained['inferences']} inferences "
          f"of {len(board.models)} models on {board.target}, {len(board.actions)} actions, {len(qt.states)} states "
          "learned", file=sys.stdout)
    return 0


__all__ = ["add_arguments", "cmd_train"]
