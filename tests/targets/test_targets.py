"""Target files: every built-in loads, hikey970 carries MOSAIC's tables, malformed files fail
with the file and the key path named.

Why one file of ~550 lines: most of it is the table of malformed files and the message each must
give, one row per schema rule.
"""
from __future__ import annotations

import math
import re
import tomllib
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hetcc.core.errors import TargetError
from hetcc.targets import PREDICATES, Target, builtin_targets, load_target
from hetcc.targets.schema import NAME_PATTERN

# MOSAIC Table II: (volt, MHz) per device.
TABLE_II = {
    "big": [(0.7, 682), (0.8, 1018), (0.8, 1210), (0.8, 1364), (0.9, 1498), (0.9, 1652), (0.9, 1863),
            (1.0, 2093), (1.1, 2362)],
    "little": [(0.7, 509), (0.8, 1018), (0.9, 1210), (0.9, 1402), (1.0, 1556), (1.0, 1690), (1.1, 1844)],
    "gpu": [(0.6, 104), (0.7, 151), (0.7, 237), (0.7, 332), (0.8, 415), (0.8, 550), (0.9, 667), (1.0, 767)],
}

MINIMAL = '''
schema = "hetcc.target/1"
name = "tiny"
description = "a test board"
kind = "modelled"
base_power_mw = 500.0

[devices.cpu]
kind = "cpu"
execution_provider = "CPUExecutionProvider"
dvfs = [
  { freq_mhz = 500.0, volt = 0.8, static_power_mw = 20.0 },
  { freq_mhz = 1000.0, volt = 1.0, static_power_mw = 30.0 },
]
dynamic_power_mw = 800.0
peak_gflops = { conv = 10.0, matmul = 8.0, other = 2.0 }
mem_bandwidth_gbps = 5.0
layer_overhead_ms = 0.05
transfer = { beta_ms_per_mb = 0.02, delta_ms = 0.01 }
dtypes = ["float32"]
'''


def write(tmp_path: Path, text: str, name: str = "board.toml") -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


@pytest.mark.parametrize("name", builtin_targets())
def test_every_builtin_loads(name: str) -> None:
    t = load_target(name)
    assert isinstance(t, Target) and t.name == name
    assert t.devices and len(t.sha256) == 64
    states = t.states()
    assert len(states) == sum(len(d.dvfs) for d in t.devices)
    for d in t.devices:
        mine = [s for s in states if s.device == d.name]
        assert [s.is_fmax for s in mine] == [False] * (len(mine) - 1) + [True]
        freqs = [s.frequency_mhz for s in mine]
        if None not in freqs:
            assert freqs == sorted(freqs)


def test_builtins_include_the_designed_boards() -> None:
    assert {"hikey970", "host", "jetson-tx2", "orangepi5", "odroid-n2plus",
            "mi8pro-edge-cloud"} <= set(builtin_targets())


def test_hikey970_dvfs_is_mosaic_table_ii() -> None:
    t = load_target("hikey970")
    assert t.device_names == ("big", "little", "gpu", "npu")
    for dev, table in TABLE_II.items():
        d = t.device(dev)
        assert [(lvl.volt, lvl.freq_mhz) for lvl in d.dvfs] == [(v, float(f)) for v, f in table]
    npu = t.device("npu")
    assert len(npu.dvfs) == 1 and npu.dvfs[0].freq_mhz == 960.0
    assert npu.capacity_bytes == 100_000_000  # MOSAIC Sec. III: 100 MB per slice
    assert npu.supports_op("Conv") and not npu.supports_op("LSTM")
    assert t.device("big").affinity == (4, 5, 6, 7) and t.device("little").affinity == (0, 1, 2, 3)


def test_hikey970_has_25_states() -> None:
    states = load_target("hikey970").states()
    assert len(states) == 25  # 9 + 7 + 8 + 1, MOSAIC Eq. 7
    assert [s.device for s in states] == ["big"] * 9 + ["little"] * 7 + ["gpu"] * 8 + ["npu"]
    assert [s.frequency_mhz for s in states if s.is_fmax] == [2362.0, 1844.0, 767.0, 960.0]


def test_hikey970_npu_transfers_cost_more_than_gpu_and_cpu() -> None:
    t = load_target("hikey970")
    big, gpu, npu = t.device("big"), t.device("gpu"), t.device("npu")
    assert npu.transfer_beta_ms_per_mb > gpu.transfer_beta_ms_per_mb > big.transfer_beta_ms_per_mb
    assert npu.transfer_delta_ms > gpu.transfer_delta_ms > big.transfer_delta_ms


