"""``hetcc serve``: run a model or an artifact's slices for boards that offload to this machine.

A FastAPI application on uvicorn (the ``serve`` extra: ``pip install hetcc[serve]``) in front of
onnxruntime. The board-side client (``hetcc.runtime.offload``) speaks plain HTTP through the
standard library's urllib, so a board needs nothing beyond numpy and onnxruntime; gRPC would have
needed grpcio there. ``backend`` (what runs: sessions indexed by slice file sha256) imports no web
framework; ``app`` builds the FastAPI application; ``server`` runs it (a bound socket, SIGTERM =
finish what is in flight and exit 0). Importing ``hetcc`` imports none of this.
"""
from __future__ import annotations

__all__: list[str] = []
