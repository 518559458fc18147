"""Every model's cost tables at a parameter vector, the numbers ``cost_tables`` gives model by
model, for less: ``StackedTables`` stacks the layers of the models that share feature columns and
calls ``cost_tables`` once for all of them, and recomputes only the states whose numbers moved.

Why this is exact: every cost-table cell is a function of its layer's features and its state's
``DeviceParams`` row alone (elementwise arithmetic, a sum over op classes per cell), so the rows
of a stacked call are the per-model tables and a column recomputed on a subset of the states is
the column of a full call. One thing is not per state: ``cost_tables`` adds a link's terms (zero
for a local device) to every state when some state has a link, so a subset recomputed on such a
board always holds a state with a link. A fit's Jacobian moves one parameter at a time, which
moves one device's states: the columns of the others are the reference's, copied.

``Snapshot.column`` names what a slice's cost on each state reads by what that is computed from
(the state, its ``DeviceParams`` row, whether the board has a link, the base power): equal names,
equal costs, so a slice's cost can be kept across parameter vectors under that name
(``Calibration``'s slice costs).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from hetcc.planners.hardware import TABLES, DeviceParams, cost_tables
from hetcc.planners.problem import Communication, Cost, LayerFeatures, PlanningProblem, StateTable

#: the per-state fields of DeviceParams (an [S] or [S, C] array each)
STATE_FIELDS = tuple(f.name for f in dataclasses.fields(DeviceParams) if f.name not in ("device", "base_power_mw"))
#: the arrays ``cost_tables`` returns per layer and state, communication's four after the tables
ARRAYS = (*TABLES, "legal", "comm_in_ms", "comm_out_ms", "comm_in_mj", "comm_out_mj")
#: full computations kept as references for the partial ones
REFERENCES = 4


def state_rows(params: DeviceParams) -> list[bytes]:
    """Each state's DeviceParams row as bytes (equal bytes, equal numbers)."""
    S = len(params)
    rows = np.concatenate([np.asarray(getattr(params, f), dtype=np.float64).reshape(S, -1) for f in STATE_FIELDS],
                          axis=1)
    return [params.device[s].encode("utf-8") + b"\0" + rows[s].tobytes() for s in range(S)]


def subset_params(params: DeviceParams, states: Sequence[int]) -> DeviceParams:
    """``params`` restricted to ``states`` (in that order)."""
    idx = np.asarray(states, dtype=np.int64)
    return DeviceParams(device=tuple(params.device[int(s)] for s in idx), base_power_mw=params.base_power_mw,
                        **{f: np.asarray(getattr(params, f))[idx] for f in STATE_FIELDS})


def _arrays(t: dict) -> dict[str, np.ndarray]:
    comm = t["communication"]
    return {**{k: t[k] for k in TABLES}, "legal": t["legal"], "comm_in_ms": comm.in_ms, "comm_out_ms": comm.out_ms,
            "comm_in_mj": comm.in_mj, "comm_out_mj": comm.out_mj}


@dataclass
class _Group:
    """Models sharing feature columns: their layers stacked, row offsets per model."""

    members: list[int]
    offsets: list[int]
    features: Any
    legal: np.ndarray


@dataclass
class _Reference:
    keys: list[bytes]
    link: bool
    arrays: list[dict[str, np.ndarray]]       # per group


@dataclass(frozen=True)
class Snapshot:
    """The tables at one parameter vector: ``model(i)`` gives model i's (a dict as ``cost_tables``
    returns, views into the stacked arrays); ``slice_cost(i, first, last, state)`` is what model
    i's PlanningProblem charges the slice; ``column[s]``: an id for what that reads on state s (its
    column of every model's tables and the base power: equal ids, equal slice costs);
    ``base_power_mw``: the board's."""

    column: tuple[int, ...]
    base_power_mw: float
    capacity_bytes: np.ndarray
    arrays: list[dict[str, np.ndarray]]
    where: list[tuple[int, int, int]]          # model -> (group, first row, rows)
    states: StateTable
    stacked: dict[int, PlanningProblem] = dataclasses.field(default_factory=dict)

    def model(self, i: int) -> dict[str, Any]:
        g, o, n = self.where[i]
        a = self.arrays[g]
        out: dict[str, Any] = {k: a[k][o:o + n] for k in (*TABLES, "legal")}
        out["communication"] = Communication(*(a[k][o:o + n] for k in ARRAYS[-4:]))
        return out

    def slice_cost(self, i: int, first: int, last: int, state: int) -> Cost:
        """``PlanningProblem.slice_cost`` of model i's layers first..last on ``state``, charged by one
        problem over the stacked layers of its group: a slice reads its own rows of the tables (the
        same numbers, laid out as in model i's own arrays) and the base power, nothing else."""
        g, o, n = self.where[i]
        if not 0 <= first <= last < n:
            raise IndexError(f"slice {first}..{last} is outside the model's {n} layers")
        p = self.stacked.get(g)
        if p is None:
            a = self.arrays[g]
            p = self.stacked[g] = PlanningProblem(
                **{k: a[k] for k in TABLES}, legal=a["legal"], param_bytes=np.zeros(a["legal"].shape[0], np.int64),
                capacity_bytes=self.capacity_bytes, base_power_mw=self.base_power_mw, states=self.states,
                name="stacked models")
        return p.slice_cost(o + first, o + last, state)