@pytest.mark.parametrize("name", builtin_targets())
def test_every_number_has_a_comment(name: str) -> None:
    """Each numeric setting line of a board file carries a citation or says it is assumed
    (on the line or in the comment block right above it)."""
    text = (Path(load_target(name).path)).read_text()
    uncited = []
    for i, line in enumerate(text.splitlines(), 1):
        code = line.split("#", 1)[0]
        if re.search(r"=\s*[\d{\[]", code) and re.search(r"\d", code) and "#" not in line:
            prev = text.splitlines()[i - 2] if i > 1 else ""
            if not prev.lstrip().startswith("#"):
                uncited.append((i, line))
    assert uncited == []


def test_jetson_tx2_knobs_are_evosh_table_i() -> None:
    t = load_target("jetson-tx2")
    # EvoSh Table I: A57 cores 5 (0-4), Denver cores 3 (0-2), A57 / Denver 12 levels
    # (345 MHz - 2 GHz), GPU 13 levels (114 MHz - 1.3 GHz), EMC 11 levels (40 MHz - 1.9 GHz)
    assert t.knobs["a57_cores"].values == (0, 1, 2, 3, 4) and t.knobs["denver_cores"].values == (0, 1, 2)
    assert t.knobs["a57_cores"].devices == ("a57",) and t.knobs["a57_cores"].effect == "active_cores"
    assert t.knobs["a57_cores"].default == 4 and t.knobs["denver_cores"].default == 2
    emc = t.knobs["emc_freq_mhz"].values
    assert t.knobs["emc_freq_mhz"].effect == "memory_frequency"
    assert set(t.knobs["emc_freq_mhz"].devices) == set(t.device_names)
    assert len(emc) == 11 and 40 <= emc[0] < 41 and 1850 < emc[-1] < 1900
    for dev, n, lo, hi in (("a57", 12, 345, 2100), ("denver", 12, 345, 2100), ("gpu", 13, 114, 1310)):
        f = [lvl.freq_mhz for lvl in t.device(dev).dvfs]
        assert len(f) == n and lo <= f[0] < lo + 1 and f[-1] <= hi
    assert t.device("gpu").execution_provider == "CUDAExecutionProvider"


def test_mi8pro_edge_cloud_has_autoscale_devices_and_links() -> None:
    t = load_target("mi8pro-edge-cloud")
    assert t.device_names == ("cpu", "gpu", "dsp", "edge", "cloud")
    assert len(t.device("gpu").dvfs) == 7 and t.device("gpu").f_max_mhz == 710.0  # AutoScale Table 2
    assert t.device("cpu").f_max_mhz == 2803.2 and len(t.device("dsp").dvfs) == 1
    assert t.device("edge").link == "wifi-direct" and t.device("cloud").link == "wifi"
    wifi = t.links["wifi"]
    assert wifi.bandwidth_mbps_at(-85.0) < wifi.bandwidth_mbps_at(-60.0)  # weak signal, slower link
    assert wifi.tx_power_mw_at(-85.0) > wifi.tx_power_mw_at(-60.0)        # and costlier radio


def test_fairboost_boards() -> None:
    opi, n2 = load_target("orangepi5"), load_target("odroid-n2plus")
    assert opi.device("big").f_max_mhz == 2400.0 and opi.device("little").f_max_mhz == 1800.0
    assert len(opi.device("little").affinity) == 4 and len(n2.device("little").affinity) == 2


def test_host_is_measured_without_power_model() -> None:
    t = load_target("host")
    assert t.kind == "measured" and not t.has_power_model
    (cpu,) = t.devices
    assert cpu.execution_provider == "CPUExecutionProvider"
    assert cpu.dynamic_power_mw is None and cpu.peak_gflops is None
    (s,) = t.states()
    assert s.device == "cpu" and s.frequency_mhz is None and s.is_fmax


def test_load_by_path_and_sha(tmp_path: Path) -> None:
    p = write(tmp_path, MINIMAL)
    t = load_target(p)
    assert t.name == "tiny" and t.path == p and len(t.states()) == 2
    assert load_target(str(p)).sha256 == t.sha256
    assert t.knobs == {} and t.links == {}


