"""The AutoScale policy runner: ``Executor(dir, policy=True)`` (or ``hetcc run DIR --policy``)
picks the variant of every inference with the artifact's Q-table and learns from what it measured.

Per inference (AutoScale Alg. 1):

1. observe the state (``hetcc.runtime.observe``: co-runner CPU and memory, the two signals; the
   model's Table 1 features come from the policy file) — after the first inference this is the
   S' observed at the end of the previous one;
2. choose a variant: epsilon-greedy over the policy's actions whose accuracy meets the policy's
   ``min_accuracy``; two departures from Alg. 1, each an option: a state met for the first time
   starts from the values of the nearest learned state of the same model (``unseen``; Alg. 1
   starts it at random, so greedy choice would try every variant there once, an offload at a weak
   signal included), and an exploring step draws only among the variants whose Q-value is within
   ``explore_within`` reference energies of the best (what is known to be far worse is not tried
   again at random);
3. run it (``Executor.run(feeds, variant=...)``) and measure its latency (wall clock);
4. estimate its energy (Eq. 1-4 from the action table at the observed signal, with the offload's
   measured transfer times when the executor reports them), or measure it with a readable power
   meter (``hetcc.runtime.power``) when the machine has one;
5. reward (Eq. 5), observe S', update Q(S, A) (learning rate and discount from the file unless
   overridden);
6. persist the table (every ``persist`` inferences and on ``close``; a failed write during the
   run is one warning and is tried again at the next, the inference stands; ``close`` raises it): the new policy file is
   written under a new, content-addressed name (``policy/autoscale-<sha256[:16]>.json``), then
   ``manifest.json`` is rewritten atomically with that file and its sha256, then the old file is
   removed. A crash at any point leaves a manifest whose policy file exists with the listed
   sha256; a file left over (written but never listed, or listed before and not yet removed) is
   removed when the next runner opens the artifact.

A variant that fails (an exception while opening or running it: a server down, a timeout, a slice
error) gets the ``penalty`` reward, and the inference still returns: the best local variant runs
instead (the highest Q-value of the state among the local allowed variants, the fastest predicted
when none was tried) and the decision says so (``fallback``). Bad feeds (``InputError``) are the
caller's and are raised.

One runner per artifact at a time: an exclusive ``flock`` on the artifact directory, held from
open to close (a second runner is a one-line PolicyError).
"""
from __future__ import annotations

import dataclasses
import errno
import hashlib
import json
import logging
import math
import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from .autoscale import Hyper, Policy, write_atomic
from .errors import ManifestError, PolicyError, RemoteSliceError, SliceRunError
from .manifest import MANIFEST_NAME, FileRef, read_manifest, slice_path
from .observe import Observation, Observer

logger = logging.getLogger(__name__)

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX
    fcntl = None  # type: ignore[assignment]

__all__ = ["PolicyOptions", "PolicyRunner", "Decision", "parse_policy_options", "POLICY_FILE_PATTERN"]

#: the names the runner gives the policy files it writes (and may remove when left over)
POLICY_FILE_PATTERN = re.compile(r"^autoscale(-[0-9a-f]{16})?\.json$")
_TEMP_PATTERN = re.compile(r"^\.autoscale(-[0-9a-f]{16})?\.json\.tmp-[A-Za-z0-9_]+$")


