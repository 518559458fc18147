"""Offloading slices to a ``hetcc serve`` endpoint over HTTP (numpy and the standard library only).

The board side of AutoScale's remote actions: ``OffloadClient(url).run(feeds, slices=[sha256...])``
posts the tensors a chain of slices reads to ``{url}/v1/run`` and returns what the chain computed,
with the time spent sending the request (``t_tx_ms``) and receiving the response (``t_rx_ms``)
measured apart (AutoScale Eq. 4 charges the radio's transmit and receive power to them).

* Transport: ``http.client`` (nothing to install on a board; gRPC would need grpcio there), one
  connection per request, no proxy.
* Auth: a bearer token, from the caller or the environment variable ``HETCC_SERVE_TOKEN``.
* Robustness: a timeout per attempt and one retry (connection refused or reset, a timeout, 503);
  a client error (4xx) is not retried. Every failure is one ``OffloadError`` line naming the URL.
* Tensors travel as ``.npy`` bytes: one tensor as a ``.npy`` body (its name in the header
  ``X-Hetcc-Names``), several as an ``.npz`` (a zip of ``.npy`` members, uncompressed). Both
  sides read them with ``decode_tensors``: no pickles, and nothing allocated beyond a bound on
  the decompressed size.
* Traffic shaping (``ShapedLink``): this machine has no ``tc netem`` (the ``sch_netem`` kernel
  module is missing), so the client shapes its own traffic: a token bucket paces the request
  body and the response body at the link's bandwidth for a given signal strength
  (``LinkInfo.bandwidth_mbps_at(dbm)``) and half the link's round trip is added each way.
"""
from __future__ import annotations

import http.client
import io
import json
import math
import os
import socket
import time
import urllib.error
import urllib.parse
import urllib.request
import zipfile
from dataclasses import dataclass, field
from typing import Any, Iterator, Mapping, Sequence

import numpy as np

from .errors import RemoteSliceError

__all__ = ["OffloadClient", "OffloadError", "OffloadResult", "OffloadRecord", "FallbackRecord", "RemoteSlice",
           "ShapedLink", "TensorDecodeError", "encode_tensors", "decode_tensors", "is_http", "TOKEN_ENV", "NPY_TYPE",
           "NPZ_TYPE", "MAX_TENSOR_BYTES", "MAX_TENSORS", "OFFLOAD_TIMEOUT_S"]

#: where the client (and ``hetcc serve``) read the bearer token when none is given
TOKEN_ENV = "HETCC_SERVE_TOKEN"
NPY_TYPE = "application/x-npy"
NPZ_TYPE = "application/x-npz"
#: the largest decompressed tensor payload either side accepts by default (bytes)
MAX_TENSOR_BYTES = 256 << 20
#: the most tensors one body may hold
MAX_TENSORS = 256
#: the largest .npy header read (numpy writes 128 bytes for a small array)
_MAX_HEADER = 64 << 10
#: seconds one offload attempt may take when the inference itself is not bounded (--timeout)
OFFLOAD_TIMEOUT_S = 30.0
#: body chunk of a shaped transfer: small enough that pacing is smooth at 3 Mbit/s
_CHUNK = 16 << 10


class OffloadError(RemoteSliceError):
    """An offloaded slice could not be run on its endpoint: the server is down or refused the
    request (wrong token, a malformed or oversized body), or it timed out. One line naming the URL."""


class TensorDecodeError(ValueError):
    """A tensor body is not a well-formed .npy / .npz within the bounds (the server answers 400/413)."""

    def __init__(self, message: str, too_large: bool = False):
        super().__init__(message)
        self.too_large = too_large


# ---------------------------------------------------------------------------------------------
# tensors on the wire