def test_unknown_target_name() -> None:
    with pytest.raises(TargetError) as e:
        load_target("hikey960")
    msg = str(e.value)
    assert "hikey960" in msg and "hikey970" in msg and "--target path/to/board.toml" in msg


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(TargetError, match="not found"):
        load_target(tmp_path / "nope.toml")


@pytest.mark.parametrize("edit, key, what", [
    (lambda s: s.replace('kind = "modelled"', 'kind = "modelled"\ncolour = "red"'), "colour", "unknown key"),
    (lambda s: s.replace('dtypes = ["float32"]', 'dtypes = ["float32"]\nturbo = true'),
     "devices.cpu.turbo", "unknown key"),
    (lambda s: s.replace('base_power_mw = 500.0\n', ''), "base_power_mw", "missing"),
    (lambda s: s.replace('execution_provider = "CPUExecutionProvider"\n', ''),
     "devices.cpu.execution_provider", "missing"),
    (lambda s: s.replace('base_power_mw = 500.0', 'base_power_mw = "lots"'), "base_power_mw", "number"),
    (lambda s: s.replace('base_power_mw = 500.0', 'base_power_mw = -1.0'), "base_power_mw", ">= 0"),
    (lambda s: s.replace('dynamic_power_mw = 800.0', 'dynamic_power_mw = -5'), "devices.cpu.dynamic_power_mw", ">= 0"),
    (lambda s: s.replace('volt = 1.0', 'volt = 2.5'), "devices.cpu.dvfs[1].volt", "(0, 2] V"),
    (lambda s: s.replace('volt = 0.8', 'volt = 0.0'), "devices.cpu.dvfs[0].volt", "(0, 2] V"),
    (lambda s: s.replace('static_power_mw = 20.0', 'static_power_mw = -20.0'),
     "devices.cpu.dvfs[0].static_power_mw", ">= 0"),
    (lambda s: s.replace('freq_mhz = 1000.0', 'freq_mhz = 400.0'), "devices.cpu.dvfs[1].freq_mhz", "ascending"),
    (lambda s: re.sub(r"dvfs = \[.*?\n\]", "dvfs = []", s, flags=re.S), "devices.cpu.dvfs", "empty"),
    (lambda s: s.replace('kind = "cpu"', 'kind = "fpga"'), "devices.cpu.kind", "one of"),
    (lambda s: s.replace('kind = "modelled"', 'kind = "guessed"'), "kind", "one of"),
    (lambda s: s.replace('schema = "hetcc.target/1"', 'schema = "hetcc.target/9"'), "schema", "hetcc.target/1"),
    (lambda s: s.replace('conv = 10.0, ', ''), "devices.cpu.peak_gflops.conv", "missing"),
    (lambda s: s.replace('conv = 10.0', 'conv = 0.0'), "devices.cpu.peak_gflops.conv", "> 0"),
    (lambda s: s.replace('mem_bandwidth_gbps = 5.0\n', ''), "devices.cpu.mem_bandwidth_gbps", "modelled"),
    (lambda s: s.replace('dtypes = ["float32"]', 'dtypes = ["float33"]'), "devices.cpu.dtypes[0]", "unknown element type"),
    (lambda s: s.replace('dtypes = ["float32"]', 'dtypes = ["float32"]\npredicates = ["is_shiny"]'),
     "devices.cpu.predicates[0]", "unknown predicate"),
    (lambda s: s.replace('dtypes = ["float32"]', 'dtypes = ["float32"]\ncapacity_bytes = 1.5'),
     "devices.cpu.capacity_bytes", "integer"),
    (lambda s: s.replace('transfer = { beta_ms_per_mb = 0.02, delta_ms = 0.01 }\n', ''),
     "devices.cpu.transfer", "missing"),
    (lambda s: s.replace('delta_ms = 0.01', 'delta_ms = 0.01, gamma = 1'), "devices.cpu.transfer.gamma", "unknown key"),
    (lambda s: s.replace('dtypes = ["float32"]', 'dtypes = ["float32"]\naffinity = [0, "one"]'),
     "devices.cpu.affinity[1]", "integer"),
])
def test_malformed_file_names_file_and_key(tmp_path: Path, edit, key: str, what: str) -> None:
    text = edit(MINIMAL)
    assert text != MINIMAL
    p = write(tmp_path, text, "bad.toml")
    with pytest.raises(TargetError) as e:
        load_target(p)
    msg = str(e.value)
    assert msg.startswith(f"{p}: {key}: "), msg
    assert what in msg, msg
    assert "\n" not in msg