@dataclass(frozen=True)
class PolicyOptions:
    """How a policy run behaves (``--policy-option KEY=VALUE``; None: the policy file's value)."""

    learning_rate: float | None = field(default=None, metadata={"doc": "Alg. 1's learning rate (alias lr)"})
    discount: float | None = field(default=None, metadata={"doc": "Alg. 1's discount factor"})
    epsilon: float | None = field(default=None, metadata={"doc": "exploration probability (0: always the best)"})
    alpha: float | None = field(default=None, metadata={"doc": "Eq. 5's weight of the QoS slack"})
    beta: float | None = field(default=None, metadata={"doc": "Eq. 5's weight of the accuracy"})
    seed: int = field(default=0, metadata={"doc": "seed of the exploration draws"})
    learn: bool = field(default=True, metadata={"doc": "update the Q-table (0: use it as it is)"})
    persist: int = field(default=1, metadata={"doc": "write the table every N inferences (0: only at the end)"})
    penalty: float | None = field(default=None, metadata={
        "doc": "reward of a variant that failed (default: the reward of 10x the QoS target at 10x the largest "
               "predicted energy, at most -100)"})
    trace_by: str = field(default="inference", metadata={"doc": "read the RSSI trace per 'inference' or by 'time'"})
    mem_baseline: bool = field(default=False, metadata={
        "doc": "count co-runner memory from what others used at the start (1) instead of in all (0)"})
    meter: bool = field(default=True, metadata={"doc": "use a readable power meter when there is one"})
    trace: str | None = field(default=None, metadata={"doc": "the signal trace CSV t,wifi_dbm,p2p_dbm (--trace)"})
    unseen: str = field(default="nearest", metadata={
        "doc": "where a state met for the first time starts: the values of the nearest learned state of the "
               "model ('nearest') or Alg. 1's random values ('random')"})
    explore_within: float = field(default=1.0, metadata={
        "doc": "explore only the variants whose Q-value is within this many reference energies of the state's "
               "best ('all': any variant, as Alg. 1)"})

    def hyper_overrides(self) -> dict[str, float]:
        return {k: getattr(self, k) for k in ("learning_rate", "discount", "epsilon", "alpha", "beta")
                if getattr(self, k) is not None}


_ALIASES = {"lr": "learning_rate", "gamma": "learning_rate", "mu": "discount", "eps": "epsilon"}


def parse_policy_options(items: Sequence[str], base: PolicyOptions | None = None) -> PolicyOptions:
    """``["lr=0.5", "epsilon=0", ...]`` -> PolicyOptions; one-line PolicyError naming the item."""
    fields = {f.name: f for f in dataclasses.fields(PolicyOptions)}
    known = ", ".join(sorted(fields) + sorted(_ALIASES))
    values: dict[str, Any] = {}
    for item in items:
        key, sep, raw = str(item).partition("=")
        key = _ALIASES.get(key.strip(), key.strip())
        raw = raw.strip()
        if not sep or key not in fields:
            raise PolicyError(f"--policy-option {item!r}: expected KEY=VALUE with KEY one of {known}")
        f = fields[key]
        try:
            if f.name in ("seed", "persist"):
                v: Any = int(raw)
                if v < 0:
                    raise ValueError
            elif f.name in ("learn", "mem_baseline", "meter"):
                if raw.lower() not in ("0", "1", "true", "false", "yes", "no"):
                    raise ValueError
                v = raw.lower() in ("1", "true", "yes")
            elif f.name == "trace":
                v = raw or None
            elif f.name == "trace_by":
                if raw not in ("inference", "time"):
                    raise ValueError
                v = raw
            elif f.name == "unseen":
                if raw not in ("nearest", "random"):
                    raise ValueError
                v = raw
            elif f.name == "explore_within":
                v = math.inf if raw.lower() in ("all", "inf") else float(raw)
                if not v > 0:       # also NaN
                    raise ValueError
            else:
                v = float(raw)
                if not math.isfinite(v):
                    raise ValueError
        except ValueError:
            what = {"seed": "an integer >= 0", "persist": "an integer >= 0", "learn": "0 or 1",
                    "mem_baseline": "0 or 1", "meter": "0 or 1", "trace_by": "'inference' or 'time'",
                    "unseen": "'nearest' or 'random'", "explore_within": "a number > 0 or 'all'"}
            raise PolicyError(f"--policy-option {item!r}: {key} takes {what.get(f.name, 'a finite number')}") from None
        values[key] = v
    opts = dataclasses.replace(base or PolicyOptions(), **values)
    try:
        Hyper().replace(**opts.hyper_overrides())
    except PolicyError as e:
        raise PolicyError(f"--policy-option: {e}") from None
    return opts


