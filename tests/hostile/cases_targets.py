"""Hostile target files (``hetcc targets FILE``, ``hetcc compile --target FILE``): names that are
paths or hold NUL, deep nesting, absurd numbers, wrong types, missing sections, huge files.
Each is one line naming the file and the key, exit 2."""
from __future__ import annotations

from pathlib import Path

from harness import Case, chain, text_model
from text_models import CHAIN

BOARD = """schema = "hetcc.target/1"
name = "board"
description = "a small board"
kind = "modelled"
base_power_mw = 1000.0

[devices.cpu]
kind = "cpu"
execution_provider = "CPUExecutionProvider"
affinity = [0, 1]
freq_mhz = 1000.0
static_power_mw = 10.0
dynamic_power_mw = 500.0
peak_gflops = { conv = 10.0, matmul = 10.0, other = 2.0 }
mem_bandwidth_gbps = 4.0
layer_overhead_ms = 0.01
transfer = { beta_ms_per_mb = 0.1, delta_ms = 0.01 }
dtypes = ["float32"]
"""


def board(old: str = "", new: str = "", text: str | None = None):
    """A setup writing board.toml: BOARD with ``old`` replaced by ``new`` (or ``text``)."""
    body = text if text is not None else BOARD.replace(old, new, 1)
    assert text is not None or old in BOARD, old

    def setup(work: Path) -> None:
        (work / "board.toml").write_text(body, encoding="utf-8")
    return setup


T = ["targets", "board.toml"]
C = ["compile", "m.onnx", "--target", "board.toml", "-o", "out", "-q"]
M = text_model(CHAIN)
BIG = "9" * 400

