"""The order the suite runs in, so that ``pytest -n 2`` keeps both workers busy to the end.

pytest-xdist's default (``--dist load``) hands each worker long runs of consecutive tests, so
the few tests that take tens of seconds (benchmark ``--quick`` modes, Ray, the hikey970 refit,
timm exports) could end up on one worker, or start last and run alone. Here (a plugin that
``tests/conftest.py`` names in ``pytest_plugins``):

- with ``-n N`` and no ``--dist`` of the user's, the distribution is ``loadgroup`` without
  xdist's reordering: one test (or one file of ``TOGETHER``) at a time to whichever worker is free;
- the collected tests are sorted longest first (a stable sort: the rest keep pytest's order):
  the tests named in ``LONG`` by their measured seconds, then the other ``slow`` tests, then
  the rest. The tests of a file in ``TOGETHER`` (they share an expensive module fixture) go to
  one worker as one unit, so the fixture is made once;
- each worker's numerical libraries get cores // N threads (``THREAD_VARS``), so N workers do not
  run N pools as wide as the machine.

The seconds are rough (a run of the whole suite on this 2-core machine, as pytest reports
them); they only order the tests, a test missing from ``LONG`` merely starts later. Without
``-n`` only the order changes.
"""
from __future__ import annotations

import os

import pytest

#: node-id prefix -> seconds it takes (the longest tests, from ``--durations`` of a whole run on
#: this 2-core machine; a prefix covers a file or a test's parameters; a TOGETHER file's is all its
#: tests together)
LONG: dict[str, float] = {
    "tests/calibrate/test_refit_hikey970.py": 57.0,       # with the exports of MOSAIC's ten models
    "tests/test_sweep.py": 35.0,
    "tests/corpus/test_corpus.py": 60.0,                   # its 8 models, one worker
    "tests/test_benchmarks.py::test_sweep_scaling_benchmark": 33.0,
    "tests/calibrate/test_calibrate.py::test_without_free_the_fit_keeps": 12.0,
    "tests/test_examples.py": 21.0,
    "tests/test_e2e.py": 31.0,
    "tests/hostile/test_cases.py::test_hostile_case[models/chain-20k-nodes-dp]": 13.0,
    "tests/test_bench_evosh.py": 16.0,
    "tests/test_bench_herti.py": 17.0,
    "tests/planners/test_exact.py::test_at_scale_streamed": 5.0,
    "tests/calibrate/test_calibrate.py::test_without_free_a_bounded_parameter": 10.0,
    "tests/test_benchmarks.py::test_planners_benchmark": 9.0,
    "tests/test_benchmarks.py::test_runtime_overhead_benchmark": 5.0,
    "tests/test_zoo_timm.py::test_inception_v4_exports_and_runs_like_torch": 11.0,
    "tests/test_quantized_models.py": 11.0,
    "tests/test_benchmarks.py::test_sweep_agreement_benchmark": 8.0,
    "tests/test_docs_site.py": 10.0,
    "tests/test_bench_fidelity.py::test_fidelity_quick": 9.0,
    "tests/hostile/test_cases.py::test_hostile_case[artifacts/manifest-100k-slices]": 4.0,
    "tests/test_reproducible.py": 9.0,
    "tests/profile/test_host_fit.py::test_host_fit_quick": 7.0,
    "tests/test_zoo_timm.py::test_resnetv2_152": 7.0,
    "tests/planners/test_dqn.py::test_short_seeded_training": 6.0,
    "tests/test_bench_suite_runs.py::test_suite_runs_quick": 6.0,
}
#: a slow test not named above
SLOW_S = 3.0
#: files whose tests share an expensive module fixture or import: one worker runs each file's tests, so
#: it is made once (test_sweep: its embedded Ray; test_bench_herti: the quick run; the corpus: timm,
#: transformers and ultralytics imported, torch's dynamo exporter warmed up, in one worker only)
TOGETHER = ("tests/test_sweep.py", "tests/test_bench_herti.py", "tests/corpus/test_corpus.py")


def expected_seconds(item: pytest.Item) -> float:
    best = max((len(p), s) for p, s in LONG.items() if item.nodeid.startswith(p)) if any(
        item.nodeid.startswith(p) for p in LONG) else None
    if best is not None:
        return best[1]
    return SLOW_S if item.get_closest_marker("slow") is not None else 0.0


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config: pytest.Config) -> None:
    """``-n N`` without ``--dist``: distribute one test (or group) at a time, in the order below."""
    opt = config.option
    if getattr(opt, "numprocesses", None) and getattr(opt, "dist", "no") == "no" and not getattr(opt, "distload", False):
        opt.dist = "loadgroup"
        opt.loadscopereorder = False


#: the thread pools of the numerical libraries the tests (and the programs they start) use:
#: OpenMP (torch), OpenBLAS and MKL (numpy, scipy)
THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def pytest_configure(config: pytest.Config) -> None:
    """With ``-n N`` the N workers share the machine's cores: each library thread pool gets
    cores // N threads (at least one), unless the user set the variable. Otherwise every worker
    starts a pool as wide as the machine, and their idle threads spin-wait on cores the other
    workers need (on 2 cores with ``-n 2`` the whole run took 9 % longer). Set here, in the
    controller, before xdist starts the workers: they, and every program a test starts, inherit it."""
    n = getattr(config.option, "numprocesses", None)
    if os.environ.get("PYTEST_XDIST_WORKER") or not isinstance(n, int) or n < 1:
        return
    threads = str(max(1, (os.cpu_count() or 1) // n))
    for var in THREAD_VARS:
        os.environ.setdefault(var, threads)


@pytest.hookimpl(tryfirst=True, optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log):
    """``loadgroup``, with the files of ``TOGETHER`` each one unit of work (one worker runs all its
    tests). xdist's own ``xdist_group`` marks are not used: pytest-xdist 3.8 names the grouped
    tests in a way pytest 9 no longer reads, so they would be scheduled one by one."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadGroupScheduling

    class Scheduling(LoadGroupScheduling):
        def _split_scope(self, nodeid: str) -> str:
            file = nodeid.split("::", 1)[0]
            return f"file:{file}" if file in TOGETHER else super()._split_scope(nodeid)

    return Scheduling(config, log)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Longest first (stable: equal estimates keep pytest's order, so a module's tests stay together)."""
    items.sort(key=lambda item: -expected_seconds(item))
