"""Hostile command-line values: numbers out of range or not finite, counts <= 0, seeds outside
32 bits, --input files that lie (crafted .npy headers, pickles, truncation, directories, pipes),
inputs not given, bad --plot / --dump-after / --variants / zoo -o; --json output is strict JSON.
The limits are in docs/limits.md, "Command-line values"."""
from __future__ import annotations

import json
import os
import struct

from harness import Case, chain, compiled, text_model, user_file
from text_models import CHAIN

M = text_model(CHAIN)
A = compiled(CHAIN)                 # work/art, compiled for hikey970

#: two inputs: --input for one of them must not fill the other with random data silently
TWO = """<ir_version: 8, opset_import: ["" : 17]>
two (float[1,8] x, float[1,8] z) => (float[1,8] y) {
    a = Add(x, z)
    y = Relu(a)
}
"""
A2 = compiled(TWO)


def strict_json(work, o) -> None:
    """stdout is one JSON document without NaN/Infinity (Python's json writes them by default)."""
    def refuse(token):
        raise AssertionError(f"non-standard JSON token {token} in --json output")
    json.loads(o.stdout, parse_constant=refuse)


def says(*words):
    def check(work, o) -> None:
        for w in words:
            assert w in o.stdout, f"{w!r} not in stdout: {o.stdout[-500:]!r}"
    return check


# ---------------------------------------------------------------- .npy files (setups)
def npy(name, array, **kw):
    def setup(work) -> None:
        import numpy as np

        np.save(work / name, array() if callable(array) else array, **kw)
    return setup


def raw_npy(name, header: dict, body: bytes, version=(1, 0)):
    """A .npy file with ``header`` (any shape it claims) and ``body`` as its data."""
    def setup(work) -> None:
        import numpy as np

        with open(work / name, "wb") as f:
            writer = {(1, 0): np.lib.format.write_array_header_1_0,
                      (2, 0): np.lib.format.write_array_header_2_0}[version]
            writer(f, header)
            f.write(body)
    return setup


def raw_bytes(name, data: bytes):
    def setup(work) -> None:
        (work / name).write_bytes(data)
    return setup


def mkdir(name):
    def setup(work) -> None:
        (work / name).mkdir()
    return setup


# (a FIFO as --input is in test_flags.py: the harness's listing would block reading it)
def link_out(name):
    """work/name -> the outside secret (hetcc must not print or copy it)."""
    def setup(work) -> None:
        os.symlink(work.parent / "outside" / "secret.txt", work / name)
    return setup


def ones(shape=(1, 8), dtype="float32"):
    import numpy as np

    return lambda: np.ones(shape, dtype=dtype)


F4 = {"descr": "<f4", "fortran_order": False}


# ---------------------------------------------------------------- compile: numbers
def compile_case(what, flags, needles, setup=M, **kw):
    return Case(f"flags/compile-{what}", ["compile", "m.onnx", "-q", *flags], kw.pop("code", 2), needles,
                setup=setup, **kw)


NOT_FINITE = ("nan", "inf", "1e999")          # 1e999 parses as inf
CASES: list[Case] = [
    Case("flags/deadline-not-a-number", ["compile", "m.onnx", "--deadline", "soon", "-o", "out"], 2,
         ["--deadline", "soon"], setup=M),
    Case("flags/compile-ok", ["compile", "m.onnx", "-o", "out", "-q"], 0, setup=M, outputs=["out"]),
]
CASES += [compile_case(f"deadline-{v}", ["--deadline", v], ["--deadline", v])
          for v in (*NOT_FINITE, "-1", "0", "1e999ms", "1e999s", "1e308s", "90000s", "0ms", "-0")]
CASES += [compile_case("deadline-minus-inf", ["--deadline=-inf"], ["--deadline", "-inf"]),
          compile_case("deadline-minus-inf-spaced", ["--deadline", "-inf"], ["--deadline"])]
