"""Benchmark pages: every ``benchmarks/results/*.json`` rendered as Markdown, never hand-edited.

Each result file becomes ``docs/benchmarks/<stem>.md`` (a title, what the benchmark measures, from
the producing script's docstring, the command, the machine, the date and the result tables), and
``docs/benchmarks/index.md`` lists every page. The PNG figures beside a result are copied into
``docs/benchmarks/img/`` so the pages link them inside the docs tree. The README's region between
``<!-- results:start -->`` and ``<!-- results:end -->`` (when it has one) gets one headline table.
A page elsewhere under ``docs/`` shows a result's section between ``<!-- table: STEM#SECTION -->`` and
``<!-- /table -->`` (SECTION: a heading of ``docs/benchmarks/STEM.md``): the region is that section's body
with a link to its page and the date, so the numbers a prose page quotes are the JSON's, regenerated too.

    python benchmarks/tables.py            # write the pages (and the README region)
    python benchmarks/tables.py --check    # exit 1 naming each file that differs from what it would write

Standard library only (no hetcc, no numpy): it runs on a plain ``python3``. The scripts' docstrings
are read as text (``ast``), never imported. ``*-quick*.json`` (test outputs) are skipped.
"""
from __future__ import annotations

import argparse
import ast
import json
import math
import os
import re
import shlex
import statistics
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
START, END = "<!-- results:start -->", "<!-- results:end -->"
#: an embedded section of a result page in another docs page (``<!-- table: STEM#SECTION -->`` ... ``<!-- /table -->``)
EMBED = re.compile(r"(<!-- table: (?P<stem>[\w.-]+)#(?P<section>[^>]+?) -->)(?P<body>.*?)(<!-- /table -->)", re.S)
DASH = "–"

# the zoo's core set (hetcc.zoo, entries with core=True): the default model list of compile.py and
# verify_zoo.py, and exact_vs_spine.py's MODELS; kept here because this script may not import hetcc
CORE_MODELS = ["resnet50", "mobilenet_v2", "mobilenet_v2_1.3", "mobilenet_v2_1.4", "mnasnet0_5", "mnasnet1_0",
               "mnasnet1_3", "vgg16", "squeezenet1_1", "efficientnet_b0", "inception_v3", "googlenet"]
HERTI_WORKLOADS = ["IN", "MN-1.0", "MN-1.3", "MO-1.3", "MO-1.4", "RN", "VGG"]

TITLES = {
    "compile": "Compile time",
    "concurrent_runs": "The contention model against real concurrent runs",
    "contention": "The contention model against a discrete-event simulation",
    "evosh": "EvoSh's evaluation",
    "exact_vs_spine": "`exact` and `dp` against the spine",
    "fairboost": "FairBoost's evaluation: multi-DNN managers",
    "fidelity": "Fidelity to MOSAIC",
    "autoscale_real": "AutoScale on this machine: the policy against Opt",
    "autoscale": "AutoScale in simulation: the paper's evaluation",
    "herti": "HERTI's evaluation",
    "host_fit": "The analytical host fitted to a profile",
    "hostile": "Hostile input",
    "offload_shaping": "Offload traffic shaping against the link tables",
    "planners": "Planner speed",
    "runtime_overhead": "Runtime overhead",
    "sweep_agreement": "Sweep table against single compiles",
    "sweep_scaling": "Sweep scaling on Ray",
    "verify_zoo": "Zoo verification",
}


# ---- formatting ----------------------------------------------------------------------------------

