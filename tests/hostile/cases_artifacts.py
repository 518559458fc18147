"""Hostile artifacts for ``hetcc run`` / ``hetcc inspect``: tampered slices (replaced, missing, a
symlink out), manifests with NUL paths, NaN/Infinity/1e999, huge integers, deep nesting, absurd
sizes and counts, 20000 threads, shapes or dtypes that disagree with the slice files, hardware
controls pointing outside /sys; damaged or escaping costs.json and manifest.json."""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Callable

from harness import Case, compiled
from text_models import CHAIN

Doc = dict[str, Any]


def _manifest(work: Path) -> Doc:
    return json.loads((work / "art" / "manifest.json").read_text())


def _write(work: Path, doc: Doc | str) -> None:
    text = doc if isinstance(doc, str) else json.dumps(doc)
    (work / "art" / "manifest.json").write_text(text, encoding="utf-8", errors="surrogatepass")


def edit(change: Callable[[Doc], Any]) -> Callable[[Path], None]:
    """A setup: compile, then change the parsed manifest in place (``change(doc)``)."""
    def then(work: Path) -> None:
        doc = _manifest(work)
        change(doc)
        _write(work, doc)
    return compiled(CHAIN, then=then)


def replace(old: str, new: str) -> Callable[[Path], None]:
    """A setup: compile, then replace text in manifest.json (for what json.dumps cannot write)."""
    def then(work: Path) -> None:
        text = (work / "art" / "manifest.json").read_text()
        assert old in text, old
        _write(work, text.replace(old, new, 1))
    return compiled(CHAIN, then=then)


def raw(text: str) -> Callable[[Path], None]:
    return compiled(CHAIN, then=lambda work: _write(work, text))


def _slice(doc: Doc) -> Doc:
    return doc["variants"][doc["default_variant"]]["slices"][0]


def _slice_file(work: Path) -> Path:
    return work / "art" / _slice(_manifest(work))["file"]


def _replace_slice(work: Path) -> None:
    p = _slice_file(work)
    p.write_bytes(p.read_bytes() + b"\0")


def _remove_slice(work: Path) -> None:
    _slice_file(work).unlink()


def _slice_links_out(work: Path) -> None:
    p = _slice_file(work)
    p.unlink()
    os.symlink(os.path.relpath(work.parent / "outside" / "secret.txt", p.parent), p)


def _many_slices(n: int, indent: int | None = None) -> Callable[[Path], None]:
    """A chain of ``n`` one-layer slices, each with its own (absent) file."""
    def then(work: Path) -> None:
        doc = _manifest(work)
        s0 = _slice(doc)
        out = []
        for i in range(n):
            s = dict(s0)          # nested values shared: the document is only written out
            s.update(id=i, file=f"slices/{i:06d}.onnx", first_layer=i, last_layer=i)
            s["inputs"] = [{**s0["inputs"][0], "name": "x" if i == 0 else f"t{i - 1}",
                            "source": "model" if i == 0 else i - 1}]
            s["outputs"] = [{**s0["outputs"][0], "name": "y" if i == n - 1 else f"t{i}"}]
            out.append(s)
        doc["variants"][doc["default_variant"]]["slices"] = out
        _write(work, json.dumps(doc, indent=indent))
    return compiled(CHAIN, then=then)


def _variants(n: int) -> Callable[[Doc], None]:
    def change(doc: Doc) -> None:
        v = doc["variants"][doc["default_variant"]]
        doc["variants"] = {f"v{i}": v for i in range(n)}
        doc["default_variant"] = "v0"
    return change


def _io(key: str, value: Any) -> Callable[[Doc], None]:
    """Set ``key`` of the model input and of the slice input reading it (consistent, but not the file's)."""
    def change(doc: Doc) -> None:
        doc["model"]["inputs"][0][key] = value
        _slice(doc)["inputs"][0][key] = value
    return change


def _controls(doc: Doc) -> None:
    doc["target"]["controls"] = {"devices": {}, "knobs": {"emc": {"clock": "/etc/passwd", "unit": "Hz"}}}