def encode_tensors(tensors: Mapping[str, np.ndarray]) -> tuple[bytes, str, str]:
    """(body, content type, names header): one tensor as .npy, several as an uncompressed .npz."""
    names = list(tensors)
    if len(names) == 1:
        buf = io.BytesIO()
        np.save(buf, np.ascontiguousarray(tensors[names[0]]), allow_pickle=False)
        return buf.getvalue(), NPY_TYPE, urllib.parse.quote(names[0], safe="")
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED) as zf:
        for name in names:
            member = io.BytesIO()
            np.save(member, np.ascontiguousarray(tensors[name]), allow_pickle=False)
            zf.writestr(name + ".npy", member.getvalue())
    return buf.getvalue(), NPZ_TYPE, ",".join(urllib.parse.quote(n, safe="") for n in names)


def _read_npy(f: Any, size: int, what: str) -> np.ndarray:
    """One .npy of ``size`` bytes from ``f``; its header checked before anything is allocated."""
    fmt = np.lib.format
    try:
        version = fmt.read_magic(f)
    except ValueError:
        raise TensorDecodeError(f"{what}: not a .npy (no NumPy header)") from None
    readers = {(1, 0): fmt.read_array_header_1_0, (2, 0): fmt.read_array_header_2_0}
    if version not in readers:
        raise TensorDecodeError(f"{what}: .npy format {version[0]}.{version[1]} is not supported")
    try:
        shape, fortran, dtype = readers[version](f, max_header_size=_MAX_HEADER)
    except TypeError:   # numpy < 1.24.4: no max_header_size
        shape, fortran, dtype = readers[version](f)
    except (ValueError, SyntaxError) as exc:
        raise TensorDecodeError(f"{what}: damaged .npy header ({' '.join(str(exc).split())[:120]})") from None
    if dtype.hasobject or dtype.fields is not None:
        raise TensorDecodeError(f"{what}: holds Python objects or records; only numeric arrays are accepted")
    need = math.prod(shape) * dtype.itemsize
    have = size - f.tell()
    if need != have:
        raise TensorDecodeError(f"{what}: the header declares {list(shape)} {dtype} ({need} bytes) but {have} "
                                "bytes follow it")
    data = f.read(need)
    if len(data) != need:
        raise TensorDecodeError(f"{what}: truncated ({len(data)} of {need} bytes)")
    arr = np.frombuffer(data, dtype=dtype)
    arr = arr.reshape(shape[::-1]).T if fortran else arr.reshape(shape)
    return np.ascontiguousarray(arr.astype(dtype.newbyteorder("="), copy=False))


def decode_tensors(body: bytes, names: str | None = None, *, max_bytes: int = MAX_TENSOR_BYTES,
                   max_tensors: int = MAX_TENSORS) -> dict[str, np.ndarray]:
    """The tensors of a body ``encode_tensors`` wrote (.npy, its name in ``names``; or .npz, any
    names header ignored). Never unpickles; refuses (``TensorDecodeError``) a body whose tensors
    would decompress to more than ``max_bytes`` before reading them."""
    if body[:6] == b"\x93NUMPY":
        if not names or "," in names:
            raise TensorDecodeError("a .npy body needs its tensor's name in the X-Hetcc-Names header")
        if len(body) > max_bytes + _MAX_HEADER:
            raise TensorDecodeError(f"the tensor is over the {max_bytes} byte limit", too_large=True)
        name = urllib.parse.unquote(names)
        return {name: _read_npy(io.BytesIO(body), len(body), f"tensor {name!r}")}
    if body[:4] != b"PK\x03\x04":
        raise TensorDecodeError("the body is neither a .npy nor an .npz (a zip of .npy files)")
    try:
        zf = zipfile.ZipFile(io.BytesIO(body))
        infos = zf.infolist()
    except (zipfile.BadZipFile, ValueError, OSError) as exc:
        raise TensorDecodeError(f"damaged .npz ({exc})") from None
    if len(infos) > max_tensors:
        raise TensorDecodeError(f"{len(infos)} tensors, more than {max_tensors}", too_large=True)
    total = sum(i.file_size for i in infos)
    if total > max_bytes:
        raise TensorDecodeError(f"the tensors decompress to {total} bytes, over the {max_bytes} byte limit",
                                too_large=True)
    out: dict[str, np.ndarray] = {}
    for info in infos:
        if not info.filename.endswith(".npy") or info.is_dir():
            raise TensorDecodeError(f".npz member {info.filename[:80]!r} is not a .npy file")
        name = info.filename[:-4]
        if name in out:
            raise TensorDecodeError(f"tensor {name!r} is given twice")
        try:
            with zf.open(info) as f:
                out[name] = _read_npy(f, info.file_size, f"tensor {name!r}")
        except (zipfile.BadZipFile, NotImplementedError, OSError, EOFError) as exc:
            raise TensorDecodeError(f"tensor {name!r}: damaged .npz member ({exc})") from None
    return out


