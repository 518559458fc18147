"""A ``hetcc serve`` in a subprocess for the offload tests: started on a free port (``--port 0``),
waited for until it prints its ready line (no sleeps), its stderr collected line by line."""
from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path

TOKEN = "s3cret-token"


class Served:
    """A running ``hetcc serve``: ``url``, ``lines`` (its stderr so far), ``wait_for(pattern)``."""

    def __init__(self, path: Path | str, *args: str, token: str = TOKEN, cache_dir: str | None = None):
        env = dict(os.environ, HETCC_SERVE_TOKEN=token)
        if cache_dir is not None:
            env["HETCC_CACHE_DIR"] = cache_dir
        self.proc = subprocess.Popen([sys.executable, "-m", "hetcc.cli", "serve", str(path), "--port", "0", *args],
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                     text=True, env=env)
        self.lines: list[str] = []
        self.changed = threading.Condition()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        line = self.wait_for(r"ready on http://\S+|error", timeout=60)
        found = re.search(r"ready on (http://\S+)", line)
        if found is None:
            self.stop()
            raise RuntimeError(f"hetcc serve did not start: {''.join(self.lines)}")
        self.url = found.group(1)
        self.port = int(self.url.rsplit(":", 1)[1])

    def _read(self) -> None:
        for line in self.proc.stderr:
            with self.changed:
                self.lines.append(line)
                self.changed.notify_all()
        with self.changed:
            self.lines.append("<eof>")
            self.changed.notify_all()

    def wait_for(self, pattern: str, timeout: float = 30, start: int = 0) -> str:
        """The first stderr line from ``start`` on matching ``pattern`` (waits for it; AssertionError at EOF)."""
        rx = re.compile(pattern)
        with self.changed:
            seen = start
            while True:
                for line in self.lines[seen:]:
                    if rx.search(line):
                        return line
                    if line == "<eof>":
                        raise AssertionError(f"hetcc serve ended without {pattern!r}: {''.join(self.lines)}")
                seen = len(self.lines)
                if not self.changed.wait(timeout):
                    raise AssertionError(f"no {pattern!r} from hetcc serve within {timeout} s: {''.join(self.lines)}")

    def terminate(self, timeout: float = 60) -> int:
        self.proc.send_signal(signal.SIGTERM)
        code = self.proc.wait(timeout)
        self.reader.join(10)
        return code

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(30)
        self.reader.join(10)


def closed_port() -> int:
    """A port nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def build_artifact(directory: Path, plans: dict[str, list[tuple[int, int, str]]], name: str = "chain") -> Path:
    """IDENTITY_CHAIN (5 layers, x float32[1,8]) compiled for mi8pro-edge-cloud into
    ``directory/name`` with one variant per entry of ``plans`` ({variant: [(first, last, device)]},
    each device at its top frequency; edge and cloud are remote)."""
    import onnx
    import onnx.parser

    from hetcc.compiler.frontend import load_model
    from hetcc.compiler.passmanager import PassManager
    from hetcc.passes.codegen import emit_artifact
    from hetcc.passes.constants import FindConstants
    from hetcc.passes.costs import EstimateCosts
    from hetcc.passes.layers import GroupLayers
    from hetcc.passes.legality import CheckLegality
    from hetcc.passes.shapes import AnnotateTensors
    from hetcc.planners import Slice
    from hetcc.targets import load_target
    from text_models import IDENTITY_CHAIN

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    target = load_target("mi8pro-edge-cloud")
    model = onnx.parser.parse_model(IDENTITY_CHAIN)
    path = directory / f"{name}.onnx"
    onnx.save(model, str(path))
    program = load_model(path, None)
    PassManager([AnnotateTensors(), FindConstants(), GroupLayers(1), CheckLegality(target),
                 EstimateCosts(target)]).run(program)
    problem = program.get("costs").problem()

    def plan(cuts: list[tuple[int, int, str]]):
        return problem.evaluate([Slice(a, b, int(problem.states.fmax_state(d))) for a, b, d in cuts], planner="fixed")

    return emit_artifact(directory / name, program, target, {v: plan(c) for v, c in plans.items()})
