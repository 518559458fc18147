"""Applying a plan's hardware configuration (hetcc.runtime.hardware) against a fake sysfs tree.

Every test writes under tmp_path only (``root`` / ``sysfs_root``); nothing here touches the real
/sys. Tests may run as root, where chmod does not stop a write: OS refusals are simulated by
monkeypatching ``open`` in hetcc.runtime.sysfs (which does every read and write) or by a directory
where a file should be."""
from __future__ import annotations

import dataclasses
import errno
import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

import hetcc
from hetcc.cli import main
from hetcc.runtime import Executor
from hetcc.runtime import sysfs as S
from runtime_artifacts import refuse_opens
from hetcc.runtime.hardware import Hardware, apply_hardware, offline_cpus
from hetcc.runtime.manifest import load_manifest
from text_models import IDENTITY_CHAIN

CPU = "sys/devices/system/cpu"
GPU = "sys/devices/17000000.gp10b/devfreq/17000000.gp10b"
EMC = "sys/kernel/debug/bpmp/debug/clk/emc"
CPU_LEVELS = [345600, 499200, 652800, 806400, 960000, 1113600, 1267200, 1420800, 1574400, 1728000, 1881600, 2035200]
GPU_LEVELS = [114750000 + 102000000 * i for i in range(12)] + [1300500000]


def make_sysfs(root: Path, cpu0_online_file: bool = True) -> Path:
    """A TX2-like tree: cpu0-5 (cpu3 offline), cpufreq of cpu0 / cpu1 (kHz), the GPU's devfreq
    and the EMC's BPMP clock (Hz); values as the kernel shows them, newline-terminated."""
    files = {f"{CPU}/cpu{c}/online": "0" if c == 3 else "1" for c in range(6) if c or cpu0_online_file}
    for c in (0, 1):
        files.update({f"{CPU}/cpu{c}/cpufreq/scaling_min_freq": "345600", f"{CPU}/cpu{c}/cpufreq/scaling_max_freq":
                      "2035200", f"{CPU}/cpu{c}/cpufreq/scaling_available_frequencies": " ".join(map(str, CPU_LEVELS))})
    files.update({f"{GPU}/min_freq": "114750000", f"{GPU}/max_freq": "1300500000",
                  f"{GPU}/available_frequencies": " ".join(map(str, GPU_LEVELS)),
                  f"{EMC}/rate": "1866000000", f"{EMC}/mrq_rate_locked": "0"})
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text + "\n")
    (root / f"{CPU}/cpu0").mkdir(parents=True, exist_ok=True)
    return root


def snapshot(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): p.read_text() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def tx2(tmp_path_factory):
    """A tiny model compiled for jetson-tx2 with --hardware a57_cores=2 (through the CLI)."""
    root = tmp_path_factory.mktemp("tx2")
    model = root / "chain.onnx"
    import onnx.parser
    onnx.save(onnx.parser.parse_model(IDENTITY_CHAIN), str(model))
    out = root / "build"
    assert main(["compile", str(model), "--target", "jetson-tx2", "--hardware", "a57_cores=2", "-o", str(out),
                 "-q"]) == 0
    return out


@pytest.fixture
def sysfs(tmp_path):
    return make_sysfs(tmp_path / "fake")


def variant(tx2, hardware, slices):
    """The compiled variant with other knobs and (device, MHz) slices (apply reads nothing else)."""
    m = load_manifest(tx2)
    base = m.variant()
    sl = [dataclasses.replace(base.slices[0], id=i, device=d, frequency_mhz=f) for i, (d, f) in enumerate(slices)]
    return dataclasses.replace(base, hardware=hardware, slices=tuple(sl)), m.target.controls


def by_what(report):
    return {s.what: s for s in report.settings}


