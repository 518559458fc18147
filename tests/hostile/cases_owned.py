"""What hetcc may recover, remove or replace: only what it made itself.

* hetcc's own names beside ``-o`` (``.NAME.lock``, ``.NAME.tmp-*``, ``.NAME.old-*``): a lock is
  hetcc's only when it starts with ``hetcc.lock/1`` (made under a temporary name and linked into
  place, never through a symbolic link); a temporary or backup only when a lock of hetcc's names
  it. A user's file or directory that merely has such a name is left alone, and a lock that is
  not hetcc's stops the compile with one line.
* Replacing an artifact drops a file only if the old manifest lists it *and* its content has the
  listed SHA-256 (hetcc's own JSON files: when they start with a ``hetcc.*`` schema); a directory
  whose manifest merely claims the schema loses nothing it did not get from hetcc.
"""
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from harness import Case, chain, compiled, directory as _dir, symlink as _link, text_model, user_file as _file
from text_models import CHAIN

M = text_model(CHAIN)
FAKE = '{"schema": "hetcc.manifest/2"}'


def _manifest(name: str, doc: dict):
    return _file(name, json.dumps(doc))


def _kept(*files: str, text: str = "user data\n"):
    """A check: each of ``files`` (under work/) still holds ``text``."""
    def check(work: Path, outcome) -> None:
        for f in files:
            assert (work / f).is_file() and (work / f).read_text() == text, f"{f} was lost"
    return check


def _compiled_and(*checks):
    def check(work: Path, outcome) -> None:
        assert json.loads((work / "art" / "manifest.json").read_text())["kind"] == "model", "art was not written"
        for c in checks:
            c(work, outcome)
    return check


ZERO = "0" * 64
CLAIMS_NOTES = {"schema": "hetcc.manifest/2", "variants": {"p": {"slices": [{"file": "notes.txt", "sha256": ZERO}]}}}
CLAIMS_SUB = {"schema": "hetcc.manifest/2", "kind": "workload",
              "workload": {"models": [{"name": "a", "dir": "mine", "manifest_sha256": ZERO}]}}


def _sub_with_right_hash(work: Path) -> None:
    """A workload manifest naming ``mine/`` with the right manifest hash, whose own manifest lists
    ``mine/notes.txt`` with a hash its content does not have."""
    sub = work / "art" / "mine"
    sub.mkdir(parents=True)
    (sub / "manifest.json").write_text(json.dumps(CLAIMS_NOTES))
    (sub / "notes.txt").write_text("user data\n")
    digest = hashlib.sha256((sub / "manifest.json").read_bytes()).hexdigest()
    (work / "art" / "manifest.json").write_text(json.dumps(
        {**CLAIMS_SUB, "workload": {"models": [{"name": "a", "dir": "mine", "manifest_sha256": digest}]}}))


def _first_slice(work: Path) -> Path:
    doc = json.loads((work / "art" / "manifest.json").read_text())
    return work / "art" / doc["variants"][doc["default_variant"]]["slices"][0]["file"]


def _edit_first_slice(work: Path) -> None:
    """The user rewrote the slice file the manifest lists (its hash no longer matches) and moved
    nothing: the recompile writes another slice name (energy plans differ) or refuses."""
    p = _first_slice(work)
    p.rename(p.with_name("kept-" + p.name))
    doc = json.loads((work / "art" / "manifest.json").read_text())
    sl = doc["variants"][doc["default_variant"]]["slices"][0]
    sl["file"] = str(Path(sl["file"]).with_name("kept-" + Path(sl["file"]).name))
    (work / "art" / "manifest.json").write_text(json.dumps(doc))
    p.with_name("kept-" + p.name).write_bytes(b"the user's edit")


def _edited_slice_kept(work: Path, outcome) -> None:
    kept = [p for p in (work / "art" / "slices").iterdir() if p.name.startswith("kept-")]
    assert kept and kept[0].read_bytes() == b"the user's edit", "the edited slice was dropped"


