"""``hetcc serve`` (hetcc.serve): a served artifact's slices over HTTP equal the local run; the
token, the body and tensor bounds, malformed requests, the busy answer, the log and the metrics;
SIGTERM while a request is in flight. One server per module (a subprocess on a free port), and
one more for the SIGTERM test, which stops it."""
from __future__ import annotations

import io
import json
import logging
import os
import socket
import subprocess
import sys
import threading
import urllib.error
import urllib.request
import zipfile

import numpy as np
import pytest

from extras import needs
from serving import TOKEN, Served, build_artifact

from hetcc.runtime.offload import (OffloadClient, OffloadError, ShapedLink, TensorDecodeError, decode_tensors,
                                   encode_tensors)

needs("serve", "fastapi", "uvicorn")
pytestmark = pytest.mark.serve


@pytest.fixture(scope="module")
def artifact(tmp_path_factory):
    return build_artifact(tmp_path_factory.mktemp("serve"), {"split": [(0, 1, "cpu"), (2, 4, "edge")],
                                                             "cloud": [(0, 4, "cloud")]})


@pytest.fixture(scope="module")
def server(artifact, tmp_path_factory):
    served = Served(artifact, "--max-body", "1", "--max-tensor", "1",
                    cache_dir=str(tmp_path_factory.mktemp("cache")))
    yield served
    served.stop()


def slices_of(artifact):
    manifest = json.loads((artifact / "manifest.json").read_text())
    return {v: [s["sha256"] for s in spec["slices"]] for v, spec in manifest["variants"].items()}


def local_run(artifact, x):
    import onnxruntime as ort

    sess = ort.InferenceSession(str(artifact.parent / "chain.onnx"), providers=["CPUExecutionProvider"])
    return sess.run(None, {"x": x})[0]


def request(server, path, *, data=None, token=TOKEN, headers=None, method=None):
    """(status, body bytes) of one request to the server."""
    req = urllib.request.Request(server.url + path, data=data, method=method, headers=dict(headers or {}))
    if token is not None:
        req.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def raw(server, data: bytes) -> bytes:
    """The first bytes of the server's answer to ``data`` sent on a plain socket."""
    with socket.create_connection(("127.0.0.1", server.port), timeout=30) as sock:
        sock.sendall(data)
        return sock.recv(64)


def runs(server) -> int:
    status, text = request(server, "/metrics")
    assert status == 200
    return int(next(line.split()[1] for line in text.decode().splitlines() if line.startswith("hetcc_serve_runs_total")))


def test_a_chain_of_slices_over_http_equals_the_local_run(server, artifact):
    x = np.random.default_rng(0).standard_normal((1, 8)).astype(np.float32)
    shas = slices_of(artifact)
    client = OffloadClient(server.url, token=TOKEN)
    whole = client.run({"x": x}, slices=shas["cloud"])           # one file: the whole model
    chain = client.run({"x": x}, slices=shas["split"])           # two files, in order
    np.testing.assert_allclose(whole.outputs["y"], local_run(artifact, x), rtol=1e-6)
    np.testing.assert_allclose(chain.outputs["y"], whole.outputs["y"], rtol=1e-6)
    assert whole.t_tx_ms > 0 and whole.t_rx_ms > 0 and whole.server_ms is not None and whole.attempts == 1
    # the log has a line per request: method, path, status, ms, bytes
    server.wait_for(rf"POST /v1/run 200 [\d.]+ ms in {whole.bytes_sent} B out {whole.bytes_received} B")
    server.wait_for(rf"POST /v1/run 200 [\d.]+ ms in {chain.bytes_sent} B out {chain.bytes_received} B")
    status, listing = request(server, "/v1/slices")
    assert status == 200 and {s["sha256"] for s in json.loads(listing)["slices"]} == {*shas["cloud"], *shas["split"]}


