"""Ray for ``hetcc sweep`` and ``hetcc tune``: connect to a cluster (``--address auto`` or
HOST:PORT, probed first) or start Ray embedded on this machine, in bounded time; and the
clean-up of an embedded Ray when the driver is interrupted.

The start is bounded (``HETCC_RAY_START_TIMEOUT`` seconds, default 120): under heavy load a
``ray.init`` was seen to hang for minutes. ``ray.init`` has no time limit of its own, and it can
block inside Ray's C++ core, where no signal reaches it, so it runs in a thread of its own while
the caller waits at most that long and then fails with a one-line error. That thread lives as
long as the process: Ray binds its gcs and raylet to the thread that started them (Linux's
parent-death signal follows the thread), so they stop with this process, also after a start
that was given up. Ray is imported only inside ``init_ray``.
"""
from __future__ import annotations

import atexit
import math
import os
import queue
import socket
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Callable

from hetcc.core.paths import confine_libraries, library_dirs
from hetcc.core.errors import HetccError, UsageError
from hetcc.experiments.sweep.table import one_line

#: --workers of the embedded Ray
MAX_WORKERS = 4096
#: seconds Ray may take to start and its workers to import hetcc, unless the variable below says
START_TIMEOUT_S = 120.0
START_TIMEOUT_ENV = "HETCC_RAY_START_TIMEOUT"


def start_timeout() -> float:
    """The bound on Ray's start-up: ``$HETCC_RAY_START_TIMEOUT`` seconds, or ``START_TIMEOUT_S``."""
    text = os.environ.get(START_TIMEOUT_ENV, "").strip()
    if not text:
        return START_TIMEOUT_S
    try:
        seconds = float(text)
    except ValueError:
        seconds = math.nan
    if not (math.isfinite(seconds) and 0 < seconds <= 86400):
        raise UsageError(f"{START_TIMEOUT_ENV}={text!r}: give the seconds Ray may take to start, "
                         "a positive number of at most 86400, e.g. 120")
    return seconds


def _warm() -> int:
    import hetcc.compiler.api  # noqa: F401
    import hetcc.compiler.pipeline  # noqa: F401

    time.sleep(0.2)                                   # hold the CPU so each worker gets one
    return os.getpid()


def _check_reachable(address: str) -> None:
    """Ray waits minutes for a head that is not there; a TCP probe of 5 s tells at once."""
    where = address
    if address == "auto":
        where = os.environ.get("RAY_ADDRESS", "")
        if not where:
            try:
                where = Path(tempfile.gettempdir(), "ray", "ray_current_cluster").read_text().strip()
            except OSError:
                where = ""
        if not where:
            raise UsageError("--address auto: no Ray cluster was started on this machine; start one with "
                             "`ray start --head`, name it as HOST:PORT, or drop --address to run here")
    if where.startswith("ray://"):
        return                                        # Ray Client: its own connection handling
    host, sep, port = where.rpartition(":")
    if not sep or not port.isdigit() or not 0 < int(port) < 65536:
        raise UsageError(f"--address {address!r}: use auto or HOST:PORT, e.g. --address 10.0.0.1:6379")
    try:
        socket.create_connection((host.strip("[]") or "127.0.0.1", int(port)), timeout=5).close()
    except OSError as e:
        raise UsageError(f"--address {address}: no Ray head answers at {where} ({e.strerror or e}); start one "
                         "with `ray start --head`, or drop --address to run here") from None


def init_ray(address: str | None, workers: int | None) -> Any:
    """Connect to ``address`` (``auto`` or HOST:PORT) or start Ray embedded with ``workers`` CPUs;
    a start that takes longer than ``start_timeout()`` is a one-line HetccError."""
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")    # no usage reports to the Ray project
    # Ray's C++ crash handler turns a SIGTERM during ray.init into an abort with a stack dump
    os.environ.setdefault("RAY_DISABLE_FAILURE_SIGNAL_HANDLER", "1")
    confine_libraries()
    try:
        import ray
    except ImportError:
        raise UsageError("hetcc sweep needs Ray: pip install 'hetcc[sweep]'") from None
    if ray.is_initialized():
        return ray
    limit = start_timeout()
    import signal

    main_thread = threading.current_thread() is threading.main_thread()
    saved = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)} if main_thread else {}

    def restore() -> None:                            # Ray's may replace them: hetcc's exits 143
        for signum, handler in saved.items():
            if handler is not None:
                signal.signal(signum, handler)

    try:
        _start_ray(ray, address, workers, limit, restore)
    except BaseException:                             # Ctrl-C / SIGTERM / too slow: no orphans
        restore()
        _shutdown_quietly()                           # stops the gcs/raylet this driver started
        raise
    restore()
    return ray


def local_token(path: Path) -> str:
    """The token file of a Ray that hetcc starts itself (made once, owner-only, under hetcc's cache)."""
    import secrets

    if not path.is_file():
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".auth_token.tmp-", dir=path.parent)   # 0600
        with os.fdopen(fd, "w") as f:
            f.write(secrets.token_hex(32))
        os.replace(tmp, path)
    return str(path)


