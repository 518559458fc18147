"""One hostile case = one hetcc command on prepared files, judged on five counts.

A :class:`Case` names the command (``argv``, run with the case's work directory as the current
directory), what it prepares there (``setup``), the exit code it must give and words its one
error line must contain (the culprit and the fix). :func:`run_case` runs it in a fresh directory
tree::

    base/work/      the current directory; setup() writes the inputs here
    base/outside/   a file holding SECRET (a case may point hetcc at it; it must never leak)
    base/home/      HOME and the hetcc cache of a case run in a child process

and :func:`problems` judges the outcome, each problem tagged with its count:

* ``traceback`` - an exception escaped (in-process) or "Traceback" was printed;
* ``exit code`` - not the case's code;
* ``message``   - an error exit whose stderr is not one ``hetcc: error: ...`` line holding every
  needle (a successful exit needs no message);
* ``lost``      - a file that existed before is gone or changed, outside the case's ``outputs``;
* ``outside``   - a new file outside ``outputs`` (and outside the cache), or SECRET in what the
  command printed or wrote (it read a file it must not).

``tests/hostile/test_cases.py`` asserts no problem for every case of the catalogues
(``cases_*.py``); ``benchmarks/hostile.py`` runs the same catalogues and prints the counts.
"""
from __future__ import annotations

import contextlib
import hashlib
import io
import logging
import os
import subprocess
import sys
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

SECRET = "HOSTILE-SECRET-OUTSIDE-THE-WORK-DIRECTORY"
COUNTS = ("traceback", "exit code", "message", "lost", "outside")


@dataclass(frozen=True)
class Case:
    id: str                                   # "area/what", unique across the catalogues
    argv: Sequence[str]                       # hetcc's arguments; paths relative to the work dir
    code: int                                 # the exit code it must give
    needles: Sequence[str] = ()               # words the one error line must contain
    setup: Callable[[Path], None] | None = None   # writes the inputs into the work dir
    outputs: Sequence[str] = ()               # work-dir names the command may create or change
    check: Callable[[Path, "Outcome"], None] | None = None  # extra assertions (AssertionError)
    child: bool = False                       # run `python -m hetcc.cli` in a child process
    timeout: float = 120.0                    # a child's limit on an idle machine (x LOAD_SLACK: a hang is a problem)
    env: dict[str, str] = field(default_factory=dict)   # extra environment of a child
    stdin: str | None = None
    slow: bool = False                        # minutes under load: marked slow (out of pytest -m "not slow")

    def __post_init__(self) -> None:
        if isinstance(self.argv, str):
            raise TypeError(f"{self.id}: argv must be a sequence of strings")


@dataclass
class Outcome:
    code: int | None
    stdout: str
    stderr: str
    seconds: float
    escaped: str | None = None                # the traceback of an exception that escaped main()
    timed_out: bool = False


def _listing(root: Path) -> dict[str, str]:
    """Relative path -> sha256 (files), "dir", or "link:target" for everything under root."""
    out: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        d = Path(dirpath)
        for name in dirnames + filenames:
            p = d / name
            rel = p.relative_to(root).as_posix()
            if p.is_symlink():
                out[rel] = "link:" + os.readlink(p)
            elif p.is_dir():
                out[rel] = "dir"
            elif not p.is_file():                 # a FIFO, socket or device: never opened
                out[rel] = f"special:{p.stat().st_mode:o}"
            else:
                try:
                    out[rel] = hashlib.sha256(p.read_bytes()).hexdigest()
                except OSError as e:          # unreadable on purpose (chmod 000): keep its name
                    out[rel] = f"unreadable:{e.errno}"
    return out


def prepare(case: Case, base: Path) -> Path:
    work, outside, home = base / "work", base / "outside", base / "home"
    for d in (work, outside, home):
        d.mkdir(parents=True, exist_ok=True)
    (outside / "secret.txt").write_text(SECRET + "\n")
    if case.setup is not None:
        case.setup(work)
    return work