def test_every_setting_written_as_the_kernel_expects(tx2, sysfs):
    v, ctl = variant(tx2, {"a57_cores": 2, "denver_cores": 1, "emc_freq_mhz": 1600.0},
                     [("a57", 1113.6), ("gpu", 1300.5)])
    report = apply_hardware(v, controls=ctl, root=sysfs)
    got = snapshot(sysfs)
    assert got[f"{CPU}/cpu3/online"] == "1\n" and got[f"{CPU}/cpu0/online"] == "1\n"
    assert got[f"{CPU}/cpu4/online"] == got[f"{CPU}/cpu5/online"] == "0\n"
    assert got[f"{CPU}/cpu1/online"] == "1\n" and got[f"{CPU}/cpu2/online"] == "0\n"
    assert got[f"{EMC}/mrq_rate_locked"] == "1\n" and got[f"{EMC}/rate"] == "1600000000\n"      # Hz
    assert got[f"{CPU}/cpu0/cpufreq/scaling_min_freq"] == got[f"{CPU}/cpu0/cpufreq/scaling_max_freq"] == "1113600\n"
    assert got[f"{GPU}/min_freq"] == got[f"{GPU}/max_freq"] == "1300500000\n"                  # Hz
    assert got[f"{CPU}/cpu1/cpufreq/scaling_min_freq"] == "345600\n"     # denver runs no slice: untouched
    s = by_what(report)
    assert s["a57_cores: cpu3"].status == "applied" and s["a57_cores: cpu0"].status == "unchanged"
    assert s["a57 frequency"].value == "1113600 kHz" and s["gpu frequency"].value == "1300500000 Hz"
    assert report.ok and not report.nothing_to_apply and report.variant is None


def test_restore_puts_every_old_value_back(tx2, sysfs):
    before = snapshot(sysfs)
    v, ctl = variant(tx2, {"a57_cores": 1, "denver_cores": 0, "emc_freq_mhz": 40.8}, [("a57", 345.6), ("gpu", 114.75)])
    report = apply_hardware(v, controls=ctl, root=sysfs)
    assert snapshot(sysfs) != before
    undone = report.restore()
    assert snapshot(sysfs) == before
    assert undone.ok and {s.status for s in undone.settings} == {"restored"}
    assert report.restore().settings == []          # a second restore has nothing left to do


def test_min_and_max_are_written_in_an_order_the_kernel_accepts(tx2, sysfs, monkeypatch):
    """Kernels before 5.x refuse min > max (EINVAL): raising writes max first, lowering min first."""
    real = S.Sysfs.write

    def strict(self, path, value):
        d, name = os.path.split(path)
        names = {"scaling_min_freq": "scaling_max_freq", "min_freq": "max_freq"}
        pair = names.get(name) or next((k for k, x in names.items() if x == name), None)
        if pair is not None:
            other = int(Path(self.file(f"{d}/{pair}")).read_text())
            lo, hi = (int(value), other) if "min" in name else (other, int(value))
            if lo > hi:
                raise S.Refused(*S.why(OSError(errno.EINVAL, "Invalid argument"), path))
        return real(self, path, value)

    monkeypatch.setattr(S.Sysfs, "write", strict)
    before = snapshot(sysfs)
    hw = Hardware(sysfs)
    for f in (2035.2, 345.6, 1113.6):       # up to the top level, down to the bottom, back to the middle
        v, ctl = variant(tx2, None, [("a57", f)])
        assert hw.apply(v, controls=ctl).ok
        assert (sysfs / f"{CPU}/cpu0/cpufreq/scaling_max_freq").read_text() == f"{round(f * 1000)}\n"
    (sysfs / f"{CPU}/cpu0/cpufreq/scaling_min_freq").write_text("2035200\n")   # restore from the top down
    (sysfs / f"{CPU}/cpu0/cpufreq/scaling_max_freq").write_text("2035200\n")
    assert hw.restore().ok and snapshot(sysfs) == before


def test_a_level_the_kernel_does_not_list_becomes_the_nearest_one(tx2, sysfs):
    (sysfs / f"{GPU}/available_frequencies").write_text("140250000 229500000 1300500000\n")   # another L4T release
    v, ctl = variant(tx2, None, [("gpu", 216.75)])
    s = by_what(apply_hardware(v, controls=ctl, root=sysfs))["gpu frequency"]
    assert s.status == "applied" and s.value == "229500000 Hz" and "nearest" in s.reason
    assert (sysfs / f"{GPU}/min_freq").read_text() == "229500000\n"


def test_a_device_with_several_frequencies_is_set_to_the_highest_and_says_so(tx2, sysfs):
    v, ctl = variant(tx2, None, [("a57", 652.8), ("gpu", 624.75), ("a57", 1574.4)])
    report = apply_hardware(v, controls=ctl, root=sysfs)
    assert (sysfs / f"{CPU}/cpu0/cpufreq/scaling_min_freq").read_text() == "1574400\n"
    assert report.notes == ["a57: its slices are planned at 652.8, 1574.4 MHz; set to the highest, 1574.4 MHz, "
                            "for the whole run"]


