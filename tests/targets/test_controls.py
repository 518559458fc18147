"""The optional ``control`` tables of a target: how the OS sets a device's frequency or a knob."""
from __future__ import annotations

from pathlib import Path

import pytest

from hetcc.core.errors import TargetError
from hetcc.targets import builtin_targets, load_target

from test_targets import GPU, KNOB, MINIMAL, write  # tests/targets is on sys.path (pytest rootdir import)

EMC = '''[knobs.emc]
values = [400.0, 800.0]
devices = ["cpu"]
effect = "memory_frequency"
'''


def test_jetson_tx2_controls_are_the_l4t_paths() -> None:
    t = load_target("jetson-tx2")
    assert t.device("a57").control.cpufreq == "/sys/devices/system/cpu/cpu0/cpufreq"
    assert t.device("denver").control.cpufreq == "/sys/devices/system/cpu/cpu1/cpufreq"
    assert t.device("gpu").control.devfreq == "/sys/devices/17000000.gp10b/devfreq/17000000.gp10b"
    assert t.knobs["a57_cores"].control.hotplug == (0, 3, 4, 5) == t.device("a57").affinity
    assert t.knobs["denver_cores"].control.hotplug == (1, 2) == t.device("denver").affinity
    emc = t.knobs["emc_freq_mhz"].control
    assert (emc.clock, emc.unit) == ("/sys/kernel/debug/bpmp/debug/clk/emc/rate", "Hz")
    assert emc.lock == "/sys/kernel/debug/bpmp/debug/clk/emc/mrq_rate_locked"


@pytest.mark.parametrize("name", [n for n in builtin_targets() if n != "jetson-tx2"])
def test_other_targets_stay_valid_without_controls(name: str) -> None:
    t = load_target(name)
    assert all(d.control is None for d in t.devices) and all(k.control is None for k in t.knobs.values())


def test_a_control_on_a_minimal_board(tmp_path: Path) -> None:
    text = MINIMAL.replace('dtypes = ["float32"]', 'dtypes = ["float32"]\naffinity = [0, 1, 2]\n'
                           'control = { cpufreq = "/sys/devices/system/cpu/cpu0/cpufreq" }')
    knob = KNOB + 'control = { hotplug = [2, 0, 1] }\n\n'
    emc = EMC + 'control = { clock = "/sys/emc/rate", unit = "kHz" }\n\n'
    t = load_target(write(tmp_path, text.replace("[devices.cpu]", knob + emc + "[devices.cpu]")))
    assert t.device("cpu").control.cpufreq == "/sys/devices/system/cpu/cpu0/cpufreq"
    assert t.knobs["cores"].control.hotplug == (2, 0, 1)
    assert (t.knobs["emc"].control.clock, t.knobs["emc"].control.unit, t.knobs["emc"].control.lock) == \
        ("/sys/emc/rate", "kHz", None)


def _device(control: str) -> str:
    return MINIMAL.replace('dtypes = ["float32"]', f'dtypes = ["float32"]\ncontrol = {control}')


def _knob(block: str, control: str) -> str:
    return MINIMAL.replace("[devices.cpu]", block + f"control = {control}\n\n[devices.cpu]")