class StackedTables:
    """The cost tables of several models (``features`` and ``legal``, [L, S] before capacity, one
    per model) on ``states`` at any ``DeviceParams``: ``at(params)`` (see the module docstring)."""

    def __init__(self, features: Sequence[Any], legal: Sequence[np.ndarray], states: StateTable) -> None:
        self.states = states
        groups: dict[Any, list[int]] = {}
        for i, f in enumerate(features):
            # models whose features are LayerFeatures of the same columns stack; any other stands alone
            groups.setdefault(f.names if isinstance(f, LayerFeatures) else ("model", i), []).append(i)
        self.groups: list[_Group] = []
        self.where: list[tuple[int, int, int]] = [(0, 0, 0)] * len(features)
        for g, members in enumerate(groups.values()):
            sizes = [int(np.asarray(legal[i]).shape[0]) for i in members]
            offsets = [int(o) for o in np.cumsum([0, *sizes])[:-1]]
            if len(members) == 1:
                feats = features[members[0]]
            else:
                feats = LayerFeatures(features[members[0]].names, np.concatenate([features[i].values for i in members]))
            self.groups.append(_Group(members, offsets, feats,
                                      np.concatenate([np.asarray(legal[i], dtype=bool) for i in members])))
            for i, o, n in zip(members, offsets, sizes):
                self.where[i] = (g, o, n)
        self.references: list[_Reference] = []
        self.ids: dict[tuple[int, bytes, bool, bytes], int] = {}
        self.next_id = 0                                    # never reused: an id names one column for good

    def _column_ids(self, keys: list[bytes], link: bool, base: bytes) -> tuple[int, ...]:
        if len(self.ids) > 100_000:                         # a bound on a long fit's memory, nothing else
            self.ids.clear()
        out = []
        for s, k in enumerate(keys):
            i = self.ids.get((s, k, link, base))
            if i is None:
                i = self.ids[s, k, link, base] = self.next_id
                self.next_id += 1
            out.append(i)
        return tuple(out)

    def at(self, params: DeviceParams) -> Snapshot:
        """The tables at ``params``: the columns that differ from the closest reference (a recent
        full computation) recomputed, the others copied; more than half of them: all, and that
        computation becomes a reference."""
        keys = state_rows(params)
        has_link = ~np.isnan(np.asarray(params.link_bandwidth_mbps, dtype=np.float64))
        link = bool(has_link.any())
        S = len(keys)
        best, changed = None, list(range(S))
        for ref in self.references:
            if ref.link != link or len(ref.keys) != S:
                continue
            diff = [s for s in range(S) if ref.keys[s] != keys[s]]
            if len(diff) < len(changed) or best is None:
                best, changed = ref, diff
        if best is not None and 2 * len(changed) <= S:
            arrays = best.arrays
            if changed:
                cols = list(changed)
                if link and not has_link[cols].any():      # the link terms' code path, as in a full call
                    cols.append(int(np.flatnonzero(has_link)[0]))
                sub = subset_params(params, cols)
                arrays = []
                for grp, old in zip(self.groups, best.arrays):
                    t = _arrays(cost_tables(grp.features, sub, grp.legal[:, cols]))
                    new = {}
                    for k in ARRAYS:
                        a = np.array(old[k])
                        a[:, cols] = t[k]
                        new[k] = a
                    arrays.append(new)
        else:
            arrays = [_arrays(cost_tables(grp.features, params, grp.legal)) for grp in self.groups]
            self.references = [_Reference(keys, link, arrays), *self.references][:REFERENCES]
        base = float(params.base_power_mw)
        return Snapshot(column=self._column_ids(keys, link, np.float64(base).tobytes()), base_power_mw=base,
                        capacity_bytes=np.asarray(params.capacity_bytes, dtype=np.float64), arrays=arrays,
                        where=self.where, states=self.states)


__all__ = ["ARRAYS", "REFERENCES", "STATE_FIELDS", "Snapshot", "StackedTables", "state_rows", "subset_params"]
