"""The targets' per-device switch cost (devices.<name>.switch_ms) read into Device.switch_ms."""
from __future__ import annotations

import pytest

from hetcc.core.errors import TargetError
from hetcc.targets import load_target

from boards import board_text, device


def test_fairboost_boards_charge_the_gpu_9_5_times_the_big_cpu():
    for name in ("orangepi5", "odroid-n2plus"):
        dev = {d.name: d for d in load_target(name).devices}
        assert dev["big"].switch_ms > 0 and dev["little"].switch_ms > 0
        assert dev["gpu"].switch_ms == pytest.approx(9.5 * dev["big"].switch_ms, rel=0.03)   # FairBoost Fig. 8


def test_switch_ms_defaults_to_zero_and_must_not_be_negative(tmp_path):
    assert all(d.switch_ms == 0.0 for d in load_target("hikey970").devices)
    p = tmp_path / "b.toml"
    p.write_text(board_text(devices={"cpu": device(switch_ms=-1.0)}))
    with pytest.raises(TargetError, match=r"devices\.cpu\.switch_ms"):
        load_target(str(p))
    p.write_text(board_text(devices={"cpu": device(switch_ms=1.5)}))
    assert load_target(str(p)).devices[0].switch_ms == 1.5
