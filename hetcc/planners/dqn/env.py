"""HERTI's planning environment (Eq. 7-11, Alg. 2) as a ``gymnasium.Env`` over a PlanningProblem.

State (Eq. 7-8): per layer l the vector (sigma, d, f): sigma = 1 when l starts a slice, d the
device of its slice (index into the problem's device list) and f the slice's frequency level
(index into that device's states, lowest first; 0 for a device without DVFS). The observation
is that [L, 3] array flattened, each column scaled to [0, 1].

Action (Eq. 9-10): (l, k) encoded as ``l * 6 + k`` with the six changes

    0 split      a new slice starts at l (l was inside a slice; both halves keep its device)
    1 merge      the slice holding l joins the previous slice (and runs where that one ran)
    2 dev_next   the slice holding l moves to the next device of the list (cyclic), at the
    3 dev_prev   same relative frequency level (the top level stays the top level)
    4 freq_up    the slice's frequency one level up / down (a device without DVFS has none)
    5 freq_down

An action is valid when it changes the state and the resulting slice is legal (ops, dtypes,
memory capacity: ``problem.slice_legal``); ``info["action_mask"]`` lists the valid ones. Agents
pick among valid actions (a masked argmax, never a penalty); a step with an invalid action, which
agents that ignore the mask may send, leaves the state as it is and sets ``info["invalid_action"]``. Reward (Eq. 11): -sqrt(Gamma) when the state meets the deadline, else -penalty
(Phi = 100), Gamma the objective's metric of the new state from the shared cost model,
normalised by that of the initial state (so sqrt(Gamma) is about 1 and a plan that meets the
deadline always beats one that misses it, whatever the units: energy in mJ, edp in mJ*ms).
A power cap, when given, is a limit like the deadline.

HERTI's search is one long trajectory (Alg. 1 has no episodes): ``step`` never terminates;
``max_steps`` truncates when set. The initial state is the fastest plan (MOSAIC-P, ``dp`` for
latency): it meets the deadline whenever any plan does.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

import gymnasium as gym
import numpy as np

from hetcc.core.errors import InfeasibleError
from ..metrics import Objective
from ..problem import Plan, PlanningProblem, Slice

CHANGES = ("split", "merge", "dev_next", "dev_prev", "freq_up", "freq_down")
NK = len(CHANGES)
PENALTY = 100.0


@dataclass(frozen=True)
class Layout:
    """The problem's states as (device index, frequency level): ``state[d][f]``."""

    devices: tuple[str, ...]
    state: tuple[tuple[int, ...], ...]
    dev_of: np.ndarray     # [S] device index of each state
    lvl_of: np.ndarray     # [S] frequency level of each state

    @classmethod
    def of(cls, problem: PlanningProblem) -> "Layout":
        st = problem.states
        devices = st.devices
        levels = tuple(tuple(int(s) for s in st.of(d)) for d in devices)
        dev_of = np.zeros(problem.num_states, dtype=np.int64)
        lvl_of = np.zeros(problem.num_states, dtype=np.int64)
        for d, cols in enumerate(levels):
            for f, s in enumerate(cols):
                dev_of[s], lvl_of[s] = d, f
        return cls(devices, levels, dev_of, lvl_of)

    def moved(self, s: int, step: int) -> int:
        """The state on the next (step=1) / previous (-1) device, same relative level."""
        d, f = int(self.dev_of[s]), int(self.lvl_of[s])
        n_from = len(self.state[d])
        d2 = (d + step) % len(self.devices)
        n_to = len(self.state[d2])
        f2 = n_to - 1 if n_from == 1 else int(round(f * (n_to - 1) / (n_from - 1)))
        return self.state[d2][f2]

    def shifted(self, s: int, step: int) -> int | None:
        """The state one frequency level up / down on the same device (None past the ends)."""
        d, f = int(self.dev_of[s]), int(self.lvl_of[s]) + step
        return self.state[d][f] if 0 <= f < len(self.state[d]) else None


def _moves(slices: list) -> Iterator[tuple[int, int, list]]:
    """``descend``'s moves from ``slices`` [(first, last, state)]: (j0, j1, new), slices j0..j1-1
    replaced by ``new``, in which one entry's state is None: it is tried on every state."""
    for j, (f, l, st) in enumerate(slices):
        yield j, j + 1, [(f, l, None)]                                    # re-pick a state
        if j:
            yield j - 1, j + 1, [(slices[j - 1][0], l, None)]              # merge into the one before
        for m in range(f, l):                                              # split, re-pick a half
            yield j, j + 1, [(f, m, None), (m + 1, l, st)]
            yield j, j + 1, [(f, m, st), (m + 1, l, None)]
    for j in range(len(slices) - 1):                                       # move a boundary
        (f0, l0, s0), (_, l1, s1) = slices[j], slices[j + 1]
        for nb in range(f0, l1):                                           # anywhere in the pair
            if nb != l0:
                yield j, j + 2, [(f0, nb, None), (nb + 1, l1, s1)]
                yield j, j + 2, [(f0, nb, s0), (nb + 1, l1, None)]