def test_bad_toml_syntax(tmp_path: Path) -> None:
    p = write(tmp_path, MINIMAL + "\n[devices.cpu\n", "broken.toml")
    with pytest.raises(TargetError, match=r"broken\.toml: not valid TOML"):
        load_target(p)


def test_no_devices(tmp_path: Path) -> None:
    text = MINIMAL.split("[devices.cpu]")[0] + "[devices]\n"
    with pytest.raises(TargetError, match=r"devices: must define at least one device"):
        load_target(write(tmp_path, text))


def test_fixed_frequency_device_and_optional_keys(tmp_path: Path) -> None:
    text = MINIMAL + '''
[devices.npu]
kind = "npu"
execution_provider = "NnapiExecutionProvider"
provider_options = { nnapi_flags = "NNAPI_FLAG_USE_FP16" }
freq_mhz = 800.0
static_power_mw = 50.0
dynamic_power_mw = 900.0
peak_gflops = { conv = 100.0, matmul = 50.0, other = 5.0 }
mem_bandwidth_gbps = 5.0
layer_overhead_ms = 0.5
node_overhead_ms = 0.1
transfer = { beta_ms_per_mb = 1.0, delta_ms = 1.0, power_mw = 300.0 }
capacity_bytes = 1_000_000
supported_ops = ["Conv", "Relu"]
dtypes = ["float16", "float32"]
predicates = ["conv_group_1", "max_rank_4"]
'''
    t = load_target(write(tmp_path, text))
    npu = t.device("npu")
    assert npu.dvfs[0].freq_mhz == 800.0 and npu.dvfs[0].volt is None
    assert npu.provider_options["nnapi_flags"] == "NNAPI_FLAG_USE_FP16"
    assert npu.capacity_bytes == 1_000_000 and npu.transfer_power_mw == 300.0
    assert npu.supports_op("Relu") and not npu.supports_op("Add")
    assert npu.supports_dtype("int64")  # index types are never checked
    assert not npu.supports_dtype("float64")
    assert npu.predicates == ("conv_group_1", "max_rank_4") and set(npu.predicates) <= set(PREDICATES)
    assert len(t.states()) == 3 and t.states()[-1].device == "npu"


def test_volts_on_every_level_or_none(tmp_path: Path) -> None:
    text = MINIMAL.replace('volt = 0.8, ', '')
    with pytest.raises(TargetError, match=r"devices\.cpu\.dvfs\[0\]\.volt: give a volt on every level or on none"):
        load_target(write(tmp_path, text))
    t = load_target(write(tmp_path, text.replace('volt = 1.0, ', ''), "novolt.toml"))
    assert [lvl.volt for lvl in t.device("cpu").dvfs] == [None, None]


def test_fixed_frequency_and_dvfs_table_are_exclusive(tmp_path: Path) -> None:
    text = MINIMAL.replace('dynamic_power_mw = 800.0', 'dynamic_power_mw = 800.0\nfreq_mhz = 700.0')
    with pytest.raises(TargetError, match=r"devices\.cpu\.freq_mhz: give either"):
        load_target(write(tmp_path, text))


