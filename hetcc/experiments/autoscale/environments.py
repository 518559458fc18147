"""The execution environments of AutoScale's evaluation (Table 4) and its training grid (Sec. 5.3).

A *variance* is what the runtime observes besides the model (AutoScale Table 1's runtime-variance
features): the co-running applications' CPU utilisation and memory intensity (0..1) and the
signal strengths of Wi-Fi and Wi-Fi Direct (dBm). An environment draws one per inference.

Every number is written down with its source: the paper's table or section where it gives one,
``assumed`` (with the reasoning) where it does not. The paper's own values are few: Table 4 names
the environments, Table 1 gives the bins (co-runner None 0% / Small <25% / Medium <75% / Large;
RSSI Regular > -80 dBm / Weak <= -80 dBm), Sec. 5.2 says the dynamic co-runners replay the CPU and
memory traces of a music player and a web browser and the random signal strength is Gaussian
(after its ref. [16]), and Sec. 3.2 quotes [16]: 43% of data are sent under a weak signal.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from hetcc.runtime.autoscale import state_bins

__all__ = ["ENVIRONMENTS", "STATIC", "DYNAMIC", "Environment", "Variance", "REGULAR_DBM", "WEAK_DBM",
           "bin_variance", "state_variance", "training_states", "environment"]

#: a Regular signal: the boards' ``default_signal_dbm`` (-60 dBm, inside Table 1's Regular > -80 dBm)
REGULAR_DBM = -60.0
#: a Weak signal (Table 1: Weak <= -80 dBm); -85 dBm assumed, between the boards' -90 and -80 dBm table rows
WEAK_DBM = -85.0

#: Table 1's split between Regular and Weak signals
RSSI_SPLIT = -80.0
#: the value at which the training realises each bin (Sec. 5.3 trains "in each runtime
#: variance-related state", set up like the static environments: a co-runner of constant use, the
#: phone at a fixed distance from the access point). Co-runner levels: None 0, Small 15% (as S3's
#: CPU), Medium 50% (the bin's middle), Large 90% (as S2 and S3); signals: Regular -60 dBm (S1),
#: Weak -85 dBm (S4, S5). Assumed values inside Table 1's bins.
CO_LEVELS = {"N": 0.0, "S": 0.15, "M": 0.50, "L": 0.90}
RSSI_LEVELS = {"R": REGULAR_DBM, "W": WEAK_DBM}

@dataclass(frozen=True)
class Variance:
    """One inference's runtime variance (Table 1's S_Co_CPU, S_Co_MEM, S_RSSI_W, S_RSSI_P)."""

    co_cpu: float = 0.0       # co-runners' CPU utilisation, 0..1
    co_mem: float = 0.0       # co-runners' memory intensity (share of the memory bandwidth they use), 0..1
    rssi_w: float = REGULAR_DBM   # Wi-Fi (to the cloud), dBm
    rssi_p: float = REGULAR_DBM   # Wi-Fi Direct (to the connected edge device), dBm

    def rssi(self, link_kind: str) -> float:
        """The signal strength of a link of kind ``wifi`` (cloud) or ``wifi-direct`` (edge)."""
        return self.rssi_p if link_kind in ("wifi-direct", "p2p") else self.rssi_w


def bin_variance(v: Variance) -> tuple[str, ...]:
    """Table 1's bins of a variance (co_cpu, co_mem, rssi_w, rssi_p), e.g. ('N', 'N', 'R', 'R')."""
    return state_bins(0, 0, 0, 0, v.co_cpu, v.co_mem, v.rssi_w, v.rssi_p)[4:]


@dataclass(frozen=True)
class Environment:
    """An execution environment of Table 4: ``draw(rng, t)`` is inference t's variance."""

    name: str
    description: str     # Table 4's words
    source: str          # where each number comes from
    draw: Callable[[np.random.Generator, int], Variance]
    dynamic: bool = False


def _static(v: Variance) -> Callable[[np.random.Generator, int], Variance]:
    return lambda rng, t: v


# --- the dynamic co-runners (Sec. 5.2: "synthetic applications based on the CPU and memory usage
# trace of two real-world applications - a web browser and a music player"). The paper publishes
# neither trace; their shapes below are assumed from what the two applications do.

def _music(rng: np.random.Generator, t: int) -> Variance:
    """D1 music player: a light, steady decoder: CPU 10% +- 3% with a decode/buffer refill burst
    (+20%) one inference in ten, memory 8% +- 3% (assumed: audio decoding is a few percent of
    one big core; a buffer refill is a short burst)."""
    burst = 0.20 if t % 10 == 0 else 0.0
    cpu = float(np.clip(rng.normal(0.10, 0.03) + burst, 0.01, 1.0))
    mem = float(np.clip(rng.normal(0.08, 0.03), 0.01, 1.0))
    return Variance(cpu, mem)


def _browser_phase(t: int) -> bool:
    """The browser loads a page for 6 inferences then the user reads it for 14 (assumed: 30% of
    the time loading, a load lasting a few inferences at 50 ms each)."""
    return t % 20 < 6