CASES += [compile_case(f"deadline-factor-{v}", ["--deadline", v], ["--deadline", v, needle])
          for v, needle in [("nanx", "1.3x"), ("infx", "1.3x"), ("1e999x", "at least 1x"), ("0.5x", "at least 1x"),
                            ("0x", "at least 1x"), ("1001x", "1000x")]]
CASES += [compile_case("deadline-factor-1x", ["--deadline", "1x", "--json"], [], code=0, check=strict_json)]
CASES += [compile_case(f"power-cap-{v}", ["--power-cap", v], ["--power-cap", v])
          for v in (*NOT_FINITE, "1e308", "-1", "0", "0W", "0mW", "1e6W", "1e999mW", "200kW")]
CASES += [compile_case("power-cap-minus-inf", ["--power-cap=-inf"], ["--power-cap", "-inf"])]
CASES += [compile_case(f"budget-seconds-{v}", [f"--budget-seconds={v}"], ["--budget-seconds", v])
          for v in (*NOT_FINITE, "-inf", "-1", "0", "86401", "soon")]
CASES += [compile_case(f"budget-steps-{v}", [f"--budget-steps={v}"], ["--budget-steps", v])
          for v in ("-1", "0", "1e3", "nan", str(10**10), "99999999999999999999999")]
CASES += [compile_case(f"max-cut-tensors-{v}", [f"--max-cut-tensors={v}"], ["--max-cut-tensors", v])
          for v in ("0", "-1", "1025", str(10**30), "nan", "2.5")]
CASES += [compile_case(f"seed-{v}", [f"--seed={v}"], ["--seed", v])
          for v in ("-1", str(2**32), str(10**30), "1.5", "nan")]
CASES += [compile_case("seed-max", ["--seed", str(2**32 - 1), "--planner", "random", "--json"], [], code=0,
                       check=strict_json)]
CASES += [compile_case(f"profile-repeats-{v}", [f"--profile-repeats={v}"], ["--profile-repeats", v])
          for v in ("0", "-1", "1001", "nan")]

# ---------------------------------------------------------------- compile: planner options, hardware
CASES += [compile_case(f"option-{p.split(':')[0]}-{kv.replace('=', '-')}", ["--planner", p, "--planner-option", kv],
                       [p.split(":")[0], kv.split("=")[0], needle])
          for p, kv, needle in [
              ("dqn", "lr=nan", "lr > 0"), ("dqn", "gamma=inf", "gamma < 1"), ("dqn", "penalty=1e999", "finite"),
              ("dqn", "penalty=-inf", "finite"), ("dqn", "eps_decay=nan", "eps_decay > 0"),
              ("dqn", "steps=-5", "steps"), ("dqn", f"memory={10**12}", "2147483647"),
              ("evosh", "crossover=nan", "crossover"), ("evosh", "mutation=inf", "mutation"),
              ("evosh", "steps=0", "steps"), ("evosh", f"population={2**40}", "population"),
              ("single:big", "sampling_ms=inf", "sampling_ms"), ("single:big", "sampling_ms=nan", "sampling_ms"),
              ("brute", "max_plans=-1", "2147483647"), ("random", "samples=1e999", "integer"),
              ("random", f"samples={10**11}", "2147483647"),
          ]]
CASES += [compile_case(f"planner-positional-{v}", ["--planner", f"even:{v}"], ["even", v])
          for v in ("-1", "1e999", str(10**11))]
CASES += [compile_case(f"hardware-{kv.replace('=', '-')}", ["--target", "jetson-tx2", "--hardware", kv],
                       ["--hardware", kv.split("=")[0], kv.split("=")[1]])
          for kv in ("a57_cores=inf", "a57_cores=-1", "a57_cores=nan", "emc_freq_mhz=nan", "emc_freq_mhz=1e999",
                     "emc_freq_mhz=-inf")]
CASES += [compile_case("variants-empty", ["--variants", ",,,"], ["--variants", "names no planner"]),
          compile_case("variants-twice", ["--variants", "dp,exact,dp"], ["--variants", "'dp' twice"])]