def test_cpu0_is_never_taken_offline(tx2, sysfs):
    v, ctl = variant(tx2, {"a57_cores": 0}, [("gpu", 1300.5)])
    report = apply_hardware(v, controls=ctl, root=sysfs)
    s = by_what(report)
    assert s["a57_cores: cpu0"].status == "skipped" and "cpu0 stays online" in s["a57_cores: cpu0"].reason
    assert (sysfs / f"{CPU}/cpu0/online").read_text() == "1\n"
    assert [(sysfs / f"{CPU}/cpu{c}/online").read_text() for c in (3, 4, 5)] == ["0\n"] * 3
    assert offline_cpus(dataclasses.replace(load_manifest(tx2), variants={"v": v}, default_variant="v")) == {3, 4, 5}


def test_a_cpu_without_an_online_file_is_one_the_kernel_keeps_online(tx2, tmp_path):
    root = make_sysfs(tmp_path / "fake", cpu0_online_file=False)
    v, ctl = variant(tx2, {"a57_cores": 2}, [("a57", 2035.2)])
    s = by_what(apply_hardware(v, controls=ctl, root=root))["a57_cores: cpu0"]
    assert (s.status, s.reason) == ("unchanged", "no online file: the kernel keeps cpu0 online")
    assert not (root / f"{CPU}/cpu0/online").exists()          # never created


def _refuse(monkeypatch, exc, when=lambda path, mode: "w" in mode):
    refuse_opens(monkeypatch, exc, when)


@pytest.mark.parametrize("exc, reason, fix", [
    (PermissionError(errno.EACCES, "Permission denied"), "permission denied", "run as root (sudo)"),
    (OSError(errno.EPERM, "Operation not permitted"), "permission denied", "run as root (sudo)"),
    (OSError(errno.EROFS, "Read-only file system"), "read-only file system", "mount it rw"),
    (OSError(errno.EINVAL, "Invalid argument"), "value not accepted by the kernel (EINVAL)", "levels the kernel lists"),
    (OSError(errno.EBUSY, "Device or resource busy"), "the kernel refused: busy (EBUSY)", ""),
])
def test_an_os_refusal_is_reported_once_and_changes_nothing(tx2, sysfs, monkeypatch, caplog, exc, reason, fix):
    before = snapshot(sysfs)
    _refuse(monkeypatch, exc)
    v, ctl = variant(tx2, {"a57_cores": 2, "emc_freq_mhz": 800.0}, [("a57", 960.0), ("gpu", 522.75)])
    with caplog.at_level(logging.INFO, logger="hetcc.runtime.hardware"):
        report = apply_hardware(v, controls=ctl, root=sysfs)
    assert snapshot(sysfs) == before
    skipped = report.skipped
    assert skipped and all(s.reason == reason for s in skipped) and all(fix in s.fix for s in skipped)
    assert {s.what for s in report.applied} == {"a57_cores: cpu0"}      # online already: nothing to write
    warnings = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1 and reason in warnings[0].getMessage() and "running anyway" in warnings[0].getMessage()
    assert "\n" not in warnings[0].getMessage()
    assert report.restore().settings == []


def test_permission_denied_on_reading_debugfs_too(tx2, sysfs, monkeypatch):
    _refuse(monkeypatch, PermissionError(errno.EACCES, "Permission denied"),
            when=lambda path, mode: "/sys/kernel/debug/" in path)
    v, ctl = variant(tx2, {"emc_freq_mhz": 1600.0}, [("a57", 960.0)])
    report = apply_hardware(v, controls=ctl, root=sysfs)
    assert [(s.what, s.reason, s.fix) for s in report.skipped] == [
        ("emc_freq_mhz: lock", "permission denied", "run as root (sudo)"),
        ("emc_freq_mhz", "permission denied", "run as root (sudo)")]
    assert by_what(report)["a57 frequency"].status == "applied"
    assert "fix: run as root (sudo)" in report.summary()


def test_a_read_only_file_refuses_unless_root(tx2, sysfs):
    """chmod 0o444 stops a write for a normal user only; as root the write goes through."""
    path = sysfs / f"{GPU}/max_freq"
    path.chmod(0o444)
    v, ctl = variant(tx2, None, [("gpu", 726.75)])
    s = by_what(apply_hardware(v, controls=ctl, root=sysfs))["gpu frequency"]
    if os.geteuid() == 0:
        assert s.status == "applied" and path.read_text() == "726750000\n"
    else:
        assert (s.status, s.reason) == ("skipped", "permission denied") and path.read_text() == "1300500000\n"
        assert (sysfs / f"{GPU}/min_freq").read_text() == "114750000\n"     # not half set