def _browser(rng: np.random.Generator, t: int) -> Variance:
    """D2 web browser: page loads (parse, layout, JavaScript, images: CPU 50-95%, memory 30-80%)
    between reading (scrolling, timers: CPU 2-20%, memory 5-25%) (assumed ranges)."""
    if _browser_phase(t):
        return Variance(float(rng.uniform(0.50, 0.95)), float(rng.uniform(0.30, 0.80)))
    return Variance(float(rng.uniform(0.02, 0.20)), float(rng.uniform(0.05, 0.25)))


#: D3's Gaussian Wi-Fi RSSI: the mean puts 43% of draws at or below Table 1's -80 dBm (Sec. 3.2,
#: quoting [16]: "43% of data are transmitted under weak signal strength"); sigma 10 dB assumed
#: (a typical indoor shadowing spread); clipped to the boards' tabled -90..-50 dBm.
D3_SIGMA_DB = 10.0
D3_MEAN_DBM = RSSI_SPLIT + D3_SIGMA_DB * 0.1764   # P(x <= -80) = Phi(-0.1764) = 0.43: -78.2 dBm


def _random_wifi(rng: np.random.Generator, t: int) -> Variance:
    return Variance(rssi_w=float(np.clip(rng.normal(D3_MEAN_DBM, D3_SIGMA_DB), -90.0, -50.0)))


_T4 = "AutoScale Table 4"
ENVIRONMENTS: dict[str, Environment] = {e.name: e for e in (
    Environment("S1", "No runtime variance", f"{_T4}; no co-runner, both signals Regular (-60 dBm, the boards' "
                "default_signal_dbm; Table 1: Regular > -80 dBm)", _static(Variance())),
    Environment("S2", "CPU-intensive co-running app", f"{_T4}; Sec. 3.2's synthetic CPU-intensive app: CPU 90% "
                "(Table 1's Large bin; the value assumed), memory 5% (assumed: a spinning loop touches little memory)",
                _static(Variance(co_cpu=0.90, co_mem=0.05))),
    Environment("S3", "Memory-intensive co-running app", f"{_T4}; Sec. 3.2's synthetic memory-intensive app: "
                "memory 90% (Table 1's Large bin; the value assumed), CPU 15% (assumed: one streaming thread)",
                _static(Variance(co_cpu=0.15, co_mem=0.90))),
    Environment("S4", "Weak Wi-Fi signal strength", f"{_T4}; Wi-Fi at {WEAK_DBM:g} dBm (Table 1: Weak <= -80 dBm; "
                "the value assumed), Wi-Fi Direct Regular", _static(Variance(rssi_w=WEAK_DBM))),
    Environment("S5", "Weak Wi-Fi direct signal strength", f"{_T4}; Wi-Fi Direct at {WEAK_DBM:g} dBm (Table 1: "
                "Weak <= -80 dBm; the value assumed), Wi-Fi Regular", _static(Variance(rssi_p=WEAK_DBM))),
    Environment("D1", "Co-running app - music player", f"{_T4}; Sec. 5.2: a synthetic app replaying a music "
                "player's CPU and memory use; the trace is not published: CPU 10% +- 3% with a 20% burst every 10th "
                "inference, memory 8% +- 3% (assumed)", _music, dynamic=True),
    Environment("D2", "Co-running app - web browser", f"{_T4}; Sec. 5.2: a synthetic app replaying a web browser's "
                "CPU and memory use; the trace is not published: page loads (30% of the time: CPU 50-95%, memory "
                "30-80%) between reading (CPU 2-20%, memory 5-25%) (assumed)", _browser, dynamic=True),
    Environment("D3", "Random Wi-Fi signal strength", f"{_T4}; Sec. 5.2: Gaussian signal strength (after its ref. "
                f"[16]); mean {D3_MEAN_DBM:.1f} dBm so 43% of inferences see a Weak signal (Sec. 3.2 quoting [16]), "
                f"sigma {D3_SIGMA_DB:g} dB assumed, clipped to -90..-50 dBm", _random_wifi, dynamic=True),
)}
STATIC = ("S1", "S2", "S3", "S4", "S5")
DYNAMIC = ("D1", "D2", "D3")


def environment(name: str) -> Environment:
    """The environment called ``name`` (S1-S5, D1-D3); KeyError naming the choices otherwise."""
    try:
        return ENVIRONMENTS[name.upper()]
    except KeyError:
        raise KeyError(f"no environment {name!r}: one of {', '.join(ENVIRONMENTS)}") from None


def training_states() -> list[tuple[str, str, str, str]]:
    """The runtime-variance states of Table 1 the training visits (Sec. 5.3: "100 times for each
    NN in each runtime variance-related state"): 4 x 4 x 2 x 2 = 64 bin combinations."""
    return [(c, m, w, p) for c in CO_LEVELS for m in CO_LEVELS for w in RSSI_LEVELS for p in RSSI_LEVELS]


def state_variance(state: tuple[str, str, str, str]) -> Variance:
    """The variance the training sets up for a state of bins (``CO_LEVELS``, ``RSSI_LEVELS``)."""
    c, m, w, p = state
    return Variance(CO_LEVELS[c], CO_LEVELS[m], RSSI_LEVELS[w], RSSI_LEVELS[p])
