"""Several models at once on shared devices (FairBoost): the workload problem (``mix``), THE
contention model (``contention``), its discrete-event check (``simulate``, SimPy, imported
lazily), FairBoost's metrics and reward (``scores``), and the workload planners built on them.

Numbers only: numpy and hetcc.planners; no ONNX, no targets, no torch.
"""
from __future__ import annotations

from .contention import DEFAULT_QUANTUM_MS, SHARING, Prediction, predict
from .mix import MixProblem, Pipeline, Stage, check_pipeline
from .scores import Score, jain, reward, score

__all__ = ["DEFAULT_QUANTUM_MS", "MixProblem", "Pipeline", "Prediction", "SHARING", "Score", "Stage",
           "check_pipeline", "jain", "predict", "reward", "score"]