@dataclass
class Decision:
    """One inference under the policy: the state, the variant chosen (and whether by exploration),
    what ran (``ran``: the fallback when the chosen one failed), the measured latency, the energy
    and reward, and the decision's own cost in microseconds."""

    index: int
    state: str
    variant: str
    explored: bool
    ran: str
    latency_ms: float
    energy_mj: float
    reward: float
    next_state: str
    observation: Observation
    fallback: str | None = None
    error: str | None = None
    decide_us: float = 0.0      # observe + choose
    update_us: float = 0.0      # reward + Q update
    persist_us: float = 0.0     # writing the table (when it was written after this inference)
    decide_cpu_us: float = 0.0  # the same two as this thread's CPU time: what they cost whatever else runs
    update_cpu_us: float = 0.0

    def to_json(self) -> dict[str, Any]:
        out = {"index": self.index, "state": self.state, "variant": self.variant, "explored": self.explored,
               "ran": self.ran, "latency_ms": round(self.latency_ms, 4), "energy_mj": round(self.energy_mj, 4),
               "reward": round(self.reward, 4), "next_state": self.next_state,
               "observation": self.observation.to_json(), "decide_us": round(self.decide_us, 2),
               "update_us": round(self.update_us, 2), "persist_us": round(self.persist_us, 2),
               "decide_cpu_us": round(self.decide_cpu_us, 2), "update_cpu_us": round(self.update_cpu_us, 2)}
        if self.fallback is not None:
            out["fallback"] = self.fallback
            out["error"] = self.error
        return out


def _link_signal(link_kind: str, link_name: str, obs: Observation) -> float | None:
    """The observed signal of a link: peer-to-peer (Wi-Fi Direct, Bluetooth) or Wi-Fi / cellular."""
    text = f"{link_kind} {link_name}".lower()
    return obs.rssi_p if any(w in text for w in ("direct", "p2p", "bluetooth", "peer")) else obs.rssi_w


def _variant_failure(exc: BaseException) -> bool:
    """Whether an exception from running a variant is the variant failing (penalised, fallen back
    from): a slice that failed or timed out, a remote slice that could not be offloaded, anything
    outside the manifest's errors (onnxruntime's, the OS's). Bad feeds (InputError) and a damaged
    or tampered artifact (any other ManifestError: a sha256 mismatch, a missing file) are raised."""
    if isinstance(exc, (SliceRunError, RemoteSliceError)):
        return True
    return not isinstance(exc, ManifestError)


def _cpu_clock() -> float:
    """This thread's CPU time in seconds (a decision's cost, not counting time it was preempted)."""
    return time.thread_time()


