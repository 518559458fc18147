"""hetcc.runtime.power: meters read from a fake sysfs tree (RAPL, hwmon energy/power, INA3221), cpufreq set and
restored; the --freqs levels (hetcc.measure.profile.choose_levels)."""
from __future__ import annotations

import pytest

import hetcc.runtime.power as power
import hetcc.runtime.sysfs as sysfs
from hetcc.measure.profile import choose_levels
from profile_cases import write


class Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


@pytest.fixture
def clock(monkeypatch) -> Clock:
    c = Clock()
    monkeypatch.setattr(power.time, "perf_counter", c)
    return c


def test_rapl_package_domains_are_summed_and_subdomains_left_out(fake_sys, clock):
    cap = fake_sys / "class/powercap"
    for zone, name, e in (("intel-rapl:0", "package-0", 1_000_000), ("intel-rapl:1", "package-1", 5_000_000),
                          ("intel-rapl:0:0", "core", 7)):
        write(cap / zone / "energy_uj", f"{e}\n")
        write(cap / zone / "name", name + "\n")
        write(cap / zone / "max_energy_range_uj", "262143328850\n")
    meter, why = power.find_power_meter()
    assert isinstance(meter, power.EnergyCounterMeter) and why == ""
    assert "package-0" in meter.name and "core" not in meter.name
    meter.start()
    clock.t += 0.5                                            # 0.5 s later
    write(cap / "intel-rapl:0/energy_uj", f"{1_000_000 + 1_000_000}\n")   # +1 J
    write(cap / "intel-rapl:1/energy_uj", f"{5_000_000 + 500_000}\n")     # +0.5 J
    write(cap / "intel-rapl:0:0/energy_uj", "999999999\n")                # not counted
    assert meter.stop() == pytest.approx(3000.0)              # 1.5 J / 0.5 s = 3 W


def test_a_wrapped_rapl_counter_is_unwrapped(fake_sys, clock):
    z = fake_sys / "class/powercap/intel-rapl:0"
    write(z / "energy_uj", "999000\n")
    write(z / "max_energy_range_uj", "1000000\n")
    meter, _ = power.find_power_meter()
    meter.start()
    clock.t += 1.0
    write(z / "energy_uj", "1000\n")                          # wrapped: +2000 uJ
    assert meter.stop() == pytest.approx(2.0)                 # 2 mJ / 1 s = 2 mW


def test_hwmon_energy_prefers_the_socket_over_its_cores(fake_sys, clock):
    h = fake_sys / "class/hwmon/hwmon3"
    write(h / "name", "amd_energy\n")
    for i, (label, e) in enumerate((("Ecore000", 10), ("Ecore001", 10), ("Esocket0", 100)), start=1):
        write(h / f"energy{i}_input", f"{e}\n")
        write(h / f"energy{i}_label", label + "\n")
    meter, _ = power.find_power_meter()
    assert meter is not None and "Esocket0" in meter.name and "Ecore000" not in meter.name
    meter.start()
    clock.t += 0.25
    write(h / "energy3_input", f"{100 + 250_000}\n")          # 0.25 J in 0.25 s
    write(h / "energy1_input", "999999\n")
    assert meter.stop() == pytest.approx(1000.0)


def test_ina3221_rails_volts_times_amps_and_the_board_input_alone(fake_sys):
    h = fake_sys / "class/hwmon/hwmon1"
    write(h / "name", "ina3221\n")
    for n, label, mv, ma in ((1, "VDD_IN", 5000, 1200), (2, "VDD_CPU_GPU_CV", 5000, 400), (3, "VDD_SOC", 5000, 300)):
        write(h / f"in{n}_label", label + "\n")
        write(h / f"in{n}_input", f"{mv}\n")
        write(h / f"curr{n}_input", f"{ma}\n")
    meter, _ = power.find_power_meter()
    assert isinstance(meter, power.SampledPowerMeter) and "VDD_IN" in meter.name and "VDD_SOC" not in meter.name
    meter.start()
    meter.sample()
    write(h / "curr1_input", "1400\n")
    meter.sample()
    assert meter.stop() == pytest.approx((6000 + 7000) / 2)   # mean of 6 W and 7 W, in mW


