"""``hetcc calibrate BOARD.toml OBS.csv ... -o FITTED.toml``: fit a modelled board to observations.

Why: a board file's throughputs, overheads and powers are first guesses from data sheets; the
observations (``hetcc.measure.observations``: what ``hetcc profile`` measured, or numbers a paper
published) say what the board really does. This package fits the file's numbers to them by least
squares with hetcc's own cost model, so that the fitted file gives, when loaded, exactly the
numbers printed. Its modules, each importing only those before it:

- ``params``: the parameter table of a board file (``Param``, ``board_parameters``), the board
  (``Board``), the ``--bound`` / ``--set`` / ``--range`` arguments;
- ``tables``: every model's cost tables at a parameter vector in one stacked ``cost_tables`` call,
  recomputing only the states whose numbers moved (``StackedTables``);
- ``model``: the predictions of each observation at a parameter vector (``Calibration``,
  ``Evaluation``, ``predict_observations``);
- ``fitting``: the least-squares fit, its free set and its refusals (``fit``, ``select_free``,
  ``FitResult``);
- ``writer``: the fitted file, every comment kept (``fitted_text``);
- ``reporting``: the table and summary (``summary``, ``report``; ``hetcc.cli.calibrate`` prints them);
- ``run``: all of it in one call (``calibrate``).

scipy and tomlkit are imported inside the functions that need them. The command line is
``hetcc.cli.calibrate``.
"""
from __future__ import annotations

from hetcc.measure.calibrate.fitting import FitResult, fit, int8_ties, select_free
from hetcc.measure.calibrate.model import MARGIN, Calibration, Evaluation, forced_optima, predict_observations
from hetcc.measure.calibrate.params import DEFAULT_RANGE, Board, Param, board_parameters, parse_bound, parse_set
from hetcc.measure.calibrate.reporting import report, summary
from hetcc.measure.calibrate.run import calibrate
from hetcc.measure.calibrate.writer import fitted_text

__all__ = ["Board", "Calibration", "DEFAULT_RANGE", "Evaluation", "FitResult", "MARGIN", "Param",
           "board_parameters", "calibrate", "fit", "fitted_text", "forced_optima", "int8_ties", "parse_bound",
           "parse_set", "predict_observations", "report", "select_free", "summary"]
