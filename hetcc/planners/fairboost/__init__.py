"""fairboost: FairBoost's multi-DNN manager (Karatzas & Anagnostopoulos): a Rainbow-DQN agent that
maps every block of layers of several models onto the board's devices for throughput x fairness.

``features`` reads the Eq. 2 layer vectors off a problem; ``vqvae`` encodes them to latent codes;
``env`` is the gymnasium environment over a mix (``hetcc.planners.multi``); ``agent`` the network,
its file and the greedy decision; ``train`` the training loop (``hetcc train fairboost``). This
module stays light (options and the spec only): torch, TorchRL and gymnasium load when the planner
runs. The agent shipped in ``data/`` was trained by ``hetcc train fairboost --target orangepi5``
(its command, seed and sha256 in ``data/fairboost.json``); ``--planner-option agent=PATH`` plans
with another. docs/fairboost-agent.md has the details.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from hetcc.core.errors import UsageError

from ..context import PlanContext
from ..metrics import Objective
from ..problem import WorkloadPlan, WorkloadProblem
from ..registry import PlannerSpec

#: the agent ``fairboost`` plans with unless told otherwise (trained on orangepi5)
DEFAULT_AGENT = Path(__file__).resolve().parent / "data" / "agent.pt"
#: how the manifest names the shipped agent (not this machine's path)
SHIPPED_NAME = "hetcc/planners/fairboost/data/agent.pt"


@dataclass(frozen=True)
class FairBoostOptions:
    agent: str = field(default="", metadata={"doc": "agent file (hetcc train fairboost -o FILE); empty: the shipped "
                                                    "agent, trained on orangepi5"})
    polish: bool = field(default=True, metadata={"doc": "beyond the paper: improve the agent's mapping by a search on "
                                                        "the contention model for the objective (search=); false: "
                                                        "the agent's mapping as is (stats.agent_score has its score "
                                                        "either way)"})
    search: Literal["anneal", "descent"] = field(default="anneal", metadata={
        "doc": "anneal: a descent, simulated annealing and a last descent from the best of the agent's mapping and "
               "the baselines' plans (mosaic, all-gpu, best alone, whole models on devices), evaluations= "
               "contention-model evaluations; descent: greedy descent from the agent's mapping alone "
               "(polish_moves=)"})
    evaluations: int = field(default=10000, metadata={"doc": "contention-model work search=anneal spends, in model "
                                                             "evaluations: a distinct plan of N models costs N (2000 "
                                                             "plans for 5 models); the seed and this fix the result"})
    agent_start: bool = field(default=True, metadata={"doc": "search=anneal starts from the agent's mapping too; false: "
                                                             "from the baselines' plans only (what the search reaches "
                                                             "without the agent)"})
    min_jain: float = field(default=0.0, metadata={"doc": "fairness floor (0..1): plans with Jain J below it rank after "
                                                          "every plan that reaches it (0: none)"})
    polish_moves: int = field(default=100, metadata={"doc": "most moves search=descent takes (each the best one; it "
                                                           "stops earlier when none improves)"})

    def validate(self) -> str | None:
        if self.polish_moves < 1:
            return f"polish_moves={self.polish_moves}: give at least 1"
        if self.evaluations < 1:
            return f"evaluations={self.evaluations}: give at least 1"
        if not 0.0 <= self.min_jain <= 1.0:
            return f"min_jain={self.min_jain:g}: Jain's index lies in 0..1"
        return None


def _starts(mix, agent_pipes, evaluations: int, with_agent: bool) -> list[tuple[str, tuple]]:
    """The labelled starts of search=anneal: the agent's mapping, the baselines' plans, and every
    assignment of whole models to devices (at most a quarter of the budget)."""
    from ..multi.baselines import latency_pipeline
    from .search import whole_assignments

    out = [("agent", tuple(agent_pipes))] if with_agent else []
    out += [("all-gpu", mix.baseline()), ("best-alone", tuple(mix.best_alone(m)[1] for m in range(mix.n_models))),
            ("mosaic", tuple(latency_pipeline(mix, m) for m in range(mix.n_models)))]
    out += [("whole", w) for w in whole_assignments(mix, max(1, evaluations // 4))]
    return out


def _run(workload: WorkloadProblem, objective: Objective, ctx: PlanContext) -> WorkloadPlan:
    try:
        import gymnasium  # noqa: F401
        import torchrl  # noqa: F401
        from .agent import cached_agent, decide
        from .features import layer_vectors
    except ImportError as exc:   # torch / torchrl / gymnasium missing
        raise UsageError(f"--planner fairboost needs the learn extra ({exc.name} is missing): "
                         "pip install 'hetcc[learn]'") from None
    from ..multi.plans import Scorer, mix_of, workload_plan

    opts: FairBoostOptions = ctx.options
    path = Path(opts.agent).expanduser() if opts.agent else DEFAULT_AGENT
    try:
        if not path.is_file():
            raise ValueError(f"agent file {str(path)!r} does not exist; train one with hetcc train fairboost -o FILE")
        st = path.stat()
        agent = cached_agent(str(path), st.st_mtime_ns, st.st_size)
    except (OSError, ValueError) as exc:
        msg = str(exc) if isinstance(exc, ValueError) else f"agent file {str(path)!r} cannot be read ({exc.strerror})"
        raise UsageError(f"planner 'fairboost': {msg}") from None
    cfg = agent.net.cfg
    n = len(workload.names)
    if n > cfg.max_models:
        raise UsageError(f"planner 'fairboost': the workload has {n} models and the agent's observation holds "
                         f"{cfg.max_models} (FairBoost's Eq. 3); plan it with --planner ga, or train an agent with "
                         f"hetcc train fairboost --max-models {n}")
    mix = mix_of(workload)
    if mix.n_devices != cfg.devices:
        raise UsageError(f"planner 'fairboost': the board has {mix.n_devices} devices ({', '.join(mix.devices)}) and "
                         f"the agent was trained for {cfg.devices}; train one for this board with "
                         "hetcc train fairboost --target BOARD")
    try:
        vectors = [layer_vectors(p) for p in workload.problems]
    except ValueError as exc:
        raise UsageError(f"planner 'fairboost': {exc}") from None
    ctx.seed_torch()
    with ctx.progress.task("fairboost", total=1) as bar:
        pipelines, info = decide(agent, mix, vectors)
        bar.update(1)
    scorer = Scorer(mix, objective)
    agent_score = scorer.score(scorer.predict(pipelines))
    moves, searched = 0, None
    if opts.polish and opts.search == "descent":
        from .polish import descend

        pipelines, moves = descend(mix, pipelines, scorer.key, max_moves=opts.polish_moves,
                                   out_of_time=lambda: ctx.budget.seconds is not None and ctx.out_of_budget())
    elif opts.polish:
        from .search import search

        def key(pipes):
            return scorer.key(pipes, opts.min_jain)

        plans = max(1, opts.evaluations // mix.n_models)
        starts = _starts(mix, pipelines, plans, opts.agent_start)
        with ctx.progress.task("fairboost search", total=1) as bar:
            pipelines, st = search(mix, [p for _, p in starts], key, evaluations=plans, rng=ctx.rng)
            bar.update(1)
        searched = {"evaluations": st["evaluations"], "start": starts[st["start"]][0], "accepted": st["accepted"],
                    "rounds": st["rounds"], "starts": len(starts), "min_jain": opts.min_jain}
    name = SHIPPED_NAME if path.resolve() == DEFAULT_AGENT else str(path)
    stats = {"agent": {"file": name, "sha256": agent.sha256, "target": agent.meta.get("target"),
                       "seed": agent.meta.get("seed"), "steps": agent.meta.get("steps"),
                       "devices": agent.meta.get("devices")},
             "blocks": dict(zip(mix.names, info["blocks"])), "decision_seconds": info["decision_seconds"],
             "agent_score": {"T_norm": agent_score.normalised, "J": agent_score.jain, "O": agent_score.overall},
             "polish_moves": moves, "search": searched}
    return workload_plan(workload, mix, pipelines, scorer, stats=stats)


SPECS = (PlannerSpec("fairboost", "FairBoost's Rainbow-DQN manager: each block of every model onto a device (a model "
                     "never returns to a device it has left), trained for throughput x fairness on the contention "
                     "model; the shipped agent was trained on orangepi5 (agent=PATH for another)",
                     _run, FairBoostOptions, metrics=("overall",), kind="workload"),)

__all__ = ["DEFAULT_AGENT", "FairBoostOptions", "SHIPPED_NAME", "SPECS"]
