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

import gymnasium as gym
import numpy as np

from ...errors import InfeasibleError
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

    def descend(self, max_moves: int = 10_000, out_of_time=lambda: False) -> int:
        """Greedy descent from the current state over the same actions: while a valid action
        leads to a state that meets the limits with a lower objective value, take the best such
        action. Returns the number of moves taken (the state is left at the local optimum)."""
        obj = self.objective
        T, E = self.totals()
        current = float(obj.value(T, E)) if obj.feasible(T, E) else np.inf
        moves = 0
        while moves < max_moves and not out_of_time():
            first, state, mask = self.first, self.state, self.action_mask()
            best_action, best_value = -1, current * (1 - 1e-12)
            for action in np.flatnonzero(mask):
                self.apply(int(action))          # builds new arrays: the current ones stay intact
                T, E = self.totals()
                if obj.feasible(T, E):
                    v = float(obj.value(T, E))
                    if v < best_value:
                        best_action, best_value = int(action), v
                self.first, self.state, self._mask = first, state, mask
            if best_action < 0:
                break
            self.apply(best_action)
            current = best_value
            moves += 1
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
