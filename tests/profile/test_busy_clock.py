"""Timings a busy machine cannot poison: the least wall time, unless it waited for a CPU (then the
busiest thread's CPU time), and the clock that reads every thread's CPU time."""
from __future__ import annotations

import os
import threading
import time

import pytest

from hetcc.measure.profiler import BUSY_RATIO, RunClock, timing


def test_an_idle_measurement_keeps_its_least_wall_time():
    t = timing([10.4, 10.0, 12.0], [9.7, 9.9, 9.8])
    assert t.ms == 10.0 and t.wall_ms == 10.0 and t.cpu_ms == 9.7 and not t.busy and t.runs == 3


def test_a_measurement_that_waited_for_a_cpu_keeps_its_cpu_time():
    t = timing([25.0, 22.0], [10.0, 10.5])
    assert t.busy and t.ms == 10.0 and t.wall_ms == 22.0
    at_the_edge = timing([BUSY_RATIO * 10.0], [10.0])        # not over the ratio: still the wall time
    assert not at_the_edge.busy and at_the_edge.ms == at_the_edge.wall_ms


def test_no_cpu_time_read_keeps_the_wall_time():
    assert timing([5.0], [0.0]).ms == 5.0


def test_a_sleep_costs_wall_time_and_no_cpu_time():
    with RunClock() as clock:
        wall, cpu = clock.run(lambda: time.sleep(0.05))
    assert wall >= 50.0 and cpu < 0.5 * wall


@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="reads other threads' CPU time from Linux /proc")
def test_another_threads_work_counts_as_the_runs_cpu_time():
    go, done, stop = threading.Event(), threading.Event(), False

    def worker():                    # a pool thread: alive before and after the run, working inside it
        while go.wait() and not stop:
            go.clear()
            end = time.thread_time() + 0.03          # at least 30 ms of this thread's own CPU time
            while time.thread_time() < end:
                pass
            done.set()

    t = threading.Thread(target=worker, daemon=True)
    t.start()

    def run():
        go.set()
        done.wait()                  # the caller sleeps: its own CPU time stays near 0

    try:
        with RunClock() as clock:
            wall, cpu = clock.run(run)
    finally:
        stop = True
        go.set()
        t.join(5)
    assert cpu >= 25.0 and wall >= cpu * 0.9


class _Sess:
    def __init__(self):
        self.runs = 0

    def run(self, _outputs, _feed):
        self.runs += 1


def _fake_clock(monkeypatch, wall_ms: float, cpu_ms: float):
    def run(self, fn):
        fn()
        return wall_ms, cpu_ms
    monkeypatch.setattr(RunClock, "run", run)


def test_a_busy_measurement_runs_on_and_keeps_its_cpu_time(monkeypatch):
    from hetcc.measure.profiler import BUSY_RUNS, measure_session

    _fake_clock(monkeypatch, 10.0, 5.0)                      # every run waited for a CPU
    t = measure_session(_Sess(), {}, min_runs=5, min_seconds=0.0)
    assert t.busy and t.ms == 5.0 and t.runs == BUSY_RUNS


def test_an_idle_measurement_stops_at_its_minimum(monkeypatch):
    from hetcc.measure.profiler import measure_session

    _fake_clock(monkeypatch, 5.2, 5.0)
    t = measure_session(_Sess(), {}, min_runs=5, min_seconds=0.0)
    assert not t.busy and t.ms == 5.2 and t.runs == 5