CASES = [
    # -- hetcc's own names beside -o
    Case("owned/a-user-file-named-like-the-lock", ["compile", "m.onnx", "-o", "art", "-q"], 2,
         [".art.lock", "hetcc did not make it", "move it away"], setup=chain(M, _file(".art.lock", "my notes\n"))),
    Case("owned/an-empty-file-named-like-the-lock", ["compile", "m.onnx", "-o", "art", "-q"], 2,
         [".art.lock", "hetcc did not make it"], setup=chain(M, _file(".art.lock", ""))),
    Case("owned/the-lock-is-a-link-to-an-outside-file", ["compile", "m.onnx", "-o", "art", "-q"], 2,
         [".art.lock", "symbolic link"], setup=chain(M, _link(".art.lock", "../outside/secret.txt"))),
    Case("owned/the-lock-is-a-dangling-link", ["compile", "m.onnx", "-o", "art", "-q"], 2,
         [".art.lock", "symbolic link"], setup=chain(M, _link(".art.lock", "../outside/made-by-hetcc"))),
    Case("owned/the-lock-is-a-directory", ["compile", "m.onnx", "-o", "art", "-q"], 2,
         [".art.lock", "choose another -o"], setup=chain(M, _dir(".art.lock"), _file(".art.lock/x"))),
    Case("owned/the-lock-is-a-fifo", ["compile", "m.onnx", "-o", "art", "-q"], 2,
         [".art.lock", "not a regular file"], setup=chain(M, lambda w: os.mkfifo(w / ".art.lock"))),
    Case("owned/the-lock-of-a-recompile-is-a-user-file", ["compile", "m.onnx", "-o", "art", "-q", "--objective",
                                                          "energy"], 2, [".art.lock", "hetcc did not make it"],
         setup=compiled(CHAIN, then=_file(".art.lock", "mine\n"))),
    Case("owned/a-user-directory-named-like-a-temporary", ["compile", "m.onnx", "-o", "art", "-q"], 0,
         setup=chain(M, _file(".art.tmp-abcdef12/notes.txt")), outputs=["art"],
         check=_compiled_and(_kept(".art.tmp-abcdef12/notes.txt"))),
    Case("owned/a-user-directory-named-like-a-backup-is-not-restored", ["compile", "m.onnx", "-o", "art", "-q"], 0,
         setup=chain(M, _file(".art.old-123/manifest.json", FAKE), _file(".art.old-123/notes.txt")),
         outputs=["art"], check=_compiled_and(_kept(".art.old-123/notes.txt"))),
    Case("owned/a-user-backup-look-alike-beside-an-artifact", ["compile", "m.onnx", "-o", "art", "-q", "--objective",
                                                               "energy"], 0,
         setup=compiled(CHAIN, then=chain(_file(".art.old-99/manifest.json", FAKE), _file(".art.old-99/notes.txt"))),
         outputs=["art"], check=_compiled_and(_kept(".art.old-99/notes.txt"))),
    Case("owned/a-lock-without-a-journal-recovers-nothing", ["compile", "m.onnx", "-o", "art", "-q"], 0,
         setup=chain(M, _file(".art.lock", "hetcc.lock/1\n"), _file(".art.old-7/manifest.json", FAKE),
                     _file(".art.old-7/notes.txt")),
         outputs=["art", ".art.lock"], check=_compiled_and(_kept(".art.old-7/notes.txt"))),
    # -- replacing an artifact drops only what hetcc wrote
    Case("owned/a-claimed-manifest-listing-a-user-file-with-another-hash", ["compile", "m.onnx", "-o", "art", "-q"], 0,
         setup=chain(M, _manifest("art/manifest.json", CLAIMS_NOTES), _file("art/notes.txt")), outputs=["art"],
         check=_compiled_and(_kept("art/notes.txt"))),
    Case("owned/a-listed-slice-the-user-edited-is-kept", ["compile", "m.onnx", "-o", "art", "-q", "--objective",
                                                          "energy"], 0,
         setup=compiled(CHAIN, then=lambda w: _edit_first_slice(w)), outputs=["art"],
         check=_compiled_and(_edited_slice_kept)),
    Case("owned/a-user-costs-json-under-a-claimed-manifest", ["compile", "m.onnx", "-o", "art", "-q"], 2,
         ["refusing to replace", "costs.json", "hetcc did not write it"],
         setup=chain(M, _file("art/manifest.json", FAKE), _file("art/costs.json", '{"mine": 1}\n'))),
    Case("owned/a-user-timings-json-under-a-claimed-manifest-is-kept", ["compile", "m.onnx", "-o", "art", "-q"], 0,
         setup=chain(M, _file("art/manifest.json", FAKE), _file("art/timings.json", "my timings\n")), outputs=["art"],
         check=_compiled_and(_kept("art/timings.json", text="my timings\n"))),
    Case("owned/a-claimed-workload-sub-directory-with-another-hash", ["compile", "m.onnx", "-o", "art", "-q"], 0,
         setup=chain(M, _manifest("art/manifest.json", CLAIMS_SUB), _manifest("art/mine/manifest.json", CLAIMS_NOTES),
                     _file("art/mine/notes.txt")), outputs=["art"],
         check=_compiled_and(_kept("art/mine/notes.txt"))),
    Case("owned/a-workload-sub-artifact-listing-a-user-file", ["compile", "m.onnx", "-o", "art", "-q"], 0,
         setup=chain(M, _sub_with_right_hash), outputs=["art"], check=_compiled_and(_kept("art/mine/notes.txt"))),
]