# ---------------------------------------------------------------- compile: files it writes itself
CASES += [
    compile_case("dump-after-is-a-directory", ["--dump-after", "layers"], ["--dump-after", "hetcc-dump-layers.json",
                                                                         "directory"],
                 setup=chain(M, mkdir("hetcc-dump-layers.json"))),
    compile_case("dump-after-is-a-symlink-out", ["--dump-after", "layers"], ["--dump-after", "symlink"],
                 setup=chain(M, link_out("hetcc-dump-layers.json"))),
    compile_case("dump-after-ok", ["--dump-after", "layers"], [], code=0, outputs=["hetcc-dump-layers.json"],
                 check=lambda work, o: json.loads((work / "hetcc-dump-layers.json").read_text(),
                                                  parse_constant=lambda t: (_ for _ in ()).throw(AssertionError(t)))),
    Case("flags/zoo-export-to-a-directory", ["zoo", "export", "resnet18", "-o", "d"], 2, ["-o", "file name"],
         setup=mkdir("d")),
    Case("flags/zoo-export-seed-negative", ["zoo", "export", "resnet18", "-o", "r.onnx", "--seed=-1"], 2,
         ["--seed", "-1"]),
    # hetcc's cache under a file: torch would make its caches there as it is imported and fail inside
    # that import; every command says so in one line before it starts (--version still answers)
    Case("flags/cache-dir-under-a-file-zoo-export", ["zoo", "export", "resnet18", "-o", "r.onnx"], 2,
         ["HETCC_CACHE_DIR", "'/dev/null/c'", "'/dev/null' is not one"], child=True, timeout=60,
         env={"HETCC_CACHE_DIR": "/dev/null/c"}),
    Case("flags/cache-dir-is-a-file-compile", ["compile", "m.onnx", "-o", "out"], 2,
         ["HETCC_CACHE_DIR", "is not a directory"], child=True, timeout=60, setup=chain(M, user_file("f", "x\n")),
         env={"HETCC_CACHE_DIR": "f"}),
]

# ---------------------------------------------------------------- run: numbers
CASES += [Case(f"flags/run-{flag[2:]}-{v}", ["run", "art", f"{flag}={v}"], 2, [flag, v], setup=A)
          for flag, values in [("--repeat", ("0", "-1", "100001", "nan", "1e3")),
                               ("--rtol", ("nan", "inf", "-inf", "1e999", "-1", "2")),
                               ("--seed", ("-1", str(2**32))),
                               ("--verify-inputs", ("0", "-2", "101", "nan"))]
          for v in values]
CASES += [Case("flags/run-rtol-zero-is-exact", ["run", "art", "--verify", "--rtol", "0"], 0, setup=A,
               check=says("outputs match")),
          Case("flags/run-verify-several-inputs", ["run", "art", "--verify", "--verify-inputs", "5", "--seed", "7"], 0,
               setup=A, check=says("on 5 input set(s)")),
          Case("flags/run-verify-json-strict", ["run", "art", "--verify", "--json"], 0, setup=A,
               check=lambda work, o: (strict_json(work, o),
                                      _expect(json.loads(o.stdout)["verify"]["inputs"] == ["seed 0", "seed 1", "seed 2"],
                                              o.stdout)))]

