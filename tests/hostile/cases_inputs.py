"""An output that is an input (issue 33, class 1): every output path of a command that resolves to
a file the same command reads (the model, a board or observations file, an ``@option`` file, a
spec), or to a file of the artifact the same command writes (``--depfile`` onto the new
``manifest.json``), is refused before anything is written; ``sweep -o`` and ``tune -o`` follow
``compile -o``'s rules for an empty path or the root."""
from __future__ import annotations

import os
from pathlib import Path

from harness import Case, board_file as _board, chain, compiled, text_model, user_file as _file
from text_models import CHAIN

M = text_model(CHAIN)
SPEC = 'models = ["m.onnx"]\nplanners = ["dp"]\n'
TUNE = 'models = ["m.onnx"]\nsamples = 2\n[space]\nsamples = {int = [1, 9]}\n'


def _hardlink(src: str, dst: str):
    def setup(work: Path) -> None:
        os.link(work / src, work / dst)
    return setup


CASES = [
    Case("inputs/depfile-onto-the-model", ["compile", "m.onnx", "-o", "art", "-q", "--depfile", "m.onnx"], 2,
         ["--depfile", "m.onnx", "reads"], setup=M),
    Case("inputs/depfile-onto-a-hard-link-of-the-model", ["compile", "m.onnx", "-o", "art", "-q", "--depfile",
                                                          "m.d"], 2, ["--depfile", "m.d", "reads"],
         setup=chain(M, _hardlink("m.onnx", "m.d"))),
    Case("inputs/depfile-onto-the-board-file", ["compile", "m.onnx", "--target", "b.toml", "-o", "art", "-q",
                                                "--depfile", "b.toml"], 2, ["--depfile", "b.toml", "reads"],
         setup=chain(M, _board("b.toml"))),
    Case("inputs/depfile-onto-the-option-file", ["compile", "m.onnx", "--planner", "random", "--planner-option",
                                                 "@o.toml", "-o", "art", "-q", "--depfile", "o.toml"], 2,
         ["--depfile", "o.toml", "reads"], setup=chain(M, _file("o.toml", "samples = 3\n"))),
    Case("inputs/depfile-onto-the-new-manifest", ["compile", "m.onnx", "-o", "art", "-q", "--depfile",
                                                  "art/manifest.json"], 2, ["--depfile", "art/manifest.json"], setup=M),
    Case("inputs/depfile-onto-a-recompiled-manifest", ["compile", "m.onnx", "-o", "art", "-q", "--objective",
                                                       "energy", "--depfile", "art/manifest.json"], 2,
         ["--depfile", "art/manifest.json"], setup=compiled(CHAIN)),
    Case("inputs/depfile-onto-a-slice", ["compile", "m.onnx", "-o", "art", "-q", "--depfile", "art/slices/x.d"], 2,
         ["--depfile", "art/slices/x.d"], setup=compiled(CHAIN)),
    Case("inputs/profile-output-onto-the-model", ["profile", "m.onnx", "--target", "host", "-o", "m.onnx"], 2,
         ["-o", "m.onnx", "reads"], setup=M),
    Case("inputs/tune-output-onto-its-spec", ["tune", "random", "t.toml", "-o", "t.toml"], 2,
         ["-o", "t.toml", "reads"], setup=chain(M, _file("t.toml", TUNE))),
    Case("inputs/tune-output-empty", ["tune", "random", "t.toml", "-o", ""], 2, ["-o ''"],
         setup=chain(M, _file("t.toml", TUNE))),
    Case("inputs/sweep-output-empty", ["sweep", "s.toml", "-o", "", "-q"], 2, ["-o ''", "empty"],
         setup=chain(M, _file("s.toml", SPEC))),
    Case("inputs/sweep-output-the-root", ["sweep", "s.toml", "-o", "/", "-q"], 2, ["/", "root"],
         setup=chain(M, _file("s.toml", SPEC))),
]