def _run_in_process(case: Case, work: Path) -> Outcome:
    from hetcc.cli import main

    out, err = io.StringIO(), io.StringIO()
    root = logging.getLogger()
    handlers = root.handlers[:]
    cwd = os.getcwd()
    escaped = None
    code: int | None = None
    t0 = time.perf_counter()
    try:
        os.chdir(work)
        root.handlers = []                    # main()'s basicConfig binds the redirected stderr
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(list(case.argv))
            except SystemExit as e:
                code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
            except BaseException:
                escaped = traceback.format_exc()
                code = 1
    finally:
        os.chdir(cwd)
        root.handlers = handlers
    return Outcome(code, out.getvalue(), err.getvalue(), time.perf_counter() - t0, escaped)


#: a child may take this many times its case's timeout: the timeout is what a healthy run needs on
#: an idle machine with room to spare, and a machine busy with other work is several times slower;
#: a hang still ends (and pytest-timeout bounds each test: test_cases.py gives a case its limit)
LOAD_SLACK = 3.0


def child_limit(case: Case) -> float:
    """Seconds a child case may run before it counts as hung."""
    return case.timeout * LOAD_SLACK


def _run_child(case: Case, work: Path) -> Outcome:
    home = work.parent / "home"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HETCC_", "PYTEST_"))}
    env.update({"HOME": str(home), "HETCC_CACHE_DIR": str(home / ".cache" / "hetcc"), **case.env})
    if "HETCC_CACHE_DIR" not in case.env and os.environ.get("HETCC_CACHE_DIR"):
        env["HETCC_CACHE_DIR"] = os.environ["HETCC_CACHE_DIR"]   # zoo exports stay shared
    t0 = time.perf_counter()
    try:
        p = subprocess.run([sys.executable, "-m", "hetcc.cli", *case.argv], cwd=work, env=env,
                           capture_output=True, text=True, timeout=child_limit(case),
                           input=case.stdin if case.stdin is not None else "")
    except subprocess.TimeoutExpired as e:
        def text(b):
            return b.decode(errors="replace") if isinstance(b, bytes) else (b or "")
        return Outcome(None, text(e.stdout), text(e.stderr), time.perf_counter() - t0, timed_out=True)
    return Outcome(p.returncode, p.stdout, p.stderr, time.perf_counter() - t0)


def run_case(case: Case, base: Path) -> tuple[Outcome, list[tuple[str, str]]]:
    """Prepare base/, run the case, and return its outcome and its problems."""
    work = prepare(case, base)
    before = _listing(base)
    outcome = (_run_child if case.child else _run_in_process)(case, work)
    after = _listing(base)
    return outcome, problems(case, outcome, base, before, after)


def _under(rel: str, roots: Sequence[str]) -> bool:
    return any(rel == r or rel.startswith(r.rstrip("/") + "/") for r in roots)