# ---------------------------------------------------------------- run: --input
CASES += [
    Case("flags/input-one-of-two-given", ["run", "art", "--input", "x=x.npy"], 2, ["--input", "'z'", "not given",
                                                                                "--random-missing"],
         setup=chain(A2, npy("x.npy", ones()))),
    Case("flags/input-one-of-two-random-missing", ["run", "art", "--input", "x=x.npy", "--random-missing"], 0,
         setup=chain(A2, npy("x.npy", ones()))),
    Case("flags/input-both-of-two", ["run", "art", "--input", "x=x.npy", "--input", "z=x.npy", "--verify"], 0,
         setup=chain(A2, npy("x.npy", ones())), check=says("outputs match")),
    Case("flags/input-none-of-two-is-random", ["run", "art", "--verify"], 0, setup=A2),
    Case("flags/input-unknown-name", ["run", "art", "--input", "q=x.npy"], 2, ["--input q", "no such input", "x"],
         setup=chain(A, npy("x.npy", ones()))),
    Case("flags/input-given-twice", ["run", "art", "--input", "x=x.npy", "--input", "x=y.npy"], 2,
         ["--input x", "twice"], setup=chain(A, npy("x.npy", ones()), npy("y.npy", ones()))),
    Case("flags/input-without-equals", ["run", "art", "--input", "x"], 2, ["--input", "NAME=path.npy"], setup=A),
    Case("flags/input-empty-name", ["run", "art", "--input", "=x.npy"], 2, ["--input", "NAME=path.npy"], setup=A),
    Case("flags/input-empty-file", ["run", "art", "--input", "x="], 2, ["--input", "NAME=path.npy"], setup=A),
    Case("flags/input-wrong-dtype", ["run", "art", "--input", "x=x.npy"], 2, ["x.npy", "float64", "float32"],
         setup=chain(A, npy("x.npy", ones(dtype="float64")))),
    Case("flags/input-wrong-shape", ["run", "art", "--input", "x=x.npy"], 2, ["x.npy", "[2, 8]", "[1, 8]"],
         setup=chain(A, npy("x.npy", ones((2, 8))))),
    Case("flags/input-scalar", ["run", "art", "--input", "x=x.npy"], 2, ["x.npy", "shape []"],
         setup=chain(A, npy("x.npy", ones(())))),
    Case("flags/input-pickled-object", ["run", "art", "--input", "x=x.npy"], 2, ["x.npy", "pickle"],
         setup=chain(A, npy("x.npy", lambda: __import__("numpy").array([{"a": 1}], dtype=object), allow_pickle=True))),
    Case("flags/input-huge-header-tiny-body", ["run", "art", "--input", "x=x.npy"], 2, ["x.npy", "100000000000"],
         setup=chain(A, raw_npy("x.npy", {**F4, "shape": (10**11,)}, b"\0" * 32))),
    Case("flags/input-huge-header-right-rank", ["run", "art", "--input", "x=x.npy"], 2, ["x.npy", "shape"],
         setup=chain(A, raw_npy("x.npy", {**F4, "shape": (1, 10**11)}, b"\0" * 32)), child=True, timeout=60),
    Case("flags/input-truncated", ["run", "art", "--input", "x=x.npy"], 2, ["x.npy", "truncated", "32 bytes"],
         setup=chain(A, raw_npy("x.npy", {**F4, "shape": (1, 8)}, b"\0" * 12))),
    Case("flags/input-trailing-bytes", ["run", "art", "--input", "x=x.npy"], 2, ["x.npy", "truncated or damaged"],
         setup=chain(A, raw_npy("x.npy", {**F4, "shape": (1, 8)}, b"\0" * 64))),
    Case("flags/input-header-only", ["run", "art", "--input", "x=x.npy"], 2, ["x.npy", "0 bytes"],
         setup=chain(A, raw_npy("x.npy", {**F4, "shape": (1, 8)}, b""))),
    Case("flags/input-negative-dimension", ["run", "art", "--input", "x=x.npy"], 2, ["x.npy"],
         setup=chain(A, raw_bytes("x.npy", b"\x93NUMPY\x01\x00" + struct.pack("<H", 70)
                                  + b"{'descr': '<f4', 'fortran_order': False, 'shape': (-1, 8), }".ljust(69)
                                  + b"\n" + b"\0" * 32))),
    Case("flags/input-garbage-header", ["run", "art", "--input", "x=x.npy"], 2, ["x.npy", "header"],
         setup=chain(A, raw_bytes("x.npy", b"\x93NUMPY\x01\x00" + struct.pack("<H", 22) + b"__import__('os')    \n"))),
    Case("flags/input-header-length-4gib", ["run", "art", "--input", "x=x.npy"], 2, ["x.npy", "header"],
         setup=chain(A, raw_bytes("x.npy", b"\x93NUMPY\x02\x00" + struct.pack("<I", 2**32 - 1) + b"{"))),
    Case("flags/input-format-version-9", ["run", "art", "--input", "x=x.npy"], 2, ["x.npy"],
         setup=chain(A, raw_bytes("x.npy", b"\x93NUMPY\x09\x00" + b"\0" * 64))),
    Case("flags/input-not-npy", ["run", "art", "--input", "x=x.npy"], 2, ["x.npy", "not a .npy file"],
         setup=chain(A, raw_bytes("x.npy", b"hello, I am text"))),
    Case("flags/input-empty-file-on-disk", ["run", "art", "--input", "x=x.npy"], 2, ["x.npy", "not a .npy file"],
         setup=chain(A, raw_bytes("x.npy", b""))),
    Case("flags/input-is-a-directory", ["run", "art", "--input", "x=d"], 2, ["x=d", "directory"],
         setup=chain(A, mkdir("d"))),
    Case("flags/input-missing-file", ["run", "art", "--input", "x=nope.npy"], 2, ["nope.npy", "no such file"],
         setup=A),
    Case("flags/input-dev-zero", ["run", "art", "--input", "x=/dev/zero"], 2, ["/dev/zero", "not a regular file"],
         setup=A),
    Case("flags/input-symlink-to-outside-text", ["run", "art", "--input", "x=s.npy"], 2, ["s.npy", "not a .npy file"],
         setup=chain(A, link_out("s.npy"))),
    Case("flags/input-fortran-order-ok", ["run", "art", "--input", "x=x.npy", "--verify"], 0,
         setup=chain(A, npy("x.npy", lambda: __import__("numpy").asfortranarray(
             __import__("numpy").arange(8, dtype="float32").reshape(1, 8))))),
    Case("flags/input-big-endian-ok", ["run", "art", "--input", "x=x.npy", "--verify"], 0,
         setup=chain(A, npy("x.npy", ones(dtype=">f4"))), check=says("outputs match")),
]

