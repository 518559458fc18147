"""The FastAPI application of ``hetcc serve``.

Routes: ``GET /healthz`` (no token), ``GET /metrics`` (Prometheus text: requests by status, a
latency histogram, bytes in and out, run requests in progress), ``GET /v1/slices`` (what this server
holds) and ``POST /v1/run?slices=SHA,...&outputs=NAME,...`` (a ``.npy`` or ``.npz`` body of the
tensors the chain reads; the answer is the tensors asked for, the same way, with the run's time
in ``X-Hetcc-Run-Ms``).

Every request but ``GET /healthz`` needs ``Authorization: Bearer <token>`` (401 otherwise,
checked before routing, compared in constant time). The bounds (``ServeLimits``): the request
body (413, checked from Content-Length and again while reading), the decompressed tensors (413),
the runs at once (503 when full: nothing waits) and a run's time (504). One log line per request:
method, path, status, milliseconds, bytes in and out.
"""
from __future__ import annotations

import hmac
import logging
import threading
import time
import urllib.parse
from dataclasses import dataclass
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, PlainTextResponse, Response
from starlette.concurrency import run_in_threadpool

from hetcc.runtime.offload import NPY_TYPE, NPZ_TYPE, TensorDecodeError, decode_tensors, encode_tensors
from hetcc.serve.backend import Backend, RequestError, RunTimeout, token_digest

__all__ = ["ServeLimits", "Metrics", "create_app", "LATENCY_BUCKETS_MS"]

access = logging.getLogger("hetcc.serve.access")

#: the latency histogram's upper bounds (ms)
LATENCY_BUCKETS_MS = (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000)


@dataclass(frozen=True)
class ServeLimits:
    """``max_body_bytes``: the largest request body; ``max_tensor_bytes``: the tensors decompressed;
    ``max_concurrency``: run requests in progress at once, from reading the body to answering
    (more: 503; it bounds memory too); ``timeout_s``: one run's time (more: 504)."""

    max_body_bytes: int = 64 << 20
    max_tensor_bytes: int = 256 << 20
    max_concurrency: int = 4
    timeout_s: float = 30.0


class Metrics:
    """Request counts by status, a latency histogram, bytes, requests in progress (event-loop thread)."""

    def __init__(self) -> None:
        self.by_status: dict[int, int] = {}
        self.buckets = [0] * (len(LATENCY_BUCKETS_MS) + 1)
        self.sum_ms = 0.0
        self.bytes_in = 0
        self.bytes_out = 0
        self.runs = 0
        self.in_flight = 0

    def observe(self, status: int, ms: float, bytes_in: int, bytes_out: int) -> None:
        self.by_status[status] = self.by_status.get(status, 0) + 1
        k = next((i for i, b in enumerate(LATENCY_BUCKETS_MS) if ms <= b), len(LATENCY_BUCKETS_MS))
        self.buckets[k] += 1
        self.sum_ms += ms
        self.bytes_in += bytes_in
        self.bytes_out += bytes_out

    def text(self) -> str:
        lines = ["# HELP hetcc_serve_requests_total Requests answered, by HTTP status.",
                 "# TYPE hetcc_serve_requests_total counter"]
        lines += [f'hetcc_serve_requests_total{{status="{s}"}} {n}' for s, n in sorted(self.by_status.items())]
        lines += ["# HELP hetcc_serve_request_duration_ms Request latency in milliseconds.",
                  "# TYPE hetcc_serve_request_duration_ms histogram"]
        total = 0
        for bound, n in zip(LATENCY_BUCKETS_MS, self.buckets):
            total += n
            lines.append(f'hetcc_serve_request_duration_ms_bucket{{le="{bound}"}} {total}')
        total += self.buckets[-1]
        lines += [f'hetcc_serve_request_duration_ms_bucket{{le="+Inf"}} {total}',
                  f"hetcc_serve_request_duration_ms_sum {self.sum_ms:.3f}",
                  f"hetcc_serve_request_duration_ms_count {total}",
                  "# TYPE hetcc_serve_received_bytes_total counter", f"hetcc_serve_received_bytes_total {self.bytes_in}",
                  "# TYPE hetcc_serve_sent_bytes_total counter", f"hetcc_serve_sent_bytes_total {self.bytes_out}",
                  "# TYPE hetcc_serve_runs_total counter", f"hetcc_serve_runs_total {self.runs}",
                  "# HELP hetcc_serve_requests_in_progress Run requests being read, run or answered.",
                  "# TYPE hetcc_serve_requests_in_progress gauge", f"hetcc_serve_requests_in_progress {self.in_flight}"]
        return "\n".join(lines) + "\n"


