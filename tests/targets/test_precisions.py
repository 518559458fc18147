"""The per-device ``precisions`` table (latency factor per precision) and the AutoScale boards."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from hetcc.core.errors import TargetError
from hetcc.targets import PRECISIONS, load_bytes, load_target

BOARD = '''
schema = "hetcc.target/1"
name = "p"
description = "precisions"
kind = "modelled"
base_power_mw = 0.0

[devices.gpu]
kind = "gpu"
execution_provider = "CPUExecutionProvider"
freq_mhz = 700.0
static_power_mw = 100.0
dynamic_power_mw = 1000.0
peak_gflops = { conv = 100.0, matmul = 50.0, other = 5.0 }
mem_bandwidth_gbps = 10.0
layer_overhead_ms = 0.1
transfer = { beta_ms_per_mb = 0.1, delta_ms = 0.1 }
dtypes = ["float32", "float16"]
PRECISIONS
'''


def board(line: str):
    return load_bytes(BOARD.replace("PRECISIONS", line).encode(), Path("p.toml"), "p.toml")


def test_a_table_is_read_in_precision_order() -> None:
    d = board("precisions = { float32 = 2.0, float16 = 1.0 }").devices[0]
    assert dict(d.precisions) == {"float32": 2.0, "float16": 1.0}
    assert list(d.precision_factors()) == ["float32", "float16"]
    assert d.precision_factor("float32") == 2.0 and d.precision_factor("int8") is None


def test_a_table_is_the_whole_list() -> None:
    d = board("precisions = { float16 = 0.5 }").devices[0]
    assert dict(d.precision_factors()) == {"float16": 0.5}
    assert d.precision_factor("float32") is None


def test_absent_means_what_dtypes_allow_at_factor_one() -> None:
    d = board("").devices[0]
    assert dict(d.precisions) == {}
    assert dict(d.precision_factors()) == {"float32": 1.0, "float16": 1.0}
    # the default follows dtypes: uint8 alone (a QDQ model's tensors) allows int8
    assert dict(replace(d, dtypes=frozenset({"uint8"})).precision_factors()) == {"int8": 1.0}
    assert PRECISIONS == ("float32", "float16", "int8")


@pytest.mark.parametrize("line, match", [
    ("precisions = { float32 = 0.0 }", r"^p\.toml: devices\.gpu\.precisions\.float32: must be > 0$"),
    ("precisions = { float16 = -1.5 }", r"^p\.toml: devices\.gpu\.precisions\.float16: must be > 0$"),
    ("precisions = { float16 = nan }", r"^p\.toml: devices\.gpu\.precisions\.float16: must be finite$"),
    ('precisions = { float16 = "fast" }', r"^p\.toml: devices\.gpu\.precisions\.float16: must be a number, got str$"),
    ("precisions = { bfloat16 = 1.0 }", r"^p\.toml: devices\.gpu\.precisions\.bfloat16: unknown key; allowed "
                                        r"keys: float16, float32, int8$"),
    ("precisions = {}", r"^p\.toml: devices\.gpu\.precisions: give a factor per precision"),
    ("precisions = 1.0", r"^p\.toml: devices\.gpu\.precisions: must be a table"),
    ("precisions = { int8 = 0.5 }", r"^p\.toml: devices\.gpu\.precisions\.int8: the device does not compute in "
                                    r"int8 or uint8 \(dtypes: float32, float16\); add it to dtypes or drop this "
                                    r"precision$"),
])
def test_bad_tables_fail_in_one_line_naming_the_key(line: str, match: str) -> None:
    with pytest.raises(TargetError, match=match) as e:
        board(line)
    assert "\n" not in str(e.value)


def test_mi8pro_precisions() -> None:
    t = load_target("mi8pro-edge-cloud")
    got = {d.name: dict(d.precision_factors()) for d in t.devices}
    assert got == {"cpu": {"float32": 1.0, "int8": 0.5}, "gpu": {"float32": 2.0, "float16": 1.0},
                   "dsp": {"int8": 1.0}, "edge": {"float32": 1.0}, "cloud": {"float32": 1.0}}


# --- AutoScale's other two phones (Table 2) --------------------------------------------------------

TABLE_2 = {  # board: {device: (V/F steps, f_max MHz, peak power mW)}
    "galaxy-s10e": {"cpu": (21, 2730.0, 5600.0), "gpu": (9, 702.0, 2400.0)},
    "motox-force": {"cpu": (15, 1958.4, 3600.0), "gpu": (6, 600.0, 2000.0)},
    "mi8pro-edge-cloud": {"gpu": (7, 710.0, 2800.0)},
}


@pytest.mark.parametrize("name", sorted(TABLE_2))
def test_autoscale_boards_have_table_2_steps_and_peak_power(name: str) -> None:
    t = load_target(name)
    for dev, (steps, f_max, peak_mw) in TABLE_2[name].items():
        d = t.device(dev)
        assert len(d.dvfs) == steps and d.f_max_mhz == f_max
        assert d.dvfs[-1].static_power_mw + d.dynamic_power_mw == pytest.approx(peak_mw)


@pytest.mark.parametrize("name", ["galaxy-s10e", "motox-force"])
def test_new_boards_share_mi8pros_edge_cloud_setup(name: str) -> None:
    t, mi8 = load_target(name), load_target("mi8pro-edge-cloud")
    assert t.kind == "modelled" and "(analytical model)" in t.description
    assert t.device_names == ("cpu", "gpu", "edge", "cloud")     # no DSP (AutoScale Table 2)
    assert dict(t.links) == dict(mi8.links)
    for dev in ("edge", "cloud"):   # the same remote devices; only the endpoint's scheme may differ
        assert replace(t.device(dev), endpoint=None) == replace(mi8.device(dev), endpoint=None)
    got = {d.name: dict(d.precision_factors()) for d in t.devices}
    assert got == {"cpu": {"float32": 1.0, "int8": 0.5}, "gpu": {"float32": 2.0, "float16": 1.0},
                   "edge": {"float32": 1.0}, "cloud": {"float32": 1.0}}
    assert not t.knobs