@pytest.mark.parametrize("text, key, what", [
    (_device("{}"), "devices.cpu.control", "give cpufreq or devfreq"),
    (_device('"cpu0"'), "devices.cpu.control", "must be a table (cpufreq or devfreq)"),
    (_device('{ speed = "/x" }'), "devices.cpu.control.speed", "unknown key; allowed keys: cpufreq, devfreq"),
    (_device('{ cpufreq = "sys/cpu0" }'), "devices.cpu.control.cpufreq", "must be an absolute path"),
    (_device('{ cpufreq = "/sys/a", devfreq = "/sys/b" }'), "devices.cpu.control", "give one of cpufreq or devfreq"),
    (_device('{ cpufreq = 3 }'), "devices.cpu.control.cpufreq", "must be a string"),
    (MINIMAL + GPU.replace('dtypes = ["float32"]', 'dtypes = ["float32"]\ncontrol = { cpufreq = "/sys/c" }'),
     "devices.gpu.control.cpufreq", "cpufreq sets cpu devices (use devfreq)"),
    (_knob(KNOB, "{}"), "knobs.cores.control", "give hotplug (active_cores) or clock (memory_frequency)"),
    (_knob(KNOB, "{ hotplug = [] }"), "knobs.cores.control.hotplug", "must not be empty"),
    (_knob(KNOB, "{ hotplug = [0] }"), "knobs.cores.control.hotplug", "lists 1 CPU(s) but values go up to 2"),
    (_knob(KNOB, "{ hotplug = [0, 0, 1] }"), "knobs.cores.control.hotplug", "CPU ids must be distinct"),
    (_knob(KNOB, "{ hotplug = [0, -1, 2] }"), "knobs.cores.control.hotplug[1]", "must be >= 0"),
    (_knob(KNOB, '{ clock = "/sys/r", unit = "Hz" }'), "knobs.cores.control.clock",
     'only for effect = "memory_frequency"'),
    (_knob(EMC, '{ hotplug = [0] }'), "knobs.emc.control.hotplug", 'only for effect = "active_cores"'),
    (_knob(EMC, '{ clock = "/sys/r" }'), "knobs.emc.control.unit",
     "missing required key (a clock needs the unit its file takes)"),
    (_knob(EMC, '{ clock = "/sys/r", unit = "GHz" }'), "knobs.emc.control.unit", "must be one of Hz, kHz, MHz"),
    (_knob(EMC, '{ lock = "/l" }'), "knobs.emc.control.lock", "only with clock"),
    (_knob(EMC, '{ clock = "r", unit = "Hz" }'), "knobs.emc.control.clock", "must be an absolute path"),
    (_knob(EMC, '{ clock = "/sys/r", unit = "Hz", lock = "l" }'), "knobs.emc.control.lock", "must be an absolute path"),
])
def test_malformed_control_names_file_and_key(tmp_path: Path, text: str, key: str, what: str) -> None:
    p = write(tmp_path, text, "bad.toml")
    with pytest.raises(TargetError) as e:
        load_target(p)
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith(f"{p}: {key}: "), msg
    assert what in msg, msg


def test_hotplug_cpus_are_cores_of_the_knobs_devices(tmp_path: Path) -> None:
    text = _knob(KNOB, "{ hotplug = [0, 1, 7] }").replace('dtypes = ["float32"]',
                                                          'dtypes = ["float32"]\naffinity = [0, 1, 2]')
    with pytest.raises(TargetError, match=r"knobs\.cores\.control\.hotplug\[2\]: cpu7 is not a core of the "
                                          r"knob's devices \(cpu \[0, 1, 2\]\)"):
        load_target(write(tmp_path, text))


def test_a_remote_device_has_no_control(tmp_path: Path) -> None:
    t = Path(load_target("mi8pro-edge-cloud").path).read_text()
    text = t.replace('endpoint = "http://edge.local:7070"',
                     'endpoint = "http://edge.local:7070"\ncontrol = { devfreq = "/x" }', 1)
    assert text != t
    with pytest.raises(TargetError, match=r"devices\.edge\.control: a remote device is not set from this board"):
        load_target(write(tmp_path, text))


def test_a_control_needs_a_frequency(tmp_path: Path) -> None:
    host = Path(load_target("host").path).read_text()
    assert load_target("host").device("cpu").dvfs[0].freq_mhz is None
    text = host.replace("[devices.cpu]", '[devices.cpu]\ncontrol = { cpufreq = "/sys/c" }', 1)
    with pytest.raises(TargetError, match=r"devices\.cpu\.control: a control sets the device's frequency"):
        load_target(write(tmp_path, text))


@pytest.mark.parametrize("path", ["/etc/passwd", "/sys/../etc/shadow", "/sys/a/./b", "/sys//a", "/sys",
                                  "/sys/a\n", "/sys/a\u0000b"])
def test_a_control_path_outside_sys_is_refused(tmp_path: Path, path: str) -> None:
    """The runtime writes numbers as root where a control points: only /sys/... is a target."""
    text = _knob(EMC, '{ clock = "%s", unit = "Hz" }' % path.replace("\n", "\\n").replace("\u0000", "\\u0000"))
    with pytest.raises(TargetError, match="under /sys without|control character"):
        load_target(write(tmp_path, text, "bad.toml"))


def test_the_control_path_rule_is_the_manifest_s() -> None:
    from hetcc.runtime.manifest import SYSFS_PATTERN
    from hetcc.targets.controls import SYSFS_PATTERN as TARGETS

    assert TARGETS == SYSFS_PATTERN
