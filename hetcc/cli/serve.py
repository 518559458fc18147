"""``hetcc serve ARTIFACT|MODEL``: serve a model or an artifact's slices to boards that offload
(the ``serve`` extra: FastAPI and uvicorn; docs/offload.md).

FastAPI on uvicorn because they are the standard Python web stack and the board-side client
(``hetcc.runtime.offload``) needs nothing but the standard library's urllib; gRPC would need
grpcio on the board. This module imports neither until the command runs.
"""
from __future__ import annotations

import logging
import os
import sys
from typing import Any

from hetcc.core.errors import UsageError

#: defaults (docs/offload.md)
PORT_DEFAULT = 7070
MAX_BODY_MB_DEFAULT = 64
MAX_TENSOR_MB_DEFAULT = 256
CONCURRENCY_DEFAULT = 4
TIMEOUT_DEFAULT_S = 30.0


def add_arguments(parser: Any) -> Any:
    from hetcc.cli.artifact import duration_seconds
    from hetcc.cli.common import int_in

    parser.add_argument("path", metavar="ARTIFACT|MODEL",
                        help="an artifact directory (its slice files are served, named by sha256) or an .onnx model "
                        "(served whole)")
    parser.add_argument("--host", default="127.0.0.1",
                        help="address to listen on (default 127.0.0.1; 0.0.0.0 for every interface)")
    parser.add_argument("--port", type=int_in(0, 65535), default=PORT_DEFAULT,
                        help=f"TCP port (default {PORT_DEFAULT}; 0: a free one, named in the ready line)")
    parser.add_argument("--token", help="the bearer token every request but GET /healthz must carry (default: the "
                        "environment variable HETCC_SERVE_TOKEN; prefer it: a command line is visible to other users)")
    parser.add_argument("--max-body", type=int_in(1, 4096), default=MAX_BODY_MB_DEFAULT, metavar="MB",
                        help=f"largest request body in MiB, 1 to 4096 (default {MAX_BODY_MB_DEFAULT}; more: 413)")
    parser.add_argument("--max-tensor", type=int_in(1, 16384), default=MAX_TENSOR_MB_DEFAULT, metavar="MB",
                        help=f"largest decompressed tensors of one request in MiB (default {MAX_TENSOR_MB_DEFAULT}; "
                        "more: 413)")
    parser.add_argument("--max-concurrency", type=int_in(1, 256), default=CONCURRENCY_DEFAULT, metavar="N",
                        help=f"run requests in progress at once (reading the body, running, answering), 1 to 256 "
                        f"(default {CONCURRENCY_DEFAULT}); one more gets 503 at once")
    parser.add_argument("--timeout", type=duration_seconds, default=TIMEOUT_DEFAULT_S, metavar="T",
                        help="longest run (10s, 500ms; default 30s); past it the run is stopped and answered 504")
    parser.add_argument("--threads", type=int_in(1, 1024), default=None, metavar="N",
                        help="intra-op threads per session (default: one per usable core)")
    parser.add_argument("--provider", metavar="NAME",
                        help="run every file on this onnxruntime execution provider (default: each slice's own "
                        "where installed, else CPUExecutionProvider, reported at start)")
    return parser


def cmd_serve(args: Any) -> int:
    from hetcc.runtime.offload import TOKEN_ENV

    token = args.token if args.token is not None else os.environ.get(TOKEN_ENV, "")
    if not token or not token.strip() or any(c.isspace() for c in token):
        raise UsageError(f"hetcc serve needs a bearer token without spaces: give --token T or set {TOKEN_ENV} "
                         "(every request but GET /healthz must carry it)")
    try:
        from hetcc.serve.app import ServeLimits, create_app
        from hetcc.serve.backend import Backend
        from hetcc.serve.server import bind, serve
    except ImportError as exc:
        raise UsageError(f"hetcc serve needs FastAPI and uvicorn ({exc.name or exc} is missing): "
                         "pip install 'hetcc[serve]'") from None
    backend = Backend(args.path, provider=args.provider, threads=args.threads)
    limits = ServeLimits(max_body_bytes=args.max_body << 20, max_tensor_bytes=args.max_tensor << 20,
                         max_concurrency=args.max_concurrency, timeout_s=args.timeout)
    app = create_app(backend, token, limits)
    access = logging.getLogger("hetcc.serve.access")
    if not access.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("hetcc serve: %(message)s"))
        access.addHandler(handler)
    access.setLevel(logging.INFO)
    access.propagate = False
    try:
        sock = bind(args.host, args.port)
    except OSError as exc:
        raise UsageError(f"--host {args.host} --port {args.port}: cannot listen there ({exc.strerror or exc}); "
                         "pick another port (--port 0: any free one)") from None
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host

    def ready() -> None:
        print(f"hetcc serve: ready on http://{shown}:{port} ({backend.kind} {args.path}: {backend.sessions} "
              f"file(s); token required)", file=sys.stderr, flush=True)

    stopped = serve(app, sock, graceful_s=limits.timeout_s + 5.0, on_ready=ready)
    metrics = app.metrics
    why = f" by {__import__('signal').Signals(stopped).name}" if stopped else ""
    print(f"hetcc serve: stopped{why} after {sum(metrics.by_status.values())} request(s), {metrics.runs} run(s)",
          file=sys.stderr, flush=True)
    return 0