def test_knobs_and_links(tmp_path: Path) -> None:
    text = MINIMAL.replace('[devices.cpu]', '''[knobs.cpu_cores]
values = [1, 2, 4]
devices = ["cpu"]
effect = "active_cores"
parallel_fraction = 0.8

[knobs.emc_freq_mhz]
values = [800, 1600]
devices = ["cpu", "cloud"]
effect = "memory_frequency"
power_mw_at_max = 200.0

[links.wifi]
kind = "wifi"
signal_dbm = [-90.0, -70.0, -50.0]
bandwidth_mbps = [5.0, 40.0, 100.0]
tx_power_mw = [1500.0, 900.0, 700.0]
rx_power_mw = [900.0, 600.0, 500.0]
rtt_ms = 10.0
default_signal_dbm = -60.0

[devices.cpu]''') + '''
[devices.cloud]
kind = "remote"
execution_provider = "CPUExecutionProvider"
link = "wifi"
freq_mhz = 2400.0
static_power_mw = 100.0
dynamic_power_mw = 0.0
peak_gflops = { conv = 1000.0, matmul = 1000.0, other = 100.0 }
mem_bandwidth_gbps = 50.0
layer_overhead_ms = 0.01
dtypes = ["float32"]
'''
    t = load_target(write(tmp_path, text))
    assert t.knobs["cpu_cores"].values == (1, 2, 4) and t.knobs["cpu_cores"].params == {"parallel_fraction": 0.8}
    assert t.knobs["emc_freq_mhz"].params == {"power_mw_at_max": 200.0}
    wifi = t.links["wifi"]
    assert wifi.bandwidth_mbps_at() == pytest.approx(70.0)       # halfway -70 .. -50
    assert wifi.bandwidth_mbps_at(-100.0) == 5.0                 # clamped
    assert wifi.tx_power_mw_at(-80.0) == pytest.approx(1200.0)
    cloud = t.device("cloud")
    assert cloud.link == "wifi" and cloud.transfer_beta_ms_per_mb == 0.0

    bad = text.replace('link = "wifi"', 'link = "lte"')
    with pytest.raises(TargetError, match=r"devices\.cloud\.link: unknown link 'lte'"):
        load_target(write(tmp_path, bad, "bad_link.toml"))
    bad = text.replace('rx_power_mw = [900.0, 600.0, 500.0]', 'rx_power_mw = [900.0, 600.0]')
    with pytest.raises(TargetError, match=r"links\.wifi\.rx_power_mw: must have one value per signal level"):
        load_target(write(tmp_path, bad, "bad_rx.toml"))
    bad = text.replace('link = "wifi"\n', '')
    with pytest.raises(TargetError, match=r"devices\.cloud\.link: missing"):
        load_target(write(tmp_path, bad, "no_link.toml"))


def test_measured_target_may_omit_throughput_and_power(tmp_path: Path) -> None:
    text = '''
schema = "hetcc.target/1"
name = "m"
description = "measured"
kind = "measured"
base_power_mw = 0.0
[devices.cpu]
kind = "cpu"
execution_provider = "CPUExecutionProvider"
power_model = false
transfer = { beta_ms_per_mb = 0.1, delta_ms = 0.0 }
dtypes = ["float32"]
'''
    t = load_target(write(tmp_path, text))
    assert t.states()[0].frequency_mhz is None
    with pytest.raises(TargetError, match=r"devices\.cpu\.dynamic_power_mw: not allowed with power_model = false"):
        load_target(write(tmp_path, text.replace('power_model = false', 'power_model = false\ndynamic_power_mw = 1.0'),
                          "x.toml"))
    modelled = text.replace('kind = "measured"', 'kind = "modelled"')
    with pytest.raises(TargetError, match=r"devices\.cpu\.peak_gflops: missing"):
        load_target(write(tmp_path, modelled, "y.toml"))


def test_builtin_files_are_plain_toml() -> None:
    for name in builtin_targets():
        doc = tomllib.loads(Path(load_target(name).path).read_text())
        assert doc["schema"] == "hetcc.target/1" and doc["name"] == name


# --- the split: model, declarative schema, predicates ----------------------------------------------

def test_public_names_are_re_exported() -> None:
    import hetcc.targets as T
    from hetcc.targets import model, predicates, schema

    assert T.State is model.State and T.Target is model.Target and T.Knob is model.Knob
    assert T.PREDICATES is predicates.PREDICATES and T.register_predicate is predicates.register_predicate
    assert T.SCHEMA == "hetcc.target/1" and T.KEYS is schema.KEYS
    assert "remote" in T.DEVICE_KINDS and "int64" in T.INDEX_DTYPES
    from hetcc.core.opclasses import OP_CLASSES
    assert T.OP_CLASSES is OP_CLASSES


def test_schema_table_documents_every_key() -> None:
    from hetcc.targets.schema import KEYS, schema_doc

    paths = [k.path for k in KEYS]
    assert len(paths) == len(set(paths))
    assert all(k.doc for k in KEYS)
    for k in KEYS:
        if k.type == "number" and k.path.endswith(("_mw", "_ms", "_mhz", "_gbps", "_mbps", "_dbm")):
            assert k.unit, k.path
    doc = schema_doc()
    assert "devices.*.dvfs[].volt: number [V; (0, 2]]" in doc
    assert "knobs.*.effect" in doc and "devices.*.endpoint" in doc


def _keys_of(doc, prefix=""):
    for k, v in doc.items():
        path = f"{prefix}.{k}" if prefix else k
        yield path
        if isinstance(v, dict):
            yield from _keys_of(v, path)
        elif isinstance(v, list) and v and isinstance(v[0], dict):
            for x in v:
                yield from _keys_of(x, path + "[]")