def _costs(text: str) -> Callable[[Path], None]:
    return compiled(CHAIN, then=lambda work: (work / "art" / "costs.json").write_text(text))


def _link_out(name: str) -> Callable[[Path], None]:
    def then(work: Path) -> None:
        p = work / "art" / name
        p.unlink()
        os.symlink(os.path.relpath(work.parent / "outside" / "secret.txt", p.parent), p)
    return compiled(CHAIN, then=then)


def _set(*path_and_value: Any) -> Callable[[Doc], None]:
    *path, value = path_and_value

    def change(doc: Doc) -> None:
        d = doc
        for k in path[:-1]:
            d = _slice(d) if k == "SLICE" else d[k]
        d[path[-1]] = value
    return change


RUN = ["run", "art"]
INSPECT = ["inspect", "art"]
BIG = 1 << 20

CASES = [
    # -- the baseline, then tampered slice files
    Case("artifacts/run-ok", RUN, 0, setup=compiled(CHAIN)),
    Case("artifacts/slice-replaced", RUN, 2, ["slices/", "sha256 mismatch", "recompile"],
         setup=compiled(CHAIN, then=_replace_slice)),
    Case("artifacts/slice-missing", RUN, 2, ["slices/", "missing", "recompile"],
         setup=compiled(CHAIN, then=_remove_slice)),
    Case("artifacts/slice-symlink-out", RUN, 2, ["slices/", "outside the artifact"],
         setup=compiled(CHAIN, then=_slice_links_out)),
    # -- manifest.json: values Python's json accepts and JSON does not
    Case("artifacts/manifest-nan", INSPECT, 2, ["manifest.json", "NaN", "recompile"],
         setup=replace('"deadline_ms": null', '"deadline_ms": NaN')),
    Case("artifacts/manifest-infinity", INSPECT, 2, ["manifest.json", "Infinity", "recompile"],
         setup=replace('"latency_ms": ', '"latency_ms": -Infinity, "x": ')),
    Case("artifacts/manifest-1e999", INSPECT, 2, ["manifest.json", "1e999", "recompile"],
         setup=replace('"deadline_ms": null', '"deadline_ms": 1e999')),
    Case("artifacts/manifest-5000-digit-integer", INSPECT, 2, ["manifest.json", "5000 digits", "recompile"],
         setup=replace('"ir_version": 8', '"ir_version": ' + "9" * 5000)),
    Case("artifacts/manifest-31-digit-core-id", RUN, 2, ["manifest.json", "31 digits"],
         setup=edit(_set("SLICE", "affinity", [10**30]))),
    Case("artifacts/manifest-nested-100k-deep", INSPECT, 2, ["manifest.json", "nested", "recompile"],
         setup=raw("[" * 100_000 + "]" * 100_000)),
    Case("artifacts/manifest-stats-nested-900-deep", INSPECT, 2, ["manifest.json", "nested"],
         setup=edit(lambda d: d["variants"][d["default_variant"]]["planner"].update(
             stats={"s": json.loads("[" * 900 + "]" * 900)}))),
    Case("artifacts/manifest-not-utf8", INSPECT, 2, ["manifest.json", "UTF-8"],
         setup=compiled(CHAIN, then=lambda w: (w / "art" / "manifest.json").write_bytes(b"\xff\xfe{}"))),
    Case("artifacts/manifest-lone-surrogate", INSPECT, 2, ["manifest.json", "surrogate"],
         setup=replace('"device": "', '"device": "\\ud800')),
    Case("artifacts/manifest-nul-in-slice-path", RUN, 2, ["manifest.json", "NUL"],
         setup=edit(_set("SLICE", "file", "slices/00\u0000.onnx"))),
    Case("artifacts/manifest-newline-in-slice-path", RUN, 2, ["manifest.json", "control character"],
         setup=edit(_set("SLICE", "file", "slices/00_big.onnx\n"))),
    Case("artifacts/manifest-dotdot-slice-path", RUN, 2, ["manifest.json", "'..'"],
         setup=edit(_set("SLICE", "file", "../outside/secret.txt"))),
    Case("artifacts/manifest-symlink-out", INSPECT, 2, ["manifest.json", "outside the artifact"],
         setup=_link_out("manifest.json")),
    # -- sizes and counts, refused before the schema is checked
    Case("artifacts/manifest-17-mib", INSPECT, 2, ["manifest.json", "16 MiB"],
         setup=replace('"schema"', " " * (17 * BIG) + '"schema"')),
    Case("artifacts/manifest-100k-slices", INSPECT, 2, ["manifest.json", "16 MiB"],
         setup=_many_slices(100_000), child=True, timeout=60, slow=True),
    Case("artifacts/manifest-5000-slices", INSPECT, 2, ["manifest.json", "5000 slices", "at most 4096"],
         setup=_many_slices(5000), child=True, timeout=60),
    Case("artifacts/manifest-1000-slices-3-files", INSPECT, 2, ["manifest.json", "lists 1000 slice files",
                                                               "but the artifact holds"],
         setup=_many_slices(1000), child=True, timeout=60),
    Case("artifacts/manifest-257-variants", INSPECT, 2, ["manifest.json", "257 variants"], setup=edit(_variants(257))),
    # -- numbers in range for JSON, out of range for a run
    Case("artifacts/manifest-20000-threads", RUN, 2, ["intra_op_num_threads", "20000"],
         setup=edit(_set("runtime", "intra_op_num_threads", 20000)), child=True, timeout=60),
    Case("artifacts/manifest-negative-latency", INSPECT, 2, ["latency_ms", "below the minimum"],
         setup=edit(_set("SLICE", "predicted", {"latency_ms": -1, "energy_mj": None, "transfer_ms": 0}))),
    Case("artifacts/manifest-negative-dimension", INSPECT, 2, ["shape", "below the minimum"],
         setup=edit(_io("shape", [1, -8]))),
    Case("artifacts/manifest-shape-not-the-slice-s", RUN, 2, ["'x'", "float32[1, 1000000000000]", "slice file"],
         setup=edit(_io("shape", [1, 10**12])), child=True, timeout=60),
    Case("artifacts/manifest-dtype-not-the-slice-s", RUN, 2, ["'x'", "int64", "slice file"],
         setup=edit(_io("dtype", "int64"))),
    Case("artifacts/manifest-output-not-the-slice-s", RUN, 2, ["slice file", "recompile"],
         setup=edit(lambda d: (_slice(d)["outputs"][0].update(name="z"), d["model"]["outputs"][0].update(name="z")))),
    Case("artifacts/manifest-control-writes-etc-passwd", INSPECT, 2, ["/etc/passwd", "under /sys"],
         setup=edit(_controls)),
    # -- costs.json on hetcc inspect
    Case("artifacts/costs-not-json", INSPECT, 2, ["costs.json", "not valid JSON"], setup=_costs("{")),
    Case("artifacts/costs-nan", INSPECT, 2, ["costs.json", "NaN"], setup=_costs('{"layers": NaN}')),
    Case("artifacts/costs-not-an-object", INSPECT, 2, ["costs.json", "object"], setup=_costs("[]")),
    Case("artifacts/costs-nested-deep", INSPECT, 2, ["costs.json", "nested"],
         setup=_costs("[" * 100_000 + "]" * 100_000)),
    Case("artifacts/costs-symlink-out", INSPECT, 2, ["costs.json", "outside the artifact"],
         setup=_link_out("costs.json")),
]

# costs.json whose layers are not what inspect reads (a traceback before check_costs was called)
def _costs(text: str):
    def then(work):
        (work / "art" / "costs.json").write_text(text)
    return then


CASES += [
    Case("artifacts/costs-layers-not-a-list", ["inspect", "art"], 2, ["costs.json", "layers"],
         setup=compiled(CHAIN, then=_costs('{"layers": 3}'))),
    Case("artifacts/costs-layers-of-numbers", ["inspect", "art"], 2, ["costs.json"],
         setup=compiled(CHAIN, then=_costs('{"layers": [3]}'))),
]