def problems(case: Case, o: Outcome, base: Path, before: dict[str, str],
             after: dict[str, str]) -> list[tuple[str, str]]:
    found: list[tuple[str, str]] = []
    allowed = [f"work/{p}" for p in case.outputs] + ["home/.cache"]
    if o.escaped or "Traceback (most recent call last)" in o.stderr + o.stdout:
        tail = (o.escaped or o.stderr).strip().splitlines()[-1:]
        found.append(("traceback", tail[0] if tail else "?"))
    if o.timed_out:
        found.append(("exit code", f"no exit within {child_limit(case):.0f} s"))
    elif o.code != case.code:
        found.append(("exit code", f"exit {o.code}, expected {case.code}"))
    if case.code != 0:
        lines = [ln for ln in o.stderr.splitlines() if ln.strip()]
        if len(lines) != 1 or not lines[0].startswith("hetcc: "):
            found.append(("message", f"{len(lines)} stderr lines: {o.stderr.strip()[:300]!r}"))
        else:
            missing = [n for n in case.needles if n.lower() not in lines[0].lower()]
            if missing:
                found.append(("message", f"{lines[0]!r} lacks {missing}"))
    for rel, sig in before.items():
        if _under(rel, allowed):
            continue
        if after.get(rel) != sig:
            found.append(("lost", f"{rel} {'changed' if rel in after else 'gone'}"))
    for rel, sig in after.items():
        if rel not in before and not _under(rel, allowed):
            found.append(("outside", f"{rel} appeared"))
        if before.get(rel) == sig or sig == "dir" or sig.startswith(("link:", "unreadable:", "special:")):
            continue
        p = base / rel                         # new or changed: it must not hold the secret
        with contextlib.suppress(OSError):
            if p.stat().st_size < (64 << 20) and SECRET.encode() in p.read_bytes():
                found.append(("outside", f"{rel} holds the outside secret"))
    if SECRET in o.stdout + o.stderr:
        found.append(("outside", "the outside secret was printed"))
    if case.check is not None and not found:
        try:
            case.check(base / "work", o)
        except AssertionError as e:
            found.append(("message" if case.code else "exit code", f"check: {e}"))
    return found


def describe(case: Case, o: Outcome, found: list[tuple[str, str]]) -> str:
    """The failure text a test prints: the command, what it printed, every problem."""
    head = f"[{case.id}] hetcc {' '.join(case.argv)} -> exit {o.code}"
    body = "\n".join(f"  {kind}: {what}" for kind, what in found)
    return f"{head}\n{body}\n--- stderr ---\n{o.stderr[-3000:]}\n{o.escaped or ''}"


# ---------------------------------------------------------------- setups the catalogues share
def text_model(text: str, name: str = "m.onnx") -> Callable[[Path], None]:
    """A setup writing the ONNX-text model ``text`` to work/name."""
    def setup(work: Path) -> None:
        import onnx
        import onnx.parser

        onnx.save(onnx.parser.parse_model(text), str(work / name))
    return setup


def compiled(text: str, *flags: str, out: str = "art", then: Callable[[Path], None] | None = None
             ) -> Callable[[Path], None]:
    """A setup writing m.onnx and compiling it (hikey970 unless flags say otherwise) into
    work/out, then calling ``then(work)`` (to tamper with the artifact)."""
    def setup(work: Path) -> None:
        text_model(text)(work)
        o = _run_in_process(Case("setup", ["compile", "m.onnx", "-o", out, "-q", *flags], 0), work)
        if o.code != 0:
            raise RuntimeError(f"setup compile failed: {o.stderr}{o.escaped or ''}")
        if then is not None:
            then(work)
    return setup


def chain(*setups: Callable[[Path], None]) -> Callable[[Path], None]:
    def setup(work: Path) -> None:
        for s in setups:
            s(work)
    return setup


def user_file(name: str, text: str = "user data\n") -> Callable[[Path], None]:
    """A setup writing work/name (parents made) holding ``text``: a user's file."""
    def setup(work: Path) -> None:
        p = work / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return setup


def symlink(name: str, target: str) -> Callable[[Path], None]:
    """A setup making work/name a symbolic link to ``target`` (as given: relative to work/)."""
    def setup(work: Path) -> None:
        os.symlink(target, work / name)
    return setup


def directory(name: str) -> Callable[[Path], None]:
    def setup(work: Path) -> None:
        (work / name).mkdir(parents=True)
    return setup


def fifo(name: str) -> Callable[[Path], None]:
    """A setup making work/name a FIFO that nobody writes (a blocking read would hang)."""
    def setup(work: Path) -> None:
        os.mkfifo(work / name)
    return setup


def board_file(name: str) -> Callable[[Path], None]:
    """A setup copying the built-in hikey970 board file to work/name."""
    def setup(work: Path) -> None:
        from importlib import resources

        (work / name).write_bytes(resources.files("hetcc.targets").joinpath("hikey970.toml").read_bytes())
    return setup