@pytest.mark.parametrize("name", builtin_targets())
def test_builtin_keys_are_in_the_schema_table(name: str) -> None:
    from hetcc.targets.schema import KEYS

    patterns = {k.path for k in KEYS}
    doc = tomllib.loads(Path(load_target(name).path).read_text())
    for path in _keys_of(doc):
        parts = path.split(".")
        # named tables: devices.<name>, knobs.<name>, links.<name>, provider_options.<name>
        for i, p in enumerate(parts):
            if i > 0 and parts[i - 1] in ("devices", "knobs", "links", "provider_options"):
                parts[i] = "*"
        assert ".".join(parts) in patterns, path


def test_remote_endpoint(tmp_path: Path) -> None:
    t = load_target("mi8pro-edge-cloud")
    assert t.device("edge").endpoint == "http://edge.local:7070"   # the tablet's hetcc serve
    assert t.device("cloud").endpoint.startswith("http://") and t.device("cpu").endpoint is None
    text = MINIMAL.replace('dtypes = ["float32"]', 'dtypes = ["float32"]\nendpoint = "tcp://x:1"')
    with pytest.raises(TargetError, match=r"devices\.cpu\.endpoint: only a remote device"):
        load_target(write(tmp_path, text))


def test_mi8pro_has_no_precision_knob() -> None:
    # dropped: precision is a property of the model handed to hetcc, not a board setting
    assert dict(load_target("mi8pro-edge-cloud").knobs) == {}


KNOB = '''[knobs.cores]
values = [0, 1, 2]
devices = ["cpu"]
effect = "active_cores"
parallel_fraction = 0.9

'''


@pytest.mark.parametrize("knob, key, what", [
    ("[knobs]\ncores = [1, 2]\n", "knobs.cores", "must be a table (values, devices, effect"),
    (KNOB.replace('parallel_fraction = 0.9', 'parallel_fraction = 0.9\nstep = 1'), "knobs.cores.step",
     "unknown key; allowed keys: control, description, devices, effect, parallel_fraction, power_mw_at_max, "
     "values"),
    (KNOB.replace('devices = ["cpu"]', 'devices = ["gpu"]'), "knobs.cores.devices[0]", "unknown device 'gpu'"),
    (KNOB.replace('"active_cores"', '"turbo"'), "knobs.cores.effect", "unknown effect 'turbo'"),
    (KNOB.replace('[0, 1, 2]', '[0, 2, 1]'), "knobs.cores.values[2]", "strictly ascending"),
    (KNOB.replace('[0, 1, 2]', '[0, 1, 1]'), "knobs.cores.values[2]", "strictly ascending"),
    (KNOB.replace('[0, 1, 2]', '[0, 1.5, 2]'), "knobs.cores.values[1]", "whole number of cores"),
    (KNOB.replace('[0, 1, 2]', '[0, "two"]'), "knobs.cores.values[1]", "must be a number"),
    (KNOB.replace('[0, 1, 2]', '[]'), "knobs.cores.values", "must not be empty"),
    (KNOB.replace('parallel_fraction = 0.9\n', ''), "knobs.cores.parallel_fraction", "missing required key"),
    (KNOB.replace('0.9', '1.5'), "knobs.cores.parallel_fraction", "must be in [0, 1]"),
    (KNOB.replace('parallel_fraction = 0.9', 'parallel_fraction = 0.9\npower_mw_at_max = 5.0'),
     "knobs.cores.power_mw_at_max", 'only for effect = "memory_frequency"'),
    ('[knobs.emc]\nvalues = [400, 800]\ndevices = ["cpu"]\neffect = "memory_frequency"\npower_mw_at_max = 900.0\n',
     "knobs.emc.power_mw_at_max", "must be <= base_power_mw (500 mW)"),
    ('[knobs.emc]\nvalues = [400, 800]\ndevices = ["cpu"]\neffect = "memory_frequency"\nparallel_fraction = 0.5\n',
     "knobs.emc.parallel_fraction", 'only for effect = "active_cores"'),
    ('[knobs.emc]\nvalues = [0, 800]\ndevices = ["cpu"]\neffect = "memory_frequency"\n',
     "knobs.emc.values[0]", "must be > 0 MHz"),
])
def test_malformed_knob_names_file_and_key(tmp_path: Path, knob: str, key: str, what: str) -> None:
    p = write(tmp_path, MINIMAL.replace("[devices.cpu]", knob + "[devices.cpu]"), "bad.toml")
    with pytest.raises(TargetError) as e:
        load_target(p)
    msg = str(e.value)
    assert msg.startswith(f"{p}: {key}: "), msg
    assert what in msg, msg