def test_the_token_is_required_except_for_healthz(server, artifact):
    assert request(server, "/healthz", token=None)[0] == 200
    before = runs(server)
    body, ctype, names = encode_tensors({"x": np.zeros((1, 8), np.float32)})
    sha = slices_of(artifact)["cloud"][0]
    for token in (None, "wrong", TOKEN + "x", ""):
        status, text = request(server, f"/v1/run?slices={sha}", data=body, token=token,
                               headers={"Content-Type": ctype, "X-Hetcc-Names": names})
        assert status == 401 and b"bearer token" in text
        assert request(server, "/metrics", token=token)[0] == 401
        assert request(server, "/v1/slices", token=token)[0] == 401
    big = encode_tensors({"x": np.zeros(1 << 17, np.float32)})[0]   # 512 KiB: answered 401, not a reset
    assert request(server, f"/v1/run?slices={sha}", data=big, token="wrong", headers={"X-Hetcc-Names": "x"})[0] == 401
    assert runs(server) == before                                # nothing ran
    with pytest.raises(OffloadError, match="401.*HETCC_SERVE_TOKEN"):
        OffloadClient(server.url, token="wrong").run({"x": np.zeros((1, 8), np.float32)}, slices=[sha])
    server.wait_for(r"POST /v1/run 401")


def test_oversized_and_malformed_requests_are_refused_and_the_server_keeps_serving(server, artifact):
    sha = slices_of(artifact)["cloud"][0]
    npy = {"Content-Type": "application/x-npy", "X-Hetcc-Names": "x"}

    def post(data, headers=npy, query=f"?slices={sha}"):
        return request(server, "/v1/run" + query, data=data, headers=headers)

    good, _, _ = encode_tensors({"x": np.zeros((1, 8), np.float32)})
    # over --max-body 1 (MiB): refused from Content-Length before the body is read, and while reading
    # a chunked body (raw sockets: the server may close before a client such as urllib sent it all)
    head = f"POST /v1/run?slices={sha} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN}\r\n"
    assert raw(server, (head + f"Content-Length: {2 << 20}\r\n\r\n").encode()).startswith(b"HTTP/1.1 413")
    chunk = b"\0" * (64 << 10)
    chunked = (head + "Transfer-Encoding: chunked\r\n\r\n").encode() + (b"10000\r\n" + chunk + b"\r\n") * 17
    assert raw(server, chunked).startswith(b"HTTP/1.1 413")
    assert post(b"garbage")[0] == 400                                         # neither .npy nor .npz
    assert post(good[:-4])[0] == 400                                          # truncated
    assert post(good, headers={"X-Hetcc-Names": "z"})[0] == 400               # not the slice's input
    wrong = encode_tensors({"x": np.zeros((1, 8), np.float64)})[0]
    assert post(wrong)[0] == 400                                              # its dtype
    assert post(encode_tensors({"x": np.zeros((2, 8), np.float32)})[0])[0] == 400   # its shape
    assert post(good, query="?slices=" + "0" * 64)[0] == 404                  # no such slice here
    assert post(good, query="")[0] == 400                                     # an artifact: name the slices
    assert post(good, query=f"?slices={sha}&outputs=nope")[0] == 400          # not an output
    pickled = io.BytesIO()
    np.save(pickled, np.array([{"a": 1}], dtype=object), allow_pickle=True)
    assert post(pickled.getvalue())[0] == 400                                 # never unpickled
    # an .npz whose member declares more than --max-tensor (1 MiB) decompressed
    bomb = io.BytesIO()
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as zf:
        member = io.BytesIO()
        np.save(member, np.zeros((1 << 19,), np.float32))
        zf.writestr("x.npy", member.getvalue())
    assert len(bomb.getvalue()) < 1 << 20 and post(bomb.getvalue(), headers={})[0] == 413
    # a .npy header declaring a huge array over a few bytes: refused before allocating it
    huge = io.BytesIO()
    np.lib.format.write_array_header_1_0(huge, {"descr": "<f4", "fortran_order": False, "shape": (1 << 40,)})
    assert post(huge.getvalue() + b"\0" * 16)[0] == 400
    assert request(server, "/v1/run", method="GET")[0] == 405
    # still serving
    out = OffloadClient(server.url, token=TOKEN).run({"x": np.ones((1, 8), np.float32)}, slices=[sha])
    np.testing.assert_allclose(out.outputs["y"], local_run(artifact, np.ones((1, 8), np.float32)), rtol=1e-6)
    status, text = request(server, "/metrics")
    text = text.decode()
    assert 'hetcc_serve_requests_total{status="413"}' in text and 'status="400"' in text
    assert "hetcc_serve_request_duration_ms_bucket" in text