def test_hwmon_power_inputs_are_summed_when_none_names_a_total(fake_sys):
    for i, uw in enumerate((1_500_000, 2_500_000)):
        h = fake_sys / f"class/hwmon/hwmon{i}"
        write(h / "name", "ina219\n")
        write(h / "power1_input", f"{uw}\n")
    meter, _ = power.find_power_meter()
    assert meter is not None and meter.name.startswith("INA rails")
    meter.start()
    assert meter.stop() == pytest.approx(4000.0)              # no sample yet: one taken at stop


def test_no_meter_says_where_it_looked(fake_sys):
    write(fake_sys / "class/hwmon/hwmon0/name", "acpitz\n")
    write(fake_sys / "class/hwmon/hwmon0/temp1_input", "40000\n")
    meter, why = power.find_power_meter()
    assert meter is None
    assert "/sys/class/powercap: absent" in why and "/sys/class/hwmon: no power or energy inputs" in why


def test_cpufreq_absent_read_only_and_writable(fake_sys, cpufreq, monkeypatch):
    cpu = power.CpuFrequency()
    assert cpu.writable and cpu.levels_mhz == [1000.0, 1500.0, 2000.0] and not cpu.userspace
    assert power.current_mhz() == 2000.0
    assert cpu.set_mhz(1490) == 1500.0                         # the nearest level offered
    assert (cpufreq / "scaling_min_freq").read_text().strip() == "1500000"
    assert cpu.restore() == [] and (cpufreq / "scaling_min_freq").read_text().strip() == "1000000"
    assert (cpufreq / "scaling_max_freq").read_text().strip() == "2000000"

    real = open

    def refuse(path, mode="r", *a, **kw):      # as root chmod stops nothing: refuse every write
        if "w" in mode:
            raise PermissionError(13, "Permission denied")
        return real(path, mode, *a, **kw)

    monkeypatch.setattr(sysfs, "open", refuse, raising=False)
    ro = power.CpuFrequency()
    assert not ro.writable and ro.reason == ("/sys/devices/system/cpu/cpufreq/policy0/scaling_max_freq: "
                                             "permission denied: run as root")


def test_cpufreq_raising_writes_max_first_and_restore_goes_newest_first(fake_sys, cpufreq, monkeypatch):
    written = []
    real = sysfs.Sysfs.write
    monkeypatch.setattr(sysfs.Sysfs, "write", lambda self, path, value: (written.append((path.rsplit("/", 1)[1], value)),
                                                                         real(self, path, value)))
    cpu = power.CpuFrequency()
    written.clear()                                            # the probe: scaling_max_freq back to itself
    (cpufreq / "scaling_max_freq").write_text("1000000\n")    # now 1000..1000
    assert cpu.set_mhz(2000) == 2000.0
    assert written == [("scaling_max_freq", "2000000"), ("scaling_min_freq", "2000000")]
    written.clear()
    assert cpu.restore() == []
    assert written == [("scaling_min_freq", "1000000"), ("scaling_max_freq", "1000000")]
    assert cpu.restore() == [] and written == [("scaling_min_freq", "1000000"), ("scaling_max_freq", "1000000")]


def test_cpufreq_userspace_governor_and_a_failed_restore_is_named(fake_sys, cpufreq):
    (cpufreq / "scaling_available_governors").write_text("userspace performance schedutil\n")
    (cpufreq / "scaling_setspeed").write_text("<unsupported>\n")
    cpu = power.CpuFrequency()
    assert cpu.userspace and cpu.set_mhz(1000) == 1000.0
    assert (cpufreq / "scaling_governor").read_text() == "userspace\n"
    assert (cpufreq / "scaling_setspeed").read_text() == "1000000\n"
    (cpufreq / "scaling_setspeed").unlink()
    assert cpu.restore() == ["/sys/devices/system/cpu/cpufreq/policy0/scaling_setspeed = <unsupported>: absent"]
    assert (cpufreq / "scaling_governor").read_text() == "schedutil\n"


def test_choose_levels():
    avail = [800.0, 1200.0, 2000.0]
    assert choose_levels(avail, "all") == avail
    assert choose_levels(avail, "minmax") == [800.0, 2000.0]
    assert choose_levels(avail, "2000,800") == [800.0, 2000.0]
    with pytest.raises(ValueError, match="not a level this CPU offers"):
        choose_levels(avail, "1000")
    with pytest.raises(ValueError, match="not a frequency"):
        choose_levels(avail, "fast")
