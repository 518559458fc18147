"""Same artifacts before and after a refactoring: compile zoo models on every modelled target and
hash every file of every artifact.

A renovation that moves code must not change what hetcc writes. This script compiles each model
(exported once from the zoo into ``--models-dir``, so both runs read the same bytes) on each
modelled built-in target (``host`` is measured, so its plans follow the machine's timing and are
left out), with the latency objective and with the energy objective, and records the sha256 of
every file in each artifact; it also records every command's ``--help`` and the one-line error
of a set of bad inputs, which must not change either. ``--source DIR`` runs another checkout's code (a tree laid out as the
installed package: ``DIR/hetcc/...``, e.g. made with ``git archive``); ``--against OLD.json``
compares with an earlier run and exits 1 on any difference.

    python benchmarks/same_artifacts.py -o /tmp/new.json --against /tmp/old.json
    python benchmarks/same_artifacts.py --source /tmp/old-tree -o /tmp/old.json
    python benchmarks/same_artifacts.py --quick        # squeezenet1_1 only (the tests run this)
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

MODELLED = ("hikey970", "host-analytical", "jetson-tx2", "mi8pro-edge-cloud", "odroid-n2plus", "orangepi5")
CORE = ("resnet50", "mobilenet_v2", "mobilenet_v2_1.3", "mobilenet_v2_1.4", "mnasnet0_5", "mnasnet1_0",
        "mnasnet1_3", "vgg16", "squeezenet1_1", "efficientnet_b0", "inception_v3", "googlenet")
OBJECTIVES = ("latency", "energy")
COMMANDS = ("", "compile", "planners", "run", "inspect", "targets", "sweep", "tune", "profile", "calibrate", "zoo",
            "zoo list", "zoo export")
#: bad inputs (run in a scratch folder holding bad.onnx and bad.toml): each one line and an exit code
BAD = ("compile nonexist.onnx", "compile bad.onnx", "compile squeezenet1_1 --target nope",
       "compile squeezenet1_1 --planner nope", "compile squeezenet1_1 --deadline 1ms --target hikey970 -o o",
       "run nodir", "inspect bad.onnx", "sweep bad.toml -o x", "tune dp bad.toml -o x.toml",
       "calibrate hikey970 bad.toml -o f.toml", "profile bad.onnx -o x.csv", "zoo export nope -o x.onnx",
       "compile squeezenet1_1 --seed -1", "planners nope")


def hetcc(args: list[str], source: str | None, cwd: str | None = None) -> subprocess.CompletedProcess:
    env = dict(os.environ, COLUMNS="100")
    if source:
        env["PYTHONPATH"] = source + os.pathsep + env.get("PYTHONPATH", "")
    return subprocess.run([sys.executable, "-m", "hetcc.cli", *args], capture_output=True, text=True, env=env,
                          timeout=1800, cwd=cwd)


def texts(source: str | None, scratch: Path) -> dict[str, str]:
    """Every command's help, and each bad input's output and exit code."""
    (scratch / "bad.onnx").write_text("x")
    (scratch / "bad.toml").write_text("schema = 1\n")
    out = {}
    for c in COMMANDS:
        r = hetcc([*c.split(), "--help"], source, str(scratch))
        out[f"help {c}".strip()] = r.stdout + r.stderr
    for b in BAD:
        r = hetcc(b.split(), source, str(scratch))
        out[b] = f"{r.stdout}{r.stderr}exit {r.returncode}"
    return out


def digest(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-o", "--output", required=True, help="JSON file of the hashes")
    ap.add_argument("--source", help="run the code of this tree (PYTHONPATH) instead of the installed hetcc")
    ap.add_argument("--against", help="an earlier run's JSON: exit 1 on any difference")
    ap.add_argument("--models", help="comma-separated zoo names (default: the core set)")
    ap.add_argument("--targets", help="comma-separated targets (default: every modelled built-in)")
    ap.add_argument("--models-dir", default=str(Path(__file__).resolve().parent / ".models"),
                    help="where the zoo exports are kept and reused")
    ap.add_argument("--quick", action="store_true", help="squeezenet1_1 on two targets")
    args = ap.parse_args(argv)
    models = ["squeezenet1_1"] if args.quick else (args.models.split(",") if args.models else list(CORE))
    targets = (["hikey970", "orangepi5"] if args.quick else
               (args.targets.split(",") if args.targets else list(MODELLED)))
    mdir = Path(args.models_dir)
    mdir.mkdir(parents=True, exist_ok=True)
    rows: dict[str, dict] = {}
    with tempfile.TemporaryDirectory() as tmp:
        said = texts(args.source, Path(tmp))
        for model in models:
            path = mdir / f"{model}-seed0.onnx"
            if not path.exists():
                r = hetcc(["zoo", "export", model, "-o", str(path)], args.source)
                if r.returncode:
                    print(f"export {model} failed: {r.stderr.strip()}", file=sys.stderr)
                    return 2
            for target in targets:
                for objective in OBJECTIVES:
                    key = f"{model}/{target}/{objective}"
                    out = Path(tmp) / key.replace("/", "_")
                    r = hetcc(["compile", str(path), "--target", target, "--objective", objective,
                               "-o", str(out), "-q"], args.source)
                    rows[key] = ({"exit": 0, "files": digest(out)} if r.returncode == 0 else
                                 {"exit": r.returncode, "error": r.stderr.strip().splitlines()[-1:]})
                    print(f"{key:55s} exit {r.returncode}  {len(rows[key].get('files', {}))} files", flush=True)
    Path(args.output).write_text(json.dumps({"models": models, "targets": targets, "artifacts": rows, "texts": said},
                                            indent=1, sort_keys=True) + "\n")
    if not args.against:
        return 0
    before = json.loads(Path(args.against).read_text())
    old = before["artifacts"]
    changed = [k for k in sorted(set(before.get("texts", {})) | set(said))
               if "texts" in before and before["texts"].get(k) != said.get(k)]
    for k in changed:
        print(f"DIFFERS text of `hetcc {k}`")
    if "texts" in before:
        print(f"{len(said) - len(changed)} of {len(said)} help texts and error messages the same")
    differ = [k for k in sorted(set(old) | set(rows)) if old.get(k) != rows.get(k)]
    for k in differ:
        a, b = old.get(k, {}), rows.get(k, {})
        files = sorted(f for f in set(a.get("files", {})) | set(b.get("files", {}))
                       if a.get("files", {}).get(f) != b.get("files", {}).get(f))
        print(f"DIFFERS {k}: {', '.join(files) or (a.get('exit'), b.get('exit'))}")
    same = len(rows) - len([k for k in differ if k in rows])
    print(f"{same} of {len(rows)} artifacts byte-identical to {args.against}")
    return 1 if differ or changed else 0


if __name__ == "__main__":
    sys.exit(main())