def test_decode_bounds_without_a_server():
    body, _, names = encode_tensors({"a": np.arange(6, dtype=np.int64).reshape(2, 3), "b": np.ones(2, np.float16)})
    got = decode_tensors(body, names)
    assert got["a"].tolist() == [[0, 1, 2], [3, 4, 5]] and got["b"].dtype == np.float16
    with pytest.raises(TensorDecodeError) as info:
        decode_tensors(body, max_bytes=100)
    assert info.value.too_large
    with pytest.raises(TensorDecodeError, match="name"):
        decode_tensors(encode_tensors({"a": np.ones(1)})[0], None)
    with pytest.raises(ValueError, match="bandwidth"):
        ShapedLink(0.0, 1.0)


@pytest.mark.slow
def test_sigterm_while_serving_finishes_the_request_in_flight_and_exits_0(artifact, tmp_path):
    served = Served(artifact, "--max-concurrency", "1", cache_dir=str(tmp_path / "cache"))
    try:
        sha = slices_of(artifact)["cloud"][0]
        x = np.random.default_rng(1).standard_normal((1, 8)).astype(np.float32)
        result: dict = {}
        # the body goes at 4 kbit/s: the request stays in flight for ~0.3 s on the server
        slow = OffloadClient(served.url, token=TOKEN, link=ShapedLink(0.004, 0.0), retries=0)
        thread = threading.Thread(target=lambda: result.update(r=slow.run({"x": x}, slices=[sha])))
        thread.start()
        while "hetcc_serve_requests_in_progress 1" not in request(served, "/metrics")[1].decode():
            assert thread.is_alive(), result
        # a second run while the one slot is taken: 503 at once, nothing waits
        busy, text = request(served, f"/v1/run?slices={sha}", data=encode_tensors({"x": x})[0],
                             headers={"X-Hetcc-Names": "x"})
        assert busy == 503 and b"max-concurrency" in text
        code = served.terminate()
        thread.join(30)
        assert code == 0, "".join(served.lines)
        np.testing.assert_allclose(result["r"].outputs["y"], local_run(artifact, x), rtol=1e-6)
        assert any("stopped by SIGTERM" in line for line in served.lines)
        with pytest.raises(OffloadError, match="connection refused"):   # nothing left listening
            OffloadClient(served.url, token=TOKEN, retries=0, timeout=5).run({"x": x}, slices=[sha])
    finally:
        served.stop()


def test_the_command_line(tmp_path, capsys, monkeypatch):
    from hetcc.cli.app import main

    monkeypatch.delenv("HETCC_SERVE_TOKEN", raising=False)
    assert main(["serve", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "--token" in err and "HETCC_SERVE_TOKEN" in err and len(err.strip().splitlines()) == 1
    assert main(["serve", str(tmp_path / "nope.onnx"), "--token", "t"]) == 2
    assert "no such model" in capsys.readouterr().err
    assert main(["serve", str(tmp_path), "--token", "two words"]) == 2
    # importing hetcc and building the parser (hetcc.cli.serve included) loads no web framework
    code = ("import sys, hetcc, hetcc.cli.app as a; a.build_parser(); "
            "print(sorted(m for m in ('fastapi', 'uvicorn', 'starlette') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                         env={**os.environ, "HETCC_CACHE_DIR": str(tmp_path / "cache")})
    assert out.stdout.strip() == "[]", out.stderr


def test_a_run_past_the_time_limit_is_stopped_and_a_missing_provider_reported(artifact, tmp_path, caplog):
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    from hetcc.serve.backend import Backend, RunTimeout

    w = numpy_helper.from_array(np.eye(384, dtype=np.float32), "w")
    nodes = [helper.make_node("MatMul", [f"h{i}", "w"], [f"h{i + 1}"]) for i in range(12)]
    graph = helper.make_graph(nodes, "slow", [helper.make_tensor_value_info("h0", TensorProto.FLOAT, [384, 384])],
                              [helper.make_tensor_value_info("h12", TensorProto.FLOAT, [384, 384])], [w])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(tmp_path / "slow.onnx"))
    backend = Backend(tmp_path / "slow.onnx", threads=1)
    chain = backend.plan([], None)
    x = np.ones((384, 384), np.float32)
    with pytest.raises(RunTimeout, match="--timeout"):       # the app answers it 504
        backend.run(chain, {"h0": x}, timeout=1e-4)
    np.testing.assert_allclose(backend.run(chain, {"h0": x}, timeout=None)["h12"], x)
    with caplog.at_level(logging.WARNING, logger="hetcc.serve"):
        served = Backend(artifact)
    assert served.sessions == 3     # the files of both variants, once each
    assert any("CUDAExecutionProvider is not available here" in r.getMessage() for r in caplog.records)
