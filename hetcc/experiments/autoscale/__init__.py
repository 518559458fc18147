"""AutoScale (Kim and Wu, MICRO'20) in simulation: the environment, training and the paper's evaluation.

* ``environments``: the execution environments of Table 4 (S1-S5 static, D1-D3 dynamic), each
  number with its source, and the training grid of Table 1's runtime-variance states;
* ``sim``: a board's action table for a set of models and what one inference costs under a
  runtime variance (interference slowdown, RSSI-dependent links, noise; Eq. 1-5 from
  ``hetcc.runtime.autoscale``), and the oracle Opt;
* ``models``: the boards' action tables from ``hetcc.compiler.autoscale`` (cached);
* ``env``: the ``gymnasium.Env`` (one step = one inference) and its schedules;
* ``train``: Q-learning by Alg. 1 and Sec. 5.3's protocol, the evaluation against the baselines
  and Opt, convergence (Fig. 14) and decision overhead.

``hetcc train autoscale`` and ``benchmarks/autoscale.py`` use it; docs/autoscale-evaluation.md
describes the model and the results. Only the command line imports ``hetcc.experiments``.
"""
