"""Ray's start-up is bounded in time: a ``ray.init`` (or a warm-up) that does not finish within
HETCC_RAY_START_TIMEOUT seconds is a one-line HetccError, and a bad value of that variable a
one-line UsageError. ``ray.init`` is replaced by one that blocks until the test ends, so nothing
depends on how precise the clock is: only that the caller stops waiting."""
from __future__ import annotations

import socket
import threading

import pytest

pytestmark = pytest.mark.sweep
ray = pytest.importorskip("ray", reason="needs the 'sweep' extra: pip install 'hetcc[sweep]'")

from hetcc.core.errors import HetccError, UsageError  # noqa: E402
from hetcc.core.paths import library_dirs  # noqa: E402
from hetcc.experiments.sweep import START_TIMEOUT_ENV, START_TIMEOUT_S, init_ray, start_timeout  # noqa: E402


@pytest.fixture
def fake_ray(monkeypatch):
    """Ray as not started, with ray.init recording its calls and blocking while ``hang`` is set."""
    state = {"calls": [], "threads": [], "raise": None}
    hang = threading.Event()
    release = threading.Event()

    def init(*args, **kwargs):
        state["calls"].append(kwargs)
        state["threads"].append(threading.current_thread())
        if hang.is_set():
            release.wait(120)                    # freed when the test ends
        if state["raise"] is not None:
            raise state["raise"]

    monkeypatch.setattr(ray, "is_initialized", lambda: False)
    monkeypatch.setattr(ray, "init", init)
    state["hang"] = hang
    yield state
    release.set()


def one_line(exc: BaseException) -> str:
    text = str(exc)
    assert "\n" not in text and text
    return text


def test_a_hanging_start_is_a_one_line_error_after_the_bound(fake_ray, monkeypatch):
    monkeypatch.setenv(START_TIMEOUT_ENV, "0.5")
    fake_ray["hang"].set()
    with pytest.raises(HetccError) as e:
        init_ray(None, 1)
    text = one_line(e.value)
    assert "Ray did not start within 0.5 s" in text and f"{START_TIMEOUT_ENV}=SECONDS" in text
    assert not isinstance(e.value, UsageError)
    # Ray's session directory goes under hetcc's cache only when that path is short enough for its
    # sockets (a --basetemp near / gives one, pytest's default does not)
    temp = library_dirs().get("ray_temp")
    assert fake_ray["calls"] == [{"address": "local", "num_cpus": 1, "include_dashboard": False,
                                  "logging_level": 40, "log_to_driver": False,
                                  "object_store_memory": 256 * 1024 * 1024, **({"_temp_dir": temp} if temp else {})}]
    # a second start while the first still hangs waits behind it, and is bounded too
    with pytest.raises(HetccError, match="did not start within 0.5 s"):
        init_ray(None, 1)


def test_a_hanging_connection_names_the_address(fake_ray, monkeypatch):
    monkeypatch.setenv(START_TIMEOUT_ENV, "0.5")
    fake_ray["hang"].set()
    with socket.create_server(("127.0.0.1", 0)) as head:      # the TCP probe finds a listener
        address = f"127.0.0.1:{head.getsockname()[1]}"
        with pytest.raises(HetccError) as e:
            init_ray(address, None)
    text = one_line(e.value)
    assert text.startswith(f"--address {address}: no connection to the Ray cluster within 0.5 s")


def test_an_error_of_the_start_reaches_the_caller(fake_ray, monkeypatch):
    fake_ray["raise"] = ConnectionError("refused\nby the head")
    with socket.create_server(("127.0.0.1", 0)) as head:
        address = f"127.0.0.1:{head.getsockname()[1]}"
        with pytest.raises(UsageError) as e:
            init_ray(address, None)
    assert one_line(e.value).startswith(f"--address {address}: cannot connect to a Ray cluster "
                                        "(ConnectionError: refused by the head)")


def test_a_slow_warm_up_is_bounded_too(fake_ray, monkeypatch):
    monkeypatch.setenv(START_TIMEOUT_ENV, "30")
    waited = []

    def get(refs, timeout=None):
        waited.append(timeout)
        raise ray.exceptions.GetTimeoutError("not ready")

    monkeypatch.setattr(ray, "remote", lambda **kw: lambda f: type("Task", (), {"remote": staticmethod(lambda: f)}))
    monkeypatch.setattr(ray, "get", get)
    with pytest.raises(HetccError, match="Ray did not start within 30 s"):
        init_ray(None, 2)
    assert len(waited) == 1 and 0 <= waited[0] <= 30


def test_ray_starts_in_a_thread_that_outlives_the_start(fake_ray, monkeypatch):
    """Ray's gcs and raylet die with the thread that started them: it must live on."""
    monkeypatch.setattr(ray, "remote", lambda **kw: lambda f: type("Task", (), {"remote": staticmethod(lambda: f)}))
    monkeypatch.setattr(ray, "get", lambda refs, timeout=None: [])
    assert init_ray(None, 1) is ray
    assert init_ray(None, 1) is ray
    first, second = fake_ray["threads"]
    assert first is second and first is not threading.main_thread() and first.is_alive()


@pytest.mark.parametrize("value", ["abc", "0", "-1", "inf", "nan", "1e9"])
def test_a_bad_bound_is_a_one_line_usage_error(fake_ray, monkeypatch, value):
    monkeypatch.setenv(START_TIMEOUT_ENV, value)
    with pytest.raises(UsageError) as e:
        init_ray(None, 1)
    assert one_line(e.value).startswith(f"{START_TIMEOUT_ENV}={value!r}: give the seconds Ray may take to start")
    assert fake_ray["calls"] == []


def test_the_default_bound(monkeypatch):
    monkeypatch.delenv(START_TIMEOUT_ENV, raising=False)
    assert start_timeout() == START_TIMEOUT_S == 120
    monkeypatch.setenv(START_TIMEOUT_ENV, " 2.5 ")
    assert start_timeout() == 2.5


def _alive(pid: int) -> bool:
    import psutil

    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE         # a zombie has ended
    except psutil.NoSuchProcess:
        return False


def test_an_interrupted_sweep_kills_the_embedded_rays_processes_and_all_below_them(monkeypatch):
    """kill_embedded_ray (hetcc sweep's Ctrl-C) kills the processes Ray lists and their own children
    (the raylet's dashboard and runtime-env agents are not in Ray's list): here a stand-in raylet
    with a child and a grandchild, all gone shortly after."""
    import subprocess
    import time

    import psutil
    import ray._private.worker as worker

    from hetcc.experiments.sweep import kill_embedded_ray

    raylet = subprocess.Popen(["sh", "-c", "sh -c 'sleep 60 & wait' & echo started; wait"],
                              stdout=subprocess.PIPE, text=True, start_new_session=True)
    try:
        assert raylet.stdout.readline().strip() == "started"
        deadline = time.monotonic() + 30
        while len(below := {c.pid for c in psutil.Process(raylet.pid).children(recursive=True)}) < 2 \
                and time.monotonic() < deadline:
            time.sleep(0.01)                      # the inner sh starts its sleep
        assert len(below) >= 2, below
        node = type("Node", (), {"head": True, "all_processes": {"raylet": [type("Info", (), {"process": raylet})]}})
        monkeypatch.setattr(worker, "_global_node", node, raising=False)
        kill_embedded_ray()
        raylet.wait(timeout=30)
        while any(_alive(p) for p in below) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not [p for p in below if _alive(p)]
    finally:
        if raylet.poll() is None:
            raylet.kill()
            raylet.wait()