def is_http(url: str | None) -> bool:
    """Whether an endpoint is one the runtime offloads to (http:// or https://)."""
    return isinstance(url, str) and url.lower().startswith(("http://", "https://"))


# ---------------------------------------------------------------------------------------------
# traffic shaping


@dataclass
class ShapedLink:
    """Client-side shaping of one wireless link: ``bandwidth_mbps`` (megabits/s, both ways) and
    ``rtt_ms`` (half added before the request is sent, half after the response arrives)."""

    bandwidth_mbps: float
    rtt_ms: float
    name: str = ""
    signal_dbm: float | None = None

    def __post_init__(self) -> None:
        if not (math.isfinite(self.bandwidth_mbps) and self.bandwidth_mbps > 0):
            raise ValueError(f"link {self.name or '?'}: bandwidth {self.bandwidth_mbps!r} Mbit/s; give a number "
                             "above 0")
        if not (math.isfinite(self.rtt_ms) and self.rtt_ms >= 0):
            raise ValueError(f"link {self.name or '?'}: rtt {self.rtt_ms!r} ms; give a number of ms, 0 or more")

    @classmethod
    def from_link(cls, link: Any, signal_dbm: float | None = None, name: str = "") -> "ShapedLink":
        """The shaping of a manifest ``LinkInfo`` at ``signal_dbm`` (None: its default signal)."""
        dbm = link.default_signal_dbm if signal_dbm is None else float(signal_dbm)
        return cls(link.bandwidth_mbps_at(dbm), float(link.rtt_ms), name=name, signal_dbm=dbm)

    @property
    def bytes_per_s(self) -> float:
        return self.bandwidth_mbps * 1e6 / 8.0


class _Bucket:
    """A token bucket at ``rate`` bytes/s holding at most one chunk: ``take(n)`` waits until n
    bytes may pass. It starts empty, so n bytes take n / rate from the first byte on."""

    def __init__(self, rate: float):
        self.rate = rate
        self.burst = float(min(_CHUNK, max(1.0, rate * 0.002)))
        self.tokens = 0.0
        self.last = time.perf_counter()

    def take(self, n: int) -> None:
        now = time.perf_counter()
        self.tokens = min(self.burst, self.tokens + (now - self.last) * self.rate)
        self.last = now
        self.tokens -= n
        if self.tokens < 0:
            wait = -self.tokens / self.rate
            _sleep_until(now + wait)
            self.last = now + wait
            self.tokens = 0.0


def _sleep_until(deadline: float) -> None:
    while True:
        left = deadline - time.perf_counter()
        if left <= 0:
            return
        time.sleep(left if left > 0.002 else left / 2 if left > 1e-4 else 0)


def _chunk_size(shape: ShapedLink | None) -> int:
    if shape is None:
        return 1 << 20
    return int(min(_CHUNK, max(512, shape.bytes_per_s * 0.002)))


# ---------------------------------------------------------------------------------------------
# the client


@dataclass
class OffloadResult:
    """What one offloaded run returned: ``outputs`` and the measured times (ms): ``t_tx_ms`` (the
    request: half the shaped RTT and the body, paced), ``t_rx_ms`` (the response body, paced, and
    the other half RTT), ``wait_ms`` (from the request's last byte to the response's headers:
    the server's work), ``server_ms`` (the server's own time, from its X-Hetcc-Run-Ms header),
    ``total_ms``, the body sizes and the attempts it took (2: the retry was used)."""

    outputs: dict[str, np.ndarray]
    t_tx_ms: float
    t_rx_ms: float
    wait_ms: float
    server_ms: float | None
    total_ms: float
    bytes_sent: int
    bytes_received: int
    attempts: int
    url: str = ""
    link: ShapedLink | None = field(default=None, repr=False)


