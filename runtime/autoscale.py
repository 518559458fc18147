"""AutoScale's run-time policy: the state (Table 1), the reward (Eq. 5), the energy estimate
(Eq. 1-4) and the Q-learning table (Alg. 1), with the two JSON files they live in.

Over 600 lines as one module: about half of it is ``QTable`` and ``Policy`` checking their JSON
documents field by field, and their methods are what call the state, reward and energy functions.

Numpy and the standard library only (part of ``hetcc.runtime``, which ships to a board alone).

Files (docs/autoscale-runtime.md describes them field by field):

* ``hetcc.qtable/1`` (``QTable``): the action names (column order), the hyper-parameters, the
  Q-values and visit counts of the visited states, and how the table was trained;
* ``hetcc.autoscale/1`` (``Policy``): what an artifact ships in ``policy/``: the model's Table 1
  features, the QoS and accuracy targets, the links' tables, one action per variant (its predicted
  compute time, busy power, bytes sent and received, accuracy) and a ``hetcc.qtable/1`` table.

Choices the paper leaves open, made here:

* a co-runner feature is "None (0%)" when it rounds to 0% (below 0.5%): a measured utilisation
  is never exactly 0;
* the reward's units (Eq. 5 states none): energy in units of the model's reference energy
  ``E_ref`` (``reference_energy_mj``: the least predicted energy of its actions), the
  latency term as the QoS slack relative to the target ``alpha * (qos_ms - latency_ms) / qos_ms``
  (the paper writes ``+alpha * R_latency``, which taken literally rewards slowness), accuracy as
  a fraction, and a missed QoS target costs ``qos_penalty * latency_ms / qos_ms`` reference
  energies (``reward``);
* an unvisited state's Q-values are "random values" (Alg. 1) of at most 1e-6, drawn from a
  generator seeded by the table's seed and the state key: the same table gives the same values
  in every process and in any order of visits, and they only break ties;
* an accuracy is a fraction in [0, 1] (the accuracy-target branch of the reward uses it in
  percent, as before).
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import os
import tempfile
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from .errors import PolicyError
from .manifest.model import LinkInfo

__all__ = ["STATE_FEATURES", "BINS", "QTABLE_SCHEMA", "POLICY_SCHEMA", "MAX_POLICY_BYTES", "Hyper", "QTable",
           "Policy", "state_key", "state_bins", "reward", "reference_energy_mj", "energy_mj", "link_times_ms",
           "write_atomic"]

QTABLE_SCHEMA = "hetcc.qtable/1"
POLICY_SCHEMA = "hetcc.autoscale/1"
#: the largest policy or Q-table file read (every Table 1 state x 256 actions fits in a few MB)
MAX_POLICY_BYTES = 64 << 20
STATE_FEATURES = ("conv", "fc", "rc", "macs", "co_cpu", "co_mem", "rssi_w", "rssi_p")
#: each feature's bins, in order (AutoScale Table 1, last column)
BINS: dict[str, tuple[str, ...]] = {
    "conv": ("S", "M", "L", "XL"), "fc": ("S", "L"), "rc": ("S", "L"), "macs": ("S", "M", "L"),
    "co_cpu": ("N", "S", "M", "L"), "co_mem": ("N", "S", "M", "L"), "rssi_w": ("R", "W"), "rssi_p": ("R", "W"),
}
#: a signal at or below this is Weak (Table 1)
WEAK_DBM = -80.0
#: the magnitude of an unvisited state's random initial Q-values
INIT_SCALE = 1e-6


# ---------------------------------------------------------------------------------------------
# state (Table 1)


def _co_bin(x: float) -> str:
    if x < 0.005:
        return "N"
    if x < 0.25:
        return "S"
    if x < 0.75:
        return "M"
    return "L"


def state_bins(conv: float, fc: float, rc: float, macs: float, co_cpu: float, co_mem: float,
               rssi_w: float | None, rssi_p: float | None) -> tuple[str, ...]:
    """The 8 bins of Table 1: layer counts, MACs (a count, not millions), co-runner CPU and memory
    use as fractions in [0, 1], signal strengths in dBm (None: no reading, counted Regular)."""
    conv_b = "S" if conv < 30 else "M" if conv < 50 else "L" if conv < 90 else "XL"
    fc_b = "S" if fc < 10 else "L"
    rc_b = "S" if rc < 10 else "L"
    macs_b = "S" if macs < 1000e6 else "M" if macs < 2000e6 else "L"
    rw = "R" if rssi_w is None or rssi_w > WEAK_DBM else "W"
    rp = "R" if rssi_p is None or rssi_p > WEAK_DBM else "W"
    return (conv_b, fc_b, rc_b, macs_b, _co_bin(co_cpu), _co_bin(co_mem), rw, rp)


def state_key(conv: float, fc: float, rc: float, macs: float, co_cpu: float, co_mem: float,
              rssi_w: float | None, rssi_p: float | None) -> str:
    """The state key: the 8 bins of ``state_bins`` joined by "|" (e.g. ``"L|S|S|L|N|N|R|R"``)."""
    return "|".join(state_bins(conv, fc, rc, macs, co_cpu, co_mem, rssi_w, rssi_p))


def _valid_key(key: Any) -> bool:
    if not isinstance(key, str):
        return False
    parts = key.split("|")
    return len(parts) == len(STATE_FEATURES) and all(p in BINS[f] for f, p in zip(STATE_FEATURES, parts))


# ---------------------------------------------------------------------------------------------
# reward (Eq. 5) and energy (Eq. 1-4)


@dataclass(frozen=True)
class Hyper:
    """Q-learning's learning rate and discount (Alg. 1's gamma and mu; Sec. 5.3 picks 0.9 and 0.1),
    the exploration probability, Eq. 5's weights of the latency slack and the accuracy (0.1 each,
    Sec. 4.2), and the cost of a missed QoS target in reference energies per QoS target of
    latency (``reward``; a file written before it existed loads with the default)."""

    learning_rate: float = 0.9
    discount: float = 0.1
    epsilon: float = 0.1
    alpha: float = 0.1
    beta: float = 0.1
    qos_penalty: float = 100.0

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
                raise PolicyError(f"hyper.{f.name}: expected a finite number, got {v!r}")
        for name in ("learning_rate", "discount", "epsilon"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise PolicyError(f"hyper.{name}: expected a number in [0, 1], got {getattr(self, name)!r}")
        if self.qos_penalty < 0:
            raise PolicyError(f"hyper.qos_penalty: expected a number >= 0, got {self.qos_penalty!r}")

    def to_json(self) -> dict[str, float]:
        return {f.name: float(getattr(self, f.name)) for f in dataclasses.fields(self)}

    @classmethod
    def from_json(cls, doc: Any, source: str = "hyper") -> "Hyper":
        if not isinstance(doc, dict):
            raise PolicyError(f"{source}: hyper: expected an object")
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(doc) - names)
        if unknown:
            raise PolicyError(f"{source}: hyper: unknown key {unknown[0]!r} (known: {', '.join(sorted(names))})")
        try:
            return cls(**{k: doc[k] for k in names if k in doc})
        except PolicyError as e:
            raise PolicyError(f"{source}: {e}") from None

    def replace(self, **changes: float) -> "Hyper":
        return dataclasses.replace(self, **changes)


def reward(latency_ms: float, energy_mj: float, accuracy: float, qos_ms: float, min_accuracy: float,
           hyper: Hyper, energy_ref_mj: float) -> float:
    """AutoScale Eq. 5 with its units made explicit (the paper states none; in any fixed unit its
    QoS term is either negligible or overwhelming next to the energy). Energy counts in units of
    the model's reference energy ``energy_ref_mj`` (``reference_energy_mj``), latency relative to
    the QoS target, accuracy as a fraction in [0, 1]:

    * accuracy below ``min_accuracy``: ``-100 * accuracy`` (the accuracy in percent, as Eq. 5);
    * latency under the QoS target: ``-E/E_ref + alpha * (qos_ms - latency_ms) / qos_ms + beta * accuracy``;
    * else: ``-E/E_ref + beta * accuracy - qos_penalty * latency_ms / qos_ms``.

    ``E_ref`` is the least predicted energy of the model's actions, so ``alpha`` and ``beta`` (0.1,
    Sec. 4.2) stay the small weights the paper means: the slack term is worth at most a tenth of the
    best energy. With ``qos_penalty`` 100 a miss costs at least a hundred reference energies
    (more than any action's energy on the built-in boards): meeting the QoS target comes first, and
    among the actions that meet it the least energy wins up to the small terms (what AutoScale's
    Opt measures); among those that miss it, the fastest."""
    acc = float(accuracy)
    if acc < min_accuracy:
        return -100.0 * acc
    ref = float(energy_ref_mj)
    if not (ref > 0.0 and math.isfinite(ref)):
        raise PolicyError(f"reference energy {energy_ref_mj!r} mJ: expected a positive number")
    qos = float(qos_ms)
    e = float(energy_mj) / ref
    if latency_ms < qos_ms:
        return -e + hyper.alpha * (qos - float(latency_ms)) / qos + hyper.beta * acc
    return -e + hyper.beta * acc - hyper.qos_penalty * float(latency_ms) / qos


def reference_energy_mj(actions: Iterable[Mapping[str, Any]], base_power_mw: float,
                        links: Mapping[str, Any] | None = None) -> float:
    """A model's reference energy for the reward (mJ): the least predicted energy of its actions
    (``compute_ms`` at ``busy_power_mw`` plus the base power; a remote one at its link's default
    signal). 1.0 (the reward then counts energy in mJ) when no action predicts a positive energy."""
    acts = [a for a in actions if a is not None]

    def predicted(a: Mapping[str, Any]) -> float:
        try:
            ms = float(a.get("compute_ms", 0.0)) + sum(link_times_ms(a, links))
            return energy_mj(a, ms, base_power_mw, links)
        except PolicyError:       # a remote action whose link the caller did not give
            return math.nan

    es = [x for x in (predicted(a) for a in acts) if math.isfinite(x) and x > 0.0]
    return min(es) if es else 1.0


def _link(links: Mapping[str, Any] | None, name: str) -> LinkInfo:
    if not links or name not in links:
        raise PolicyError(f"link {name!r}: not in the policy's links ({', '.join(sorted(links or {})) or 'none'})")
    link = links[name]
    return link if isinstance(link, LinkInfo) else _link_from_json(link, f"links.{name}")


def _rssi_for(rssi: float | Mapping[str, float | None] | None, link_name: str) -> float | None:
    if rssi is None or isinstance(rssi, (int, float)):
        return rssi
    if isinstance(rssi, Mapping):
        return rssi.get(link_name)
    return rssi


def link_times_ms(action: Mapping[str, Any], links: Mapping[str, Any] | None,
                  rssi: float | Mapping[str, float | None] | None = None) -> tuple[float, float]:
    """(t_tx, t_rx) in ms a remote action's transfers take at a signal strength, from its link's
    table: bytes at the bandwidth there plus half the round trip each way (0, 0 for a local one)."""
    if not action.get("remote"):
        return 0.0, 0.0
    name = str(action.get("link"))
    link = _link(links, name)
    dbm = _rssi_for(rssi, name)
    bw = link.bandwidth_mbps_at(dbm)
    half_rtt = link.rtt_ms / 2.0

    def t(nbytes: Any) -> float:
        nbytes = float(nbytes or 0)
        if nbytes <= 0:
            return half_rtt
        return (math.inf if bw <= 0 else nbytes * 8.0 / (bw * 1e6) * 1e3) + half_rtt

    return t(action.get("bytes_in")), t(action.get("bytes_out"))


def energy_mj(action: Mapping[str, Any], latency_ms: float, base_power_mw: float,
              links: Mapping[str, Any] | None, rssi: float | Mapping[str, float | None] | None = None,
              t_tx_ms: float | None = None, t_rx_ms: float | None = None) -> float:
    """The energy (mJ) of one inference that took ``latency_ms`` on ``action`` (Eq. 1-4):

    * local: ``(busy_power_mw + base_power_mw) * latency`` (the utilisation-based model with the
      device busy throughout);
    * remote: ``tx_mw(rssi) * t_tx + rx_mw(rssi) * t_rx + (busy_power_mw + base_power_mw) *
      (latency - t_tx - t_rx)`` (Eq. 4; busy_power_mw is the phone's power while it waits).

    ``rssi`` is the signal in dBm of the action's link, or a mapping link name -> dBm (None: the
    link's default). ``t_tx_ms`` / ``t_rx_ms`` are the measured transfer times; None estimates
    them from the link's table (``link_times_ms``). The transfers are capped at the latency."""
    latency_ms = max(0.0, float(latency_ms))
    idle_mw = float(action.get("busy_power_mw", 0.0)) + float(base_power_mw)
    if not action.get("remote"):
        return idle_mw * latency_ms / 1e3
    name = str(action.get("link"))
    link = _link(links, name)
    dbm = _rssi_for(rssi, name)
    if t_tx_ms is None or t_rx_ms is None:
        est_tx, est_rx = link_times_ms(action, links, rssi)
        t_tx_ms = est_tx if t_tx_ms is None else t_tx_ms
        t_rx_ms = est_rx if t_rx_ms is None else t_rx_ms
    t_tx = min(max(0.0, float(t_tx_ms)), latency_ms)
    t_rx = min(max(0.0, float(t_rx_ms)), latency_ms - t_tx)
    rest = latency_ms - t_tx - t_rx
    return (link.tx_power_mw_at(dbm) * t_tx + link.rx_power_mw_at(dbm) * t_rx + idle_mw * rest) / 1e3


# ---------------------------------------------------------------------------------------------
# reading and writing the files


def _finite(text: str) -> float:
    x = float(text)
    if not math.isfinite(x):
        raise ValueError(f"{text} is out of range for a number")
    return x


def _refuse_constant(text: str) -> Any:
    raise ValueError(f"{text} is not a JSON number")


def _read_bytes(path: Path, what: str) -> bytes:
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_POLICY_BYTES + 1)
    except FileNotFoundError:
        raise PolicyError(f"{path}: no such {what} file; recompile the artifact (or pass the right path)") from None
    except IsADirectoryError:
        raise PolicyError(f"{path}: a directory, not a {what} file; pass the file") from None
    except OSError as e:
        raise PolicyError(f"{path}: cannot read the {what} file ({e.strerror or e})") from None
    if len(data) > MAX_POLICY_BYTES:
        raise PolicyError(f"{path}: larger than {MAX_POLICY_BYTES >> 20} MiB, far more than hetcc writes; "
                          f"the {what} file is damaged or not hetcc's")
    return data


def _parse(data: bytes, shown: str) -> Any:
    try:
        return json.loads(data.decode("utf-8"), parse_float=_finite, parse_constant=_refuse_constant)
    except UnicodeDecodeError as e:
        raise PolicyError(f"{shown}: not UTF-8 text (byte {e.start}); the file is damaged") from None
    except json.JSONDecodeError as e:
        raise PolicyError(f"{shown}: not valid JSON (line {e.lineno} column {e.colno}: {e.msg}); "
                          "the file is damaged") from None
    except (ValueError, RecursionError) as e:
        raise PolicyError(f"{shown}: {e if isinstance(e, ValueError) else 'nested too deep'}; "
                          "the file is damaged") from None


def _dump(doc: Any) -> bytes:
    return (json.dumps(doc, indent=1, allow_nan=False) + "\n").encode("utf-8")


def write_atomic(path: str | os.PathLike, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically: a temporary file beside it, flushed to disk, renamed
    over it, the directory synced. A crash leaves the old content or the new, never a mix, and at
    most a ``.NAME.tmp-*`` file. (The runtime ships without hetcc.files.atomic, whose directory
    swap is for whole artifacts; this is the one-file case.)"""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.tmp-", dir=str(path.parent))
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    try:
        dfd = os.open(str(path.parent), os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(dfd)
    except OSError:
        pass
    finally:
        os.close(dfd)


def _number(doc: Mapping[str, Any], key: str, shown: str, *, minimum: float | None = None,
            maximum: float | None = None, optional: bool = False, default: float = 0.0) -> float:
    if key not in doc or doc[key] is None:
        if optional:
            return default
        raise PolicyError(f"{shown}: {key}: required key is missing; the file is damaged, recompile")
    v = doc[key]
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise PolicyError(f"{shown}: {key}: expected a number, got {v!r}; the file is damaged, recompile")
    if minimum is not None and v < minimum:
        raise PolicyError(f"{shown}: {key}: {v!r} is below {minimum}; the file is damaged, recompile")
    if maximum is not None and v > maximum:
        raise PolicyError(f"{shown}: {key}: {v!r} is above {maximum}; the file is damaged, recompile")
    return float(v)


def _link_from_json(doc: Any, shown: str) -> LinkInfo:
    if not isinstance(doc, dict):
        raise PolicyError(f"{shown}: expected an object with a link's tables")
    try:
        kwargs = {
            "kind": str(doc["kind"]),
            "signal_dbm": tuple(float(x) for x in doc["signal_dbm"]),
            "bandwidth_mbps": tuple(float(x) for x in doc["bandwidth_mbps"]),
            "tx_power_mw": tuple(float(x) for x in doc["tx_power_mw"]),
            "rx_power_mw": tuple(float(x) for x in doc["rx_power_mw"]),
            "rtt_ms": float(doc["rtt_ms"]),
            "default_signal_dbm": float(doc["default_signal_dbm"]),
        }
    except KeyError as e:
        raise PolicyError(f"{shown}: {e.args[0]}: required key is missing; the file is damaged, recompile") from None
    except (TypeError, ValueError):
        raise PolicyError(f"{shown}: expected numbers in the link's tables; the file is damaged, recompile") from None
    n = len(kwargs["signal_dbm"])
    if n == 0 or any(len(kwargs[k]) != n for k in ("bandwidth_mbps", "tx_power_mw", "rx_power_mw")):
        raise PolicyError(f"{shown}: signal_dbm, bandwidth_mbps, tx_power_mw and rx_power_mw must have the same "
                          "(non-zero) length; the file is damaged, recompile")
    if list(kwargs["signal_dbm"]) != sorted(kwargs["signal_dbm"]):
        raise PolicyError(f"{shown}: signal_dbm: expected increasing levels; the file is damaged, recompile")
    return LinkInfo(**kwargs)


# ---------------------------------------------------------------------------------------------
# the Q-table (Alg. 1)


def _action_parts(action: Any) -> tuple[str, str | None, float | None, bool]:
    """(device, precision tag or None, frequency MHz or None, remote) of an action given as a dict
    of the policy file or as a name ("cpu@2803:fp32", "dsp:int8", "edge")."""
    if isinstance(action, Mapping):
        prec = {"float32": "fp32", "float16": "fp16", "int8": "int8"}.get(str(action.get("precision")),
                                                                        action.get("precision"))
        freq = action.get("freq_mhz")
        return (str(action.get("kind") or action.get("device")), prec,
                None if freq is None else float(freq), bool(action.get("remote")))
    name = str(action)
    if ":" not in name:
        return name, None, None, True
    dev, prec = name.rsplit(":", 1)
    freq = None
    if "@" in dev:
        dev, f = dev.split("@", 1)
        try:
            freq = float(f)
        except ValueError:
            freq = None
    return dev, prec, freq, False


class QTable:
    """A Q-table over named actions (``hetcc.qtable/1``): ``values(key)`` (a copy), ``choose``
    (epsilon-greedy within an allowed mask), ``update`` (Alg. 1), JSON, ``save`` / ``load``
    (atomic; PolicyError naming the file) and ``transfer`` to another board's action set."""

    def __init__(self, actions: Sequence[str], hyper: Hyper | None = None, target: str = "",
                 q: Mapping[str, Iterable[float]] | None = None, visits: Mapping[str, Iterable[int]] | None = None,
                 trained: Mapping[str, Any] | None = None, seed: int | None = None) -> None:
        self.actions: tuple[str, ...] = tuple(str(a) for a in actions)
        if not self.actions:
            raise PolicyError("a Q-table needs at least one action")
        if len(set(self.actions)) != len(self.actions):
            dup = next(a for a in self.actions if self.actions.count(a) > 1)
            raise PolicyError(f"actions: {dup!r} is listed twice")
        self.hyper = hyper if hyper is not None else Hyper()
        self.target = str(target)
        self.trained: dict[str, Any] = dict(trained or {})
        if seed is None:
            s = self.trained.get("seed", 0)
            seed = s if isinstance(s, int) and not isinstance(s, bool) else 0
        self.seed = int(seed)
        n = len(self.actions)
        self._q: dict[str, np.ndarray] = {}
        self._visits: dict[str, np.ndarray] = {}
        self._inits: dict[str, np.ndarray] = {}
        self.unseen = "random"
        self._all = np.ones(len(self.actions), dtype=bool)
        self._all.flags.writeable = False
        #: read-only masks _mask accepted before, by id (each held, so its id stays its own): the
        #: runner's one mask, a simulation's mask per model; checked once, not at every decision
        self._checked: dict[int, np.ndarray] = {}
        for k, row in (q or {}).items():
            arr = np.asarray(list(row), dtype=np.float64)
            if arr.shape != (n,):
                raise PolicyError(f"q.{k}: expected {n} values (one per action), got {arr.size}")
            self._q[str(k)] = arr
        for k, row in (visits or {}).items():
            arr = np.asarray(list(row), dtype=np.int64)
            if arr.shape != (n,):
                raise PolicyError(f"visits.{k}: expected {n} counts (one per action), got {arr.size}")
            self._visits[str(k)] = arr

    @property
    def unseen(self) -> str:
        """Where an unvisited state starts (``_init``): "random" (Alg. 1's random values) or
        "nearest" (the nearest learned state's values); a run's choice, not kept in the file."""
        return self._unseen

    @unseen.setter
    def unseen(self, value: str) -> None:
        if value not in ("random", "nearest"):
            raise PolicyError(f"unseen {value!r}: expected 'random' or 'nearest'")
        self._unseen = value

    # -- values and choices
    def _init(self, key: str) -> np.ndarray:
        """An unvisited state's initial values (a fresh array): with ``unseen`` "nearest", the
        values of the nearest learned state (``nearest``) where there is one; else tiny seeded random
        values (Alg. 1; the draw is cached per key)."""
        if self.unseen == "nearest" and self._q:
            near = self.nearest(key)
            if near is not None:
                return self._q[near].copy()
        row = self._inits.get(key)
        if row is None:
            rng = np.random.default_rng([self.seed & 0xFFFFFFFF, zlib.crc32(key.encode("utf-8"))])
            row = self._inits[key] = rng.uniform(-INIT_SCALE, INIT_SCALE, len(self.actions))
        return row.copy()

    def nearest(self, key: str) -> str | None:
        """The learned state most like ``key``: the same network bins (the first four of Table 1),
        then the fewest steps apart over the runtime bins (co-runner CPU and memory use, the two
        signals; each bin's steps in ``BINS`` order), then the most visited, then the first key;
        None when no learned state has the network's bins (or ``key`` is not a state key)."""
        if not _valid_key(key):
            return None
        parts = key.split("|")
        runtime = tuple(zip(STATE_FEATURES[4:], (BINS[f].index(p) for f, p in zip(STATE_FEATURES[4:], parts[4:]))))
        best: tuple[int, int, str] | None = None
        for k in self._q:
            other = k.split("|")
            if other[:4] != parts[:4]:
                continue
            steps = sum(abs(i - BINS[f].index(b)) for (f, i), b in zip(runtime, other[4:]))
            visits = self._visits.get(k)
            cand = (steps, -int(visits.sum()) if visits is not None else 0, k)
            if best is None or cand < best:
                best = cand
        return None if best is None else best[2]

    def values(self, key: str) -> np.ndarray:
        """The Q-values of a state (a copy; an unvisited state's starting values, ``_init``)."""
        row = self._q.get(key)
        return row.copy() if row is not None else self._init(key)

    def visits(self, key: str) -> np.ndarray:
        row = self._visits.get(key)
        return row.copy() if row is not None else np.zeros(len(self.actions), dtype=np.int64)

    @property
    def states(self) -> tuple[str, ...]:
        """The states with learned values, sorted."""
        return tuple(sorted(self._q))

    def index(self, action: str) -> int:
        try:
            return self.actions.index(action)
        except ValueError:
            raise PolicyError(f"action {action!r}: not in the Q-table's actions ({', '.join(self.actions)})") from None

    def _mask(self, allowed: np.ndarray | None) -> np.ndarray:
        if allowed is None:
            return self._all
        if self._checked.get(id(allowed)) is allowed:   # a read-only mask checked before
            return allowed
        mask = (allowed if isinstance(allowed, np.ndarray) and allowed.dtype.kind == "b"
                else np.asarray(allowed, dtype=bool))
        if mask.shape != (len(self.actions),):
            raise PolicyError(f"allowed: expected {len(self.actions)} flags (one per action), got {mask.size}")
        if not mask.any():
            raise PolicyError("no action is allowed (every variant is below the accuracy target?); "
                              "lower --min-accuracy or compile more variants")
        if mask is allowed and not mask.flags.writeable and len(self._checked) < 64:
            self._checked[id(mask)] = mask
        return mask

    def best(self, key: str, allowed: np.ndarray | None = None) -> int:
        """The allowed action with the largest Q-value (the first on ties)."""
        mask = self._mask(allowed)
        vals = np.where(mask, self.values(key), -np.inf)
        return int(np.argmax(vals))

    def explorable(self, key: str, allowed: np.ndarray | None = None, within: float = math.inf) -> np.ndarray:
        """The indices of the allowed actions an exploring step may draw: all of them (``within``
        infinite, Alg. 1), or those whose Q-value is within ``within`` of the state's best (what
        the table already knows to be far worse, such as an offload at a weak signal that cost
        dozens of local inferences' energy, is not tried again at random)."""
        mask = self._mask(allowed)
        if math.isinf(within):
            return np.flatnonzero(mask)
        vals = np.where(mask, self.values(key), -np.inf)
        return np.flatnonzero(mask & (vals >= vals.max() - within))

    def choose(self, key: str, rng: np.random.Generator, allowed: np.ndarray | None = None,
               explore: bool = True, hyper: Hyper | None = None, within: float = math.inf) -> int:
        """Epsilon-greedy (Alg. 1): with probability ``hyper.epsilon`` (when ``explore``) a uniformly
        random allowed action (within ``within`` of the best: ``explorable``), else the allowed
        action with the largest Q-value. ``hyper`` overrides the table's own for this call (a run's
        options; the file keeps its values)."""
        mask = self._mask(allowed)
        eps = (hyper or self.hyper).epsilon
        if explore and eps > 0 and rng.random() < eps:
            idx = self.explorable(key, mask, within)
            return int(idx[rng.integers(len(idx))])
        row = self._q.get(key)
        if row is None:
            row = self._init(key)
        return int(row.argmax() if mask is self._all else np.argmax(np.where(mask, row, -np.inf)))

    def update(self, key: str, a: int, reward: float, next_key: str, next_allowed: np.ndarray | None = None,
               hyper: Hyper | None = None) -> None:
        """``Q(S,A) += lr * (R + discount * max_a' Q(S',a') - Q(S,A))`` (Alg. 1; the max over the
        allowed actions of S' when ``next_allowed`` is given), and one more visit of (S, A).
        ``hyper`` overrides the table's learning rate and discount for this call."""
        h = hyper or self.hyper
        if not 0 <= a < len(self.actions):
            raise PolicyError(f"action index {a}: out of range (0..{len(self.actions) - 1})")
        if not math.isfinite(reward):
            raise PolicyError(f"reward {reward!r}: not a finite number")
        row = self._q.get(key)
        if row is None:
            if not _valid_key(key):
                raise PolicyError(f"state key {key!r}: expected 8 Table 1 bins joined by '|' (see state_key)")
            row = self._q[key] = self._init(key)
            self._visits[key] = np.zeros(len(self.actions), dtype=np.int64)
        elif key not in self._visits:
            self._visits[key] = np.zeros(len(self.actions), dtype=np.int64)
        nxt = row if next_key == key else self._q.get(next_key)
        if nxt is None:
            if not _valid_key(next_key):
                raise PolicyError(f"state key {next_key!r}: expected 8 Table 1 bins joined by '|' (see state_key)")
            nxt = self._init(next_key)
        if next_allowed is not None:
            nxt = nxt[self._mask(next_allowed)]
        target = float(reward) + h.discount * float(nxt.max())
        row[a] += h.learning_rate * (target - row[a])
        self._visits[key][a] += 1

    # -- JSON
    def to_json(self) -> dict[str, Any]:
        trained = dict(self.trained)
        trained.setdefault("seed", self.seed)
        return {
            "schema": QTABLE_SCHEMA,
            "target": self.target,
            "actions": list(self.actions),
            "hyper": self.hyper.to_json(),
            "q": {k: [float(x) for x in self._q[k]] for k in sorted(self._q)},
            "visits": {k: [int(x) for x in self.visits(k)] for k in sorted(self._q)},
            "trained": trained,
        }

    @classmethod
    def from_json(cls, doc: Any, source: str = "qtable") -> "QTable":
        """A table from its JSON form; PolicyError naming ``source`` and the key when malformed."""
        if not isinstance(doc, dict):
            raise PolicyError(f"{source}: expected a JSON object ({QTABLE_SCHEMA}); the file is damaged")
        if doc.get("schema") != QTABLE_SCHEMA:
            raise PolicyError(f"{source}: schema: expected {QTABLE_SCHEMA!r}, got {doc.get('schema')!r}; "
                              "not a Q-table hetcc wrote (hetcc train autoscale -o FILE writes one)")
        actions = doc.get("actions")
        if not isinstance(actions, list) or not actions or not all(isinstance(a, str) and a for a in actions):
            raise PolicyError(f"{source}: actions: expected a non-empty array of action names; the file is damaged")
        hyper = Hyper.from_json(doc.get("hyper", {}), source)
        target = doc.get("target", "")
        if not isinstance(target, str):
            raise PolicyError(f"{source}: target: expected a string; the file is damaged")
        n = len(actions)
        q, visits = doc.get("q", {}), doc.get("visits", {})
        for name, table, kind in (("q", q, (int, float)), ("visits", visits, int)):
            if not isinstance(table, dict):
                raise PolicyError(f"{source}: {name}: expected an object state key -> values; the file is damaged")
            for k, row in table.items():
                if not _valid_key(k):
                    raise PolicyError(f"{source}: {name}: {k!r} is not a state key (8 Table 1 bins joined by '|'); "
                                      "the file is damaged")
                if (not isinstance(row, list) or len(row) != n
                        or not all(isinstance(x, kind) and not isinstance(x, bool) for x in row)):
                    raise PolicyError(f"{source}: {name}.{k}: expected {n} numbers (one per action); "
                                      "the file is damaged")
                if name == "visits" and any(x < 0 for x in row):
                    raise PolicyError(f"{source}: visits.{k}: counts must be >= 0; the file is damaged")
        trained = doc.get("trained", {})
        if not isinstance(trained, dict):
            raise PolicyError(f"{source}: trained: expected an object; the file is damaged")
        try:
            return cls(actions, hyper, target, q, visits, trained)
        except PolicyError as e:
            raise PolicyError(f"{source}: {e}") from None

    def save(self, path: str | os.PathLike) -> None:
        """Write the table to ``path`` atomically (``write_atomic``)."""
        write_atomic(path, _dump(self.to_json()))

    @classmethod
    def load(cls, path: str | os.PathLike) -> "QTable":
        path = Path(path)
        return cls.from_json(_parse(_read_bytes(path, "Q-table"), str(path)), str(path))

    def copy(self) -> "QTable":
        return QTable.from_json(self.to_json(), "copy")

    # -- transfer between action sets
    def transfer(self, actions: Sequence[str | Mapping[str, Any]]) -> "QTable":
        """A table for another action set (another board, or fewer variants): each new action takes
        the learned values of the old action most like it: the same device (kind) and precision at
        the nearest relative frequency rank; else the same device at any precision; else remote for
        remote; an action with no match starts unvisited. Visits start again at 0. ``actions`` are
        names or the policy file's action dicts (whose ``kind`` then matches the old names' device)."""
        new_names = [str(a["variant"]) if isinstance(a, Mapping) else str(a) for a in actions]
        new_parts = [_action_parts(a) for a in actions]
        old_parts = [_action_parts(a) for a in self.actions]

        def ranks(parts: list[tuple[str, str | None, float | None, bool]]) -> list[float]:
            out = []
            for dev, prec, freq, _remote in parts:
                freqs = sorted({f for d, p, f, _ in parts if d == dev and p == prec and f is not None})
                if freq is None or len(freqs) < 2:
                    out.append(1.0)
                else:
                    out.append(freqs.index(freq) / (len(freqs) - 1))
            return out

        new_rank, old_rank = ranks(new_parts), ranks(old_parts)
        source: list[int | None] = []
        for (dev, prec, _f, remote), r in zip(new_parts, new_rank):
            tiers = [
                [j for j, (d, p, _, rem) in enumerate(old_parts) if d == dev and p == prec and rem == remote],
                [j for j, (d, _, _, rem) in enumerate(old_parts) if d == dev and rem == remote],
                [j for j, (_, _, _, rem) in enumerate(old_parts) if remote and rem],
            ]
            pick = next((t for t in tiers if t), None)
            source.append(None if pick is None else min(pick, key=lambda j: (abs(old_rank[j] - r), j)))
        out = QTable(new_names, self.hyper, self.target, trained={**self.trained, "transferred_from": list(self.actions)},
                     seed=self.seed)
        for k, row in self._q.items():
            fresh = out._init(k)
            out._q[k] = np.array([row[j] if j is not None else fresh[i] for i, j in enumerate(source)])
            out._visits[k] = np.zeros(len(new_names), dtype=np.int64)
        return out


# ---------------------------------------------------------------------------------------------
# the policy file an artifact ships


_ACTION_NUMBERS = ("compute_ms", "busy_power_mw", "bytes_in", "bytes_out", "accuracy")


def _check_action(a: Any, i: int, shown: str) -> dict[str, Any]:
    where = f"{shown}: actions[{i}]"
    if not isinstance(a, dict):
        raise PolicyError(f"{where}: expected an object; the file is damaged, recompile")
    if not isinstance(a.get("variant"), str) or not a["variant"]:
        raise PolicyError(f"{where}: variant: expected the variant's name; the file is damaged, recompile")
    out = dict(a)
    for k in _ACTION_NUMBERS:
        out[k] = _number(a, k, where, minimum=0.0, maximum=1.0 if k == "accuracy" else None,
                         optional=k != "compute_ms", default=1.0 if k == "accuracy" else 0.0)
    out["remote"] = bool(a.get("remote", False))
    if out["remote"] and not isinstance(a.get("link"), str):
        raise PolicyError(f"{where}: link: a remote action names its link; the file is damaged, recompile")
    out.setdefault("precision", "float32")
    return out


class Policy:
    """An artifact's ``policy/autoscale.json`` (``hetcc.autoscale/1``): the model's features, the
    QoS and accuracy targets, the links, one action per variant, and the Q-table."""

    def __init__(self, model: Mapping[str, Any], actions: Sequence[Mapping[str, Any]], qtable: QTable,
                 qos_ms: float = 50.0, min_accuracy: float = 0.0, base_power_mw: float = 0.0,
                 links: Mapping[str, LinkInfo] | None = None, source: str = "policy") -> None:
        self.model = dict(model)
        self.actions = [dict(a) for a in actions]
        self.qtable = qtable
        self.qos_ms = float(qos_ms)
        self.min_accuracy = float(min_accuracy)
        self.base_power_mw = float(base_power_mw)
        self.links: dict[str, LinkInfo] = dict(links or {})
        self.source = source
        names = [a["variant"] for a in self.actions]
        if tuple(names) != qtable.actions:
            raise PolicyError(f"{source}: qtable.actions must equal the actions' variant names in order "
                              f"({', '.join(names)}); the file is damaged, recompile")
        for a in self.actions:
            if a.get("remote") and a.get("link") not in self.links:
                raise PolicyError(f"{source}: action {a['variant']!r}: link {a.get('link')!r} is not in links; "
                                  "the file is damaged, recompile")
        #: the reward's energy unit (``reference_energy_mj``: the least predicted action energy)
        self.energy_ref_mj = reference_energy_mj(self.actions, self.base_power_mw, self.links)

    @property
    def variants(self) -> tuple[str, ...]:
        return self.qtable.actions

    def action(self, variant: str) -> dict[str, Any]:
        return self.actions[self.qtable.index(variant)]

    def allowed(self) -> np.ndarray:
        """The actions whose accuracy meets ``min_accuracy`` (a read-only array: QTable checks it once)."""
        mask = np.array([a["accuracy"] >= self.min_accuracy for a in self.actions], dtype=bool)
        mask.flags.writeable = False
        return mask

    def state_key(self, co_cpu: float, co_mem: float, rssi_w: float | None, rssi_p: float | None) -> str:
        m = self.model
        return state_key(m.get("conv", 0), m.get("fc", 0), m.get("rc", 0), m.get("macs", 0),
                         co_cpu, co_mem, rssi_w, rssi_p)

    def energy_mj(self, variant: str | int, latency_ms: float, rssi: float | Mapping[str, float | None] | None = None,
                  t_tx_ms: float | None = None, t_rx_ms: float | None = None) -> float:
        a = self.actions[variant] if isinstance(variant, int) else self.action(variant)
        return energy_mj(a, latency_ms, self.base_power_mw, self.links, rssi, t_tx_ms, t_rx_ms)

    def reward(self, variant: str | int, latency_ms: float, energy: float) -> float:
        """Eq. 5 (``reward``) of one inference on ``variant``, energy in units of ``energy_ref_mj``."""
        a = self.actions[variant] if isinstance(variant, int) else self.action(variant)
        return reward(latency_ms, energy, a["accuracy"], self.qos_ms, self.min_accuracy, self.qtable.hyper,
                      self.energy_ref_mj)

    # -- JSON
    def to_json(self) -> dict[str, Any]:
        return {
            "schema": POLICY_SCHEMA,
            "model": dict(self.model),
            "qos_ms": self.qos_ms,
            "min_accuracy": self.min_accuracy,
            "base_power_mw": self.base_power_mw,
            "links": {k: v.to_json() for k, v in sorted(self.links.items())},
            "actions": [dict(a) for a in self.actions],
            "qtable": self.qtable.to_json(),
        }

    def dumps(self) -> bytes:
        """The file's bytes as ``save`` writes them."""
        return _dump(self.to_json())

    @classmethod
    def from_json(cls, doc: Any, source: str = "policy") -> "Policy":
        if not isinstance(doc, dict):
            raise PolicyError(f"{source}: expected a JSON object ({POLICY_SCHEMA}); the file is damaged, recompile")
        if doc.get("schema") != POLICY_SCHEMA:
            raise PolicyError(f"{source}: schema: expected {POLICY_SCHEMA!r}, got {doc.get('schema')!r}; "
                              "not an AutoScale policy hetcc wrote, recompile")
        model = doc.get("model", {})
        if not isinstance(model, dict):
            raise PolicyError(f"{source}: model: expected an object of the model's features; the file is damaged")
        for k in ("conv", "fc", "rc", "macs"):
            _number(model, k, f"{source}: model", minimum=0.0, optional=True)
        actions = doc.get("actions")
        if not isinstance(actions, list) or not actions:
            raise PolicyError(f"{source}: actions: expected a non-empty array; the file is damaged, recompile")
        acts = [_check_action(a, i, source) for i, a in enumerate(actions)]
        links_doc = doc.get("links") or {}
        if not isinstance(links_doc, dict):
            raise PolicyError(f"{source}: links: expected an object link name -> tables; the file is damaged")
        links = {str(k): _link_from_json(v, f"{source}: links.{k}") for k, v in links_doc.items()}
        qt_doc = doc.get("qtable")
        if qt_doc is None:  # no trained table shipped: learn from scratch
            qtable = QTable([a["variant"] for a in acts], target=str(doc.get("target", "")))
        else:
            qtable = QTable.from_json(qt_doc, f"{source}: qtable")
        qos_ms = _number(doc, "qos_ms", source, minimum=0.0, optional=True, default=50.0)
        if qos_ms <= 0:
            raise PolicyError(f"{source}: qos_ms: expected a QoS target above 0 ms, got {qos_ms!r}; the file is "
                              "damaged, recompile")
        return cls(model, acts, qtable,
                   qos_ms=qos_ms,
                   min_accuracy=_number(doc, "min_accuracy", source, minimum=0.0, maximum=1.0, optional=True),
                   base_power_mw=_number(doc, "base_power_mw", source, minimum=0.0, optional=True),
                   links=links, source=source)

    def save(self, path: str | os.PathLike) -> str:
        """Write the policy to ``path`` atomically; returns the sha256 of what was written."""
        data = self.dumps()
        write_atomic(path, data)
        return hashlib.sha256(data).hexdigest()

    @classmethod
    def load(cls, path: str | os.PathLike, sha256: str | None = None) -> "Policy":
        """Read a policy file; with ``sha256`` (the manifest's ``policy.sha256``) its bytes must
        hash to it. A missing, tampered or malformed file is one PolicyError line naming it."""
        path = Path(path)
        data = _read_bytes(path, "policy")
        if sha256 is not None:
            got = hashlib.sha256(data).hexdigest()
            if got != sha256:
                raise PolicyError(f"{path}: sha256 {got[:12]}… does not match the manifest's {sha256[:12]}…; "
                                  "the policy file was changed after compiling, recompile (or restore it)")
        return cls.from_json(_parse(data, str(path)), str(path))