CASES = [
    Case("targets/ok", T, 0, setup=board()),
    Case("targets/compile-ok", C, 0, setup=chain(M, board()), outputs=["out"]),
    # device names: they become slice file names and --hardware / provider keys
    Case("targets/device-name-with-slash", C, 2, ["board.toml", "devices.'c/pu'", "rename"],
         setup=chain(M, board("[devices.cpu]", '[devices."c/pu"]'))),
    Case("targets/device-name-with-nul", C, 2, ["board.toml", "devices.", "rename"],
         setup=chain(M, board("[devices.cpu]", '[devices."c\\u0000pu"]'))),
    Case("targets/device-name-dotdot", C, 2, ["board.toml", "devices.'..'", "rename"],
         setup=chain(M, board("[devices.cpu]", '[devices.".."]'))),
    Case("targets/device-name-empty", C, 2, ["board.toml", "devices.''", "rename"],
         setup=chain(M, board("[devices.cpu]", '[devices.""]'))),
    Case("targets/device-name-5000-chars", C, 2, ["board.toml", "1-64", "rename"],
         setup=chain(M, board("[devices.cpu]", f"[devices.{'c' * 5000}]"))),
    Case("targets/device-name-with-equals", T, 2, ["board.toml", "devices.'a=b'", "rename"],
         setup=board("[devices.cpu]", '[devices."a=b"]')),
    Case("targets/device-defined-twice", T, 2, ["board.toml", "not valid TOML", "twice"],
         setup=board(text=BOARD + BOARD[BOARD.index("[devices.cpu]"):])),
    Case("targets/knob-name-with-space", T, 2, ["board.toml", "knobs.'a b'", "rename"],
         setup=board(text=BOARD + '[knobs."a b"]\nvalues = [1, 2]\ndevices = ["cpu"]\neffect = "active_cores"\n'
                     "parallel_fraction = 0.9\n")),
    # numbers
    Case("targets/negative-frequency", T, 2, ["board.toml", "devices.cpu.freq_mhz", "> 0"],
         setup=board("freq_mhz = 1000.0", "freq_mhz = -1000.0")),
    Case("targets/inf-frequency", T, 2, ["board.toml", "devices.cpu.freq_mhz", "finite"],
         setup=board("freq_mhz = 1000.0", "freq_mhz = inf")),
    Case("targets/nan-power", T, 2, ["board.toml", "devices.cpu.dynamic_power_mw", "finite"],
         setup=board("dynamic_power_mw = 500.0", "dynamic_power_mw = nan")),
    Case("targets/negative-base-power", T, 2, ["board.toml", "base_power_mw", ">= 0"],
         setup=board("base_power_mw = 1000.0", "base_power_mw = -1.0")),
    Case("targets/400-digit-power", T, 2, ["board.toml", "base_power_mw", "64-bit"],
         setup=board("base_power_mw = 1000.0", f"base_power_mw = {BIG}")),
    Case("targets/5000-digit-integer", T, 2, ["board.toml", "not valid TOML", "64-bit"],
         setup=board("base_power_mw = 1000.0", f"base_power_mw = {'9' * 5000}")),
    Case("targets/400-digit-capacity", C, 2, ["board.toml", "devices.cpu.capacity_bytes", "64-bit"],
         setup=chain(M, board('dtypes = ["float32"]', f'dtypes = ["float32"]\ncapacity_bytes = {BIG}'))),
    Case("targets/zero-bandwidth", T, 2, ["board.toml", "devices.cpu.mem_bandwidth_gbps", "> 0"],
         setup=board("mem_bandwidth_gbps = 4.0", "mem_bandwidth_gbps = 0.0")),
    Case("targets/negative-core", T, 2, ["board.toml", "devices.cpu.affinity[0]", ">= 0"],
         setup=board("affinity = [0, 1]", "affinity = [-1, 1]")),
    Case("targets/date-for-a-number", T, 2, ["board.toml", "base_power_mw", "must be a number"],
         setup=board("base_power_mw = 1000.0", "base_power_mw = 1979-05-27")),
    # structure
    Case("targets/no-devices", T, 2, ["board.toml", "devices", "missing required key"],
         setup=board(text=BOARD[:BOARD.index("[devices.cpu]")])),
    Case("targets/devices-is-a-string", T, 2, ["board.toml", "devices", "must be a table"],
         setup=board(text=BOARD[:BOARD.index("[devices.cpu]")] + 'devices = "cpu"\n')),
    Case("targets/kind-is-a-number", T, 2, ["board.toml", "devices.cpu.kind", "must be a string"],
         setup=board('kind = "cpu"', "kind = 3")),
    Case("targets/unknown-key", T, 2, ["board.toml", "devices.cpu.speed", "unknown key"],
         setup=board('dtypes = ["float32"]', 'dtypes = ["float32"]\nspeed = 3')),
    Case("targets/nested-100k-arrays", T, 2, ["board.toml", "nested"],
         setup=board(text="a = " + "[" * 100_000 + "]" * 100_000 + "\n")),
    Case("targets/nested-10k-inline-tables", T, 2, ["board.toml", "nested"],
         setup=board(text="a = " + "{b=" * 10_000 + "1" + "}" * 10_000 + "\n")),
    Case("targets/deep-provider-options", C, 2, ["board.toml", "nested"],
         setup=chain(M, board('execution_provider = "CPUExecutionProvider"',
                              'execution_provider = "CPUExecutionProvider"\nprovider_options = { a = '
                              + "[" * 500 + "]" * 500 + " }"))),
    Case("targets/list-provider-option", T, 2, ["board.toml", "provider_options.a", "string, number or boolean"],
         setup=board('execution_provider = "CPUExecutionProvider"',
                     'execution_provider = "CPUExecutionProvider"\nprovider_options = { a = [1] }')),
    Case("targets/2-mib-file", T, 2, ["board.toml", "KiB"], setup=board(text=BOARD + "#" + "x" * (2 << 20) + "\n")),
    Case("targets/not-utf8", T, 2, ["board.toml", "UTF-8"],
         setup=lambda w: (w / "board.toml").write_bytes(BOARD.encode().replace(b"a small", b"a \xff small"))),
    Case("targets/escape-in-description", T, 2, ["board.toml", "description", "control character"],
         setup=board('description = "a small board"', 'description = "\\u001b[2Ja small board"')),
    Case("targets/control-writes-etc-passwd", T, 2, ["board.toml", "devices.cpu.control.cpufreq", "/sys"],
         setup=board('dtypes = ["float32"]', 'dtypes = ["float32"]\ncontrol = { cpufreq = "/etc/passwd" }')),
    Case("targets/control-climbs-out-of-sys", T, 2, ["board.toml", "devices.cpu.control.cpufreq", "'..'"],
         setup=board('dtypes = ["float32"]', 'dtypes = ["float32"]\ncontrol = { cpufreq = "/sys/../etc" }')),
    Case("targets/a-directory", ["targets", "boards.toml"], 2, ["boards.toml", "a directory"],
         setup=lambda w: (w / "boards.toml").mkdir()),
    Case("targets/missing-file", ["targets", "nope.toml"], 2, ["nope.toml", "not found"]),
]