class _Timed:
    """The request body as an iterable of chunks, paced by a bucket; notes when the last chunk
    was handed to the socket (``http.client`` sends each chunk with ``sendall``)."""

    def __init__(self, body: bytes, bucket: _Bucket | None, chunk: int):
        self.body, self.bucket, self.chunk = body, bucket, chunk
        self.done: float | None = None

    def __iter__(self) -> Iterator[bytes]:
        view = memoryview(self.body)
        for i in range(0, len(view), self.chunk):
            part = view[i:i + self.chunk]
            if self.bucket is not None:
                self.bucket.take(len(part))
            yield part
        self.done = time.perf_counter()


class _Retryable(Exception):
    pass


class OffloadClient:
    """Runs slices on a ``hetcc serve`` endpoint: ``OffloadClient("http://edge:7070").run(feeds,
    slices=[sha256, ...])`` -> ``OffloadResult``.

    ``token``: the bearer token (default: the environment variable HETCC_SERVE_TOKEN; none: no
    Authorization header). ``timeout``: seconds per attempt (connect, send, wait, receive).
    ``retries``: further attempts after a connection failure, a timeout or a 503 (default 1).
    ``link``: a ``ShapedLink`` to shape the traffic as that link would (None: as fast as it goes).
    """

    def __init__(self, url: str, *, token: str | None = None, timeout: float = 30.0, retries: int = 1,
                 link: ShapedLink | None = None, max_bytes: int = MAX_TENSOR_BYTES):
        parts = urllib.parse.urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise OffloadError(f"endpoint {url!r}: not an http:// URL; give one like http://127.0.0.1:7070")
        if not (isinstance(timeout, (int, float)) and math.isfinite(timeout) and timeout > 0):
            raise ValueError(f"timeout {timeout!r}: give a number of seconds above 0")
        self.url = url.rstrip("/")
        self._parts = urllib.parse.urlsplit(self.url)      # host, port, scheme and path, parsed once
        self.token = token if token is not None else (os.environ.get(TOKEN_ENV) or None)
        self.timeout = float(timeout)
        self.retries = int(retries)
        self.link = link
        self.max_bytes = max_bytes

    def __repr__(self) -> str:
        shaped = f", shaped {self.link.bandwidth_mbps:g} Mbit/s {self.link.rtt_ms:g} ms" if self.link else ""
        return f"OffloadClient({self.url!r}{shaped})"

    # ---- public
    def health(self) -> dict:
        """GET /healthz (no token needed); OffloadError when the server does not answer."""
        try:
            with urllib.request.urlopen(self.url + "/healthz", timeout=self.timeout) as resp:
                return json.loads(resp.read(1 << 16) or b"{}")
        except (urllib.error.URLError, OSError, ValueError) as exc:
            raise OffloadError(f"offload endpoint {self.url}: no answer to /healthz ({_reason(exc)}); is "
                               "`hetcc serve` running there?") from None

    def run(self, feeds: Mapping[str, np.ndarray], slices: Sequence[str] = (),
            outputs: Sequence[str] | None = None) -> OffloadResult:
        """Run ``slices`` (sha256s of slice files, in order; empty: the server's whole model) on
        ``feeds``; ``outputs``: the tensors to return (default: the last slice's outputs)."""
        body, ctype, names = encode_tensors(feeds)
        query = {}
        if slices:
            query["slices"] = ",".join(slices)
        if outputs:
            query["outputs"] = ",".join(urllib.parse.quote(o, safe="") for o in outputs)
        target = self._parts.path + "/v1/run" + ("?" + urllib.parse.urlencode(query) if query else "")
        headers = {"Content-Type": ctype, "X-Hetcc-Names": names, "Content-Length": str(len(body)),
                   "Accept": f"{NPY_TYPE}, {NPZ_TYPE}"}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        attempts = 0
        while True:
            attempts += 1
            try:
                result = self._attempt(target, body, headers)
                result.attempts = attempts
                return result
            except _Retryable as exc:
                if attempts > self.retries:
                    raise OffloadError(f"offload to {self.url}: {exc} (after {attempts} attempt(s)); is `hetcc "
                                       "serve` running there?") from None

    # ---- one attempt
    def _connect(self) -> http.client.HTTPConnection:
        """An open connection to the endpoint's host."""
        parts = self._parts
        cls = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
        conn = cls(parts.hostname, parts.port, timeout=self.timeout)
        try:
            conn.connect()
        except (OSError, http.client.HTTPException) as exc:
            conn.close()
            raise _Retryable(_reason(exc)) from None
        return conn

    def _attempt(self, target: str, body: bytes, headers: dict) -> OffloadResult:
        """One request. With a shaped link, the connection is opened during the first half round
        trip (what a kept-alive connection to the endpoint costs: the request's own round trip),
        the request body is paced, the response body is paced and the second half round trip
        follows it."""
        shape = self.link
        half_rtt = shape.rtt_ms / 2e3 if shape else 0.0
        chunk = _chunk_size(shape)
        t0 = time.perf_counter()
        conn = self._connect()
        try:
            return self._exchange(conn, target, body, headers, shape, half_rtt, chunk, t0)
        finally:
            conn.close()

    def _exchange(self, conn: http.client.HTTPConnection, target: str, body: bytes, headers: dict,
                  shape: ShapedLink | None, half_rtt: float, chunk: int, t0: float) -> OffloadResult:
        if half_rtt:
            _sleep_until(t0 + half_rtt)
        sender = _Timed(body, _Bucket(shape.bytes_per_s) if shape else None, chunk)
        try:
            conn.putrequest("POST", target, skip_accept_encoding=True)
            for k, v in headers.items():
                conn.putheader(k, v)
            conn.endheaders()
            for part in sender:
                conn.send(part)
        except (BrokenPipeError, ConnectionResetError):
            raise _Retryable(f"the server closed the connection while the request was sent ({len(body)} bytes: "
                             "over its --max-body? or it is busy or restarting)") from None
        except (http.client.HTTPException, OSError) as exc:
            raise _Retryable(_reason(exc)) from None
        try:
            resp = conn.getresponse()
        except (http.client.HTTPException, OSError) as exc:
            raise _Retryable(_reason(exc)) from None
        t_headers = time.perf_counter()
        t_sent = sender.done or t_headers
        if resp.status >= 400:
            detail = _error_detail(resp)
            if resp.status == 503:
                raise _Retryable(f"busy (503: {detail})")
            if resp.status == 401:
                raise OffloadError(f"offload to {self.url}: refused (401: {detail}); give the server's token "
                                   f"(--token or {TOKEN_ENV})")
            raise OffloadError(f"offload to {self.url}: HTTP {resp.status} ({detail})")
        try:
            server_ms = _float(resp.getheader("X-Hetcc-Run-Ms"))
            names = resp.getheader("X-Hetcc-Names")
            length = _float(resp.getheader("Content-Length"))
            if length is None or length > self.max_bytes + _MAX_HEADER:
                raise OffloadError(f"offload to {self.url}: the response has no or too large a "
                                   f"Content-Length ({resp.getheader('Content-Length')})")
            bucket = _Bucket(shape.bytes_per_s) if shape else None
            parts = []
            while True:
                part = resp.read(chunk)
                if not part:
                    break
                if bucket is not None:
                    bucket.take(len(part))
                parts.append(part)
            data = b"".join(parts)
        except (http.client.HTTPException, ConnectionError, socket.timeout, TimeoutError, OSError) as exc:
            raise _Retryable(f"the response was cut short ({_reason(exc)})") from None
        if half_rtt:
            _sleep_until(time.perf_counter() + half_rtt)
        t_end = time.perf_counter()
        try:
            outputs = decode_tensors(data, names, max_bytes=self.max_bytes)
        except TensorDecodeError as exc:
            raise OffloadError(f"offload to {self.url}: unreadable response ({exc})") from None
        return OffloadResult(outputs=outputs, t_tx_ms=(t_sent - t0) * 1e3, t_rx_ms=(t_end - t_headers) * 1e3,
                             wait_ms=(t_headers - t_sent) * 1e3, server_ms=server_ms, total_ms=(t_end - t0) * 1e3,
                             bytes_sent=len(body), bytes_received=len(data), attempts=1, url=self.url, link=shape)


