"""A model of Linux's on-demand DVFS governors, for HERTI's TFL-*-O baselines (``single:<device>``
with ``governor=ondemand``).

HERTI (Sec. V-A) compares each device-preferred plan under Android's ``performance`` governor
(TFL-*-P: the device at its maximum frequency throughout) and under its ``ondemand`` governor
(TFL-*-O), which "performs DVFS based on the dynamic load". The governors modelled:

- CPU clusters: the cpufreq ``ondemand`` governor (Linux Documentation/admin-guide/pm/cpufreq.rst,
  drivers/cpufreq/cpufreq_ondemand.c). Every ``sampling_rate`` it estimates the CPU load over the
  last period; a load above ``up_threshold`` (DEF_FREQUENCY_UP_THRESHOLD = 80%; 95% where idle
  micro-accounting is available) sets the policy's maximum frequency, a lower load a frequency
  proportional to it.
- GPUs and other accelerators: the devfreq ``simple_ondemand`` governor
  (drivers/devfreq/governor_simple_ondemand.c: DFSO_UPTHRESHOLD 90, DFSO_DOWNDIFFERENCTIAL 5),
  run every ``polling_ms`` of the device's devfreq profile; a busy fraction above the up-threshold
  sets the maximum frequency. Mainline's Mali drivers (panfrost, lima, panthor) use it.

THE MODEL (a model, not a simulation of the kernel): before an inference the device is idle at
its lowest frequency. The inference keeps it 100% busy, so the first sample, ``sampling_ms`` of
run time on that device after the inference starts, sees a load above any up-threshold and the
governor jumps to the maximum frequency, where it stays. Layers are assigned in order: those that
start before the sample point run at the lowest frequency, the rest at the maximum. Run time is
what the cost model charges the device's slices (transfers in and out included); time spent in
fallback slices on other devices does not count. The sample point is phase-aligned with the start
of the inference (a real timer's phase is arbitrary: on average the switch comes sampling_ms / 2
earlier; pass that to model the mean).

The result is a Plan with the performance plan's slicing in which the slice that straddles the
switch is cut at a layer boundary: the first part on the device's lowest-frequency state, the rest
on its maximum-frequency state, so ``problem.evaluate`` prices it like every other plan. The cut
is a slice boundary, so it pays that model's transfer out of and into the device once, as every
plan that changes frequency within a device does. Fallback slices (layers the preferred device
cannot run) stay at their device's maximum frequency. A device with a single state (no DVFS, e.g.
the NPU) gives the performance plan. If a layer the lowest state cannot run (its legality or
memory differ from the maximum state's, which no built-in target does) comes before the sample
point, the switch is modelled there.

Sampling periods (``sampling_ms``; 0 = by device kind):

- CPU: 20 ms. cpufreq.rst gives ondemand's ``sampling_rate`` as "of the order of 10000 (10 ms)",
  by default 1000x ``cpuinfo_transition_latency`` (capped at 10 ms since Linux 4.14), at least
  ``min_sampling_rate`` = 10 ms with NO_HZ or 20 jiffies otherwise (20 ms at HZ=1000). Neither
  HERTI nor MOSAIC reports the board's value: 20 ms is an assumption within that range; read
  ``/sys/devices/system/cpu/cpufreq/policy*/ondemand/sampling_rate`` on the board (microseconds).
- GPU and other non-CPU devices: 50 ms, the devfreq ``polling_ms`` of mainline Mali drivers
  (drivers/gpu/drm/panfrost/panfrost_devfreq.c: ``.polling_ms = 50, /* ~3 frames */``; lima and
  panthor alike). Arm's own kbase driver polls every DEFAULT_PM_DVFS_PERIOD = 100 ms unless the
  platform overrides it; read ``/sys/class/devfreq/*/polling_interval`` on the board.
"""
from __future__ import annotations

from .problem import Plan, PlanningProblem, Slice, StateTable

GOVERNORS = ("performance", "ondemand")
#: the default sampling period of a device kind, ms (see the module docstring for the sources)
CPU_SAMPLING_MS = 20.0
DEVFREQ_SAMPLING_MS = 50.0


def default_sampling_ms(kind: str) -> float:
    """The sampling period assumed for a device of ``kind`` (cpufreq for a CPU, devfreq else)."""
    return CPU_SAMPLING_MS if kind == "cpu" else DEVFREQ_SAMPLING_MS


def lowest_state(states: StateTable, device: str) -> int:
    """The state of ``device`` at its lowest frequency (where an idle device waits)."""
    return min((int(s) for s in states.of(device)), key=lambda s: (states.freq_mhz[s], s))


def ondemand_slices(problem: PlanningProblem, slices: tuple[Slice, ...], fmax: int, low: int,
                    sampling_ms: float) -> tuple[list[Slice], int | None]:
    """``slices`` (a plan with the device's layers on ``fmax``) under the model, and the first
    layer run at ``fmax`` (None: the sample point never came)."""
    out: list[Slice] = []
    t = 0.0            # run time on the device so far, at the lowest frequency
    switch = None
    for sl in slices:
        if switch is not None or sl.state != fmax:
            out.append(sl)
            continue
        start = t + float(problem.transfer_in_ms[sl.first, low])   # when layer i starts
        i = sl.first
        while i <= sl.last and start < sampling_ms and problem.slice_legal(sl.first, i, low):
            start += float(problem.latency_ms[i, low])
            i += 1
        if i > sl.first:
            out.append(Slice(sl.first, i - 1, low))
        if i <= sl.last:
            out.append(Slice(i, sl.last, fmax))
            switch = i
        t = start + float(problem.transfer_out_ms[sl.last, low])
    return out, switch


def ondemand(problem: PlanningProblem, plan: Plan, device: str, sampling_ms: float = 0.0) -> Plan:
    """The ondemand counterpart of ``plan`` (``device``'s layers at its maximum frequency);
    ``sampling_ms`` 0 = the device kind's default. See the module docstring."""
    states = problem.states
    fmax, low = states.fmax_state(device), lowest_state(states, device)
    period = sampling_ms or default_sampling_ms(states.kind[fmax])
    stats = {"governor": "ondemand", "sampling_ms": period}
    if low == fmax:
        return plan.replace(stats={**stats, "dvfs": False})
    slices, switch = ondemand_slices(problem, plan.slices, fmax, low, period)
    return problem.evaluate(slices, stats={**stats, "low_state": states.label(low), "switch_layer": switch})


__all__ = ["CPU_SAMPLING_MS", "DEVFREQ_SAMPLING_MS", "GOVERNORS", "default_sampling_ms", "lowest_state",
           "ondemand", "ondemand_slices"]