#: a modelled GPU device to add to MINIMAL (shared with test_controls)
GPU = '''
[devices.gpu]
kind = "gpu"
execution_provider = "CUDAExecutionProvider"
freq_mhz = 1000.0
static_power_mw = 10.0
dynamic_power_mw = 100.0
peak_gflops = { conv = 10.0, matmul = 8.0, other = 2.0 }
mem_bandwidth_gbps = 5.0
layer_overhead_ms = 0.05
transfer = { beta_ms_per_mb = 0.02, delta_ms = 0.01 }
dtypes = ["float32"]
'''


def test_active_cores_knob_checks_device_kind_and_affinity(tmp_path: Path) -> None:
    text = MINIMAL.replace("[devices.cpu]", KNOB.replace('["cpu"]', '["gpu"]') + "[devices.cpu]") + GPU
    with pytest.raises(TargetError, match=r"knobs\.cores\.devices\[0\]: effect = \"active_cores\" acts on cpu"):
        load_target(write(tmp_path, text))
    text = MINIMAL.replace("[devices.cpu]", KNOB + "[devices.cpu]").replace(
        'dtypes = ["float32"]', 'dtypes = ["float32"]\naffinity = [0]')
    with pytest.raises(TargetError, match=r"knobs\.cores\.values\[2\]: 'cpu' has 1 cores"):
        load_target(write(tmp_path, text, "aff.toml"))
    t = load_target(write(tmp_path, MINIMAL.replace("[devices.cpu]", KNOB + "[devices.cpu]"), "ok.toml"))
    assert t.knobs["cores"].values == (0, 1, 2) and t.knobs["cores"].default == 2


# ---------------------------------------------------------------- hostile mutations of the built-ins
_HOSTILE_VALUES = ("-1", "0", "-0.0", "nan", "inf", "-inf", "1e308", "9" * 30, "9" * 5000, '""', '"/"',
                   '"a/b"', '"\\u0000"', '".."', '"x" ', "[]", "[[]]", "{}", "{ a = [1] }", "true",
                   "1979-05-27", '"' + "x" * 5000 + '"', "[" * 300 + "]" * 300, '"\\u001b[2J"',
                   '"/sys/../etc/passwd"', '"/etc/passwd"')
_HOSTILE_NAMES = ('"a/b"', '"\\u0000"', '".."', '""', "x" * 300, '"a=b"', '"a b"', "big", "gpu")


@st.composite
def _mutated_board(draw):
    name = draw(st.sampled_from(builtin_targets()))
    lines = load_target(name).path.read_text().splitlines()
    for _ in range(draw(st.integers(1, 3))):
        i = draw(st.integers(0, len(lines) - 1))
        line = lines[i]
        how = draw(st.sampled_from(("value", "name", "drop")))
        if how == "value" and "=" in line and not line.lstrip().startswith("#"):
            key = line.split("=", 1)[0]
            lines[i] = f"{key}= {draw(st.sampled_from(_HOSTILE_VALUES))}"
        elif how == "name" and line.startswith("[") and "." in line:
            head = line.strip("[]").rsplit(".", 1)[0]
            lines[i] = f"[{head}.{draw(st.sampled_from(_HOSTILE_NAMES))}]"
        else:
            del lines[i]
    return "\n".join(lines) + "\n"


@pytest.mark.slow
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=_mutated_board())
def test_a_mutated_builtin_board_loads_or_fails_on_one_line(tmp_path: Path, text: str) -> None:
    """Whatever is changed in a built-in board file, it loads (and its states are usable) or the
    loader raises one TargetError line that names the file: never another exception."""
    path = tmp_path / "board.toml"
    path.write_text(text, encoding="utf-8")
    try:
        target = load_target(path)
    except TargetError as e:
        msg = str(e)
        assert msg.startswith(f"{path}: ") and "\n" not in msg, msg
        return
    for d in target.devices:
        assert re.fullmatch(NAME_PATTERN, d.name), d.name
        for lvl in d.dvfs:
            assert lvl.freq_mhz is None or math.isfinite(lvl.freq_mhz)
    assert target.states()