class SlicingEnv(gym.Env):
    """HERTI's environment; see the module docstring."""

    metadata = {"render_modes": []}

    def __init__(self, problem: PlanningProblem, objective: Objective, *, init: Plan | None = None,
                 penalty: float = PENALTY, max_steps: int | None = None) -> None:
        from ..dp import SliceTables, cell_costs, optimal

        self.problem, self.objective = problem, objective
        self.layout = Layout.of(problem)
        tables = SliceTables(problem, cell_costs(problem))     # every slice's cost, [end, start, state]
        self._T3, self._E3, self._ok = tables.latency(), tables.energy(), tables.ok
        self.penalty = float(penalty)
        self.max_steps = max_steps
        L = problem.num_layers
        if init is None:
            try:
                init = optimal(problem, "latency")
            except InfeasibleError:        # a layer runs only below some device's top level
                init = optimal(problem, "energy")
        self.init_plan = init
        T0, E0 = self.init_plan.latency_ms, self.init_plan.energy_mj
        self.reference = max(float(objective.value(T0, E0)), 1e-12)
        self.observation_space = gym.spaces.Box(0.0, 1.0, shape=(3 * L,), dtype=np.float32)
        self.action_space = gym.spaces.Discrete(NK * L)
        ndev = len(self.layout.devices)
        self._dscale = 1.0 / max(ndev - 1, 1)
        self._fscale = np.array([1.0 / max(len(self.layout.state[d]) - 1, 1) for d in range(ndev)])
        lay = self.layout
        self._moves = np.array([[lay.moved(s, 1), lay.moved(s, -1),
                                 -1 if lay.shifted(s, 1) is None else lay.shifted(s, 1),
                                 -1 if lay.shifted(s, -1) is None else lay.shifted(s, -1)]
                                for s in range(problem.num_states)], dtype=np.int64).reshape(-1, 4)
        self.first = self.state = np.zeros(0, dtype=np.int64)
        self._mask: np.ndarray | None = None
        self.t = 0

    # ---- state <-> plan ------------------------------------------------------------------
    def set_plan(self, plan: Plan) -> None:
        self._mask = None
        self.first = np.array([s.first for s in plan.slices], dtype=np.int64)
        self.state = np.array([s.state for s in plan.slices], dtype=np.int64)

    @property
    def last(self) -> np.ndarray:
        return np.append(self.first[1:] - 1, self.problem.num_layers - 1)

    def slices(self) -> tuple[Slice, ...]:
        return tuple(Slice(int(a), int(b), int(s)) for a, b, s in zip(self.first, self.last, self.state))

    def key(self) -> tuple:
        """A hashable identity of the current state."""
        return (self.first.tobytes(), self.state.tobytes())

    def observation(self) -> np.ndarray:
        L = self.problem.num_layers
        obs = np.zeros((L, 3), dtype=np.float32)
        obs[self.first, 0] = 1.0
        per = np.repeat(np.arange(self.first.size), np.diff(np.append(self.first, L)))
        st = self.state[per]
        d = self.layout.dev_of[st]
        obs[:, 1] = d * self._dscale
        obs[:, 2] = self.layout.lvl_of[st] * self._fscale[d]
        return obs.ravel()

    def totals(self) -> tuple[float, float]:
        ends = self.last + 1
        return float(self._T3[ends, self.first, self.state].sum()), float(self._E3[ends, self.first, self.state].sum())

    def reward(self) -> tuple[float, float, float, bool]:
        T, E = self.totals()
        ok = bool(self.objective.feasible(T, E))
        r = -float(np.sqrt(max(self.objective.value(T, E), 0.0) / self.reference)) if ok else -self.penalty
        return r, T, E, ok

    # ---- actions --------------------------------------------------------------------------
    def targets(self) -> np.ndarray:
        """[n_slices, 4]: the state each slice would get by dev_next, dev_prev, freq_up,
        freq_down (-1: none)."""
        return self._moves[self.state]

    def action_mask(self) -> np.ndarray:
        if self._mask is None:
            self._mask = self._compute_mask()
        return self._mask

    def _compute_mask(self) -> np.ndarray:
        L, n = self.problem.num_layers, self.first.size
        first, last, state = self.first, self.last, self.state
        per_slice = np.zeros((n, NK), dtype=bool)
        if n > 1:   # merge: slice j (j >= 1) joins slice j-1 on j-1's state
            per_slice[1:, 1] = self._ok[last[1:] + 1, first[:-1], state[:-1]]
        tg = self.targets()
        valid = (tg >= 0) & (tg != state[:, None])
        safe = np.where(valid, tg, 0)
        per_slice[:, 2:] = valid & self._ok[last[:, None] + 1, first[:, None], safe]
        lengths = last - first + 1
        mask = np.repeat(per_slice, lengths, axis=0)
        mask[:, 0] = True                 # split: any layer that does not start a slice
        mask[first, 0] = False
        return mask.reshape(L * NK)

    def apply(self, action: int) -> None:
        self._mask = None
        l, k = divmod(int(action), NK)
        j = int(np.searchsorted(self.first, l, side="right") - 1)
        if k == 0:
            self.first = np.insert(self.first, j + 1, l)
            self.state = np.insert(self.state, j + 1, self.state[j])
        elif k == 1:
            self.first = np.delete(self.first, j)
            self.state = np.delete(self.state, j)
        else:
            self.state = self.state.copy()
            self.state[j] = self.targets()[j, k - 2]

    def lift(self, max_moves: int = 10_000) -> bool:
        """From a state that misses the deadline, toward one that meets it: re-pick one slice's
        state at a time (any legal device and level), each time the re-pick that buys the most
        latency per unit of energy spent, until the limits are met or no re-pick is faster.
        Returns whether the limits are met (the state is left at the end point)."""
        obj = self.objective
        for _ in range(max_moves):
            T, E = self.totals()
            if obj.feasible(T, E):
                return True
            if obj.deadline_ms is None or T <= obj.deadline_ms:
                return False          # a power cap alone is not what this repairs
            ends, rows = self.last + 1, np.arange(self.first.size)
            ct, ce = self._T3[ends, self.first], self._E3[ends, self.first]     # [slices, S]: each re-pick
            legal = self._ok[ends, self.first] & np.isfinite(ct) & np.isfinite(ce)
            with np.errstate(invalid="ignore", divide="ignore"):   # illegal cells are inf
                gain = ct[rows, self.state][:, None] - ct                         # latency saved
                cost = np.maximum(ce - ce[rows, self.state][:, None], 1e-12)     # energy spent (>= a floor)
                score = np.where(legal & (gain > 1e-12), gain / cost, -np.inf)
            j, x = divmod(int(np.argmax(score)), score.shape[1])
            if not np.isfinite(score[j, x]):
                return False
            self._mask = None
            self.state = self.state.copy()
            self.state[j] = x
        T, E = self.totals()
        return bool(obj.feasible(T, E))

    def descend(self, max_moves: int = 10_000, out_of_time=lambda: False) -> int:
        """Greedy descent from the current state: while some move leads to a state that meets
        the limits with a lower objective value, take the best one. A move is a short run of the
        six actions: one slice's state re-picked (any device and level: dev and freq actions), a
        slice merged into the one before on any state, a boundary moved anywhere within its two
        slices with either side's state re-picked, or a slice split with either half re-picked. Every
        single action is one of these, so the end state is also a local optimum of the actions.
        Returns the number of moves taken (the state is left at the end point)."""
        obj = self.objective
        T3, E3, ok = self._T3, self._E3, self._ok
        slices = [(int(f), int(l), int(st)) for f, l, st in zip(self.first, self.last, self.state)]

        def cost(sl):
            return sum(float(T3[l + 1, f, st]) for f, l, st in sl), sum(float(E3[l + 1, f, st]) for f, l, st in sl)

        T, E = cost(slices)
        current = float(obj.value(T, E)) if obj.feasible(T, E) else np.inf
        moves = 0
        while moves < max_moves and not out_of_time():
            best, best_value = None, current * (1 - 1e-12)
            for j0, j1, new in _moves(slices):
                k = next(i for i, (_, _, st) in enumerate(new) if st is None)
                fixed = new[:k] + new[k + 1:]
                if not all(ok[b + 1, a, st] for a, b, st in fixed):
                    continue
                old_t, old_e = cost(slices[j0:j1])
                ft, fe = cost(fixed)
                f, l, _ = new[k]
                legal = ok[l + 1, f] & np.isfinite(T3[l + 1, f]) & np.isfinite(E3[l + 1, f])
                for x in np.flatnonzero(legal):
                    t = T - old_t + ft + float(T3[l + 1, f, x])
                    e = E - old_e + fe + float(E3[l + 1, f, x])
                    if obj.feasible(t, e):
                        v = float(obj.value(t, e))
                        if v < best_value:
                            best, best_value = (j0, j1, [*new[:k], (f, l, int(x)), *new[k + 1:]], t, e), v
            if best is None:
                break
            j0, j1, new, T, E = best
            slices[j0:j1] = new
            current = best_value
            moves += 1
        self._mask = None
        self.first = np.array([f for f, _, _ in slices], dtype=np.int64)
        self.state = np.array([st for _, _, st in slices], dtype=np.int64)
        return moves

    # ---- gymnasium API --------------------------------------------------------------------
    def _info(self, T: float, E: float, ok: bool) -> dict:
        return {"action_mask": self.action_mask().copy(), "latency_ms": T, "energy_mj": E, "feasible": ok}

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        self.set_plan((options or {}).get("plan", self.init_plan))
        self.t = 0
        _, T, E, ok = self.reward()
        return self.observation(), self._info(T, E, ok)

    def step(self, action):
        invalid = not self.action_mask()[int(action)]
        if not invalid:
            self.apply(action)
        self.t += 1
        r, T, E, ok = self.reward()
        truncated = self.max_steps is not None and self.t >= self.max_steps
        return self.observation(), r, False, truncated, {**self._info(T, E, ok), "invalid_action": invalid}


__all__ = ["CHANGES", "Layout", "PENALTY", "SlicingEnv"]