def test_a_directory_where_a_file_should_be(tx2, sysfs):
    f = sysfs / f"{CPU}/cpu5/online"
    f.unlink()
    f.mkdir()
    v, ctl = variant(tx2, {"a57_cores": 2}, [("a57", 960.0)])
    s = by_what(apply_hardware(v, controls=ctl, root=sysfs))["a57_cores: cpu5"]
    assert (s.status, s.reason) == ("skipped", "a directory, not a file") and f.is_dir()


def test_missing_files_are_skipped_and_never_created(tx2, sysfs):
    import shutil
    shutil.rmtree(sysfs / "sys/kernel/debug")
    (sysfs / f"{GPU}/min_freq").unlink()
    v, ctl = variant(tx2, {"emc_freq_mhz": 1600.0}, [("gpu", 930.75)])
    report = apply_hardware(v, controls=ctl, root=sysfs)
    s = by_what(report)
    assert s["emc_freq_mhz"].reason == "no such file" and "mount debugfs" in s["emc_freq_mhz"].fix
    assert s["gpu frequency"].reason == "no such file" and "control paths" in s["gpu frequency"].fix
    assert not (sysfs / "sys/kernel/debug").exists() and not (sysfs / f"{GPU}/min_freq").exists()
    assert (sysfs / f"{GPU}/max_freq").read_text() == "1300500000\n"


def test_a_manifest_without_controls_has_nothing_to_apply(tx2, sysfs, caplog, tmp_path):
    before = snapshot(sysfs)
    m = load_manifest(tx2)
    old = dataclasses.replace(m, target=dataclasses.replace(m.target, controls=None))
    with caplog.at_level(logging.INFO, logger="hetcc.runtime.hardware"):
        report = apply_hardware(old, root=sysfs)
    assert report.nothing_to_apply and report.settings == [] and snapshot(sysfs) == before
    assert report.lines()[0].startswith("nothing to apply: the artifact records no hardware controls")
    assert "a57_cores=2" in report.notes[0]          # the plan still needs them: say which
    assert [r.levelno for r in caplog.records] == [logging.WARNING]
    chain = tmp_path / "c.onnx"
    import onnx.parser
    import onnx
    onnx.save(onnx.parser.parse_model(IDENTITY_CHAIN), str(chain))
    hetcc.compile(chain, target="hikey970", output_dir=tmp_path / "hk")   # no control tables, no knobs
    assert apply_hardware(tmp_path / "hk", root=sysfs).nothing_to_apply and snapshot(sysfs) == before


def test_bad_knob_values_are_reported_and_programmer_errors_raise(tx2, sysfs):
    v, ctl = variant(tx2, {"a57_cores": 7, "emc_freq_mhz": "fast", "no_such_knob": 1}, [("a57", 960.0)])
    s = by_what(apply_hardware(v, controls=ctl, root=sysfs))
    assert "not a core count" in s["a57_cores"].reason and "not a frequency" in s["emc_freq_mhz"].reason
    assert "no control for this knob" in s["no_such_knob"].reason
    with pytest.raises(TypeError, match="expected a Manifest, a Variant or an artifact directory"):
        apply_hardware(42, root=sysfs)
    with pytest.raises(TypeError, match="controls: expected HardwareControls"):
        apply_hardware(v, controls={"devices": {}}, root=sysfs)


def test_executor_applies_pins_and_restores(tx2, sysfs):
    before = snapshot(sysfs)
    assert Executor(tx2).hardware_report is None and snapshot(sysfs) == before     # default: apply nothing
    ex = Executor(tx2, apply_hardware=True, sysfs_root=sysfs)
    got = snapshot(sysfs)
    assert got[f"{CPU}/cpu3/online"] == "1\n" and got[f"{CPU}/cpu4/online"] == got[f"{CPU}/cpu5/online"] == "0\n"
    assert got[f"{CPU}/cpu0/cpufreq/scaling_min_freq"] == "2035200\n" and got[f"{EMC}/rate"] == "1866000000\n"
    assert ex.pipeline()._offline == {4, 5}           # a57 sessions pinned to cpu0 and cpu3
    ex.run({"x": __import__("numpy").ones((1, 8), "float32")})
    assert len(ex.hardware_reports) == 1               # the run did not apply again
    restored = ex.close()
    assert restored.ok and snapshot(sysfs) == before
    with Executor(tx2, apply_hardware=True, sysfs_root=sysfs, restore_hardware=False) as kept:
        assert kept.hardware_report.ok
    assert snapshot(sysfs) != before                    # restore_hardware=False leaves the board as set


