"""Fixtures of the profiling tests: a tiny model, a fake sysfs tree, a fixed boundary fit."""
from __future__ import annotations

from pathlib import Path

import onnx
import onnx.parser
import pytest

from profile_cases import FIT, chain_text, write


@pytest.fixture
def tiny(tmp_path) -> Path:
    """A 4-layer model file (MatMul, Relu, Sigmoid, Relu)."""
    path = tmp_path / "models" / "tiny.onnx"
    path.parent.mkdir()
    model = onnx.parser.parse_model(chain_text(4))
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return path


@pytest.fixture
def fake_sys(tmp_path, monkeypatch) -> Path:
    """An empty sysfs root (no cpufreq, no meters) and a /proc/cpuinfo saying 2100 MHz; tests add
    files under it. The profile cache goes to a temporary directory too."""
    import hetcc.runtime.power as power

    root = tmp_path / "sys"
    root.mkdir()
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\nmodel name\t: Test CPU\ncpu MHz\t\t: 2100.000\n")
    monkeypatch.setattr(power, "SYSFS_ROOT", root)
    monkeypatch.setattr(power, "PROC_CPUINFO", cpuinfo)
    monkeypatch.setenv("HETCC_CACHE_DIR", str(tmp_path / "cache"))
    return root


@pytest.fixture(autouse=True)
def fixed_boundary(monkeypatch):
    """The session-boundary microbenchmark replaced by a fixed fit (it takes a second or two)."""
    import hetcc.measure.profiler as profiler

    monkeypatch.setattr(profiler, "boundary_fit", lambda use_cache=True: FIT)
    return FIT


@pytest.fixture
def cpufreq(fake_sys) -> Path:
    """A writable fake cpufreq policy offering 1000, 1500 and 2000 MHz, now 1000..2000."""
    pol = fake_sys / "devices/system/cpu/cpufreq/policy0"
    for name, value in {"scaling_available_frequencies": "1000000 1500000 2000000",
                        "cpuinfo_min_freq": "1000000", "cpuinfo_max_freq": "2000000",
                        "scaling_min_freq": "1000000", "scaling_max_freq": "2000000",
                        "scaling_cur_freq": "2000000", "scaling_governor": "schedutil",
                        "scaling_available_governors": "performance schedutil"}.items():
        write(pol / name, value + "\n")
    return pol