class _Gate:
    """ASGI middleware around the app: the token check (before routing), then one log line and
    the metrics for every HTTP request."""

    def __init__(self, app: Any, token: str, metrics: Metrics, max_body: int):
        self.app, self.digest, self.metrics, self.max_body = app, token_digest(token), metrics, max_body

    async def _drain(self, receive: Any) -> None:
        """Read and drop a refused request's body (at most max_body bytes), so that the client,
        still sending it, reads the answer instead of a reset connection."""
        seen = 0
        while seen <= self.max_body:
            message = await receive()
            if message.get("type") != "http.request":
                return
            seen += len(message.get("body", b""))
            if not message.get("more_body", False):
                return

    def _authorised(self, scope: dict) -> bool:
        if scope["method"] == "GET" and scope["path"] == "/healthz":
            return True
        for key, value in scope.get("headers", ()):
            if key == b"authorization":
                scheme, _, given = value.decode("latin-1").partition(" ")
                if scheme.lower() == "bearer":
                    return hmac.compare_digest(token_digest(given.strip()), self.digest)
        return False

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        t0 = time.perf_counter()
        seen = {"status": 500, "out": 0, "in": 0}

        async def counting_receive() -> dict:
            message = await receive()
            if message.get("type") == "http.request":
                seen["in"] += len(message.get("body", b""))
            return message

        async def counting_send(message: dict) -> None:
            if message["type"] == "http.response.start":
                seen["status"] = message["status"]
            elif message["type"] == "http.response.body":
                seen["out"] += len(message.get("body", b""))
            await send(message)

        try:
            if self._authorised(scope):
                await self.app(scope, counting_receive, counting_send)
            else:
                await self._drain(counting_receive)
                await JSONResponse({"detail": "missing or wrong bearer token (Authorization: Bearer <token>)"},
                                   status_code=401, headers={"WWW-Authenticate": "Bearer"})(scope, receive,
                                                                                           counting_send)
        finally:
            ms = (time.perf_counter() - t0) * 1e3
            self.metrics.observe(seen["status"], ms, seen["in"], seen["out"])
            access.info("%s %s %d %.1f ms in %d B out %d B", scope["method"], scope["path"], seen["status"], ms,
                        seen["in"], seen["out"])


def _problem(status: int, detail: str, **headers: str) -> JSONResponse:
    return JSONResponse({"detail": detail}, status_code=status, headers=headers or None)


def create_app(backend: Backend, token: str, limits: ServeLimits = ServeLimits()) -> Any:
    """The ASGI application serving ``backend`` behind ``token`` within ``limits``."""
    if not token:
        raise ValueError("a token is required")
    metrics = Metrics()
    slots = threading.BoundedSemaphore(limits.max_concurrency)
    api = FastAPI(title="hetcc serve", docs_url=None, redoc_url=None, openapi_url=None)
    api.state.metrics = metrics
    api.state.backend = backend

    @api.get("/healthz")
    def healthz() -> dict:
        return {"status": "ok", "kind": backend.kind, "model": backend.model_name, "files": backend.sessions}

    @api.get("/metrics")
    def prometheus() -> PlainTextResponse:
        return PlainTextResponse(metrics.text(), media_type="text/plain; version=0.0.4")

    @api.get("/v1/slices")
    def listing() -> dict:
        return {"kind": backend.kind, "model": backend.model_name, "slices": backend.describe()}

    @api.post("/v1/run")
    async def run(request: Request) -> Response:
        declared = request.headers.get("content-length")
        if declared is not None:
            if not declared.isdigit():
                return _problem(400, f"Content-Length {declared[:40]!r} is not a number")
            if int(declared) > limits.max_body_bytes:
                return _problem(413, f"the body ({declared} bytes) is over this server's {limits.max_body_bytes} "
                                "byte limit (--max-body)")
        if not slots.acquire(blocking=False):
            return _problem(503, f"busy: {limits.max_concurrency} request(s) in progress (--max-concurrency); retry",
                            **{"Retry-After": "1"})
        metrics.in_flight += 1
        try:
            params = request.query_params
            slices = [s for s in params.get("slices", "").split(",") if s]
            outputs = [urllib.parse.unquote(o) for o in params.get("outputs", "").split(",") if o]
            parts, size = [], 0
            async for part in request.stream():
                size += len(part)
                if size > limits.max_body_bytes:
                    return _problem(413, f"the body is over this server's {limits.max_body_bytes} byte limit "
                                    "(--max-body)")
                parts.append(part)
            body = b"".join(parts)
            try:
                chain = backend.plan(slices, outputs or None)
            except RequestError as exc:
                return _problem(exc.status, str(exc))
            try:
                feeds = decode_tensors(body, request.headers.get("x-hetcc-names"), max_bytes=limits.max_tensor_bytes)
                backend.check(chain, feeds)
            except TensorDecodeError as exc:
                return _problem(413 if exc.too_large else 400, str(exc))
            except RequestError as exc:
                return _problem(exc.status, str(exc))
            t0 = time.perf_counter()
            try:
                result = await run_in_threadpool(backend.run, chain, feeds, limits.timeout_s)
            except RunTimeout as exc:
                return _problem(504, str(exc))
            except RequestError as exc:
                return _problem(exc.status, str(exc))
            run_ms = (time.perf_counter() - t0) * 1e3
            metrics.runs += 1
            data, ctype, names = encode_tensors(result)
            return Response(data, media_type=NPY_TYPE if ctype == NPY_TYPE else NPZ_TYPE,
                            headers={"X-Hetcc-Run-Ms": f"{run_ms:.3f}", "X-Hetcc-Names": names,
                                     "X-Hetcc-Slices": str(len(chain.units))})
        finally:
            metrics.in_flight -= 1
            slots.release()

    return _Gate(api, token, metrics, limits.max_body_bytes)