def _float(text: str | None) -> float | None:
    try:
        return float(text) if text is not None else None
    except ValueError:
        return None


def _reason(exc: BaseException) -> str:
    inner = getattr(exc, "reason", None)
    if isinstance(inner, BaseException):
        exc = inner
    if isinstance(exc, (socket.timeout, TimeoutError)):
        return "timed out"
    if isinstance(exc, ConnectionRefusedError):
        return "connection refused"
    if isinstance(exc, socket.gaierror):
        return f"unknown host ({exc.strerror or exc})"
    text = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
    return " ".join(str(text).split())[:200]


def _error_detail(resp: http.client.HTTPResponse) -> str:
    """The ``detail`` of an error response's JSON body (FastAPI's), else its reason phrase."""
    try:
        doc = json.loads(resp.read(1 << 14) or b"{}")
        detail = doc.get("detail") if isinstance(doc, dict) else None
    except (ValueError, OSError, http.client.HTTPException):
        detail = None
    return " ".join(str(detail or resp.reason or "").split())[:300]


# ---------------------------------------------------------------------------------------------
# what the executor keeps of offloaded slices


@dataclass
class OffloadRecord:
    """One slice run on its endpoint: which, where, and the measured times (ms) and bytes."""

    slice: int
    device: str
    endpoint: str
    link: str | None
    t_tx_ms: float
    t_rx_ms: float
    wait_ms: float
    server_ms: float | None
    bytes_sent: int
    bytes_received: int
    attempts: int
    signal_dbm: float | None = None

    def to_json(self) -> dict:
        return dict(self.__dict__)


