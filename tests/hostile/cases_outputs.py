"""Hostile output directories (-o): a file in the way, a dangling link, an empty name, the root,
the current or the model's directory, /proc and /sys, a name too long, a damaged manifest where
the artifact would go. Each is one line, exit 2, nothing lost and nothing written outside."""
from __future__ import annotations

import json
from pathlib import Path

from harness import Case, chain, compiled, symlink as _link, text_model, user_file as _file
from text_models import CHAIN

M = text_model(CHAIN)


def _model_in(sub: str):
    def setup(work: Path) -> None:
        (work / sub).mkdir()
        text_model(CHAIN, f"{sub}/m.onnx")(work)
    return setup


def _recompiled(work: Path, outcome) -> None:
    doc = json.loads((work / "art" / "manifest.json").read_text())
    assert doc["schema"] == "hetcc.manifest/2"
    assert (work / "art" / "NOTES.md").read_text() == "mine\n", "a user file in the artifact was lost"


LONG = "a" * 300

CASES = [
    Case("outputs/parent-is-a-file", ["compile", "m.onnx", "-o", "notes.txt/out", "-q"], 2,
         ["notes.txt", "not a directory"], setup=chain(M, _file("notes.txt"))),
    Case("outputs/grandparent-is-a-file", ["compile", "m.onnx", "-o", "notes.txt/a/b", "-q"], 2,
         ["notes.txt", "not a directory"], setup=chain(M, _file("notes.txt"))),
    Case("outputs/name-too-long", ["compile", "m.onnx", "-o", LONG, "-q"], 2,
         ["File name too long", "-o"], setup=M),
    Case("outputs/dangling-symlink", ["compile", "m.onnx", "-o", "out", "-q"], 2,
         ["out", "symbolic link", "does not exist"], setup=chain(M, _link("out", "../outside/new-dir"))),
    Case("outputs/empty-name", ["compile", "m.onnx", "-o", "", "-q"], 2, ["-o", "empty"], setup=M),
    Case("outputs/filesystem-root", ["compile", "m.onnx", "-o", "/", "-q"], 2, ["/", "name a directory"], setup=M),
    Case("outputs/cwd-with-user-files", ["compile", "m.onnx", "-o", ".", "-q"], 2,
         ["refusing to overwrite", "not a hetcc output"], setup=chain(M, _file("notes.txt"))),
    Case("outputs/cwd-spelled-empty-parent", ["compile", "m.onnx", "-o", "./", "-q"], 2,
         ["refusing to overwrite", "not a hetcc output"], setup=chain(M, _file("notes.txt"))),
    Case("outputs/the-model-s-directory", ["compile", "md/m.onnx", "-o", "md", "-q"], 2,
         ["md", "not a hetcc output"], setup=_model_in("md")),
    Case("outputs/a-regular-file", ["compile", "m.onnx", "-o", "notes.txt", "-q"], 2,
         ["notes.txt", "not a directory"], setup=chain(M, _file("notes.txt"))),
    Case("outputs/dev-null", ["compile", "m.onnx", "-o", "/dev/null", "-q"], 2, ["/dev/null", "not a directory"],
         setup=M),
    Case("outputs/the-manifest-file", ["compile", "m.onnx", "-o", "art/manifest.json", "-q"], 2,
         ["art/manifest.json", "not a directory"], setup=compiled(CHAIN)),
    Case("outputs/proc-new-entry", ["compile", "m.onnx", "-o", "/proc/hetcc-out", "-q"], 2,
         ["/proc/hetcc-out", "choose another -o"], setup=M),
    Case("outputs/proc-itself", ["compile", "m.onnx", "-o", "/proc", "-q"], 2,
         ["/proc", "not a hetcc output"], setup=M),
    Case("outputs/sys-read-only", ["compile", "m.onnx", "-o", "/sys/kernel/hetcc-out", "-q"], 2,
         ["/sys/kernel/hetcc-out", "choose another -o"], setup=M),
    Case("outputs/deeply-nested-manifest-in-the-way", ["compile", "m.onnx", "-o", "out", "-q"], 2,
         ["out", "not valid JSON"], setup=chain(M, _file("out/manifest.json", "[" * 100_000 + "]" * 100_000))),
    Case("outputs/nan-manifest-in-the-way-is-not-hetcc-s", ["compile", "m.onnx", "-o", "out", "-q"], 2,
         ["out", "not a hetcc manifest"], setup=chain(M, _file("out/manifest.json", '{"schema": NaN}'))),
    Case("outputs/recompile-keeps-user-files", ["compile", "m.onnx", "-o", "art", "-q", "--objective", "energy"], 0,
         setup=compiled(CHAIN, then=_file("art/NOTES.md", "mine\n")), outputs=["art"], check=_recompiled),
]
