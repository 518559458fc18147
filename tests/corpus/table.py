"""Print the README's "Models tried" table: for each corpus model, export time, compile time for
hikey970 and host (a fresh profile cache), layers, slices and verify's worst relative error.

    python tests/corpus/table.py [NAME ...]
"""
from __future__ import annotations

import contextlib
import io
import json
import os
import re
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from models import BY_NAME, CORPUS, build  # noqa: E402


def _cli(*argv) -> tuple[int, str]:
    from hetcc.cli import main

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(buf):
        code = main([str(a) for a in argv])
    return code, buf.getvalue()


def row(name: str, root: Path) -> str:
    t0 = time.perf_counter()
    model = build(BY_NAME[name], root / name)
    cells = [name, BY_NAME[name].source, f"{time.perf_counter() - t0:.1f}"]
    for target, flags in (("hikey970", ()), ("host", ()), ("hikey970", ("--planner", "even:4", "--max-cut-tensors", "2"))):
        out = root / f"{name}-{target}-{len(flags)}"
        t0 = time.perf_counter()
        code, text = _cli("compile", model, "--target", target, "-o", out, *flags)
        seconds = time.perf_counter() - t0
        if code:
            cells.append(f"FAILED: {text.strip().splitlines()[-1]}")
            continue
        manifest = json.loads((out / "manifest.json").read_text())
        slices = len(manifest["variants"][manifest["default_variant"]]["slices"])
        layers = re.search(r"(\d+) layers", text).group(1)
        code, text = _cli("run", out, "--verify")
        rel = max(float(x) for x in re.findall(r"relative ([0-9.eE+-]+)", text)) if code == 0 else None
        cells.append(f"{seconds:.1f} s, {layers} L, {slices} S, " + (f"{rel:.1e}" if rel is not None else "verify FAILED"))
    return "| " + " | ".join(cells) + " |"


def main(names: list[str]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["HETCC_CACHE_DIR"] = str(Path(tmp) / "cache")
        os.environ["YOLO_CONFIG_DIR"] = str(Path(tmp) / "ultralytics")
        print("| model | built from | export s | hikey970 | host | hikey970 even:4, k=2 |")
        print("|---|---|---|---|---|---|")
        for name in names or [e.name for e in CORPUS]:
            print(row(name, Path(tmp)), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
