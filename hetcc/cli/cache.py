"""``hetcc cache list|clear [--zoo] [--modules] [--profiles]``: what hetcc keeps in its cache
(``$HETCC_CACHE_DIR``, else ``~/.cache/hetcc``) and removing it; the layout is ``hetcc.files.cache``'s."""
from __future__ import annotations

import argparse
import time
from pathlib import Path

from hetcc.core.errors import UsageError
from hetcc.core.paths import cache_dir
from hetcc.files.cache import KINDS, describe_size, entries, remove

_KIND_HELP = {"zoo": "zoo models exported with random weights (zoo/seed<N>/<name>.onnx)",
              "modules": "torch.nn.Modules given to hetcc.compile, exported (modules/<sha>/<class>.onnx)",
              "profiles": "the host target's measurements, per model and machine (profiles/*.json)"}


def add_arguments(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="cache_cmd", required=True, parser_class=type(p))
    ls = sub.add_parser("list", help="what is cached: kind, what (model, seed, machine), when, size")
    clear = sub.add_parser("clear", help="remove cached files (only hetcc's own, recognised by their names)")
    for s in (ls, clear):
        for kind in KINDS:
            s.add_argument(f"--{kind}", action="store_true", help=f"only {_KIND_HELP[kind]} (default: every kind)")
    ls.add_argument("--json", action="store_true", help="the entries as JSON")


def cmd_cache(args: argparse.Namespace) -> int:
    kinds = [k for k in KINDS if getattr(args, k)] or list(KINDS)
    root = cache_dir()
    if root.exists() and not root.is_dir():
        raise UsageError(f"the cache {root} is not a directory; set HETCC_CACHE_DIR to a directory")
    machine = _this_machine if "profiles" in kinds and (root / "profiles").is_dir() else None
    found = entries(root, kinds, this_machine=machine)
    if args.cache_cmd == "list":
        return _list(args, root, kinds, found)
    return _clear(root, kinds, found)


def _this_machine(key: str) -> str | None:
    """``this machine (FINGERPRINT)`` when ``key`` is this machine's session-boundary key, the
    key ``hetcc.measure.profiler.boundary_fit`` files its fit under; else None (unknown)."""
    import hashlib
    import json

    try:
        from hetcc.measure.profiler import CACHE_VERSION, machine_fingerprint

        fp = machine_fingerprint()
    except ImportError:    # no onnxruntime (or the compiler) here: the machine stays unknown
        return None
    mine = hashlib.sha256(json.dumps(["boundary", fp, CACHE_VERSION]).encode()).hexdigest()[:32]
    return f"this machine ({fp})" if key == mine else None


def _when(t: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(t))


def _list(args: argparse.Namespace, root: Path, kinds: list[str], found: list) -> int:
    from hetcc.cli.common import json_text, make_console, make_table

    total = sum(e.size for e in found)
    if args.json:
        print(json_text({"cache_dir": str(root), "kinds": kinds, "entries": [e.to_json(root) for e in found],
                         "bytes": total}))
        return 0
    console = make_console()
    if not found:
        console.print(f"nothing cached in {root} ({', '.join(kinds)})", markup=False)
        return 0
    table = make_table(console, ["kind", "what", "machine", "modified", "size"], {"kind", "what", "machine", "modified"})
    for e in found:
        what = e.what + (" (a write cut short)" if e.unfinished else "")
        machine = e.machine or ("-" if e.kind != "profiles" else "unknown")
        table.add_row(e.kind, what, machine, _when(e.modified), describe_size(e.size))
    console.print(table)
    n = len(found)
    console.print(f"{n} file{'s' * (n != 1)}, {describe_size(total)} in {root} (--json names each file); "
                  "hetcc cache clear [--zoo|--modules|--profiles] removes them", markup=False)
    return 0


def _clear(root: Path, kinds: list[str], found: list) -> int:
    result = remove(root, found)
    for e in result.entries:
        print(f"removed {e.path.relative_to(root).as_posix()} ({e.what}, {describe_size(e.size)})")
    for e, why in result.failed:
        print(f"not removed {e.path.relative_to(root).as_posix()}: {why}")
    n = len(result.entries)
    print(f"removed {n} file{'s' * (n != 1)} ({', '.join(kinds)}) from {root}, {describe_size(result.freed)} freed")
    if result.failed:
        raise UsageError(f"{len(result.failed)} cached file(s) could not be removed from {root}; "
                         "check their permissions (the lines above name them)")
    return 0


__all__ = ["add_arguments", "cmd_cache"]
