"""Running the ``hetcc serve`` application on uvicorn: a socket bound first (``--port 0`` picks a
free port and the ready line names it), one ready line once uvicorn accepts, and SIGTERM / SIGINT /
SIGHUP as a graceful stop: no new connections, requests in flight finish (or fail at the run
time limit), then ``serve`` returns and the command exits 0."""
from __future__ import annotations

import asyncio
import contextlib
import signal
import socket
import sys
from typing import Any, Callable, Iterator

import uvicorn

__all__ = ["bind", "serve"]

_SIGNALS = tuple(getattr(signal, n) for n in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, n))


class _Server(uvicorn.Server):
    """uvicorn's server, except that a stop signal is not raised again after the graceful
    shutdown (uvicorn re-raises it for the previous handler, which would turn a clean stop into
    hetcc's 'terminated' exit 143)."""

    stopped_by: int | None = None

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        def on_signal(signum: int, frame: Any) -> None:
            if self.stopped_by is None:
                self.stopped_by = signum
            self.handle_exit(signum, frame)

        previous = {}
        try:
            for sig in _SIGNALS:
                previous[sig] = signal.signal(sig, on_signal)
        except ValueError:       # not the main thread (a test): no signals
            pass
        try:
            yield
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)


def bind(host: str, port: int) -> socket.socket:
    """A listening TCP socket on host:port (port 0: a free one)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    sock.listen(128)
    sock.set_inheritable(True)
    return sock


def serve(app: Any, sock: socket.socket, *, graceful_s: float, on_ready: Callable[[], None]) -> int | None:
    """Serve ``app`` on ``sock`` until a stop signal; ``on_ready()`` once uvicorn accepts.
    Returns the signal that stopped it (None: uvicorn stopped by itself)."""
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off",
                            timeout_graceful_shutdown=max(1, int(graceful_s + 0.999)), server_header=False)
    server = _Server(config)

    async def main() -> None:
        task = asyncio.ensure_future(server.serve(sockets=[sock]))
        while not server.started and not task.done():
            await asyncio.sleep(0.01)
        if server.started:
            on_ready()
        await task

    try:
        asyncio.run(main())
    finally:
        sock.close()
        sys.stderr.flush()
    return server.stopped_by