def is_num(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def cell(x: Any) -> str:
    """A table cell for a plain value (numbers use ``sig``)."""
    if x is None:
        return DASH
    if isinstance(x, bool):
        return "yes" if x else "no"
    if is_num(x):
        return sig(x)
    if isinstance(x, (list, tuple)):
        return ", ".join(cell(v) for v in x)
    if isinstance(x, dict):
        return ", ".join(f"{k}: {cell(v)}" for k, v in x.items())
    return str(x)


def sig(x: Any, n: int = 4) -> str:
    """``n`` significant digits without an exponent between 1e-3 and 1e6 (ints as they are)."""
    if not is_num(x):
        return cell(x)
    if isinstance(x, int):
        return str(x)
    if math.isnan(x) or math.isinf(x):
        return str(x)
    if x == 0:
        return "0"
    mag = math.floor(math.log10(abs(x)))
    if mag < -3 or mag >= 6:
        return f"{x:.{max(n - 1, 0)}e}"
    return f"{x:.{max(n - 1 - mag, 0)}f}"


def _nozero(s: str) -> str:
    """``-0.00`` -> ``0.00``."""
    return s[1:] if s.startswith("-") and not any(c in "123456789" for c in s.split("e")[0]) else s


def fix(x: Any, nd: int = 2) -> str:
    """Fixed decimals."""
    return _nozero(f"{x:.{nd}f}") if is_num(x) else cell(x)


def short(x: Any) -> str:
    """As few digits as the value needs (``10.0`` -> ``10``): for limits and settings."""
    return f"{x:g}" if is_num(x) else cell(x)


def pct(x: Any, nd: int = 2, sign: bool = False) -> str:
    """A fraction as a percentage."""
    if not is_num(x):
        return cell(x)
    text = _nozero(f"{x * 100:.{nd}f}")
    return ("+" + text if sign and not text.startswith("-") else text) + "%"


def sci(x: Any) -> str:
    """A small relative difference: ``0`` or two significant digits with an exponent."""
    if not is_num(x):
        return cell(x)
    return "0" if x == 0 else f"{x:.1e}"


def ms(seconds: Any, nd: int = 2) -> str:
    return fix(seconds * 1e3, nd) if is_num(seconds) else cell(seconds)


def esc(s: str) -> str:
    return s.replace("|", "\\|").replace("\n", " ")


def table(headers: list[str], rows: list[list[Any]], right: set[int] | None = None) -> str:
    """A Markdown table; cells already strings (else ``cell``); ``right``: right-aligned columns
    (default: every column whose cells look numeric)."""
    text = [[esc(c if isinstance(c, str) else cell(c)) for c in r] for r in rows]
    if right is None:
        num = re.compile(r"^[-+]?[\d.,]+(e[-+]?\d+)?\s*(%|×|x)?$")
        right = {j for j in range(len(headers))
                 if text and all(num.match(r[j]) or r[j] in (DASH, "") for r in text)
                 and any(num.match(r[j]) for r in text)}
    out = ["| " + " | ".join(esc(h) for h in headers) + " |",
           "|" + "|".join("---:" if j in right else "---" for j in range(len(headers))) + "|"]
    out += ["| " + " | ".join(r) + " |" for r in text]
    return "\n".join(out)


def kv_table(pairs: list[tuple[str, Any]], headers: tuple[str, str] = ("", "value")) -> str:
    return table(list(headers), [[k, v if isinstance(v, str) else cell(v)] for k, v in pairs], right={1})


def yes_no(x: Any) -> str:
    return {True: "yes", False: "no"}.get(x, cell(x))


def fmt_date(doc: dict[str, Any]) -> str:
    stamp = doc.get("date") or doc.get("started") or doc.get("finished")
    if not isinstance(stamp, str):
        return "not recorded"
    m = re.match(r"\d{4}-\d{2}-\d{2}", stamp)
    return m.group(0) if m else stamp


def med(xs: list[float]) -> float | None:
    xs = [x for x in xs if is_num(x)]
    return statistics.median(xs) if xs else None


# ---- the page's head: what, command, machine, date -----------------------------------------------

def script_of(stem: str, doc: dict[str, Any]) -> str:
    return doc["script"] if isinstance(doc.get("script"), str) else stem.split("-")[0]


def docstring_sentence(scripts_dir: Path, script: str) -> str | None:
    path = scripts_dir / f"{script}.py"
    try:
        doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")))
    except (OSError, SyntaxError, ValueError):
        return None
    if not doc:
        return None
    first = " ".join(doc.strip().split("\n\n")[0].split())
    return first.replace("``", "`")


def rel(path: Any) -> str:
    """A recorded path as the repository sees it (``/…/benchmarks/x`` -> ``benchmarks/x``)."""
    s = str(path)
    for anchor in ("benchmarks/", "examples/", "targets/", "build/"):
        i = s.find("/" + anchor)
        if os.path.isabs(s) and i >= 0:
            return s[i + 1:]
    return s


def _out_flag(script: str, stem: str, flag: str = "--out") -> list[str]:
    return [] if stem == script else [flag, f"benchmarks/results/{stem}.json"]


def _opt(argv: list[str], flag: str, value: Any, default: Any = None) -> None:
    if value is None or value == default:
        return
    if isinstance(value, bool):
        if value:
            argv.append(flag)
        return
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    argv += [flag, str(value)]


def _models(argv: list[str], args: dict[str, Any], stem: str, script: str, default: list[str]) -> str:
    """``--all`` / ``--models`` for the zoo scripts; returns the stem's variant suffix."""
    models = args.get("models")
    if stem.endswith("-all"):
        argv.append("--all")
        return "-all"
    if args.get("quick"):
        return "-quick"
    if isinstance(models, list) and models != default:
        argv += ["--models", ",".join(models)]
        return "-models"
    return ""


def reconstruct(stem: str, doc: dict[str, Any]) -> list[str]:
    """The script's command line from the arguments its JSON records (flags at their defaults left out)."""
    script = script_of(stem, doc)
    a = doc.get("args") if isinstance(doc.get("args"), dict) else {}
    argv: list[str] = []
    out: list[str] | None = None
    if script in ("compile", "verify_zoo", "runtime_overhead"):
        default = ["resnet50"] if script == "runtime_overhead" else CORE_MODELS
        suffix = _models(argv, a, stem, script, default)
        _opt(argv, "--quick", a.get("quick"))
        if script == "compile":
            _opt(argv, "--compile-repeats", a.get("compile_repeats"), 3)
            _opt(argv, "--planner-repeats", a.get("planner_repeats"), 15)
        if script == "runtime_overhead":
            sl = a.get("slices")
            if isinstance(sl, list) and sl != [4, 8]:
                argv += ["--slices", ",".join(map(str, sl))]
            q = bool(a.get("quick"))
            _opt(argv, "--rounds", a.get("rounds"), 15 if q else 100)
            _opt(argv, "--spin-rounds", a.get("spin_rounds"), 3 if q else 8)
            _opt(argv, "--settle-ms", a.get("settle_ms"), 500.0 if q else 1000.0)
            _opt(argv, "--spin-block", a.get("spin_block"), 3 if q else 5)
        out = [] if stem == script + suffix else ["--out", f"benchmarks/results/{stem}.json"]
    elif script == "evosh":
        q = bool(a.get("quick"))
        _opt(argv, "--quick", a.get("quick"))
        parts = a.get("parts")
        if isinstance(parts, list) and parts != ["fig4", "fig5", "hardware"]:
            argv += ["--parts", ",".join(parts)]
        _opt(argv, "--steps", a.get("steps"), 50 if q else 200)
        _opt(argv, "--fig4-seeds", a.get("fig4_seeds"), 3 if q else 5)
        _opt(argv, "--fig5-runs", a.get("fig5_runs"), 3 if q else 20)
        _opt(argv, "--hw-runs", a.get("hw_runs"), 5 if q else 100)
        _opt(argv, "--hw-caps", a.get("hw_caps"), 6)
        _opt(argv, "--layer-exact-seconds", a.get("layer_exact_seconds"), 3.0 if q else 10.0)
    elif script == "exact_vs_spine":
        if isinstance(a.get("models"), list) and a["models"] != CORE_MODELS:
            argv += ["--models", ",".join(a["models"])]
        _opt(argv, "--repeats", a.get("repeats"), 15)
        _opt(argv, "--quick", a.get("quick"))
    elif script == "fidelity":
        _opt(argv, "--quick", a.get("quick"))
        _opt(argv, "--target", doc.get("target"), "hikey970")
        _opt(argv, "--mosaic-energy", a.get("mosaic_energy"), "dp")
        mem = a.get("memory")
        if isinstance(mem, str) and not mem.endswith("targets/observations/hikey970-mosaic.csv"):
            argv += ["--memory", rel(mem)]
        _opt(argv, "--herti-planner", a.get("herti_planner"), "exact")
        _opt(argv, "--folds", a.get("folds"), 2 if a.get("quick") else 5)
        bps = a.get("base_powers")
        if isinstance(bps, list) and bps != (["0", "1000"] if a.get("quick") else ["0", "250", "free", "1000", "2000"]):
            argv += ["--base-powers", ",".join(bps) or "none"]
        prior = a.get("prior")
        if isinstance(prior, str) and not prior.endswith("targets/hikey970.toml" if a.get("quick")
                                                          else "targets/observations/hikey970-prior.toml"):
            argv += ["--prior", rel(prior)]
        out = _out_flag(script, stem, "--json")
    elif script == "herti":
        q = bool(a.get("quick"))
        _opt(argv, "--quick", a.get("quick"))
        wl = a.get("workloads")
        if isinstance(wl, list) and wl != (["MN-1.0", "MO-1.3"] if q else HERTI_WORKLOADS):
            argv += ["--workloads", ",".join(wl)]
        dl = a.get("deadlines")
        if isinstance(dl, list) and dl != (["medium"] if q else ["short", "medium", "long"]):
            argv += ["--deadlines", ",".join(dl)]
        parts = a.get("parts")
        if parts is None and isinstance(doc.get("runs"), list):  # older files: the parts the runs came from
            seen = {r.get("part") for r in doc["runs"] if isinstance(r, dict)}
            parts = [p for p in ("main", "edp", "subsets") if p in seen]
        if isinstance(parts, list) and parts and parts != ["main", "edp", "subsets"]:
            argv += ["--parts", ",".join(parts)]
        seeds = a.get("seeds")
        _opt(argv, "--seeds", len(seeds) if isinstance(seeds, list) else seeds, 1)
        _opt(argv, "--dqn-steps", a.get("dqn_steps"), 200 if q else None)
        _opt(argv, "--dqn-planner", a.get("dqn_planner"), "dqn")
        _opt(argv, "--target", doc.get("target"), "hikey970")
    elif script == "host_fit":
        _opt(argv, "--quick", a.get("quick"))
        _opt(argv, "--model", a.get("model"), "resnet50")
        _opt(argv, "--repeats", a.get("repeats"))
        _opt(argv, "--threads", a.get("threads"))
        res = doc.get("result") if isinstance(doc.get("result"), dict) else {}
        for key, flag in (("fixed", "--fix"), ("free", "--free"), ("bounds", "--bound")):
            for v in res.get(key) or []:
                argv += [flag, str(v)]
        _opt(argv, "--range", a.get("range"))
        out = _out_flag(script, stem, "--json")
    elif script == "hostile":
        _opt(argv, "--quick", a.get("quick"))
        for area in a.get("area") or []:
            argv += ["--area", str(area)]
    elif script == "planners":
        q = bool(a.get("quick"))
        _opt(argv, "--quick", a.get("quick"))
        sizes = a.get("sizes")
        if isinstance(sizes, list) and sizes != ([20, 250] if q else [20, 40, 60, 250]):
            argv += ["--sizes", *map(str, sizes)]
        seeds = a.get("seeds")
        _opt(argv, "--seeds", len(seeds) if isinstance(seeds, list) else seeds, 1 if q else 2)
        _opt(argv, "--repeats", a.get("repeats"), 1 if q else 3)
        if a.get("graphs"):
            argv += ["--graphs", *map(rel, a["graphs"])]
        _opt(argv, "--max-cut-tensors", a.get("max_cut_tensors"), 2)
        _opt(argv, "--graph-limit", a.get("graph_limit_s"), 120.0)
        _opt(argv, "--target", a.get("target"), "hikey970")
    elif script == "sweep_agreement":
        if doc.get("sweep_dir"):
            argv.append(rel(doc["sweep_dir"]))
        _opt(argv, "--sample", doc.get("sampled"), 20)
        _opt(argv, "--rtol", doc.get("rtol"), 1e-6)
    elif script == "sweep_scaling":
        _opt(argv, "--quick", a.get("quick"))
        spec = a.get("spec")
        if isinstance(spec, str) and not spec.endswith("examples/sweep.toml"):
            argv += ["--spec", rel(spec)]
        _opt(argv, "--repeat", a.get("repeat"), 2)
    else:
        for k, v in sorted(a.items()):
            if isinstance(v, bool):
                _opt(argv, "--" + k.replace("_", "-"), v)
            elif isinstance(v, (str, int, float)):
                argv += ["--" + k.replace("_", "-"), str(v)]
    if out is None:
        suffix = "-quick" if a.get("quick") else ""
        out = [] if stem == script + suffix else ["--out", f"benchmarks/results/{stem}.json"]
    return ["python", f"benchmarks/{script}.py", *argv, *out]


def command(stem: str, doc: dict[str, Any]) -> tuple[str, bool]:
    """(the command, whether the JSON recorded it) -- ``command``/``argv`` when recorded."""
    for key in ("command", "cmdline"):
        if isinstance(doc.get(key), str) and doc[key].strip():
            return doc[key].strip(), True
    argv = doc.get("argv")
    if isinstance(argv, list) and all(isinstance(x, str) for x in argv):
        script = script_of(stem, doc)
        if argv and argv[0].endswith(".py"):
            return shlex.join(["python", rel(argv[0]), *argv[1:]]), True
        return shlex.join(["python", f"benchmarks/{script}.py", *argv]), True
    return shlex.join(reconstruct(stem, doc)), False


MACHINE_KEYS = [("cpu", "CPU"), ("cpu_count", "CPUs"), ("usable_cpus", "usable CPUs"), ("machine", "architecture"),
                ("platform", "platform"), ("python", "Python"), ("onnxruntime", "onnxruntime"),
                ("numpy", "numpy"), ("hetcc", "hetcc"), ("loadavg_at_start", "load average at start (1, 5, 15 min)"),
                ("loadavg_at_end", "load average at end (1, 5, 15 min)")]


def machine_table(m: Any) -> str:
    if not isinstance(m, dict):
        return "Not recorded."
    known = dict(MACHINE_KEYS)
    pairs = []
    for key in [k for k, _ in MACHINE_KEYS if k in m] + sorted(k for k in m if k not in known):
        v = m[key]
        if isinstance(v, list) and all(is_num(x) for x in v):
            v = " / ".join(fix(x, 2) for x in v)
        pairs.append((known.get(key, key), v if isinstance(v, str) else cell(v)))
    return table(["machine", ""], [[k, v] for k, v in pairs], right=set())


# ---- one renderer per script: the body's sections ------------------------------------------------

Section = tuple[str, str]   # (heading, Markdown)
# what reading a result file of another shape than expected raises
SHAPE_ERRORS = (KeyError, IndexError, TypeError, AttributeError, ValueError, StopIteration, ZeroDivisionError)


def r_compile(doc: dict[str, Any]) -> list[Section]:
    t = doc.get("targets") or {}
    rows = [r for r in doc.get("results") or [] if isinstance(r, dict)]
    ok = [r for r in rows if "error" not in r]
    out: list[Section] = []
    if t:
        out.append(("Targets", table(["what", "target"], [
            ["`dp` planner (latency), median", f"< {short(t.get('dp_ms'))} ms"],
            ["`exact` planner (energy under a deadline), median", f"< {short(t.get('exact_ms'))} ms"],
            [f"whole compile of {t.get('compile_model', '?')}", f"< {short(t.get('compile_s'))} s"]])))
    passes: list[str] = []
    for r in ok:
        for k in r.get("passes_s") or {}:
            if k not in passes:
                passes.append(k)
    head = ["model", "nodes", "layers", "states"] + [f"{p} ms" for p in passes] + [
        "compile s", "slices", "latency ms", "energy mJ", "`dp` ms", "`exact` ms", "deadline ms", "targets met"]
    body = []
    for r in ok:
        p, plan, dp, ex = r.get("passes_s") or {}, r.get("compile_plan") or {}, r.get("dp") or {}, r.get("exact") or {}
        met = r.get("targets_met") or {}
        body.append([r.get("model"), cell(r.get("nodes")), cell(r.get("layers")), cell(r.get("states"))]
                    + [ms(p[k], 1 if p[k] >= 0.01 else 2) if k in p else DASH for k in passes]
                    + [fix(r.get("compile_s"), 2), cell(plan.get("num_slices")), fix(plan.get("latency_ms"), 1),
                       fix(plan.get("energy_mj"), 1), fix(dp.get("median_ms"), 2), fix(ex.get("median_ms"), 1),
                       fix(ex.get("deadline_ms"), 1),
                       ", ".join(f"not {k}" for k, v in met.items() if v is False) or "yes"])
    note = ("Per model: milliseconds per pass (median of the whole compiles), the whole compile in seconds, the "
            "compiled plan's predicted latency and energy, the `dp` planner's median ms (latency) and the "
            "`exact` planner's median ms (energy under the deadline shown). `targets met` names any missed.")
    out.append(("Per model", note + "\n\n" + table(head, body)))
    if ok:
        def worst(key: str) -> dict[str, Any]:
            return max(ok, key=lambda r: (r.get(key) or {}).get("median_ms") or 0)

        wd, we = worst("dp"), worst("exact")
        out.append(("Summary", kv_table([
            ("models", f"{len(ok)} of {len(rows)} compiled"),
            ("`dp`, slowest median", f"{fix(wd['dp']['median_ms'], 2)} ms ({wd['model']})"),
            ("`exact`, slowest median", f"{fix(we['exact']['median_ms'], 1)} ms ({we['model']})"),
            ("compile, median over models", f"{fix(med([r.get('compile_s') for r in ok]), 2)} s"),
            ("targets missed", ", ".join(map(str, doc.get("misses") or [])) or "none")])))
    errs = [r for r in rows if "error" in r]
    if errs:
        out.append(("Errors", table(["model", "error"], [[r.get("model"), r["error"]] for r in errs])))
    return out


def r_exact_vs_spine(doc: dict[str, Any]) -> list[Section]:
    rows = [r for r in doc.get("rows") or [] if isinstance(r, dict)]
    n = (doc.get("args") or {}).get("repeats")
    body = [[r.get("model"), cell(r.get("layers")), fix(r.get("ours_ms"), 2), fix(r.get("spine_ms"), 2),
             fix(r.get("ratio"), 2), fix(r.get("dp_ms"), 3), fix(r.get("dp_spine_ms"), 3), fix(r.get("dp_ratio"), 2),
             fix(r.get("plan_ms"), 2)] for r in rows]
    out: list[Section] = [("Per model", f"Least of {cell(n)} runs each, spine commit `{doc.get('spine', '?')}`; "
                           "ratio = ours / spine; `plan()` ms is `exact` through `plan()`.\n\n" + table(
                               ["model", "layers", "`exact` ms", "spine ms", "ours / spine", "`dp` ms", "spine ms",
                                "ours / spine", "`plan()` ms"], body))]
    s = doc.get("summary") or {}
    srows = [[f"`{k}`", fix(v.get("median_ratio"), 3), fix(v.get("min_ratio"), 3), fix(v.get("max_ratio"), 3),
              f"{cell(v.get('faster'))} of {cell(v.get('models'))}"] for k, v in s.items() if isinstance(v, dict)]
    if srows:
        text = table(["planner", "median ours / spine", "least", "most", "faster"], srows)
        if is_num(s.get("plan_overhead_ms")):
            text += f"\n\n`plan()` over the bare `exact` call, median: {fix(s['plan_overhead_ms'], 2)} ms."
        out.append(("Summary", text))
    return out


def _ci(stat: Any) -> str:
    if not isinstance(stat, dict) or not is_num(stat.get("mean")):
        return DASH
    return f"{fix(stat['mean'], 2)} ± {fix(stat.get('half'), 2)}"


def r_evosh(doc: dict[str, Any]) -> list[Section]:
    out: list[Section] = []
    models = [m for m in doc.get("models") or [] if isinstance(m, dict)]
    if models:
        out.append(("Models", f"Board model `{doc.get('target', '?')}`.\n\n" + table(
            ["label", "model", "layers", "device states", "devices"],
            [[m.get("label"), m.get("model"), cell(m.get("layers")), cell(m.get("states")), cell(m.get("devices"))]
             for m in models])))
    body = []
    for c in doc.get("cases") or []:
        s = c.get("summary") or {}
        ev, evo, rnd = s.get("evosh") or {}, s.get("evolution") or {}, s.get("random") or {}
        le = c.get("layer_exact") or {}
        if is_num(le.get("latency_ms")):
            layer = fix(le["latency_ms"], 2) + ("" if le.get("optimal", True) else f" (gap ≤ {pct(le.get('gap'), 1)})")
        elif le.get("error"):
            layer = "none within the cap"
        else:
            layer = DASH
        space = f"mapping {c['blocks']}" if c.get("blocks") else str(c.get("space", DASH))
        body.append([c.get("part"), c.get("model"), space, fix(c.get("cap_mw"), 0),
                     fix((c.get("optimum") or {}).get("latency_ms"), 2), _ci(ev.get("final_ms")),
                     fix((evo.get("final_ms") or {}).get("mean"), 2), fix((rnd.get("final_ms") or {}).get("mean"), 2),
                     pct(ev.get("gap_mean")), f"{cell(ev.get('reached_optimum'))} / {cell(ev.get('runs'))}", layer])
    steps = (doc.get("args") or {}).get("steps")
    out.append(("Cases", f"Best latency after {cell(steps)} steps: mean over runs, ± the 95% Student-t half-width "
                "for `evosh`; gap = `evosh`'s mean above the space's optimum; `layer-level exact`: `exact` at layer "
                "granularity with a DVFS level per slice (time-boxed).\n\n" + table(
                    ["part", "model", "space", "cap mW", "optimum ms", "evosh ms", "evolution ms", "random ms",
                     "evosh gap", "evosh runs at the optimum", "layer-level exact ms"], body)))
    targets = [t for t in doc.get("targets") or [] if isinstance(t, dict)]
    if targets:
        out.append(("Targets", table(["#", "target", "met", "measured"], [
            [cell(t.get("id")), t.get("name", ""), "met" if t.get("pass") else "MISSED", t.get("measured", "")]
            for t in targets])))
    sw = doc.get("sweep") or {}
    pairs = [("search runs in the sweep", sw.get("cells")), ("total s", fix(doc.get("total_s"), 1))]
    pairs += [(f"{k} s", fix(v, 2)) for k, v in (doc.get("part_s") or {}).items()]
    out.append(("Run", kv_table(pairs)))
    return out


def _fid_value(row: dict[str, Any], key: str) -> str:
    v = row.get(key)
    if isinstance(v, str) or v is None or isinstance(v, bool):
        return cell(v)
    part = row.get("part")
    if part in ("gains", "plans", "fig5", "herti"):
        return pct(v, 1)
    if part == "little":
        return sig(v, 3) if not float(v).is_integer() else str(int(v))
    return short(v) if key == "paper" else sig(v, 4)


def _fid_counts(c: Any) -> str:
    if not isinstance(c, dict):
        return DASH
    return f"{cell(c.get('ok'))} ok, {cell(c.get('MISS'))} MISS" + (f", {c['n/a']} n/a" if c.get("n/a") else "") \
        + f" (of {cell(c.get('rows'))})"


def _fid_held(row: dict[str, Any]) -> list[str]:
    """The held-out cells of a row: value, verdict, where it comes from."""
    if row.get("fit") == "held out":
        return ["=", str(row.get("verdict", DASH)), "never fitted"]
    h = row.get("held_out") if isinstance(row.get("held_out"), dict) else {}
    src = ": ".join(str(x) for x in (h.get("scheme"), h.get("fold")) if x)
    if h.get("ours") is None and h.get("note"):
        src += f" ({h['note']})"
    return [_fid_value({**h, "part": row.get("part")}, "ours"), str(h.get("verdict", DASH)), src]


def r_fidelity(doc: dict[str, Any]) -> list[Section]:
    rows = [r for r in doc.get("rows") or [] if isinstance(r, dict)]
    verdicts: dict[str, int] = {}
    for r in rows:
        verdicts[str(r.get("verdict"))] = verdicts.get(str(r.get("verdict")), 0) + 1
    tol = doc.get("tolerance")
    summary = ", ".join(f"{n} {v}" for v, n in sorted(verdicts.items()))
    s = doc.get("summary") if isinstance(doc.get("summary"), dict) else {}
    a = doc.get("args") or {}
    text = (f"Board `{doc.get('target', '?')}`; {len(rows)} rows: {summary}"
            + (f" (ok = within {pct(tol, 0)} relative)." if is_num(tol) else "."))
    if s:
        t1 = s.get("table1_mape") or {}
        text += ("\n\n" + kv_table([
            ("held out, every row (the README's headline)", _fid_counts(s.get("held_out"))),
            ("fitted rows (in the CSV), on the fitted board", _fid_counts(s.get("fitted"))),
            ("fitted rows, predicted by refits that did not see them", _fid_counts(s.get("held_out_of_fitted"))),
            (f"… by model ({cell(a.get('folds'))} folds)", _fid_counts(s.get("by_model"))),
            ("… by kind of row", _fid_counts(s.get("by_kind"))),
            ("rows never fitted (Fig. 5, Figs. 10/11, HERTI)", _fid_counts(s.get("never_fitted"))),
            ("Table I MAPE: fitted board / held out", f"{pct(t1.get('fitted'), 1)} / {pct(t1.get('held_out'), 1)}"),
        ], ("", "verdicts")))
    out: list[Section] = [("Summary", text)]
    if any("fit" in r for r in rows):
        out.append(("Rows", "**fitted**: the row's numbers are in the CSV the board was fitted to; **held out**: "
                    "predicted by a refit of the prior that did not see them (by model for one model's numbers, "
                    "by kind of row for the gains), or never fitted (`=`: the fitted board's value is the "
                    "prediction).\n\n" + table(
                        ["what", "row", "paper", "ours (fitted)", "verdict", "held out", "verdict", "held out by",
                         "note"],
                        [[r.get("what", ""), r.get("fit", ""), _fid_value(r, "paper"), _fid_value(r, "ours"),
                          str(r.get("verdict", DASH)), *_fid_held(r), r.get("note") or ""] for r in rows])))
    else:
        out.append(("Rows", table(["what", "paper", "ours", "ours / paper", "verdict", "note"], [
            [r.get("what", ""), _fid_value(r, "paper"), _fid_value(r, "ours"), fix(r.get("ratio"), 3),
             str(r.get("verdict", DASH)), r.get("note") or ""] for r in rows])))
    bp = doc.get("base_power") if isinstance(doc.get("base_power"), dict) else {}
    values = [v for v in bp.get("values") or [] if isinstance(v, dict)]
    if values:
        refs = [str(r.get("what", "")).split(" below ")[-1].split(" (")[0] for r in values[0].get("rows") or []]
        heads = [h for i, ref in enumerate(refs)
                 for h in (f"below {ref} (paper {pct((values[0]['rows'][i]).get('paper'), 1)})", "verdict")]
        body = []
        for v in values:
            f = (v.get("refit") or {}).get("fit") or {}
            lat, gain, uses = f.get("latency") or {}, f.get("gain") or {}, f.get("plan_uses") or {}
            cells = [c for r in v.get("rows") or [] for c in (pct(r.get("ours"), 1), str(r.get("verdict", DASH)))]
            cells += [DASH] * (len(heads) - len(cells))
            built_in = is_num(bp.get("built_in_mw")) and is_num(v.get("base_power_mw")) and \
                float(v["base_power_mw"]) == float(bp["built_in_mw"]) and v.get("base_power") != "free"
            kept = (v.get("refit") or {}).get("kept_at_prior") or []
            note = ((v.get("rows") or [{}])[0].get("note") or "") if v.get("rows") else \
                ((v.get("refit") or {}).get("error") or "")
            if kept:
                note += ("; " if note else "") + f"kept at the prior's value: {', '.join(kept)}"
            mw = sig(v.get("base_power_mw"), 3) if is_num(v.get("base_power_mw")) else cell(v.get("base_power"))
            body.append([("fitted: " + mw if is_num(v.get("base_power_mw")) else "fitted") if v.get("base_power") == "free"
                         else mw + (" (built in)" if built_in else ""), fix(lat.get("mape_pct"), 1),
                         fix(gain.get("mean_abs_error_pp"), 1),
                         f"{uses['agree']} / {uses['rows']}" if uses else DASH, *cells, note])
        out.append(("Base-power sensitivity (held-out HERTI rows)",
                    "The HERTI rows are never fitted; the board's base power (`base_power_mw`, drawn for the "
                    "whole inference) moves them. Each row refits the prior to all of MOSAIC's rows with "
                    "`--set base_power_mw=X` (\"fitted\": `--free base_power_mw`; the built-in board for its own "
                    "value, being that refit), then plans HERTI's Fig. 6. "
                    "Table I MAPE, the gains' mean |error| and the plan states reproduced are that fit's quality "
                    "on MOSAIC's rows.\n\n"
                    + table(["base_power_mw", "Table I MAPE %", "gains mean abs error, points", "plan states",
                             *heads, "note"], body)))
    refits = [f for f in doc.get("refits") or [] if isinstance(f, dict)]
    if refits:
        body = []
        for f in refits:
            fit = f.get("fit") or {}
            lat, gain, uses = fit.get("latency") or {}, fit.get("gain") or {}, fit.get("plan_uses") or {}
            held = f.get("held_out")
            body.append([f.get("scheme"), f.get("fold"), ", ".join(map(str, held)) if isinstance(held, list) else cell(held),
                         cell(f.get("rows")), cell(f.get("free")), cell(f.get("evaluations")),
                         fix(lat.get("mape_pct"), 1), fix(gain.get("mean_abs_error_pp"), 1),
                         f"{uses['agree']} / {uses['rows']}" if uses else DASH, fix(f.get("seconds"), 0),
                         ", ".join(f.get("kept_at_prior") or []),
                         f.get("error") or ("" if f.get("converged", True) else "stopped at its evaluation limit")])
        out.append(("Leave-out refits", "Each a refit of `" + rel(a.get("prior")) + "` with `" + str(a.get("refit_args", ""))
                    + "`, without the rows it holds out; its fit on the rows it kept. A parameter the fit pushed to a "
                    "bound is kept at the prior's value and the fit repeated (as `hetcc calibrate` does when it "
                    "chooses the free set).\n\n"
                    + table(["scheme", "fold", "holds out", "rows fitted", "free", "evaluations", "Table I MAPE %",
                             "gains mean abs error, points", "plan states", "s", "kept at the prior's value",
                             "error"], body)))
    models = doc.get("models") or {}
    if isinstance(models, dict) and models:
        mem = doc.get("memory_mb") or {}
        out.append(("Models", table(["label", "zoo model", "layers", "analysed", "NPU memory MB (reported)", "note"], [
            [k, v.get("zoo"), cell(v.get("layers")), yes_no(v.get("analysed")),
             cell((mem.get(v.get("zoo")) or {}).get("npu")), v.get("note") or (v.get("error") or "")]
            for k, v in models.items() if isinstance(v, dict)])))
    return out


def r_herti(doc: dict[str, Any]) -> list[Section]:
    out: list[Section] = []
    wls = [w for w in doc.get("workloads") or [] if isinstance(w, dict)]
    s = doc.get("summary") or {}
    dls: dict[str, Any] = s.get("deadlines") or {}
    names = list(dls)
    if wls:
        out.append(("Workloads", f"Board model `{doc.get('target', '?')}`; deadlines from HERTI's Eq. 12.\n\n" + table(
            ["workload", "model", "layers", "device states", "fastest ms"] + [f"{d} deadline ms" for d in names],
            [[w.get("workload"), w.get("model"), cell(w.get("layers")), cell(w.get("states")),
              fix(w.get("t_best_ms"), 1)] + [fix((w.get("deadlines_ms") or {}).get(d), 1) for d in names]
             for w in wls])))
    if dls:
        versions: list[str] = []
        for d in names:
            versions += [v for v in dls[d] if v not in versions]
        head = ["version"]
        for d in names:
            head += [f"{d}: median above `exact`", f"{d}: worst", f"{d}: deadlines met"]
        body = []
        for v in versions:
            row = [v]
            for d in names:
                per = dls[d].get(v) or {}
                gaps = {w: x.get("gap_to_exact") for w, x in per.items() if is_num(x.get("gap_to_exact"))}
                met = sum(1 for x in per.values() if x.get("feasible"))
                worst = max(gaps, key=gaps.get) if gaps else None
                row += [pct(med(list(gaps.values()))),
                        f"{pct(gaps[worst])} ({worst})" if worst is not None and gaps[worst] > 0 else pct(0.0)
                        if worst is not None else DASH, f"{met} / {len(per)}"]
            body.append(row)
        out.append(("Energy above the optimum", "Each version's energy above `exact`'s (the proven optimum, "
                    "\"exhaustive\"), over the workloads, and how many workloads' deadlines it meets.\n\n"
                    + table(head, body)))
        for d in names:
            wnames: list[str] = []
            for per in dls[d].values():
                wnames += [w for w in per if w not in wnames]
            body = []
            for v, per in dls[d].items():
                body.append([v] + [(pct((per.get(w) or {}).get("gap_to_exact"), 1)
                                    + ("" if (per.get(w) or {}).get("feasible") else " *")) if w in per else DASH
                                   for w in wnames])
            out.append((f"{d.capitalize()} deadline, per workload",
                        "Energy above `exact`; `*` marks a missed deadline.\n\n" + table(["version"] + wnames, body)))
    runs = [r for r in doc.get("runs") or [] if isinstance(r, dict) and r.get("version") == "HERTI"]
    if runs:
        runs = sorted(runs, key=lambda r: (names.index(r["deadline"]) if r.get("deadline") in names else 99,
                                           str(r.get("workload")), r.get("seed") if is_num(r.get("seed")) else -1))
        out.append(("HERTI's runs", f"HERTI's slot (`{runs[0].get('planner')}`), one row per run.\n\n" + table(
            ["deadline", "workload", "seed", "deadline ms", "latency ms", "energy mJ", "above `exact`", "meets",
             "wall s", "states explored"],
            [[r.get("deadline"), r.get("workload"), cell(r.get("seed")), fix(r.get("deadline_ms"), 1),
              fix(r.get("latency_ms"), 1), fix(r.get("energy_mj"), 1), pct(r.get("gap_to_exact")),
              yes_no(r.get("feasible")), fix(r.get("wall_s"), 1), cell((r.get("stats") or {}).get("explored"))]
             for r in runs])))
    sv = s.get("saving_vs") or {}
    if sv:
        bases: list[str] = []
        for v in sv.values():
            bases += [b for b in v if b not in bases]
        body = [[d] + [pct(sv[d].get(b), 1) for b in bases] for d in sv]
        paper = (doc.get("paper") or {}).get("fig6_saving_vs") or {}
        if paper:
            body.append(["paper (Fig. 6, medium)"] + [pct(paper.get(b), 1) if b in paper else DASH for b in bases])
        text = "HERTI's energy below each baseline's, over the workloads.\n\n" + table(["deadline"] + bases, body)
        extra = []
        if is_num(s.get("gain_growth_short_to_long")):
            pg = (doc.get("paper") or {}).get("fig7_gain_growth_short_to_long")
            extra.append(("saving over MOSAIC-P, growth from short to long", f"{fix(s['gain_growth_short_to_long'] * 100, 1)} points"
                          + (f" (paper {fix(pg * 100, 1)})" if is_num(pg) else "")))
        le = s.get("long_equals_mosaic_e")
        if isinstance(le, dict) and le:
            extra.append(("long deadline: HERTI equals MOSAIC-E", f"{sum(bool(x) for x in le.values())} of {len(le)} workloads"))
        me = s.get("meet_every_deadline")
        if isinstance(me, dict):
            for d, vs in me.items():
                extra.append((f"meet every {d} deadline", ", ".join(map(str, vs)) or "none"))
        if extra:
            text += "\n\n" + kv_table(extra)
        out.append(("Savings", text))
    sub = s.get("subsets") or {}
    if isinstance(sub, dict) and any(is_num(v.get("herti_gap_to_exact")) for v in sub.values() if isinstance(v, dict)):
        out.append(("Device subsets (Fig. 8)", table(
            ["devices", "HERTI above `exact`", "HERTI meets", "saving vs MOSAIC-P", "saving vs AutoScale"],
            [[k, pct(v.get("herti_gap_to_exact")), yes_no(v.get("herti_feasible")),
              pct((v.get("saving_vs") or {}).get("MOSAIC-P"), 1), pct((v.get("saving_vs") or {}).get("AutoScale"), 1)]
             for k, v in sub.items() if isinstance(v, dict)])))
    edp = s.get("edp_geomean_vs_mosaic_edp") or {}
    if isinstance(edp, dict) and any(is_num(v) for v in edp.values()):
        feas = s.get("edp_feasible") or {}
        out.append(("EDP (Fig. 10)", table(["version", "EDP geomean / MOSAIC-EDP", "meets"],
                                           [[k, fix(v, 3), yes_no(feas.get(k))] for k, v in edp.items()])))
    tr = s.get("training") or {}
    if isinstance(tr, dict) and tr:
        out.append(("Training time (Fig. 11)", "HERTI's wall time against the time measuring every state it "
                    "explored on the board would take.\n\n" + table(
                        ["workload", "runs", "wall min", "measured min", "ratio", "states explored"],
                        [[k, cell(v.get("runs")), fix(v.get("wall_min"), 2), fix(v.get("measured_min"), 0),
                          f"{fix(v.get('ratio'), 0)}×", cell(v.get("explored"))] for k, v in tr.items()])))
    return out


def r_host_fit(doc: dict[str, Any]) -> list[Section]:
    r = doc.get("result") or {}
    t = doc.get("targets") or {}
    out: list[Section] = [("Accuracy", f"Model `{r.get('model', '?')}`, {cell(r.get('layers'))} layers; fitted to "
                           "profile A, judged against an independent profile B.\n\n" + table(
                               ["measure", "fitted", "target", "unfitted", "noise floor (A against B)"], [
                                   ["per-layer MAPE", pct(r.get("layer_mape"), 1),
                                    f"≤ {pct(t.get('layer_mape'), 0)}" if t.get("layer_mape") else DASH,
                                    pct(r.get("before_layer_mape"), 1), pct(r.get("noise_layer_mape"), 1)],
                                   ["whole model error", pct(r.get("model_error"), 1),
                                    f"≤ {pct(t.get('model_error'), 0)}" if t.get("model_error") else DASH,
                                    pct(r.get("before_model_error"), 1), pct(r.get("noise_model_error"), 1)],
                                   ["per-layer WAPE", pct(r.get("layer_wape"), 1), DASH, DASH,
                                    pct(r.get("noise_layer_wape"), 1)],
                                   [f"per-layer MAPE, {cell(r.get('large_layers'))} large layers",
                                    pct(r.get("large_layer_mape"), 1), DASH, DASH,
                                    pct(r.get("noise_large_layer_mape"), 1)],
                                   ["per-layer MAPE on profile A (in sample)", pct(r.get("in_sample_layer_mape"), 1),
                                    DASH, DASH, DASH]]))]
    cal = (r.get("calibrate") or {}).get("fitted") or []
    if cal:
        out.append(("Fitted figures", table(["figure", "unit", "before", "after", "status", "bounds"], [
            [f"`{p.get('name')}`", p.get("unit") or "", short(p.get("before")), short(p.get("after")), p.get("status", ""),
             f"{short(p.get('lo'))} – {short(p.get('hi'))}" if is_num(p.get("lo")) else DASH] for p in cal])))
    layers = [x for x in r.get("per_layer") or [] if isinstance(x, dict)]
    if layers:
        out.append(("Per layer", "Milliseconds: profile B (judged against), profile A (fitted to), the fitted "
                    "model's prediction and the unfitted one's; error = fitted against B.\n\n" + table(
                        ["layer", "ops", "GFLOP", "B ms", "A ms", "fitted ms", "unfitted ms", "error"],
                        [["model" if x.get("layer") is None else cell(x.get("layer")), x.get("ops") or "",
                          fix((x.get("flops") or 0) / 1e9, 3), fix(x.get("b_ms"), 3), fix(x.get("a_ms"), 3),
                          fix(x.get("fitted_ms"), 3), fix(x.get("before_ms"), 3), pct(x.get("error"), 1, sign=True)]
                         for x in layers])))
    return out


def r_hostile(doc: dict[str, Any]) -> list[Section]:
    s = doc.get("summary") or {}
    cols: list[str] = []
    for v in s.values():
        cols += [k for k in v if k not in cols]
    body = [[("**total**" if area == "total" else area)] + [cell(v.get(c)) for c in cols] for area, v in s.items()]
    out: list[Section] = [("Summary", "Problems counted per area: `traceback`, a wrong `exit code`, a bad `message`, "
                           "files `lost`, files written or read `outside` the output, `setup` failures.\n\n"
                           + table(["area"] + cols, body))]
    bad = [c for c in doc.get("cases") or [] if isinstance(c, dict) and c.get("problems")]
    if bad:
        out.append(("Cases with problems", table(["case", "expected exit", "exit", "problems"], [
            [c.get("id"), cell(c.get("expected")), cell(c.get("exit")), "; ".join(map(str, c["problems"]))]
            for c in bad])))
    out.append(("Run", kv_table([("cases", len(doc.get("cases") or [])), ("seconds", fix(doc.get("seconds"), 1))])))
    return out


def _met(v: Any) -> str:
    return {True: "PASS", False: "MISS"}.get(v, "")


def r_planners(doc: dict[str, Any]) -> list[Section]:
    t = doc.get("target") or {}
    a = doc.get("args") or {}
    out: list[Section] = []
    summ = [r for r in doc.get("summary") or [] if isinstance(r, dict)]
    if summ:
        lim = f"< {short(t.get('seconds'))} s at L = {cell(t.get('layers'))}" if t else "target"
        out.append(("Synthetic CNNs", f"Board `{a.get('target', '?')}`; per size L, objective and constraint: the "
                    f"planner's wall ms over {cell(len(a.get('seeds') or []))} seed(s) × {cell(a.get('repeats'))} "
                    "repeat(s) (median and worst).\n\n" + table(
                        ["L", "objective", "constraint", "planner", "median ms", "worst ms", "best ms", lim],
                        [[cell(r.get("layers")), r.get("metric"), r.get("constraint"), r.get("planner"),
                          fix(r.get("median_ms"), 1), fix(r.get("worst_ms"), 1), fix(r.get("best_ms"), 1),
                          _met(r.get("target_met"))] for r in summ])))
        judged = [r for r in summ if r.get("target_met") is not None]
        if judged:
            worst = max(judged, key=lambda r: r.get("worst_ms") or 0)
            out.append(("Summary", kv_table([
                ("cases meeting the target", f"{sum(1 for r in judged if r['target_met'])} of {len(judged)}"),
                ("slowest worst case", (f"{fix(worst.get('worst_ms'), 1)} ms ({worst.get('metric')}, "
                                        f"{worst.get('constraint')})"))])))
    any_rows = [r for r in doc.get("anytime") or [] if isinstance(r, dict)]
    if any_rows:
        out.append(("Anytime: `exact` under a time budget", table(
            ["L", "seed", "objective", "constraint", "budget s", "wall ms", "proven gap", "optimal",
             "above the optimum"],
            [[cell(r.get("layers")), cell(r.get("seed")), r.get("metric"), r.get("constraint"), short(r.get("budget_s")),
              fix(r.get("wall_ms"), 1), pct(r.get("gap")), yes_no(r.get("optimal")),
              pct(r.get("excess_over_optimum"))] for r in any_rows])))
    graphs = [r for r in doc.get("graphs") or [] if isinstance(r, dict)]
    if graphs:
        out.append(("Real graphs", f"`exact` on exported models (time limit {short(a.get('graph_limit_s'))} s).\n\n"
                    + table(["graph", "layers", "objective", "constraint", "ms", "value", "optimal", "proven gap",
                             "labels", "target met"],
                            [[r.get("graph"), cell(r.get("layers")), r.get("metric"), r.get("constraint"),
                              fix(r.get("ms"), 1), sig(r.get("value")), yes_no(r.get("optimal")), pct(r.get("gap")),
                              cell(r.get("labels")), _met(r.get("target_met"))] for r in graphs])))
    return out


def r_concurrent_runs(doc: dict[str, Any]) -> list[Section]:
    a = doc.get("args") or {}
    summ = doc.get("summary") or {}
    goal = doc.get("target_median_error")
    out: list[Section] = [("Summary", (
        f"Board `{doc.get('target', '?')}` (this machine's cores as devices, one pinned thread each); "
        f"{cell(a.get('duration_s'))} s per phase in {cell(a.get('rounds'))} rounds, each model alone then all at once. "
        "Per model, |predicted − measured| / measured of its throughput with all models running; `analytical` "
        "and `DES` from the profiled costs, `calibrated`: the analytical model on each stage's wall time "
        "measured alone, `structure`: on each stage's wall time per execution measured shared (whether the "
        f"queueing holds). Target: analytical median ≤ {pct(goal, 0)} under `queue` sharing. `others' cores`: "
        "the CPU other processes used meanwhile (of the machine's cores).\n\n" + table(
            ["sharing", "models", "analytical", "DES", "calibrated", "structure", "profile's alone error",
             "others' cores", "target"],
            [[k, cell(v.get("models")), pct((v.get("analytical") or {}).get("median_abs_error"), 1),
              pct((v.get("des") or {}).get("median_abs_error"), 1),
              pct((v.get("calibrated") or {}).get("median_abs_error"), 1),
              pct((v.get("structure") or {}).get("median_abs_error"), 1),
              pct(v.get("profile_alone_median_abs_error"), 1), fix(v.get("others_cores_mean")),
              _met(v.get("target_met")) if k == "queue" else "– (time sharing: not the model's)"]
             for k, v in summ.items() if isinstance(v, dict)])))]
    rows = []
    for r in doc.get("results") or []:
        busy = ((r.get("load") or {}).get("others_cores") or {}).get("shared")
        for k, m in enumerate(r.get("models") or []):
            me, p, e = m.get("measured") or {}, m.get("predicted") or {}, m.get("error") or {}
            rows.append([cell(r.get("mix")) if k == 0 else "", cell(r.get("sharing")) if k == 0 else "",
                         cell(m.get("model")), ">".join(st.get("device", "?") for st in m.get("pipeline") or []),
                         fix(me.get("alone_ips"), 1), fix(me.get("shared_ips"), 1), fix(p.get("analytical"), 1),
                         pct(e.get("analytical"), 1, sign=True), fix(p.get("des"), 1), pct(e.get("des"), 1, sign=True),
                         fix(p.get("calibrated"), 1), pct(e.get("calibrated"), 1, sign=True),
                         fix(p.get("structure"), 1), pct(e.get("structure"), 1, sign=True),
                         fix(busy) if k == 0 else ""])
    if rows:
        out.append(("Per model", "Inferences/s: measured alone and shared, and the three predictions of the "
                    "shared throughput with their errors.\n\n" + table(
                        ["mix", "sharing", "model", "pipeline", "alone", "shared", "analytical", "error", "DES",
                         "error", "calibrated", "error", "structure", "error", "others' cores"], rows)))
    return out


def r_contention(doc: dict[str, Any]) -> list[Section]:
    a = doc.get("args") or {}
    summ = doc.get("summary") or {}
    labels = [k for k, v in summ.items() if isinstance(v, dict)]
    out: list[Section] = []
    target = (doc.get("target") or {}).get("median_pct")
    sw = doc.get("switch_ms") or {}
    out.append(("Summary", f"Board `{a.get('target', '?')}` (switch ms: "
                + ", ".join(f"{k} {short(v)}" for k, v in sw.items()) + f"); {cell(a.get('mixes'))} mixes of "
                f"{a.get('source', '?')} models; per-model error |predicted − simulated| / simulated, over every "
                f"model of every mix (target: median ≤ {short(target)}%).\n\n" + table(
                    ["sharing", "models", "median", "p90", "max", "target"],
                    [[k, cell(summ[k].get("models")), fix(summ[k].get("median_pct")) + "%",
                      fix(summ[k].get("p90_pct")) + "%", fix(summ[k].get("max_pct")) + "%",
                      _met(summ[k].get("target_met"))] for k in labels])
                + f"\n\n`predict` takes {fix(summ.get('predict_us_median'), 0)} µs a call (median over the mixes)."))
    rows = [r for r in doc.get("mixes") or [] if isinstance(r, dict)]
    if rows:
        out.append(("Per mix", "The largest per-model error of each mix, per sharing.\n\n" + table(
            ["mix", "models", *[f"{k}: max" for k in labels]],
            [[cell(r.get("mix")), ", ".join(r.get("models") or []),
              *[fix(max((r.get("variants") or {}).get(k, {}).get("error_pct") or [math.nan])) + "%" for k in labels]]
             for r in rows])))
    return out


def r_fairboost(doc: dict[str, Any]) -> list[Section]:
    a = doc.get("args") or {}
    paper = doc.get("paper") or {}
    summ = doc.get("summary") or {}
    labels = [m["label"] for m in doc.get("managers") or [] if isinstance(m, dict)]
    ga = a.get("ga") or {}
    out: list[Section] = [("Setup", (
        f"Board `{a.get('target', '?')}`; {cell(a.get('mixes'))} seeded mixes of each size "
        f"{', '.join(map(str, a.get('sizes') or []))} from {len(a.get('models') or [])} {a.get('source', '?')} models "
        f"({', '.join(a.get('models') or [])}); objective `{doc.get('objective', 'overall')}`; every plan scored by "
        f"the contention model (T_norm over every model whole on the GPU at once; J with t_ideal = the model alone "
        f"whole on the GPU; O = T_norm × J). `ga`: population {cell(ga.get('population'))}, "
        f"{cell(ga.get('generations'))} generations; `optimum` where its space is at most "
        f"{cell(a.get('optimum_limit'))} combinations. Decision time: the median wall time of one plan."))]
    for size, per in summ.items():
        refs = ", ".join(f"`{r}`" for r in per.get("optimum_reference") or []) or DASH
        gains = (paper.get("o_gain_of_fairboost") or {}).get(size, {})
        jain = (paper.get("jain") or {}).get(size, {})
        have_fb = "O" in (per.get("fairboost") or {})
        head = ["manager", "mixes", "T_norm", "J", "O", "O vs optimum (median)", "decision s", "paper J",
                "paper: FairBoost's O over it"] + (["ours: fairboost's O over it"] if have_fb else [])
        rows = []
        for label in labels:
            v = per.get(label) or {}
            if not v.get("mixes"):
                rows.append([label, "0"] + [DASH] * (len(head) - 2))
                continue
            row = [f"`{label}`", cell(v["mixes"]), fix(v["T_norm"], 3), fix(v["J"], 3), fix(v["O"], 3),
                   pct(v["gap_to_optimum_median"], 1, sign=True) if "gap_to_optimum_median" in v else DASH,
                   sig(v["decision_s"], 3), fix(jain[label], 3) if label in jain else DASH,
                   str(gains.get(label, DASH)).replace("x", "×")]
            if have_fb:
                row.append(f"×{fix(per['fairboost']['O'] / v['O'], 2)}" if v["O"] > 0 else DASH)
            rows.append(row)
        out.append((f"Mixes of {size} models", f"Means over the mixes; O vs optimum against {refs}.\n\n"
                    + table(head, rows)))
    out += _fairboost_targets(doc)
    out += _fairboost_agent_share(doc)
    out += _fairboost_transfer(doc.get("transfer"))
    out += _fairboost_training(doc.get("training"))
    out.append(("The paper's numbers", (
        "The paper's gains are FairBoost's mean O over each manager's as its text states them (Sec. 5.3); a factor "
        "printed below 1 (×0.47 over the GA) reads as that much higher. ODMDEF is not reproduced. The paper's "
        "decision times: " + ", ".join(f"{k} ~{short(v)} s" for k, v in (paper.get("decision_s") or {}).items())
        + ".")))
    return out


def _fairboost_targets(doc: dict[str, Any]) -> list[Section]:
    """The issue's targets for the shipped planner, each computed from the summary and the mixes."""
    summ = doc.get("summary") or {}
    sizes = [k for k in summ if "O" in (summ[k].get("fairboost") or {})]
    if not sizes:
        return []
    rows = []
    for size in sizes:
        per = summ[size]
        fb, ga, gpu = (per.get(k) or {} for k in ("fairboost", "ga", "all-gpu"))
        mine = [r for r in doc.get("mixes") or [] if str(r.get("size")) == size]
        dec = [r["managers"]["fairboost"]["decision_s"] for r in mine
               if "decision_s" in r["managers"].get("fairboost", {})]
        won = sum(1 for r in mine if r["managers"].get("fairboost", {}).get("O", -1) > r["managers"].get("ga", {}).get(
            "O", math.inf))
        gap = fb.get("gap_to_optimum_median")
        rows.append([size, f"{fix(fb['O'], 3)} vs {fix(ga.get('O'), 3)} ({won} of {len(mine)} mixes higher) "
                     + _met(is_num(ga.get("O")) and fb["O"] > ga["O"]),
                     f"×{fix(fb['O'] / gpu['O'], 2)} " + _met(fb["O"] >= 2.5 * gpu["O"]) if gpu.get("O") else DASH,
                     f"{fix(fb['J'], 3)} " + (_met(fb["J"] >= 0.9) if size == "3" else ""),
                     f"{pct(gap, 1, sign=True)} " + _met(gap >= -0.05) if is_num(gap) else DASH,
                     (f"{sig(statistics.median(dec), 3)} / {sig(max(dec), 3)} "
                      + (_met(max(dec) <= 2.0) if size == "5" else "")) if dec else DASH])
    fair = (summ.get("3") or {}).get("optimum-j0.9") or {}
    ga3 = ((summ.get("3") or {}).get("ga") or {}).get("O")
    note = ""
    if fair.get("mixes") and is_num(ga3):
        note = (f"\n\nThe exact best of the plans with J ≥ 0.9 on each 3-model mix (`optimum-j0.9`, "
                f"{fair['mixes']} mixes) has mean O {fix(fair['O'], 3)} (J {fix(fair['J'], 3)}) against `ga`'s "
                f"{fix(ga3, 3)}: " + ("at this block granularity, plans with J ≥ 0.9 on every mix cannot beat `ga`'s "
                                      "mean O." if fair["O"] < ga3 else "plans can meet both."))
    return [("Against the issue's targets", (
        "`fairboost` as shipped. Targets: mean O above `ga`'s at every size, at least 2.5× `all-gpu`'s, J ≥ 0.9 on "
        "3-model mixes, median gap to the exact reference ≥ -5%, decision ≤ 2 s for 5 models (median / max over "
        "the mixes; the search's budget is a count of evaluations, so a busier machine takes longer).\n\n"
        + table(["models", "O: fairboost vs ga", "O over all-gpu", "J", "O vs optimum (median)", "decision s"], rows)
        + note))]


def _fairboost_agent_share(doc: dict[str, Any]) -> list[Section]:
    """Which part of the shipped planner's O is the agent's: its mapping alone, the search without it, and
    where the search went on from."""
    summ = doc.get("summary") or {}
    need = ("fairboost", "fairboost-agent", "fairboost-no-agent")
    sizes = [k for k in summ if all("O" in (summ[k].get(n) or {}) for n in need)]
    if not sizes:
        return []
    starts: dict[str, int] = {}
    for r in doc.get("mixes") or []:
        start = (r["managers"].get("fairboost", {}).get("search") or {}).get("start")
        if start is not None:
            starts[str(start)] = starts.get(str(start), 0) + 1
    rows = [[size, fix(summ[size]["fairboost-agent"]["O"], 3), fix(summ[size]["all-gpu"]["O"], 3),
             fix(summ[size]["fairboost-no-agent"]["O"], 3), fix(summ[size]["fairboost"]["O"], 3),
             pct(summ[size]["fairboost"]["O"] / summ[size]["fairboost-no-agent"]["O"] - 1, 1, sign=True)]
            for size in sizes]
    return [("The agent's share", (
        "`fairboost-agent` is the agent's mapping alone (`polish=false`, the paper's manager); `fairboost-no-agent` "
        "the shipped search without the agent's mapping among its starts. Where the shipped search went on from, "
        "over all mixes (`search.start` in the JSON): " + (", ".join(f"{k} {v}" for k, v in sorted(starts.items()))
                                                            or DASH) + ".\n\n"
        + table(["models", "agent alone O", "all-gpu O", "search without the agent O", "fairboost O",
                 "fairboost over the search without the agent"], rows)))]


def _fairboost_training(training: Any) -> list[Section]:
    """The agents' training runs (FairBoost Fig. 7): size, time and the curve's mean per fifth of the run."""
    if not isinstance(training, dict) or not training:
        return []
    rows = []
    for board, t in training.items():
        curve = t.get("curve") or []
        fifths = []
        if curve:
            last = max(c["step"] for c in curve)
            for k in range(5):
                part = [c["mean"] for c in curve if k * last / 5 < c["step"] <= (k + 1) * last / 5]
                fifths.append(f"{statistics.fmean(part):+.3f}" if part else DASH)
        rows.append([board, f"`{t.get('command') or DASH}`", f"`{t.get('reward', DASH)}`", cell(t.get("steps")),
                     cell(t.get("updates")),
                     cell(t.get("episodes")), fix(t.get("seconds"), 0), " / ".join(fifths) or DASH,
                     f"`{str(t.get('sha256', ''))[:12]}…`"])
    return [("Training (Fig. 7)", (
        "Each agent's own training run as its file records it (the shipped orangepi5 agent, and the agent trained "
        "on the transfer board by this benchmark). Curve: the final reward of each episode minus the all-gpu "
        "baseline's, in the units of the reward it learnt (`overall`: log O, so +0.69 is twice the baseline's O; "
        "`alg1`: Alg. 1's), mean per fifth of the run; above 0 the agent's mappings (exploring, noisy) beat the "
        "baseline. Seconds: the training loop (the shipped agent's: on the machine it was trained on).\n\n"
        + table(["board", "command", "reward", "steps", "updates", "episodes", "seconds", "curve by fifth", "sha256"],
                rows, right={3, 4, 5, 6})))]


def _fairboost_transfer(tr: Any) -> list[Section]:
    if not isinstance(tr, dict) or not tr.get("summary"):
        return []
    agent = tr.get("agent") or {}
    labels = [m["label"] for m in tr.get("managers") or [] if isinstance(m, dict)]
    sizes = list(tr["summary"])
    rows = [[f"`{label}`", *[" / ".join([fix(v.get("T_norm"), 2), fix(v.get("J"), 2), f"**{fix(v.get('O'), 3)}**"])
                             if (v := tr["summary"][k].get(label) or {}).get("mixes") else DASH for k in sizes]]
            for label in labels]
    losses = tr.get("losses") or {}
    target = tr.get("loss_target")
    rows.append(["loss of mean O, orangepi5's agent vs its own (planner)",
                 *[f"{pct(losses.get(k, {}).get('planner'), 1)} {_met(losses.get(k, {}).get('planner_met'))}"
                   for k in sizes]])
    rows.append(["the same, the agents alone (below 0: the transferred one is better)",
                 *[pct(losses.get(k, {}).get("agent_alone"), 1) for k in sizes]])
    return [(f"Transfer to {tr.get('target', '?')}", (
        f"FairBoost Sec. 5.4: the same seeded mixes on `{tr.get('target', '?')}`, planned by the shipped agent "
        f"(trained on orangepi5) unchanged and by an agent trained on this board (`{agent.get('command') or 'given'}`,"
        f" sha256 `{str(agent.get('sha256', '?'))[:12]}…`). Cells: T_norm / J / **O**, means over the mixes. The "
        f"target: the transferred planner loses at most {pct(target, 0)} of mean O.\n\n"
        + table(["manager", *[f"{k} models" for k in sizes]], rows)))]


def r_runtime_overhead(doc: dict[str, Any]) -> list[Section]:
    out: list[Section] = []
    t = doc.get("targets") or {}
    for r in doc.get("results") or []:
        if not isinstance(r, dict):
            continue
        if "error" in r:
            out.append((str(r.get("model")), f"Error: {r['error']}"))
            continue
        sl = r.get("slices") or {}
        body = [[n, fix(r.get("mono_ms"), 2), fix(v.get("chain_ms"), 2),
                 pct((v.get("chain_overhead_paired_pct") or 0) / 100, 1, sign=True),
                 fix(v.get("per_boundary_paired_us"), 0), fix(v.get("fit_per_boundary_us"), 0), fix(v.get("hetcc_ms"), 2),
                 pct((v.get("hetcc_vs_chain_paired_pct") or 0) / 100, 2, sign=True), yes_no(v.get("hetcc_target_met"))]
                for n, v in sl.items() if isinstance(v, dict)]
        text = (f"Target `{r.get('target', '?')}`, {cell(r.get('rounds'))} interleaved rounds, medians; \"paired\" = "
                "median of the per-round differences.\n\n" + table(
                    ["slices", "monolithic ms", "plain chain ms", "chain vs mono (paired)", "µs / boundary (paired)",
                     "fit µs / boundary", "hetcc run ms", "hetcc vs chain (paired)",
                     f"< {short(t.get('hetcc_vs_chain_pct'))}%" if t.get("hetcc_vs_chain_pct") else "target met"], body))
        sp = r.get("spinning") or {}
        pairs = []
        if sp:
            pairs += [(f"{cell(sp.get('slices'))}-slice chain, ORT's default spinning", f"{fix(sp.get('chain_spin_ms'), 1)} ms"),
                      ("monolithic, spinning", f"{fix(sp.get('mono_spin_ms'), 1)} ms"),
                      ("chain with spinning vs monolithic with spinning",
                       pct((sp.get("chain_spin_vs_mono_spin_pct") or 0) / 100, 0, sign=True)),
                      (f"{cell(sp.get('slices'))}-slice chain without spinning", f"{fix(sp.get('chain_ms'), 1)} ms")]
        if is_num(r.get("mono_basic_ms")):
            pairs.append(("monolithic at ORT_ENABLE_BASIC", f"{fix(r['mono_basic_ms'], 1)} ms"))
        mrd = r.get("max_rel_diff") or {}
        if mrd:
            pairs.append(("max relative difference to the monolithic output", sci(max(mrd.values()))))
        if pairs:
            text += "\n\n" + kv_table(pairs)
        out.append((f"{r.get('model')}", text))
    fit = doc.get("boundary_fit") or {}
    if fit:
        text = kv_table([("δ µs", fix((fit.get("delta_ms") or 0) * 1e3, 1)),
                         ("β µs/MB", fix((fit.get("beta_ms_per_byte") or 0) * 1e9, 1))])
        samples = fit.get("samples") or []
        if samples:
            text += "\n\n" + table(["bytes", "ms"], [[cell(b), fix(m, 3)] for b, m in samples])
        out.append(("Boundary fit (δ + β·bytes)", text))
    return out


def r_sweep_agreement(doc: dict[str, Any]) -> list[Section]:
    cells = [c for c in doc.get("cells") or [] if isinstance(c, dict)]
    out: list[Section] = [("Summary", kv_table([
        ("finished cells in the sweep", doc.get("finished_cells")), ("cells compiled", doc.get("sampled")),
        ("agree", f"{cell(doc.get('agree'))} of {cell(doc.get('sampled'))}"),
        ("max relative difference", sci(doc.get("max_rel_diff"))), ("rtol", str(doc.get("rtol"))),
        ("total s", fix(doc.get("total_s"), 1))]))]
    if cells:
        out.append(("Cells", table(["cell", "command", "latency ms (table)", "latency ms (compile)", "energy mJ",
                                    "feasible", "rel. diff", "agree"], [
            [f"`{c.get('cell')}`", "`hetcc " + TMP_OUT.sub("", str(c.get("command"))) + "`", sig(_float((c.get("table") or {}).get("latency_ms"))),
             sig((c.get("compile") or {}).get("latency_ms")), sig((c.get("compile") or {}).get("energy_mj")),
             yes_no((c.get("compile") or {}).get("feasible")), sci(c.get("rel_diff")), yes_no(c.get("agree"))]
            for c in cells])))
    return out


TMP_OUT = re.compile(r" -o /tmp/\S+")   # the check's scratch output folder, not part of the cell


def _float(x: Any) -> Any:
    try:
        return float(x)
    except (TypeError, ValueError):
        return x


def r_sweep_scaling(doc: dict[str, Any]) -> list[Section]:
    ms_, st = doc.get("median_sweep_s") or {}, doc.get("median_start_plus_sweep_s") or {}
    cpu = doc.get("median_worker_cpu_s") or {}
    ov = doc.get("ray_task_overhead_ms") or {}
    out: list[Section] = [("Summary", kv_table([
        ("cells / Ray tasks", f"{cell(doc.get('cells'))} / {cell(doc.get('tasks'))}"),
        ("median sweep s, 1 / 2 workers", f"{fix(ms_.get('1'), 2)} / {fix(ms_.get('2'), 2)}"),
        ("speed-up with 2 workers (medians)", f"{fix(doc.get('speedup_2_workers'), 2)}×"),
        ("speed-up, median of the pairs", f"{fix(doc.get('median_pair_speedup'), 2)}×"),
        ("quiet pairs", ", ".join(f"{fix(x, 2)}×" for x in doc.get("quiet_pair_speedups") or []) or "none"),
        ("target", f"≥ {fix(doc.get('target_speedup'), 1)}×, judged on {doc.get('judged_on', '?')}: "
                   + ("met" if doc.get("meets_target") else "MISSED")),
        ("start-up s (embedded Ray), median", fix(doc.get("embedded_start_s"), 2)),
        ("start + sweep s, 1 / 2 workers", f"{fix(st.get('1'), 2)} / {fix(st.get('2'), 2)}"),
        ("workers' CPU s, 1 / 2 workers", f"{fix(cpu.get('1'), 2)} / {fix(cpu.get('2'), 2)}"),
        ("speed-up bound from CPU time", f"{fix(doc.get('speedup_bound_from_cpu'), 2)}×"),
        ("driver CPU s, median", fix(doc.get("median_driver_cpu_s"), 2)),
        ("Ray overhead per task, batched / round trip", f"{fix(ov.get('batched_ms'), 2)} / {fix(ov.get('round_trip_ms'), 2)} ms"),
        ("mean task s (1 worker)", fix(doc.get("mean_task_s_one_worker"), 3))]))]
    runs = doc.get("runs") or {}
    one, two = runs.get("1") or [], runs.get("2") or []
    pair = doc.get("speedup_per_pair") or []
    if one or two:
        body = []
        for i in range(max(len(one), len(two))):
            a, b = (one[i] if i < len(one) else {}), (two[i] if i < len(two) else {})
            body.append([i + 1, fix(a.get("sweep_s"), 2), fix(a.get("worker_cpu_s"), 2), fix(b.get("sweep_s"), 2),
                         fix(b.get("worker_cpu_s"), 2), f"{fix(pair[i], 2)}×" if i < len(pair) else DASH,
                         fix(a.get("init_s"), 2), fix(b.get("init_s"), 2)])
        out.append(("Runs", "Interleaved: each 1-worker run and the 2-worker run right after it.\n\n" + table(
            ["pair", "1 worker: sweep s", "1 worker: CPU s", "2 workers: sweep s", "2 workers: CPU s", "speed-up",
             "start-up s (1)", "start-up s (2)"], body)))
    return out


def r_verify_zoo(doc: dict[str, Any]) -> list[Section]:
    rows = [r for r in doc.get("results") or [] if isinstance(r, dict)]
    ok = [r for r in rows if r.get("ok")]
    worst = max((r.get("max_rel_diff") for r in rows if is_num(r.get("max_rel_diff"))), default=None)
    models = {r.get("model") for r in rows}
    out: list[Section] = [("Summary", kv_table([
        ("configurations", f"{len(rows)} ({len(models)} models × "
                           + ", ".join(f"{t} {o}" for t, o in (doc.get("args") or {}).get("configs") or []) + ")"),
        ("compile and verify", f"{len(ok)} of {len(rows)}"),
        ("max relative difference (runtime and plain chain against the unsliced model)", sci(worst)),
        ("bound (rtol)", sci(doc.get("rtol"))),
        ("failed", ", ".join(map(str, doc.get("failed") or [])) or "none")]))]
    out.append(("Per model and configuration", table(
        ["model", "target", "objective", "planner", "layers", "slices", "devices", "latency ms", "energy mJ",
         "compile s", "verify s", "max rel. diff", "ok"],
        [[r.get("model"), r.get("target"), r.get("objective"), r.get("planner"), cell(r.get("layers")),
          cell(r.get("slices")), cell(r.get("devices")), fix(r.get("predicted_latency_ms"), 2),
          fix(r.get("predicted_energy_mj"), 2), fix(r.get("compile_s"), 2), fix(r.get("verify_s"), 2),
          sci(r.get("max_rel_diff")), "yes" if r.get("ok") else ("no: " + str(r.get("error", "")))] for r in rows])))
    return out


def r_herti_ablation(doc: dict[str, Any]) -> list[Section]:
    """herti.py's ablation of `dqn` (its own JSON, ``herti-ablation``) and its table of HERTI's claims."""
    out: list[Section] = []
    rows = [r for r in doc.get("ablation") or [] if isinstance(r, dict)]
    a = doc.get("args") or {}
    wls = [str(w) for w in a.get("workloads") or []]
    if rows:
        steps = a.get("steps_per_row") or (a.get("steps_options") or {}).get("steps")
        t = doc.get("dqn_alone_target") or {}
        head = (f"`dqn`'s energy above `exact` (the proven optimum) under the {a.get('deadline', 'medium')} deadline, "
                f"{cell(steps) + ' steps' if steps else 'the default steps'} for every row; each row adds one "
                "search addition to the one above (the last is `dqn`'s default). Median and worst over "
                f"{len(wls)} workloads; a missed deadline counts as no plan.\n\n")
        body = [[r.get("config"), " ".join(f"{k}={str(v).lower()}" for k, v in (r.get("options") or {}).items())]
                + [pct((r.get("gap_by_workload") or {}).get(w)) for w in wls]
                + [pct(r.get("median_gap")), pct(r.get("worst_gap")), f"{cell(r.get('feasible'))} / {cell(r.get('runs'))}",
                   cell(r.get("walk_improved")), cell(r.get("polish_moves")), fix(r.get("wall_s"), 1)]
                for r in rows]
        text = head + table(["row", "options", *wls, "median", "worst", "deadlines met", "walk beat its start",
                             "polish moves", "wall s"], body)
        if t:
            on = t.get("workloads") or []
            gaps = t.get("gap_by_workload") or {}
            text += ("\n\nThe DQN alone (Alg. 1, every addition off)"
                     + (f" on {len(on)} workloads ({', '.join(f'{w} {pct(gaps.get(w))}' for w in on)})" if on else "")
                     + f": median {pct(t.get('alg1_alone_median_gap'))} above the optimum; target at most "
                     f"{pct(t.get('median_gap_at_most'), 0)}: {'met' if t.get('met') else 'missed'}.")
        if a.get("left_out"):
            text += f"\n\nLeft out of the ablation: {', '.join(map(str, a['left_out']))}."
        if doc.get("note"):
            text += f" {doc['note']}" if a.get("left_out") else f"\n\n{doc['note']}"
        out.append(("Ablation of `dqn`", text))
    claims = [r for r in doc.get("claims") or [] if isinstance(r, dict)]
    if claims:
        c = doc.get("claim_counts") or {}
        text = (f"{cell(c.get('reproduced'))} of {cell(c.get('checked'))} checked claims reproduce "
                f"({cell(c.get('not_checked'))} not checked), from `{rel(doc.get('claims_from'))}` and the ablation. "
                "A number reproduces within 20% of the paper's, a count or a yes/no when equal.\n\n")
        text += table(["where", "claim", "paper", "ours", "verdict", "cause of a miss"],
                      [[r.get("where"), r.get("claim"), r.get("paper"), r.get("ours"), r.get("verdict"),
                        r.get("cause") or ""] for r in claims], right=set())
        out.append(("HERTI's claims", text))
    return out


def r_offload_shaping(doc: dict[str, Any]) -> list[Section]:
    rows = [r for r in doc.get("results") or [] if isinstance(r, dict)]
    target = doc.get("target_error")
    body = [[str(r.get("link")), fix(r.get("signal_dbm"), 0), fix(r.get("tabled_mbps"), 1),
             fix(r.get("delivered_up_mbps"), 2), fix(r.get("delivered_down_mbps"), 2), pct(r.get("bandwidth_error"), 1),
             fix(r.get("tabled_rtt_ms"), 1), fix(r.get("delivered_rtt_ms"), 2), pct(r.get("rtt_error"), 1)]
            for r in rows]
    sizes = ", ".join(fix(x, 0) for x in doc.get("payload_ms") or [])
    text = (f"Target `{cell(doc.get('target'))}`; payloads taking {sizes} ms at the tabled "
            f"bandwidth, least of {cell(doc.get('repeat'))} runs per direction; bandwidth = 1 / "
            "slope and RTT = the two intercepts of a least-squares line through (bytes, ms) of each direction.\n\n"
            + table(["link", "dBm", "tabled Mbit/s", "delivered up", "delivered down", "error", "tabled RTT ms",
                     "delivered RTT ms", "error"], body))
    summary = kv_table([("worst bandwidth error", pct(doc.get("worst_bandwidth_error"), 1)),
                        ("worst RTT error", pct(doc.get("worst_rtt_error"), 1)),
                        ("target", f"within {pct(target, 0)}" if is_num(target) else DASH),
                        ("target met", yes_no(doc.get("target_met"))),
                        ("offloads the server logged", cell(doc.get("server_offloads_logged"))),
                        ("server exit status after SIGTERM", cell(doc.get("server_exit")))])
    return [("Tabled vs delivered", text), ("Summary", summary)]


def r_generic(doc: dict[str, Any]) -> list[Section]:
    """A script this file does not know: its scalars, and each list of flat records as a table."""
    skip = {"script", "date", "started", "machine", "args", "command", "argv"}
    scal = [(k, v) for k, v in doc.items() if k not in skip and not isinstance(v, (dict, list))]
    out: list[Section] = [("Values", kv_table([(k, cell(v)) for k, v in scal]))] if scal else []
    for k, v in doc.items():
        if k in skip or not isinstance(v, list) or not v or not all(isinstance(x, dict) for x in v):
            continue
        cols: list[str] = []
        for x in v:
            cols += [c for c, y in x.items() if c not in cols and not isinstance(y, (dict, list))]
        cols = cols[:12]
        out.append((k, table(cols, [[cell(x.get(c)) for c in cols] for x in v])))
    return out


RENDERERS: dict[str, Callable[[dict[str, Any]], list[Section]]] = {
    "compile": r_compile, "concurrent_runs": r_concurrent_runs, "contention": r_contention, "evosh": r_evosh, "exact_vs_spine": r_exact_vs_spine, "fidelity": r_fidelity,
    "herti": r_herti, "host_fit": r_host_fit, "hostile": r_hostile, "planners": r_planners,
    "runtime_overhead": r_runtime_overhead, "sweep_agreement": r_sweep_agreement, "sweep_scaling": r_sweep_scaling,
    "verify_zoo": r_verify_zoo, "offload_shaping": r_offload_shaping,
}

#: results whose stem, not their script, picks the renderer (a second JSON of one script)
STEM_RENDERERS: dict[str, Callable[[dict[str, Any]], list[Section]]] = {"herti-ablation": r_herti_ablation}
RENDERERS["fairboost"] = r_fairboost


def _last_pass_efficiencies(runs: Any) -> list[float]:
    """The policy / Opt efficiency of each run's last pass (autoscale_real's ``runs``), sorted."""
    last = [r["passes"][-1].get("policy_efficiency_vs_opt") for r in runs or []
            if isinstance(r, dict) and r.get("passes") and isinstance(r["passes"][-1], dict)]
    return sorted(float(x) for x in last if is_num(x))


def r_autoscale_real(doc: dict[str, Any]) -> list[Section]:
    """benchmarks/autoscale_real.py: energy per inference of the policy and Opt, per phase and pass."""
    a = doc.get("args") or {}
    rows = [r for r in doc.get("per_phase") or [] if isinstance(r, dict)]

    def picks(d: Any) -> str:
        return ", ".join(f"{esc(str(k))} {v}" for k, v in sorted((d or {}).items())) or DASH

    body = [[cell(r.get("pass")), esc(str(r.get("phase"))), fix(r.get("policy_mj"), 2), fix(r.get("opt_mj"), 2),
             pct(r.get("efficiency_vs_opt"), 1), pct(r.get("choice_efficiency_vs_opt"), 1),
             f"{esc(str(r.get('best_fixed')))} ({fix(r.get('best_fixed_mj'), 2)})" if r.get("best_fixed") else DASH,
             pct(r.get("efficiency_vs_best_fixed"), 1), picks(r.get("policy_choices")), picks(r.get("opt_choices")),
             cell(r.get("policy_qos_violations")), ", ".join(f"`{x}`" for x in r.get("states") or [])] for r in rows]
    note = f"{esc(str(doc['note']))[:1].upper()}{esc(str(doc['note']))[1:]}.\n\n" if doc.get("note") else ""
    choice = doc.get("model_choice")
    if isinstance(choice, dict):
        cands = "; ".join(f"{esc(str(c.get('model')))} {fix(c.get('local_ms'), 1)} ms, "
                          f"local {fix(c.get('local_mj'), 1)} "
                          f"/ edge {fix(c.get('edge_mj'), 1)} mJ" for c in choice.get("candidates") or []
                          if isinstance(c, dict))
        note += (f"The model is `--model auto`'s choice: {esc(str(choice.get('rule')))}. One-thread time here and "
                 f"predicted energy: {cands}.\n\n")
    if a.get("later_epsilon") is not None:
        later = ("choose greedily on the learned table (epsilon 0) and keep updating it, as the simulated evaluation "
                 "does" if a.get("later_epsilon") == 0 else f"explore with epsilon {short(a.get('later_epsilon'))}")
        note += f"The first pass explores with Alg. 1's epsilon of 0.1; the later passes {later}.\n\n"
    cal = doc.get("board_calibration")
    if isinstance(cal, dict):
        note += (f"The benchmark board's rates are scaled x{short(cal.get('scale'))} to this machine: one FP32 thread "
                 f"measured {fix(cal.get('measured_ms'), 2)} ms, the board's assumed rates predicted "
                 f"{fix(cal.get('predicted_ms'), 2)} ms (the powers, INT8's factor and the two-thread speed-up stay "
                 "assumed).\n\n")
    popts = doc.get("policy_options")
    if isinstance(popts, dict):
        note += (f"The runner's options that depart from Alg. 1 ([the runtime](../autoscale-runtime.md)): "
                 f"`unseen={esc(str(popts.get('unseen')))}`, "
                 f"`explore_within={esc(str(short(popts.get('explore_within'))))}`.\n\n")
    text = note + (f"Model `{cell(a.get('model'))}`, {cell(a.get('per_phase'))} inferences per phase, "
            f"{cell(a.get('passes'))} pass(es), QoS {short(doc.get('qos_ms'))} ms; energy per inference in mJ "
            f"({esc(str(doc.get('energy_source')))}); Opt = the best variant of each inference in hindsight "
            "(every variant measured after it, in a shuffled order); \"its choices / Opt\": the variants the policy "
            "ran, as the oracle measured them in the same step (the decisions alone).\n\n"
            + table(["pass", "phase", "policy mJ", "Opt mJ", "policy / Opt efficiency", "its choices / Opt",
                     "best fixed variant (mJ)",
                     "policy / best fixed", "policy ran", "Opt picked", "QoS misses", "states"], body))
    out: list[Section] = [("Per phase", text)]
    passes = [p for p in doc.get("passes") or [] if isinstance(p, dict)]
    body = []
    for i, p in enumerate(passes, 1):
        pol, opt = p.get("policy") or {}, p.get("opt") or {}
        body.append([str(i), fix(pol.get("energy_mj_per_inference"), 2), fix(opt.get("energy_mj_per_inference"), 2),
                     pct(p.get("policy_efficiency_vs_opt"), 1), pct(p.get("choice_efficiency_vs_opt"), 1),
                     f"{pct(p.get('policy_efficiency_vs_best_fixed'), 1)} ({esc(str(p.get('best_fixed')))})",
                     f"{cell(p.get('policy_matches_opt'))} / {cell(pol.get('inferences'))}",
                     f"{cell(pol.get('qos_violations'))} / {cell(opt.get('qos_violations'))}"])
    fixed = (passes[-1].get("fixed") or {}) if passes else {}
    body_fixed = [[esc(str(v)), fix(f.get("energy_mj_per_inference"), 2), fix(f.get("latency_ms_p50"), 2),
                   cell(f.get("qos_violations")), cell(f.get("failed"))] for v, f in fixed.items() if isinstance(f, dict)]
    o = doc.get("overhead_us") or {}
    pairs = [("observe + choose, p50 / p90 µs (wall clock)", f"{fix((o.get('decide') or {}).get('p50'), 1)} / "
              f"{fix((o.get('decide') or {}).get('p90'), 1)}"),
             ("observe + choose, p50 µs of CPU time", fix((o.get("decide_cpu") or {}).get("p50"), 1)),
             ("reward + Q update, p50 µs (wall clock / CPU)", f"{fix((o.get('update') or {}).get('p50'), 1)} / "
              f"{fix((o.get('update_cpu') or {}).get('p50'), 1)}"),
             ("fallbacks", cell(doc.get("fallbacks"))), ("offload server", yes_no(doc.get("server")))]
    served = doc.get("served")
    if isinstance(served, dict):
        pairs.append(("offloads the client made and saw answered / runs answered in the server's request log",
                      f"{cell(served.get('offloads'))} / {cell(served.get('server_runs_ok'))}"))
    runs = [r for r in doc.get("runs") or [] if isinstance(r, dict)]
    alg1 = [r for r in doc.get("alg1_runs") or [] if isinstance(r, dict)]

    def effs_of(rs: list[dict]) -> list[list[Any]]:
        return [[p.get("policy_efficiency_vs_opt") for p in r.get("passes") or [] if isinstance(p, dict)] for r in rs]

    def spread(rs: list[dict], what: str) -> None:
        last = _last_pass_efficiencies(rs)
        pairs.append((f"last pass, policy / Opt efficiency over the {len(rs)} runs{what} (median, min, max)",
                      f"{pct(statistics.median(last), 1)}, {pct(last[0], 1)}, {pct(last[-1], 1)}" if last else DASH))

    def logged(r: dict) -> str:
        served = r.get("served") or {}
        return f"{cell(served.get('offloads'))} / {cell(served.get('server_runs_ok'))}"

    if len(runs) > 1 or alg1:
        effs, effs1 = effs_of(runs), effs_of(alg1)
        npass = max(map(len, effs + effs1))
        def by_pass(e: list[Any]) -> list[str]:
            return [pct(e[i] if i < len(e) else None, 1) for i in range(npass)]

        body_runs = []
        for k, (r, e) in enumerate(zip(runs, effs)):
            row = [str(k + 1), cell(r.get("seed")), *by_pass(e)]
            if alg1:
                row += by_pass(effs1[k] if k < len(effs1) else [])
            body_runs.append(row + [logged(r) + (f"; {logged(alg1[k])}" if k < len(alg1) else "")])
        spread(runs, "")
        if alg1:
            spread(alg1, " with Alg. 1's random starts and uniform exploration")
    out.append(("Whole passes", table(["pass", "policy mJ", "Opt mJ", "policy / Opt efficiency", "its choices / Opt",
                                       "policy / best fixed", "matches Opt", "QoS misses policy / Opt"], body)
                + "\n\nEach variant held fixed (last pass):\n\n"
                + table(["variant", "mJ / inference", "p50 ms", "QoS misses", "failed"], body_fixed)
                + "\n\n" + kv_table(pairs)
                + ("\n\nEvery run from an untrained table (the first is the one detailed above), its policy / Opt "
                   "efficiency by pass and its offloads against the server's request log"
                   + (", beside the same seed run with Alg. 1's random starts and uniform exploration "
                      "(`unseen=random`, `explore_within=all`), interleaved with it" if alg1 else "") + ":\n\n"
                   + table(["run", "seed", *[f"pass {i + 1}" for i in range(npass)],
                            *[f"Alg. 1, pass {i + 1}" for i in range(npass) if alg1],
                            "offloads / in the server's log"], body_runs) if len(runs) > 1 or alg1 else "")))
    sim = doc.get("simulated_start")
    if isinstance(sim, dict):
        rows = [r for r in sim.get("per_phase") or [] if isinstance(r, dict)]
        body = [[esc(str(r.get("phase"))), fix(r.get("policy_mj"), 2), fix(r.get("opt_mj"), 2),
                 pct(r.get("efficiency_vs_opt"), 1), pct(r.get("choice_efficiency_vs_opt"), 1),
                 pct(r.get("efficiency_vs_best_fixed"), 1), picks(r.get("policy_choices")),
                 cell(r.get("policy_qos_violations"))] for r in rows]
        whole = [p for p in sim.get("passes") or [] if isinstance(p, dict)]
        w = whole[0] if whole else {}
        text = (f"One pass over the same phases from a table trained in simulation first (`hetcc train autoscale` "
                f"on the same board and model, {cell(sim.get('runs'))} runs per state, {cell(sim.get('trained_states'))} "
                f"states, {fix(sim.get('train_s'), 1)} s), then learning on the machine as above. Whole pass: policy "
                f"{fix((w.get('policy') or {}).get('energy_mj_per_inference'), 2)} mJ, Opt "
                f"{fix((w.get('opt') or {}).get('energy_mj_per_inference'), 2)} mJ: "
                f"{pct(w.get('policy_efficiency_vs_opt'), 1)} of Opt (its choices: {pct(w.get('choice_efficiency_vs_opt'), 1)}), "
                f"{pct(w.get('policy_efficiency_vs_best_fixed'), 1)} "
                f"of the best fixed variant.\n\n"
                + table(["phase", "policy mJ", "Opt mJ", "policy / Opt", "its choices / Opt", "policy / best fixed",
                         "policy ran", "QoS misses"], body))
        out.append(("Starting from a table trained in simulation", text))
    rep = doc.get("replay")
    if isinstance(rep, dict) and isinstance(rep.get("rewards"), dict):
        body = [[esc(str(name)), str(i), pct(r.get("efficiency_vs_opt"), 1), cell(r.get("qos_misses")),
                 f"{cell(r.get('same_as_opt'))} / {cell(r.get('steps'))}"]
                for name, rows in rep["rewards"].items() for i, r in enumerate(rows or [], 1) if isinstance(r, dict)]
        out.append(("Replay: the reward alone", (
            f"Q-learning as Alg. 1 writes it (random starts, uniform exploration with epsilon 0.1) replayed over "
            f"this run's recorded steps ({cell(rep.get('sweeps'))} sweeps, seed "
            f"{cell(rep.get('seed'))}): each step's recorded state and every variant's oracle measurement, once "
            "with the current reward (energy in reference energies of "
            f"{fix(rep.get('energy_ref_mj'), 1)} mJ, a QoS miss penalised) and once with Eq. 5 in mJ without the "
            "miss penalty. The same data and states under both: what the reward alone changes "
            "(`python benchmarks/autoscale_real.py --replay-only FILE`).\n\n"
            + table(["reward", "sweep", "efficiency vs Opt", "QoS misses", "same as Opt"], body))))
    return out


RENDERERS["autoscale_real"] = r_autoscale_real


def r_autoscale(doc: dict[str, Any]) -> list[Section]:
    """benchmarks/autoscale.py: AutoScale in simulation against the baselines and Opt, per board."""
    a = doc.get("args") or {}
    paper = doc.get("paper") or {}
    model = doc.get("model") or {}
    boards = doc.get("boards") or {}
    out: list[Section] = [("Setup", (
        f"Boards {', '.join(f'`{b}`' for b in a.get('boards') or [])}; networks {', '.join(a.get('models') or [])}; "
        f"training: {cell(a.get('runs'))} inferences per network per runtime-variance state (Sec. 5.3); evaluation: "
        f"{cell(a.get('per_model'))} inferences per network per environment; latency noise σ "
        f"{pct(model.get('noise_sigma'), 0)}, slowdown per unit of co-runner CPU use {short(model.get('cpu_slowdown'))} "
        f"(CPU actions), of memory use {short(model.get('mem_slowdown'))} (local actions, on their memory-bound "
        "share). Efficiency: inferences per joule over Edge(CPU FP32)'s, per network, averaged; a cell reads "
        "efficiency / QoS-violation ratio. AutoScale chooses greedily and keeps learning on its copy of the table; "
        "AutoScale(frozen) never updates it. Opt: per inference the best action in expectation for the state that "
        "inference saw (noise-free, known in hindsight): the least energy meeting QoS, the fastest when none does; "
        "Opt(hindsight): the same criterion on the inference's noisy outcomes (it also knows the noise); "
        "Opt(reward): the largest Eq. 5 reward in hindsight. Eq. 5's energy is in units of the network's least "
        f"predicted action energy, a missed QoS target costs {short(model.get('qos_penalty'))} of those per QoS target of "
        "latency."))]
    for name, b in boards.items():
        envs = b.get("environments") or {}
        pols = [p for p in ("AutoScale", "AutoScale(frozen)", "Edge(CPU FP32)", "Edge(Best)", "Cloud",
                            "Connected edge", "Opt", "Opt(hindsight)", "Opt(reward)")
                if any(p in (v.get("policies") or {}) for v in envs.values())]
        rows = []
        for e, v in envs.items():
            pol = v.get("policies") or {}
            rows.append([f"{e}: {esc(v.get('description', ''))}"]
                        + [f"{fix(pol[p]['efficiency'], 2)} / {pct(pol[p]['qos_violation'], 0)}" if p in pol else DASH
                           for p in pols] + [pct((v.get("selection") or {}).get("opt"), 0),
                                              pct((v.get("selection") or {}).get("near_opt"), 0)])
        s, c, d = b.get("summary") or {}, b.get("convergence") or {}, b.get("decision") or {}
        sel, qv = s.get("selection") or {}, s.get("qos_violation") or {}
        pairs = [
            ("efficiency vs Opt (mean over S1-S5, D1-D3)", f"{pct(s.get('efficiency_gap_vs_opt'), 1, sign=True)} "
             f"(frozen table {pct(s.get('frozen_efficiency_gap_vs_opt'), 1, sign=True)}; paper −3.2%)"),
            ("efficiency vs Opt(hindsight) / Opt(reward)",
             f"{pct(s.get('efficiency_gap_vs_opt_hindsight'), 1, sign=True)} / "
             f"{pct(s.get('efficiency_gap_vs_opt_reward'), 1, sign=True)}"),
            ("QoS violations AutoScale / frozen / Opt / Opt(hindsight) / Opt(reward)",
             " / ".join(pct(qv.get(k), 1) for k in ("AutoScale", "AutoScale(frozen)", "Opt", "Opt(hindsight)",
                                                      "Opt(reward)"))
             + " (paper: AutoScale within 1.9% of Opt)"),
            ("selection: same action as Opt", f"{pct(sel.get('opt'), 1)} (frozen {pct(sel.get('frozen_opt'), 1)}; "
             "paper 97.9%)"),
            ("  within 1% of Opt's energy (in expectation), QoS where Opt meets it", pct(sel.get("near_opt"), 1)),
            ("  same execution target (processor, precision) as Opt", pct(sel.get("target"), 1)),
            ("  Eq. 5's best in expectation is Opt's (learning the reward perfectly) / AutoScale picks it",
             f"{pct(sel.get('reward_ceiling'), 1)} / {pct(sel.get('reward_expected'), 1)}"),
            ("  same action as Opt(hindsight) (how often Opt is Opt(hindsight)'s choice)",
             f"{pct(sel.get('opt_hindsight'), 1)} ({pct(sel.get('ceiling'), 1)})"),
            ("  the most a fixed choice per network and Table 1 state can match (Opt's most frequent action there)",
             pct(sel.get("state_ceiling"), 1)),
            ("  inferences with another action within 0.1% / 1% of Opt by its criterion "
             "(energy meeting QoS, else latency)",
             f"{pct(sel.get('tie_0.001'), 1)} / {pct(sel.get('tie_0.01'), 1)}"),
            ("gain over the baselines, static / dynamic", "; ".join(
                f"{k} ×{fix((s.get('gain_static') or {}).get(k), 2)} / ×{fix((s.get('gain_dynamic') or {}).get(k), 2)}"
                f" (paper ×{short((paper.get('gain_static') or {}).get(k))} / ×{short((paper.get('gain_dynamic') or {}).get(k))})"
                for k in ("Edge(CPU FP32)", "Edge(Best)", "Cloud", "Connected edge"))),
            ("runs to converge, fresh table (median over S1-S5 x networks)",
             f"{short(c.get('scratch_median'))} (paper 40-50)"),
        ]
        if "transfer" in c:
            pairs.append((f"runs to converge, table from {c.get('transfer_from')}",
                          f"{short(c.get('transfer_median'))} ({pct(c.get('time_saving'), 0)} fewer runs on average; "
                          "paper 21.2%)"))
        pairs += [("decision (state key + choice), median", f"{fix(d.get('trained_us'), 1)} µs (paper 7.3 µs)"),
                  ("decision + Q-update, median", f"{fix(d.get('training_us'), 1)} µs (paper 10.6 µs)"),
                  ("training", f"{fix(b.get('train_s'), 1)} s for {cell(b.get('train_inferences'))} inferences, "
                               f"{cell(b.get('states_learned'))} states, {len(b.get('actions') or [])} actions")]
        verd = [[esc(v.get("target", "")), str(v.get("paper", "")), sig(v.get("ours"), 3),
                 "met" if v.get("met") else "**missed**"] for v in b.get("verdicts") or []]
        states = ", ".join(f"{m} `{k}`" for m, k in (b.get("states") or {}).items())
        nets = [m.get("model") for m in (next(iter(envs.values()), {}) or {}).get("models") or []]
        where = [[e] + [(lambda m: DASH if m is None else (f"`{m.get('opt')}`" if m.get("opt") == m.get("autoscale")
                                                         else f"`{m.get('opt')}` / `{m.get('autoscale')}`"))(
                     next((m for m in v.get("models") or [] if m.get("model") == n), None)) for n in nets]
                 for e, v in envs.items()]
        out.append((f"`{name}`", table(["environment", *pols, "same as Opt", "within 1% of Opt"], rows) + "\n\n" + kv_table(pairs)
                    + "\n\nTargets:\n\n" + table(["target", "paper", "ours", ""], verd)
                    + "\n\nWhere each network runs: Opt's action, and AutoScale's where it differs (the most "
                      "frequent over the environment's inferences):\n\n" + table(["environment", *nets], where)
                    + f"\n\nState keys (Table 1) in S1: {states}."))
    sens = doc.get("sensitivity") or []
    if sens:
        rows = [[short(r.get("learning_rate")), short(r.get("discount")), pct(r.get("efficiency_gap_vs_opt"), 1, sign=True),
                 pct(r.get("selection"), 1), pct(r.get("near_opt"), 1), pct(r.get("selection_reward"), 1)] for r in sens]
        out.append(("Learning rate and discount (Sec. 5.3)", (
            "Each pair trained and evaluated on the first board (AutoScale, learning on; half the inferences "
            "per environment); the paper finds a higher "
            "learning rate and a lower discount better and uses 0.9 and 0.1.\n\n"
            + table(["learning rate", "discount", "efficiency vs Opt", "same as Opt", "within 1% of Opt",
                     "Eq. 5's best in expectation"], rows))))
    scen = doc.get("scenarios") or []
    if scen:
        pols = ("AutoScale", "Edge(Best)", "Cloud", "Connected edge", "Opt")
        rows = [[esc(r.get("scenario", ""))] + [f"{fix((r.get(p) or {}).get('efficiency'), 2)} / "
                                                f"{pct((r.get(p) or {}).get('qos_violation'), 0)}" for p in pols]
                + [pct(r.get("selection"), 1), pct(r.get("near_opt"), 1)] for r in scen]
        out.append(("Streaming and accuracy targets (Figs. 10, 12)", (
            "The first board, each scenario trained and evaluated over S1-S5 and D1-D3 (half the inferences per "
            "environment); efficiency over Edge(CPU FP32) / QoS-violation ratio. The paper gives these as figures "
            "only: AutoScale stays near Opt, a little lower with the higher accuracy target.\n\n"
            + table(["scenario", *pols, "same as Opt", "within 1% of Opt"], rows))))
    whatif = doc.get("what_if") or []
    if whatif:
        rows = [[esc(r.get("case", "")), pct(r.get("opt"), 1), pct(r.get("near_opt"), 1), pct(r.get("reward_ceiling"), 1),
                 pct(r.get("reward_expected"), 1), pct(r.get("target"), 1),
                 pct(r.get("efficiency_gap_vs_opt"), 1, sign=True), pct(r.get("qos_violation"), 1)]
                for r in whatif]
        out.append(("Where the selection accuracy goes", (
            "Diagnostics on the first board, not results: the same training and evaluation without the latency noise, "
            "with Eq. 5's slack and accuracy terms off (alpha = beta = 0: among the actions meeting QoS the reward "
            "then ranks by energy alone, as Opt does), and both.\n\n"
            + table(["case", "same as Opt", "within 1% of Opt", "Eq. 5's best is Opt's", "AutoScale picks Eq. 5's best",
                     "same execution target", "efficiency vs Opt", "QoS violations"], rows))))
    return out


RENDERERS["autoscale"] = r_autoscale

# ---- figures -------------------------------------------------------------------------------------

def figures(stem: str, doc: dict[str, Any], results: Path, stems: list[str]) -> list[tuple[Path, str]]:
    """(source PNG, name under img/) for the figures beside a result: those its ``plots`` list names,
    else ``<stem>-*.png`` (not another result's, e.g. herti-seeds-* for herti), then ``<stem>-sweep/*.png``."""
    found: list[tuple[Path, str]] = []
    plots = doc.get("plots")
    if isinstance(plots, list) and plots:
        for p in plots:
            src = results / Path(str(p)).name
            if src.is_file() and src.suffix == ".png":
                found.append((src, src.name))
    else:
        longer = [s for s in stems if s != stem and s.startswith(stem + "-")]
        for src in sorted(results.glob(f"{stem}-*.png")):
            if not any(src.name.startswith(s + "-") for s in longer):
                found.append((src, src.name))
    sweep = results / f"{stem}-sweep"
    if sweep.is_dir():
        found += [(src, f"{stem}-sweep-{src.name}") for src in sorted(sweep.glob("*.png"))]
    return found


# ---- pages, index, README region ----------------------------------------------------------------

def title_of(stem: str, doc: dict[str, Any]) -> str:
    script = script_of(stem, doc)
    name = TITLES.get(script, script.replace("_", " ").capitalize())
    return name if stem == script else f"{name}: `{stem}`"


def page_sections(stem: str, doc: dict[str, Any]) -> list[Section]:
    """The result sections of ``stem``'s page (a file whose shape changed gets its values as found)."""
    script = script_of(stem, doc)
    try:
        return (STEM_RENDERERS.get(stem) or RENDERERS.get(script, r_generic))(doc)
    except SHAPE_ERRORS as exc:  # a file whose shape changed still gets a page, and says so
        return [("Results", (f"This file's structure is not the one `benchmarks/tables.py` reads for "
                             f"`{script}` ({type(exc).__name__}: {exc}); its values as found:"))] + r_generic(doc)


def render_page(stem: str, doc: dict[str, Any], scripts: Path, figs: list[tuple[Path, str]]) -> str:
    script = script_of(stem, doc)
    what = docstring_sentence(scripts, script) or f"Results of `benchmarks/{script}.py`."
    cmd, recorded = command(stem, doc)
    lines = [f"# {title_of(stem, doc)}", "", what, "",
             f"- **Command**{'' if recorded else ' (reconstructed from the arguments the JSON records)'}: `{cmd}`",
             f"- **Date**: {fmt_date(doc)}",
             f"- **Data**: `benchmarks/results/{stem}.json`",
             "", "## Machine", "", machine_table(doc.get("machine")), ""]
    sections = page_sections(stem, doc)
    for head, body in sections:
        lines += [f"## {head}", "", body.rstrip(), ""]
    if figs:
        lines += ["## Figures", ""]
        for _, name in figs:
            lines += [f"![{name}](img/{name})", ""]
    lines += ["---", "", "Generated by `python benchmarks/tables.py` from the JSON above; do not edit by hand.", ""]
    return "\n".join(lines)


def headline_rows(docs: dict[str, dict[str, Any]]) -> list[tuple[str, str, str]]:
    """(benchmark, headline, stem): one figure per benchmark family, from its main result file."""
    rows: list[tuple[str, str, str]] = []

    def add(stem: str, label: str, fn: Callable[[dict[str, Any]], str]) -> None:
        if stem in docs:
            try:
                rows.append((label, fn(docs[stem]), stem))
            except SHAPE_ERRORS:  # a headline that cannot be read is left out, not guessed
                return

    def compile_(d: dict[str, Any]) -> str:
        ok = [r for r in d["results"] if "error" not in r]
        rn = next(r for r in ok if r["model"] == (d.get("targets") or {}).get("compile_model", "resnet50"))
        return (f"{rn['model']} compiled in {fix(rn['compile_s'], 2)} s; slowest planner medians over {len(ok)} "
                f"models: `dp` {fix(max(r['dp']['median_ms'] for r in ok), 2)} ms, "
                f"`exact` {fix(max(r['exact']['median_ms'] for r in ok), 1)} ms")

    def planners(d: dict[str, Any]) -> str:
        j = [r for r in d["summary"] if r.get("target_met") is not None]
        return (f"L = {d['target']['layers']}: {sum(1 for r in j if r['target_met'])} of {len(j)} cases under "
                f"{short(d['target']['seconds'])} s, worst {fix(max(r['worst_ms'] for r in j) / 1e3, 2)} s")

    def herti(d: dict[str, Any]) -> str:
        s = d["summary"]
        per = [x for dl in s["deadlines"].values() for x in dl["HERTI"].values()]
        sv = s["saving_vs"].get("medium") or next(iter(s["saving_vs"].values()))
        return (f"`dqn` above `exact`: median {pct(med([x['gap_to_exact'] for x in per]))}, worst "
                f"{pct(max(x['gap_to_exact'] for x in per))}; deadlines met {sum(1 for x in per if x['feasible'])} / "
                f"{len(per)}; energy {pct(sv['MOSAIC-P'], 1)} below MOSAIC-P (medium deadline)")

    def evosh(d: dict[str, Any]) -> str:
        hw = [c["summary"]["evosh"]["gap_mean"] for c in d["cases"] if c.get("space") == "hardware"]
        t = d["targets"]
        return (f"{sum(1 for x in t if x['pass'])} of {len(t)} targets met; hardware space: mean gap to the "
                f"optimum at most {pct(max(hw))}")

    def fidelity(d: dict[str, Any]) -> str:
        if not any("held_out" in r for r in d["rows"]):      # a file from before the leave-out refits
            return (f"{sum(1 for r in d['rows'] if r['verdict'] == 'ok')} of {len(d['rows'])} rows of MOSAIC's "
                    f"evaluation ok (tolerance {pct(d['tolerance'], 0)})")
        # held-out rows only: each fitted row as a refit that did not see it predicts it, the rest never fitted
        held = [r["held_out"]["verdict"] for r in d["rows"]]
        bp = [v for v in (d.get("base_power") or {}).get("values") or [] if v.get("rows")]
        text = (f"held out: {held.count('ok')} of {len(held)} rows of MOSAIC's evaluation ok, each predicted by a fit "
                f"that did not see it (tolerance {pct(d['tolerance'], 0)})")
        if len(bp) > 1:
            saving, mw = [v["rows"][0]["ours"] for v in bp], [v["base_power_mw"] for v in bp]
            text += (f"; HERTI's medium-deadline saving over MOSAIC-P {pct(min(saving), 1)} to {pct(max(saving), 1)} "
                     f"with base power {short(min(mw))} to {short(max(mw))} mW (paper "
                     f"{pct(d['paper']['herti_fig6_saving_vs']['MOSAIC-P'], 1)})")
        return text

    def verify(d: dict[str, Any]) -> str:
        r = d["results"]
        return (f"{sum(1 for x in r if x.get('ok'))} of {len(r)} compile and verify; max relative difference "
                f"{sci(max(x['max_rel_diff'] for x in r if is_num(x.get('max_rel_diff'))))}")

    def runtime(d: dict[str, Any]) -> str:
        r = d["results"][0]
        return f"{r['model']}: hetcc run vs a plain onnxruntime chain " + ", ".join(
            f"{pct(v['hetcc_vs_chain_paired_pct'] / 100, 2, sign=True)} ({n} slices)" for n, v in r["slices"].items())

    def host(d: dict[str, Any]) -> str:
        r = d["result"]
        return (f"{r['model']}: per-layer MAPE {pct(r['layer_mape'], 1)}, whole model {pct(r['model_error'], 1)} "
                "against an independent profile")

    def contention(d: dict[str, Any]) -> str:
        r = d["summary"]["shared, cv 0"]
        return (f"predicted per-model throughput against a SimPy simulation of the same pipelines, {r['models']} "
                f"models in {len(d['mixes'])} mixes: median error {pct(r['median_pct'] / 100, 2)}, p90 {pct(r['p90_pct'] / 100, 2)}")

    def fairboost(d: dict[str, Any]) -> str:
        sizes = sorted(d["summary"], key=int)
        parts = []
        for name in ("fairboost", "fairboost-agent", "ga", "all-gpu"):
            if all(name in d["summary"][k] for k in sizes):
                parts.append(f"`{name}` " + " / ".join(fix(d["summary"][k][name]["O"], 2) for k in sizes))
        return f"mean O (throughput x fairness) on {' / '.join(sizes)}-model mixes: " + "; ".join(parts)

    def autoscale(d: dict[str, Any]) -> str:
        b = d["boards"]["mi8pro-edge-cloud"]
        sm, conv, dec = b["summary"], b["convergence"], b["decision"]
        return (f"mi8pro, S1-S5 and D1-D3: efficiency {pct(sm['efficiency_gap_vs_opt'], 1, sign=True)} vs Opt; "
                f"Opt's action {pct(sm['selection']['opt'], 1)}; converged in {short(conv['scratch_median'])} runs; "
                f"decision {fix(dec['trained_us'], 1)} µs")

    def autoscale_real(d: dict[str, Any]) -> str:
        def last_median(runs: Any) -> float | None:
            last = _last_pass_efficiencies(runs)
            return statistics.median(last) if last else None
        runs = d.get("runs") or [{"passes": d["passes"]}]
        alg1 = last_median(d.get("alg1_runs"))
        return (f"{d['args']['model']} here, real co-runners and offload: pass {len(d['passes'])} at "
                f"{pct(last_median(runs), 1)} of Opt's inferences/J (median of {len(runs)}"
                + (f"; Alg. 1 as written {pct(alg1, 0)})" if alg1 is not None else ")"))

    def shaping(d: dict[str, Any]) -> str:
        return (f"worst error against the link tables: bandwidth {pct(d['worst_bandwidth_error'], 1)}, round trip "
                f"{pct(d['worst_rtt_error'], 1)}")

    add("compile", "Compile time", compile_)
    add("planners", "Planner speed", planners)
    add("herti", "HERTI", herti)
    add("evosh", "EvoSh", evosh)
    add("fidelity", "Fidelity to MOSAIC", fidelity)
    add("verify_zoo-all", "Zoo verification", verify)
    add("runtime_overhead", "Runtime overhead", runtime)
    add("host_fit", "Host fit", host)
    add("contention", "Contention model", contention)
    add("fairboost", "FairBoost", fairboost)
    add("autoscale", "AutoScale, simulated", autoscale)
    add("autoscale_real", "AutoScale, real", autoscale_real)
    add("offload_shaping", "Offload link shaping", shaping)
    return rows


def readme_region(docs: dict[str, dict[str, Any]], link_prefix: str) -> str:
    body = [[f"[{label}]({link_prefix}{stem}.md)", text, fmt_date(docs[stem])]
            for label, text, stem in headline_rows(docs)]
    return ("\n\n" + table(["benchmark", "headline", "measured"], body, right=set())
            + f"\n\nEvery result, with its command and machine: [{link_prefix}index.md]({link_prefix}index.md)"
            " (generated by `python benchmarks/tables.py`).\n\n")


def anchor(heading: str) -> str:
    """MkDocs' (Python-Markdown toc) anchor of a heading: lower case, punctuation dropped, spaces to '-'."""
    text = re.sub(r"[^\w\s-]", "", heading.lower()).strip()
    return re.sub(r"[-\s]+", "-", text)


def embed_regions(text: str, page: Path, docs: dict[str, dict[str, Any]], docs_dir: Path) -> str:
    """``text`` with every ``<!-- table: STEM#SECTION -->`` region holding that section of STEM's page;
    an unknown STEM or SECTION is an error naming the page and the headings it could be."""
    def fill(m: re.Match) -> str:
        stem, head = m.group("stem"), m.group("section").strip()
        if stem not in docs:
            raise SystemExit(f"{page}: <!-- table: {stem}#{head} -->: no benchmarks/results/{stem}.json")
        sections = dict(page_sections(stem, docs[stem]))
        if head not in sections:
            raise SystemExit(f"{page}: <!-- table: {stem}#{head} -->: the page's sections are "
                             + ", ".join(repr(h) for h in sections))
        link = os.path.relpath(docs_dir / f"{stem}.md", page.resolve().parent).replace(os.sep, "/")
        return (f"{m.group(1)}\n\n{sections[head].rstrip()}\n\n*Generated from `benchmarks/results/{stem}.json` "
                f"({fmt_date(docs[stem])}): [{head}]({link}#{anchor(head)}).*\n\n{m.group(5)}")
    return EMBED.sub(fill, text)


def embedding_pages(docs_root: Path, docs_dir: Path) -> dict[Path, str]:
    """The docs pages (outside the generated folder) that embed a result section, with their text."""
    if not docs_root.is_dir():
        return {}
    pages = {p: p.read_text(encoding="utf-8") for p in sorted(docs_root.rglob("*.md"))
             if docs_dir.resolve() not in p.resolve().parents}
    return {p: text for p, text in pages.items() if "<!-- table: " in text}


def render_index(pages: list[tuple[str, dict[str, Any]]]) -> str:
    lines = ["# Benchmark results", "",
             "One page per result file in `benchmarks/results/`, generated by `python benchmarks/tables.py`.", ""]
    for stem, doc in pages:
        lines.append(f"- [{title_of(stem, doc)}]({stem}.md): `{stem}.json`, {fmt_date(doc)}")
    return "\n".join(lines) + "\n"


def load_results(results: Path) -> dict[str, dict[str, Any]]:
    docs = {}
    for path in sorted(results.glob("*.json")):
        if "-quick" in path.stem:
            continue
        doc = json.loads(path.read_text(encoding="utf-8"))
        if isinstance(doc, dict):
            docs[path.stem] = doc
    return docs


def plan(results: Path, docs_dir: Path, scripts: Path, readme: Path | None) -> tuple[dict[Path, bytes], tuple[Path, str] | None]:
    """Every file to write (path -> bytes) and the README's new text (None: no README or no markers)."""
    docs = load_results(results)
    files: dict[Path, bytes] = {}
    stems = list(docs)
    for stem, doc in docs.items():
        figs = figures(stem, doc, results, stems)
        files[docs_dir / f"{stem}.md"] = render_page(stem, doc, scripts, figs).encode()
        for src, name in figs:
            files[docs_dir / "img" / name] = src.read_bytes()
    files[docs_dir / "index.md"] = render_index(list(docs.items())).encode()
    new_readme = None
    if readme is not None and readme.is_file():
        text = readme.read_text(encoding="utf-8")
        i, j = text.find(START), text.find(END)
        if 0 <= i < j:
            prefix = os.path.relpath(docs_dir, readme.resolve().parent).replace(os.sep, "/") + "/"
            new_readme = (readme, text[:i + len(START)] + readme_region(docs, prefix) + text[j:])
    for page, text in embedding_pages(docs_dir.parent, docs_dir).items():
        files[page] = embed_regions(text, page, docs, docs_dir).encode()
    return files, new_readme


def managed(docs_dir: Path) -> list[Path]:
    """The files this script owns under docs_dir: its pages and copied figures."""
    found = list(docs_dir.glob("*.md")) if docs_dir.is_dir() else []
    img = docs_dir / "img"
    found += list(img.glob("*.png")) if img.is_dir() else []
    return sorted(found)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="write nothing; exit 1 naming each file that differs")
    ap.add_argument("--results", type=Path, default=HERE / "results", help="result JSON folder (benchmarks/results)")
    ap.add_argument("--docs", type=Path, default=ROOT / "docs" / "benchmarks", help="pages folder (docs/benchmarks)")
    ap.add_argument("--readme", type=Path, default=ROOT / "README.md", help="README with the results region")
    ap.add_argument("--scripts", type=Path, default=HERE, help="where the benchmark scripts are (their docstrings)")
    args = ap.parse_args(argv)
    files, readme = plan(args.results, args.docs, args.scripts, args.readme)
    stale = [p for p in managed(args.docs) if p not in files]
    if args.check:
        bad = [f"stale (no result file generates it): {p}" for p in stale]
        for path, data in sorted(files.items()):
            if not path.is_file():
                bad.append(f"missing: {path}")
            elif path.read_bytes() != data:
                bad.append(f"differs: {path}")
        if readme and readme[0].read_text(encoding="utf-8") != readme[1]:
            bad.append(f"differs: {readme[0]} (the {START} region)")
        for line in bad:
            print(line)
        if bad:
            print("run `python benchmarks/tables.py` to regenerate", file=sys.stderr)
        return 1 if bad else 0
    for p in stale:
        p.unlink()
    for path, data in sorted(files.items()):
        if not path.is_file() or path.read_bytes() != data:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
    if readme and readme[0].read_text(encoding="utf-8") != readme[1]:
        readme[0].write_text(readme[1], encoding="utf-8")
    print(f"{len([p for p in files if p.suffix == '.md' and p.parent == args.docs])} pages, "
          f"{len([p for p in files if p.suffix == '.png'])} figures in {args.docs}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