@dataclass
class FallbackRecord:
    """One slice planned for a remote device that ran here instead, and why."""

    slice: int
    device: str
    endpoint: str
    reason: str

    def to_json(self) -> dict:
        return dict(self.__dict__)


class RemoteSlice:
    """A slice the executor sends to its endpoint: the client, the slice's sha256 and the
    outputs it must get back (name -> dtype, shape: a server holding another file is caught)."""

    def __init__(self, url: str, *, sha256: str, slice_id: int, device: str, link: str | None,
                 outputs: Sequence[Any], token: str | None, timeout: float):
        self.url, self.sha256, self.slice_id, self.device, self.link = url, sha256, slice_id, device, link
        self.client = OffloadClient(url, token=token, timeout=timeout)
        self.timeout = float(timeout)
        self.expected = {spec.name: (np.dtype(spec.dtype), tuple(spec.shape)) for spec in outputs}

    def call(self, feeds: Mapping[str, np.ndarray], out_names: Sequence[str], shaping: ShapedLink | None,
             remaining: float | None) -> tuple[list, OffloadRecord]:
        client = self.client
        client.link = shaping
        client.timeout = self.timeout if remaining is None else max(1e-3, min(self.timeout, remaining))
        res = client.run(feeds, slices=(self.sha256,), outputs=out_names)
        outs = []
        for name in out_names:
            value = res.outputs.get(name)
            dtype, shape = self.expected[name]
            if value is None or value.dtype != dtype or tuple(value.shape) != shape:
                got = "nothing" if value is None else f"{value.dtype}{list(value.shape)}"
                raise OffloadError(f"offload to {self.url}: output {name!r} came back as {got}, not "
                                   f"{dtype}{list(shape)}; does the server hold the same artifact?")
            outs.append(value)
        record = OffloadRecord(self.slice_id, self.device, self.url, self.link, res.t_tx_ms, res.t_rx_ms,
                               res.wait_ms, res.server_ms, res.bytes_sent, res.bytes_received, res.attempts,
                               shaping.signal_dbm if shaping is not None else None)
        return outs, record