# ---------------------------------------------------------------- inspect --plot, --json
CASES += [Case(f"flags/plot-{what}", ["inspect", "art", "--plot", path], 2, ["--plot", *needles], setup=setup)
          for what, path, needles, setup in [
              ("no-suffix", "schedule", ["schedule", ".png"], A),
              ("text-suffix", "out.txt", ["out.txt", ".png"], A),
              ("empty", "", [".png"], A),
              ("a-directory", "d.png", ["d.png", "directory"], chain(A, mkdir("d.png"))),
              ("symlink-out", "s.png", ["s.png", "symlink"], chain(A, link_out("s.png"))),
              ("no-parent", "nodir/x.png", ["nodir", "no directory"], A),
          ]]
CASES += [
    Case("flags/plot-ok", ["inspect", "art", "--plot", "s.svg"], 0, setup=A, outputs=["s.svg"],
         check=lambda work, o: _expect((work / "s.svg").read_bytes().lstrip().startswith(b"<?xml"), "not an SVG")),
    Case("flags/inspect-json-strict", ["inspect", "art", "--json", "--costs"], 0, setup=A, check=strict_json),
    Case("flags/planners-json-strict", ["planners", "--json"], 0, check=strict_json),
    Case("flags/targets-json-strict", ["targets", "jetson-tx2", "--json"], 0, check=strict_json),
    Case("flags/compile-json-strict", ["compile", "m.onnx", "--json", "--objective", "edp", "--planner", "exact",
                                       "--budget-steps", "1"], 0, setup=M, check=strict_json),
]


def _expect(ok: bool, what: str) -> None:
    assert ok, what
