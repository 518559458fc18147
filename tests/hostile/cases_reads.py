"""Every file hetcc reads is checked to be a regular file of bounded size before it is read
(issue 33, class 4), and broken external data is refused at compile, not at run (class 9): a
FIFO without a writer, a device or a directory where a model, a board file, an observations
file, an ``@option`` file or a sweep/tune spec should be is one line (exit 2), never a hang; an
external data file shorter than its tensor, or an offset past its end, is one line naming it."""
from __future__ import annotations

import os
from pathlib import Path

from harness import Case, board_file as _board, chain, directory as _dir, fifo as _fifo, text_model
from text_models import CHAIN

M = text_model(CHAIN)


def _external(cut: int | None = None, offset: int | None = None, fifo: bool = False):
    """m.onnx (CHAIN) with its weight in m.onnx.data; ``cut``: the data file keeps only that
    many bytes; ``offset``: the tensor claims to start there; ``fifo``: the data file is a FIFO."""
    def setup(work: Path) -> None:
        import onnx
        import onnx.parser
        from onnx import numpy_helper

        model = onnx.parser.parse_model(CHAIN)
        w = model.graph.initializer[0]
        w.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(w), w.name))   # raw bytes: externalised
        onnx.save_model(model, str(work / "m.onnx"), save_as_external_data=True, all_tensors_to_one_file=True,
                        location="m.onnx.data", size_threshold=0)
        data = work / "m.onnx.data"
        if cut is not None:
            data.write_bytes(data.read_bytes()[:cut])
        if offset is not None:
            m = onnx.load(str(work / "m.onnx"), load_external_data=False)
            for t in m.graph.initializer:
                for e in t.external_data:
                    if e.key == "offset":
                        e.value = str(offset)
                if not any(e.key == "offset" for e in t.external_data):
                    t.external_data.add(key="offset", value=str(offset))
            onnx.save_model(m, str(work / "m.onnx"))
        if fifo:
            data.unlink()
            os.mkfifo(data)
    return setup


CASES = [
    Case("reads/model-is-a-fifo", ["compile", "f.onnx", "-o", "art", "-q"], 2,
         ["f.onnx", "FIFO", "not a regular file"], setup=_fifo("f.onnx")),
    Case("reads/model-is-a-device", ["compile", "/dev/zero", "-o", "art", "-q"], 2,
         ["/dev/zero", "device"]),
    Case("reads/target-file-is-a-fifo", ["compile", "m.onnx", "--target", "b.toml", "-o", "art", "-q"], 2,
         ["b.toml", "FIFO"], setup=chain(M, _fifo("b.toml"))),
    Case("reads/target-file-is-a-directory", ["compile", "m.onnx", "--target", "b.toml", "-o", "art", "-q"], 2,
         ["b.toml", "directory"], setup=chain(M, _dir("b.toml"))),
    Case("reads/observations-target-is-a-fifo", ["compile", "m.onnx", "--target", "p.csv", "-o", "art", "-q"], 2,
         ["p.csv", "FIFO"], setup=chain(M, _fifo("p.csv"))),
    Case("reads/option-file-is-a-fifo", ["compile", "m.onnx", "--planner", "random", "--planner-option", "@o.toml",
                                         "-o", "art", "-q"], 2, ["@o.toml", "FIFO"], setup=chain(M, _fifo("o.toml"))),
    Case("reads/sweep-spec-is-a-fifo", ["sweep", "s.toml", "-o", "out", "-q"], 2, ["s.toml", "FIFO"],
         setup=_fifo("s.toml")),
    Case("reads/tune-spec-is-a-fifo", ["tune", "random", "s.toml", "-o", "best.toml"], 2, ["s.toml", "FIFO"],
         setup=_fifo("s.toml")),
    Case("reads/calibrate-observations-are-a-fifo", ["calibrate", "b.toml", "p.csv", "-o", "fit.toml"], 2,
         ["p.csv", "FIFO"], setup=chain(_fifo("p.csv"), _board("b.toml"))),
    Case("reads/external-data-shorter-than-its-tensor", ["compile", "m.onnx", "-o", "art", "-q"], 2,
         ["m.onnx.data", "ends early", "re-export"], setup=_external(cut=100)),
    Case("reads/external-data-offset-past-its-end", ["compile", "m.onnx", "-o", "art", "-q"], 2,
         ["m.onnx.data", "ends early"], setup=_external(offset=1 << 20)),
    Case("reads/external-data-is-a-fifo", ["compile", "m.onnx", "-o", "art", "-q"], 2,
         ["m.onnx.data", "FIFO"], setup=_external(fifo=True)),
]