def _start_ray(ray: Any, address: str | None, workers: int | None, limit: float,
               restore: Callable[[], None]) -> None:
    import logging

    deadline = time.monotonic() + limit
    if address:
        _check_reachable(address)
        try:
            _within(limit, lambda: ray.init(address=address, logging_level=logging.ERROR, log_to_driver=False),
                    f"--address {address}: no connection to the Ray cluster within {limit:g} s; "
                    f"allow longer with {START_TIMEOUT_ENV}=SECONDS, or drop --address to run here")
        except (ConnectionError, RuntimeError, ValueError) as e:
            raise UsageError(f"--address {address}: cannot connect to a Ray cluster ({one_line(e)}); "
                             "start one with `ray start --head` or drop --address to run here") from None
        restore()
        return
    n = workers or os.cpu_count() or 1
    too_slow = (f"Ray did not start within {limit:g} s (is this machine overloaded?); allow longer with "
                f"{START_TIMEOUT_ENV}=SECONDS, or run on a cluster with --address")
    dirs = library_dirs()
    temp = dirs.get("ray_temp")         # its session directory under hetcc's cache when the path fits
    extra = {"_temp_dir": temp} if temp else {}
    if not os.environ.get("RAY_AUTH_TOKEN") and not os.environ.get("RAY_AUTH_TOKEN_PATH"):
        os.environ["RAY_AUTH_TOKEN_PATH"] = local_token(Path(dirs["ray_token"]))   # not ~/.ray/auth_token
    _within(limit, lambda: ray.init(address="local", num_cpus=n, include_dashboard=False,
                                    logging_level=logging.ERROR, log_to_driver=False,
                                    object_store_memory=256 * 1024 * 1024, **extra), too_slow)
    restore()
    # start-up, not sweep time: each worker process imports hetcc's analysis once, now
    warm = [ray.remote(num_cpus=1)(_warm).remote() for _ in range(n)]
    try:
        ray.get(warm, timeout=max(0.0, deadline - time.monotonic()))
    except ray.exceptions.GetTimeoutError:
        raise HetccError(too_slow) from None


class _Start:
    """One call run by the start-up thread; the caller may stop waiting for it."""

    def __init__(self, call: Callable[[], Any]) -> None:
        self.call = call
        self.done = threading.Event()
        self.lock = threading.Lock()
        self.given_up = self.began = False
        self.error: BaseException | None = None

    def run(self) -> None:
        with self.lock:
            if self.given_up:                         # given up while queued: never begun
                self.done.set()
                return
            self.began = True
        try:
            self.call()
        except BaseException as e:                    # the caller's to raise, or dropped if it gave up
            self.error = e
        with self.lock:
            self.done.set()
            if self.given_up:
                _exit_hook(True)

    def give_up(self) -> bool:
        """Stop waiting; False if the call has finished after all."""
        with self.lock:
            if self.done.is_set():
                return False
            self.given_up = True
            if self.began:
                _exit_hook(False)
            return True


#: the start-up thread's queue of calls (the thread starts with the first)
_STARTS: queue.SimpleQueue | None = None
_STARTS_LOCK = threading.Lock()


def _serve(starts: queue.SimpleQueue) -> None:
    while True:                                       # never returns: Ray's processes die with this thread
        starts.get().run()


def _within(limit: float, call: Callable[[], Any], too_slow: str) -> None:
    """Run ``call`` in the start-up thread; raise its exception, or HetccError(too_slow) once
    ``limit`` seconds have passed (a call under way then goes on, unwaited; one still queued
    behind a hanging start is dropped)."""
    global _STARTS
    with _STARTS_LOCK:
        if _STARTS is None:
            _STARTS = queue.SimpleQueue()
            threading.Thread(target=_serve, args=(_STARTS,), daemon=True, name="hetcc-ray-start").start()
    start = _Start(call)
    _STARTS.put(start)
    try:
        finished = start.done.wait(limit)
    except BaseException:                             # Ctrl-C / SIGTERM while Ray starts
        start.give_up()
        raise
    if not finished and start.give_up():
        raise HetccError(too_slow)
    if start.error is not None:
        raise start.error


def _exit_hook(on: bool) -> None:
    """Ray's exit hook (``ray.shutdown`` at exit) off while a start that was given up still runs:
    it would wait for that start at exit; Ray's processes stop with this process anyway."""
    worker = sys.modules.get("ray._private.worker")
    if worker is not None:
        atexit.unregister(worker.shutdown)
        if on:
            atexit.register(worker.shutdown, _exiting_interpreter=True)


def _shutdown_quietly() -> None:
    ray = sys.modules.get("ray")
    if ray is not None and ray.is_initialized():
        try:
            ray.shutdown()
        except Exception:
            pass


def kill_embedded_ray() -> None:
    """Have the gcs, raylet and helpers of the Ray this process started (none for --address), and
    every process below them (the raylet's dashboard and runtime-env agents, its workers), killed
    just after this process exits: killed before, Ray's core worker threads here crash (SIGSEGV)
    when their connections drop; the raylet's agents, not among the processes Ray lists, outlived
    it by a minute or more."""
    import subprocess

    try:
        import ray._private.worker as worker

        node = worker._global_node
        listed = {p.process.pid for procs in node.all_processes.values() for p in procs
                  if getattr(p, "process", None) is not None} if node is not None and node.head else set()
    except Exception:
        listed = set()
    pids = set(listed)
    if listed:
        import psutil

        for pid in listed:
            try:
                pids |= {child.pid for child in psutil.Process(pid).children(recursive=True)}
            except psutil.Error:          # gone already
                pass
    if pids:
        subprocess.Popen(["sh", "-c", f"sleep 0.5; kill -9 {' '.join(map(str, sorted(pids)))} 2>/dev/null"],
                         start_new_session=True, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
