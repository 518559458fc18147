"""Plumbing shared by the benchmark scripts (compile.py, runtime_overhead.py, verify_zoo.py).

Not a benchmark itself. The scripts run as ``python benchmarks/<name>.py`` and put this folder on
``sys.path`` before importing it, so it works from any working directory.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import threading
import traceback
from pathlib import Path
from typing import Any, Callable, Iterable

import numpy as np

HERE = Path(__file__).resolve().parent
RESULTS_DIR = HERE / "results"
MODELS_DIR = HERE / ".models"


def _loadavg() -> list[float] | None:
    try:
        return list(os.getloadavg())
    except OSError:
        return None


#: the load average when the script started (this module is imported first): machine_info() is
#: often called when the result is written, at the end
LOAD_AT_START = _loadavg()


def machine_info() -> dict[str, Any]:
    import onnxruntime as ort

    import hetcc

    from hetcc.measure.profiler import cpu_model

    cpu = cpu_model()
    try:
        usable = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        usable = os.cpu_count()
    return {"cpu_count": os.cpu_count(), "usable_cpus": usable, "cpu": cpu, "machine": platform.machine(),
            "platform": platform.platform(), "python": platform.python_version(),
            "onnxruntime": ort.__version__, "numpy": np.__version__,
            "hetcc": getattr(hetcc, "__version__", "?"), "loadavg_at_start": LOAD_AT_START}


def utc_now() -> str:
    """The start time stamp written into each result file."""
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def model_path(name: str, models_dir: Path, seed: int = 0) -> Path:
    """The zoo model exported once into ``models_dir`` (the benchmarks' model cache) and reused."""
    from hetcc.compiler import zoo

    path = models_dir / f"{name}-seed{seed}.onnx"
    if not path.exists():
        print(f"exporting {name} -> {path}", file=sys.stderr, flush=True)
        zoo.export(name, path, seed=seed)
    return path


def select_models(args: argparse.Namespace, quick_models: Iterable[str]) -> list[str]:
    """``quick_models`` with ``--quick``, else the ``--models`` list (checked against the zoo), else
    the core zoo set (every entry with ``--all``)."""
    from hetcc.compiler import zoo

    if args.quick:
        return list(quick_models)
    if args.models:
        names = [m.strip() for m in args.models.split(",") if m.strip()]
        unknown = [m for m in names if m not in zoo.ZOO]
        if unknown:
            raise SystemExit(f"unknown zoo model(s) {', '.join(unknown)}; known: {', '.join(zoo.ZOO)}")
        return names
    return [e.name for e in zoo.list_models() if args.all or e.core]


def add_io_args(ap: argparse.ArgumentParser, script: str, *, with_all: bool = True) -> None:
    """``--models-dir`` and ``--out`` (the default JSON name depends on ``--quick``/``--all``/``--models``;
    ``with_all``: whether the script has ``--all``)."""
    variants = "-quick.json, -all.json or -models.json" if with_all else "-quick.json or -models.json"
    ap.add_argument("--models-dir", type=Path, default=MODELS_DIR, help="exported-model cache")
    ap.add_argument("--out", type=Path, default=None, help=f"JSON path (default benchmarks/results/{script}.json; "
                    f"{script}{variants} with those options)")


def out_path(args: argparse.Namespace, script: str) -> Path:
    """``--out``, or benchmarks/results/<script>[-quick|-all|-models].json."""
    suffix = "-quick" if args.quick else "-all" if getattr(args, "all", False) else "-models" if args.models else ""
    return args.out or RESULTS_DIR / f"{script}{suffix}.json"


def write_json(doc: dict[str, Any], out: Path) -> None:
    if (load := _loadavg()) is not None:
        doc["machine"]["loadavg_at_end"] = load
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.tmp{os.getpid()}")
    tmp.write_text(json.dumps(doc, indent=1) + "\n")
    os.replace(tmp, out)


def make_console() -> Any:
    from rich.console import Console

    console = Console()
    return console if console.is_terminal else Console(width=240)


def error_text(exc: BaseException) -> str:
    """``Type: first line of the message``, as result rows record a failure."""
    return f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"


def bench_each(names: Iterable[str], bench: Callable[[str], dict[str, Any]], console: Any) -> list[dict[str, Any]]:
    """``bench(name)`` for each model; a model that raises gets ``{"model", "error"}`` instead."""
    rows = []
    for name in names:
        console.print(f"[dim]{name}…[/]", highlight=False)
        try:
            rows.append(bench(name))
        except Exception as exc:  # one model failing must not hide the others' numbers
            traceback.print_exc()
            rows.append({"model": name, "error": error_text(exc)})
    return rows


def print_errors(rows: list[dict[str, Any]], console: Any) -> None:
    for r in rows:
        if "error" in r:
            console.print(f"[red]{r['model']}: {r['error']}[/]", highlight=False)


def default_variant(artifact: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """(manifest, its default variant) of a model artifact, as JSON (hetcc.manifest/2)."""
    manifest = json.loads((Path(artifact) / "manifest.json").read_text())
    return manifest, manifest["variants"][manifest["default_variant"]]


def median(xs: list[float]) -> float:
    return float(statistics.median(xs))


def rel_diff(got: np.ndarray, want: np.ndarray, *, check_shape: bool = True) -> float:
    """max |got - want| / max |want| (what hetcc.runtime.verify reports); with ``check_shape``,
    inf where the shapes differ (without it numpy broadcasts or raises)."""
    if check_shape and got.shape != want.shape:
        return float("inf")
    scale = float(np.max(np.abs(want))) if want.size else 0.0
    return float(np.max(np.abs(got.astype(np.float64) - want.astype(np.float64)))) / max(scale, 1e-300)


#: a busy process: one core kept at 100% for at most four hours (``start_busy``; its caller stops it)
SPIN = "import time\nt = time.time()\nwhile time.time() - t < 14400: pass\n"


def start_busy(n: int, code: str = SPIN) -> list[subprocess.Popen]:
    """``n`` Python processes running ``code`` (default: a CPU-bound loop); ``stop_busy`` ends them."""
    return [subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.DEVNULL) for _ in range(n)]


def stop_busy(procs: list[subprocess.Popen]) -> None:
    for p in procs:
        p.kill()
    for p in procs:
        p.wait()


class ServeProcess:
    """``hetcc serve WHAT --port 0 --threads 1`` in a subprocess, ``url`` once it says it is ready; its
    log (stderr: one line per request) drained into ``lines`` by a thread, so a long run never fills
    the pipe. SystemExit with what it printed when it exits before it is ready."""

    def __init__(self, what: Path, env: dict[str, str]) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "hetcc.cli", "serve", str(what), "--port", "0",
                                      "--threads", "1"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, text=True, env=env)
        self.lines: list[str] = []
        for line in self.proc.stderr:
            self.lines.append(line)
            found = re.search(r"ready on (http://\S+)", line)
            if found:
                self.url = found.group(1)
                break
        else:
            self.proc.wait()
            raise SystemExit(f"hetcc serve did not start: {''.join(self.lines).strip()}")
        self.drain = threading.Thread(target=lambda: self.lines.extend(self.proc.stderr), daemon=True)
        self.drain.start()

    def stop(self) -> int:
        """Stop it (SIGTERM: requests in flight finish) and wait for the rest of its log."""
        self.proc.terminate()
        code = self.proc.wait(60)
        self.drain.join(10)
        return code

    def count(self, pattern: str) -> int:
        """The log lines matching ``pattern`` (e.g. the answered runs, after ``stop``)."""
        return sum(bool(re.search(pattern, line)) for line in self.lines)