class PolicyRunner:
    """Runs an Executor's model under its artifact's AutoScale policy (module doc)."""

    def __init__(self, executor: Any, options: PolicyOptions | None = None, *, trace: Any = None,
                 observer: Observer | None = None) -> None:
        self.executor = executor
        self.options = options = options or PolicyOptions()
        if executor.kind != "model":
            raise PolicyError(f"{executor.artifact_dir}: a workload artifact has no policy; run a model artifact "
                              "compiled with --planner autoscale")
        self.root = Path(executor.artifact_dir)
        self._lock_fd: int | None = None
        self._lock()
        try:
            self._open(options, trace, observer)
        except BaseException:
            self._unlock()
            raise

    # -- opening
    def _open(self, options: PolicyOptions, trace: Any, observer: Observer | None) -> None:
        manifest, _root, shown = read_manifest(self.root)   # re-read under the lock: the current policy
        self.manifest_shown = shown
        if manifest.policy is None:
            raise PolicyError(f"{shown}: no policy file; compile with --planner autoscale (or pass "
                              "emit_artifact(..., policy=FILE)) to run with --policy")
        self.policy_ref = manifest.policy
        self.policy_path = slice_path(self.root, manifest.policy.file, shown, "policy.file")
        self.policy = Policy.load(self.policy_path, manifest.policy.sha256)
        missing = [v for v in self.policy.variants if v not in manifest.variants]
        if missing:
            raise PolicyError(f"{self.policy_path}: action {missing[0]!r} is not a variant of the artifact "
                              f"({', '.join(manifest.variants)}); recompile")
        self._cleanup()
        self.hyper = self.policy.qtable.hyper.replace(**options.hyper_overrides())
        self.policy.qtable.unseen = options.unseen
        self.allowed = self.policy.allowed()
        if not self.allowed.any():
            raise PolicyError(f"{self.policy_path}: no variant meets min_accuracy {self.policy.min_accuracy}; "
                              "recompile with a lower --min-accuracy")
        self.rng = np.random.default_rng(options.seed)
        self.observer = observer or Observer(trace if trace is not None else options.trace, options.trace_by,
                                             mem_baseline=options.mem_baseline)
        self.meter = None
        self.meter_name = None
        if options.meter:
            from .power import find_power_meter
            self.meter, _why = find_power_meter()
            self.meter_name = self.meter.name if self.meter is not None else None
        if options.penalty is not None:
            self.penalty = float(options.penalty)
        else:   # worse than any inference that ran: 10x the QoS target at 10x the largest predicted energy
            pol = self.policy
            big = 10.0 * max(pol.energy_mj(i, max(a["compute_ms"], pol.qos_ms)) for i, a in enumerate(pol.actions))
            worst = min(pol.reward(int(i), 10.0 * pol.qos_ms, big) for i in np.flatnonzero(self.allowed))
            self.penalty = min(-100.0, worst)
        self.index = 0
        self.decisions: list[Decision] = []
        self.last: Decision | None = None
        self.persists = 0
        self._state: tuple[str, Observation] | None = None
        self._observe_us = self._observe_cpu_us = 0.0
        self._dirty = 0
        self._closed = False
        self.fallbacks = 0
        self.persist_error: str | None = None   # the latest failed write (one warning; close() raises it)
        self._signals: dict[str, float] = {}

    def _lock(self) -> None:
        if fcntl is None:
            return
        fd = os.open(str(self.root), os.O_RDONLY)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as e:
            os.close(fd)
            if e.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise PolicyError(f"{self.root}: another policy run is updating this artifact's Q-table; wait for "
                                  "it to finish (or run without --policy)") from None
            raise PolicyError(f"{self.root}: cannot lock the artifact ({e.strerror or e})") from None
        self._lock_fd = fd

    def _unlock(self) -> None:
        if self._lock_fd is not None:
            os.close(self._lock_fd)     # closing releases the flock
            self._lock_fd = None

    def _cleanup(self) -> None:
        """Remove policy files a crashed runner left: written by us (our names, our schema), not
        the one the manifest lists; and our temporaries."""
        folder = self.policy_path.parent
        try:
            entries = list(folder.iterdir())
        except OSError:
            return
        for p in entries:
            if p == self.policy_path or p.is_symlink() or not p.is_file():
                continue
            ours = bool(_TEMP_PATTERN.match(p.name))
            if not ours and POLICY_FILE_PATTERN.match(p.name):
                try:
                    with open(p, "rb") as f:
                        head = f.read(256)
                except OSError:
                    continue
                ours = b'"schema": "hetcc.autoscale/1"' in head
            if ours:
                try:
                    p.unlink()
                except OSError:
                    pass

    # -- one inference
    def _fallback(self, key: str, failed: int) -> int | None:
        q = self.policy.qtable
        local = [i for i, a in enumerate(self.policy.actions)
                 if not a.get("remote") and self.allowed[i] and i != failed]
        if not local:
            return None
        visits = q.visits(key)
        values = q.values(key)
        tried = [i for i in local if visits[i] > 0]
        if tried:
            return max(tried, key=lambda i: (values[i], -i))
        return min(local, key=lambda i: (self.policy.actions[i]["compute_ms"], i))

    def _set_signal(self, obs: Observation) -> None:
        """Tell an executor that shapes offload traffic the signal seen now (when it can)."""
        setter = getattr(self.executor, "set_signal", None)
        if setter is None:
            return
        for name, link in self.policy.links.items():
            dbm = _link_signal(link.kind, name, obs)
            if dbm is None or self._signals.get(name) == dbm:
                continue
            try:
                setter(name, dbm)
            except ValueError:      # a link the artifact's target does not have: nothing to shape
                pass
            self._signals[name] = dbm

    def _run_variant(self, feeds: Mapping[str, Any], variant: str) -> tuple[dict, float, float | None, tuple]:
        """(outputs, wall ms, metered mW or None, (t_tx, t_rx) measured or (None, None))."""
        meter = self.meter
        if meter is not None:
            meter.start()
        t0 = time.perf_counter()
        out = self.executor.run(feeds, variant=variant)
        ms = (time.perf_counter() - t0) * 1e3
        mw = None
        if meter is not None:
            meter.sample()
            mw = meter.stop()
            if not math.isfinite(mw):
                mw = None
        pipe = self.executor.pipeline(variant)
        offloads = getattr(pipe, "last_offloads", None)
        if offloads is None and getattr(pipe, "last_offload", None) is not None:
            offloads = [pipe.last_offload]
        times: tuple = (None, None)
        if offloads:
            times = (sum(float(o.t_tx_ms) for o in offloads), sum(float(o.t_rx_ms) for o in offloads))
        return out, ms, mw, times

    def _energy(self, a: int, ms: float, mw: float | None, times: tuple, obs: Observation) -> float:
        if mw is not None:
            return mw * ms / 1e3
        action = self.policy.actions[a]
        rssi = None
        if action.get("remote"):
            name = str(action.get("link"))
            link = self.policy.links.get(name)
            rssi = _link_signal(link.kind if link else "", name, obs)
        return self.policy.energy_mj(a, ms, rssi=rssi, t_tx_ms=times[0], t_rx_ms=times[1])

    def run(self, feeds: Mapping[str, Any]) -> dict[str, Any]:
        """One inference under the policy; its Decision is ``last`` (and appended to ``decisions``)."""
        if self._closed:
            raise PolicyError(f"{self.root}: the policy run was closed; open a new Executor(policy=True)")
        q, pol, hyper = self.policy.qtable, self.policy, self.hyper
        t0, c0 = time.perf_counter(), _cpu_clock()
        if self._state is None:
            obs = self.observer.observe(self.index)
            self._state = (pol.state_key(obs.co_cpu, obs.co_mem, obs.rssi_w, obs.rssi_p), obs)
            t_obs, c_obs = time.perf_counter(), _cpu_clock()
            self._observe_us, self._observe_cpu_us = (t_obs - t0) * 1e6, (c_obs - c0) * 1e6
            t0, c0 = t_obs, c_obs
        key, obs = self._state
        draw = self.rng.random() if self.options.learn else 1.0
        explored = draw < hyper.epsilon
        if explored:
            idx = q.explorable(key, self.allowed, self.options.explore_within)
            a = int(idx[self.rng.integers(len(idx))])
        else:
            a = q.choose(key, self.rng, self.allowed, explore=False)
        decide_us = self._observe_us + (time.perf_counter() - t0) * 1e6
        decide_cpu_us = self._observe_cpu_us + (_cpu_clock() - c0) * 1e6
        variant = pol.variants[a]
        self._set_signal(obs)
        fallback = error = None
        ran = a
        try:
            out, ms, mw, times = self._run_variant(feeds, variant)
        except Exception as exc:  # noqa: BLE001 - a failing variant is penalised, the inference still returns
            if not _variant_failure(exc):
                raise
            error = " ".join(str(exc).split()) or type(exc).__name__
            b = self._fallback(key, a)
            if b is None:
                raise
            fallback = pol.variants[b]
            try:
                out, ms, mw, times = self._run_variant(feeds, fallback)
            except Exception as exc2:  # noqa: BLE001
                if not _variant_failure(exc2):
                    raise
                raise PolicyError(f"{self.root}: variant {variant!r} failed ({error}) and the fallback "
                                  f"{fallback!r} failed too ({' '.join(str(exc2).split())})") from exc2
            ran = b
            self.fallbacks += 1
        # S' (observed now, used as the next inference's S)
        t1, c1 = time.perf_counter(), _cpu_clock()
        nobs = self.observer.observe(self.index + 1)
        nkey = pol.state_key(nobs.co_cpu, nobs.co_mem, nobs.rssi_w, nobs.rssi_p)
        t2, c2 = time.perf_counter(), _cpu_clock()
        self._observe_us, self._observe_cpu_us = (t2 - t1) * 1e6, (c2 - c1) * 1e6
        energy = self._energy(ran, ms, mw, times, obs)
        if fallback is not None:
            r = self.penalty
        else:
            r = pol.reward(a, ms, energy)
        if self.options.learn:
            q.update(key, a, r, nkey, self.allowed, hyper=hyper)
            if fallback is not None:   # what ran instead is learned from too
                q.update(key, ran, pol.reward(ran, ms, energy), nkey, self.allowed, hyper=hyper)
            self._dirty += 1
        update_us, update_cpu_us = (time.perf_counter() - t2) * 1e6, (_cpu_clock() - c2) * 1e6
        self._state = (nkey, nobs)
        d = Decision(self.index, key, variant, explored, pol.variants[ran], ms, energy, r, nkey, obs,
                     fallback, error, decide_us, update_us, decide_cpu_us=decide_cpu_us, update_cpu_us=update_cpu_us)
        self.index += 1
        persist = self.options.persist
        if persist and self._dirty >= persist:
            t3 = time.perf_counter()
            try:
                self.save()
            except PolicyError as e:   # the inference stands; the table stays in memory, tried again later
                if self.persist_error is None:
                    logger.warning("%s", e)
                self.persist_error = str(e)
            d.persist_us = (time.perf_counter() - t3) * 1e6
        self.decisions.append(d)
        self.last = d
        return out

    def evaluate(self, feeds: Mapping[str, Any], variant: str, observation: Observation | None = None
                 ) -> dict[str, Any]:
        """Run ``variant`` once outside the policy (no choice, no update): its measured latency,
        energy and reward as the policy would count them under ``observation`` (default: the
        state observed last). A benchmark's Opt oracle runs every variant this way."""
        a = self.policy.qtable.index(variant)
        if observation is None:
            observation = self._state[1] if self._state is not None else self.observer.observe(self.index)
        self._set_signal(observation)
        try:
            _out, ms, mw, times = self._run_variant(feeds, variant)
        except Exception as exc:  # noqa: BLE001 - reported, as the policy would see it
            if not _variant_failure(exc):
                raise
            return {"variant": variant, "ok": False, "error": " ".join(str(exc).split()), "reward": self.penalty,
                    "latency_ms": None, "energy_mj": None}
        energy = self._energy(a, ms, mw, times, observation)
        return {"variant": variant, "ok": True, "latency_ms": ms, "energy_mj": energy,
                "reward": self.policy.reward(a, ms, energy), "t_tx_ms": times[0], "t_rx_ms": times[1]}

    # -- persisting
    def save(self) -> str | None:
        """Write the learned table into the artifact now (module doc: new file, manifest, old file
        removed); returns the new sha256 (None when nothing changed)."""
        if not self._dirty:
            return None
        data = self.policy.dumps()
        sha = hashlib.sha256(data).hexdigest()
        old_ref, old_path = self.policy_ref, self.policy_path
        if sha == old_ref.sha256:
            self._dirty = 0
            return None
        folder = old_path.parent
        new_name = f"autoscale-{sha[:16]}.json"
        new_path = folder / new_name
        new_rel = Path(old_ref.file).parent.joinpath(new_name).as_posix()
        mpath = self.root / MANIFEST_NAME
        try:
            with open(mpath, "rb") as f:
                doc = json.loads(f.read().decode("utf-8"))
            if not isinstance(doc, dict) or (doc.get("policy") or {}).get("sha256") != old_ref.sha256:
                raise PolicyError(f"{mpath}: its policy changed while this run held the artifact (recompiled?); "
                                  "not overwriting it: run again")
            write_atomic(new_path, data)                                  # 1. the new file
            doc["policy"] = {"file": new_rel, "sha256": sha}
            write_atomic(mpath, (json.dumps(doc, indent=2, allow_nan=False) + "\n").encode("utf-8"))  # 2.
        except OSError as e:
            raise PolicyError(f"{self.root}: cannot write the learned policy ({e.strerror or e}); the artifact "
                              "keeps the previous table") from None
        if new_path != old_path:                                          # 3. the old file
            try:
                old_path.unlink()
            except OSError:
                pass
        self.policy_ref = FileRef(file=new_rel, sha256=sha)
        self.policy_path = new_path
        self._dirty = 0
        self.persists += 1
        self.persist_error = None
        return sha

    def close(self, save: bool = True) -> None:
        """Persist what was learned (unless ``save`` is False) and release the artifact."""
        if self._closed:
            return
        try:
            if save and self.options.learn:
                self.save()
        finally:
            self._closed = True
            self._unlock()
            closer = getattr(self.observer, "close", None)
            if closer is not None:
                closer()

    def __del__(self) -> None:  # pragma: no cover - best effort
        try:
            self._unlock()
        except Exception:
            pass

    # -- reporting
    def summary(self) -> dict[str, Any]:
        """Counts and means of the decisions so far (what ``hetcc run --policy --json`` prints)."""
        ds = self.decisions

        def stats(values: list[float]) -> dict[str, float] | None:
            if not values:
                return None
            arr = np.asarray(values)
            return {"mean": round(float(arr.mean()), 2), "p50": round(float(np.median(arr)), 2),
                    "p90": round(float(np.percentile(arr, 90)), 2), "max": round(float(arr.max()), 2)}

        chosen: dict[str, int] = {}
        for d in ds:
            chosen[d.ran] = chosen.get(d.ran, 0) + 1
        return {
            "policy": self.policy_ref.file,
            "policy_sha256": self.policy_ref.sha256,
            "inferences": len(ds),
            "fallbacks": self.fallbacks,
            "explored": sum(d.explored for d in ds),
            "variants_run": chosen,
            "hyper": self.hyper.to_json(),
            "unseen": self.options.unseen,
            "explore_within": "all" if math.isinf(self.options.explore_within) else self.options.explore_within,
            "penalty": self.penalty,
            "energy_source": f"meter: {self.meter_name}" if self.meter_name else "model (Eq. 1-4, policy file)",
            "latency_ms": stats([d.latency_ms for d in ds]),
            "energy_mj": stats([d.energy_mj for d in ds]),
            "reward_mean": round(float(np.mean([d.reward for d in ds])), 4) if ds else None,
            "overhead_us": {"decide": stats([d.decide_us for d in ds]), "update": stats([d.update_us for d in ds]),
                            "decide_cpu": stats([d.decide_cpu_us for d in ds]),
                            "update_cpu": stats([d.update_cpu_us for d in ds]),
                            "persist": stats([d.persist_us for d in ds if d.persist_us > 0])},
            "persists": self.persists,
            "persist_error": self.persist_error,
        }