def test_variants_switch_the_hardware_and_restore_the_first_values(tmp_path):
    sysfs = make_sysfs(tmp_path / "fake")
    before = snapshot(sysfs)
    chain = tmp_path / "c.onnx"
    import onnx
    import onnx.parser
    onnx.save(onnx.parser.parse_model(IDENTITY_CHAIN), str(chain))
    out = tmp_path / "v"
    hetcc.compile(chain, target="jetson-tx2", variants=["single:a57", "single:gpu"], output_dir=out)
    with Executor(out, apply_hardware=True, sysfs_root=sysfs) as ex:
        feeds = {"x": __import__("numpy").ones((1, 8), "float32")}
        ex.run(feeds, variant="single:gpu")
        assert (sysfs / f"{GPU}/min_freq").read_text() == "1300500000\n"
        gpu = ex.hardware_report
        ex.run(feeds, variant="single:gpu")
        assert ex.hardware_report is gpu            # the same settings: not applied again
        ex.run(feeds)
        assert (sysfs / f"{CPU}/cpu0/cpufreq/scaling_min_freq").read_text() == "2035200\n"
        assert [r.variant for r in ex.hardware_reports] == ["single:gpu", "single:a57"]   # one per configuration
        assert ex.hardware_report.variant == "single:a57"
    assert snapshot(sysfs) == before


def test_a_workload_applies_when_a_model_runs_once_per_configuration(tmp_path):
    sysfs = make_sysfs(tmp_path / "fake")
    before = snapshot(sysfs)
    import onnx
    import onnx.parser
    for name in ("a", "b"):
        text = IDENTITY_CHAIN.replace("chain (", f"{name} (")
        onnx.save(onnx.parser.parse_model(text), str(tmp_path / f"{name}.onnx"))
    out = tmp_path / "w"
    hetcc.compile_workload([tmp_path / "a.onnx", tmp_path / "b.onnx"], target="jetson-tx2", output_dir=out)
    with Executor(out, apply_hardware=True, sysfs_root=sysfs) as ex:
        assert ex.hardware_reports == [] and snapshot(sysfs) == before     # nothing until a model runs
        x = {"x": __import__("numpy").ones((1, 8), "float32")}
        for _ in range(3):
            ex.run({n: x for n in ex.models})
        assert len(ex.hardware_reports) == 1 and ex.hardware_report.ok  # both models: the same settings
        assert (sysfs / f"{EMC}/mrq_rate_locked").read_text() == "1\n"
    assert snapshot(sysfs) == before


def test_cli_run_apply_hardware_prints_one_line_per_setting_and_restores(tx2, sysfs, capsys):
    before = snapshot(sysfs)
    assert main(["run", str(tx2), "--apply-hardware", "--sysfs-root", str(sysfs)]) == 0
    out = capsys.readouterr().out
    lines = [l.split() for l in out.splitlines()]
    assert ["applied", "a57_cores:", "cpu4", "offline", "/sys/devices/system/cpu/cpu4/online"] in lines
    assert ["applied", "a57", "frequency", "2035200", "kHz", "/sys/devices/system/cpu/cpu0/cpufreq"] in lines
    assert "hardware: restored 5 setting(s)" in out and snapshot(sysfs) == before
    assert main(["run", str(tx2), "--apply-hardware", "--keep-hardware", "--sysfs-root", str(sysfs), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["hardware"]["kept"] is True and doc["hardware"]["restored"] is None
    assert {s["status"] for s in doc["hardware"]["applied"][0]["settings"]} == {"applied", "unchanged"}
    assert (sysfs / f"{CPU}/cpu4/online").read_text() == "0\n"


def test_the_hardware_modules_need_only_the_standard_library():
    code = ("import sys, hetcc.runtime.hardware, hetcc.runtime.power; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('numpy', 'onnxruntime', 'onnx')))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"
