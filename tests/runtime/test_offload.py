"""The runtime's offload (runtime/offload.py, runtime/executor.py): a remote slice runs on a
``hetcc serve`` over HTTP and equals the local run; server down: the fallback is reported (or a
one-line error without it); a wrong token; ``hetcc run --endpoint --verify --json``; shaping at a
link's signal strength; sessions shared across variants by file content. One server per module."""
from __future__ import annotations

import argparse
import json
import logging

import numpy as np
import pytest

from extras import needs
from serving import TOKEN, Served, build_artifact, closed_port

from hetcc.cli.artifact import add_run_arguments, cmd_run
from hetcc.core.errors import UsageError
from hetcc.runtime import Executor, RemoteSliceError, verify
from hetcc.runtime.offload import OffloadError, ShapedLink

needs("serve", "fastapi", "uvicorn")
pytestmark = pytest.mark.serve

PLANS = {"split": [(0, 1, "cpu"), (2, 4, "edge")], "cloud": [(0, 4, "cloud")], "local": [(0, 4, "cpu")],
         "gpu": [(0, 4, "gpu")], "split-gpu": [(0, 1, "gpu"), (2, 4, "edge")]}


@pytest.fixture(scope="module")
def artifact(tmp_path_factory):
    return build_artifact(tmp_path_factory.mktemp("offload"), PLANS)


@pytest.fixture(scope="module")
def server(artifact, tmp_path_factory):
    served = Served(artifact, cache_dir=str(tmp_path_factory.mktemp("cache")))
    yield served
    served.stop()


def feeds():
    return {"x": np.random.default_rng(3).standard_normal((1, 8)).astype(np.float32)}


def reference(artifact, x):
    import onnxruntime as ort

    sess = ort.InferenceSession(str(artifact.parent / "chain.onnx"), providers=["CPUExecutionProvider"])
    return sess.run(None, x)[0]


def test_remote_slices_run_on_the_server_and_equal_the_local_run(server, artifact):
    endpoints = {"edge": server.url, "cloud": server.url}
    ex = Executor(artifact, variant="split", endpoints=endpoints, token=TOKEN)
    got = ex.run(feeds())
    np.testing.assert_allclose(got["y"], reference(artifact, feeds()), rtol=1e-6)
    assert ex.providers == ["CPUExecutionProvider", server.url] and ex.last_fallbacks == []
    (off,) = ex.last_offloads
    assert (off.slice, off.device, off.endpoint, off.link) == (1, "edge", server.url, "wifi-direct")
    assert off.t_tx_ms > 0 and off.t_rx_ms > 0 and off.bytes_sent > 0 and off.attempts == 1
    np.testing.assert_allclose(ex.run(feeds(), variant="cloud")["y"], got["y"], rtol=1e-6)
    assert ex.last_offloads[0].device == "cloud"
    assert verify(ex.pipeline("split")).ok
    server.wait_for(r"POST /v1/run 200")


def test_server_down_falls_back_reported_or_fails_in_one_line(artifact, caplog):
    down = f"http://127.0.0.1:{closed_port()}"
    with pytest.raises(RemoteSliceError) as info:
        Executor(artifact, variant="split", endpoints={"edge": down}, token=TOKEN).run(feeds())
    msg = str(info.value)
    assert "\n" not in msg and "slice 1" in msg and down in msg and "connection refused" in msg
    assert "--local-fallback" in msg and "after 2 attempt(s)" in msg and isinstance(info.value, OffloadError)
    with caplog.at_level(logging.WARNING, logger="hetcc.runtime"):
        ex = Executor(artifact, variant="split", endpoints={"edge": down}, token=TOKEN, local_fallback=True)
        got = ex.run(feeds())
        ex.run(feeds())
    np.testing.assert_allclose(got["y"], reference(artifact, feeds()), rtol=1e-6)
    assert [(f.slice, f.device, f.endpoint) for f in ex.last_fallbacks] == [(1, "edge", down)]
    assert "connection refused" in ex.last_fallbacks[0].reason and ex.last_offloads == []
    assert ex.pipeline().fallbacks[0]["runs"] == 2
    warned = [r.getMessage() for r in caplog.records if "ran it here" in r.getMessage()]
    assert len(warned) == 1 and down in warned[0]


def test_a_wrong_token_is_refused_and_nothing_runs(server, artifact):
    ex = Executor(artifact, variant="split", endpoints={"edge": server.url}, token="not-" + TOKEN)
    with pytest.raises(OffloadError, match=r"401.*(--token|HETCC_SERVE_TOKEN)"):
        ex.run(feeds())
    server.wait_for(r"POST /v1/run 401")


def test_the_token_comes_from_the_environment(server, artifact, monkeypatch):
    monkeypatch.setenv("HETCC_SERVE_TOKEN", TOKEN)
    ex = Executor(artifact, variant="split", endpoints={"edge": server.url})
    ex.run(feeds())
    assert len(ex.last_offloads) == 1


def test_shaping_follows_the_link_tables(server, artifact):
    ex = Executor(artifact, variant="split", endpoints={"edge": server.url}, token=TOKEN,
                  signal_dbm={"wifi-direct": -85.0})
    ex.run(feeds())
    (off,) = ex.last_offloads
    link = ex.manifest.target.links["wifi-direct"]
    shaped = ShapedLink.from_link(link, -85.0)
    assert shaped.bandwidth_mbps == pytest.approx(link.bandwidth_mbps_at(-85.0)) == pytest.approx(4.4)
    assert off.signal_dbm == -85.0
    assert off.t_tx_ms >= link.rtt_ms / 2 and off.t_rx_ms >= link.rtt_ms / 2   # half the round trip each way
    ex.set_signal("wifi-direct", None)
    ex.run(feeds())
    assert ex.last_offloads[0].signal_dbm is None
    with pytest.raises(ValueError, match="no link 'lte'"):
        ex.set_signal("lte", -70)
    with pytest.raises(ValueError, match="no such link"):
        Executor(artifact, variant="local", signal_dbm={"lte": -70.0})


def test_sessions_are_shared_across_variants_by_file(artifact):
    ex = Executor(artifact, variant="local", local_fallback=True,
                  endpoints={"edge": f"http://127.0.0.1:{closed_port()}", "cloud": "http://127.0.0.1:1"})
    for name in ex.variants:
        ex.pipeline(name)
    files = {s.sha256 for v in ex.manifest.variants.values() for s in v.slices if not s.remote}
    # local, gpu (its provider is missing here: CPU) share the whole-model file; split and
    # split-gpu its first slice; the remote slices open nothing until they must fall back
    assert len(files) == 2 and ex.sessions_opened == 2
    ex.run(feeds(), variant="cloud")          # falls back: the whole-model file, already open
    assert ex.sessions_opened == 2 and ex.last_fallbacks[0].device == "cloud"


def parse(*argv):
    p = argparse.ArgumentParser(prog="hetcc")
    sub = p.add_subparsers(dest="cmd", required=True)
    add_run_arguments(sub.add_parser("run")).set_defaults(func=cmd_run)
    return p.parse_args([str(a) for a in argv])


def call(capsys, *argv):
    args = parse(*argv)
    code = args.func(args)
    return code, capsys.readouterr().out


def test_hetcc_run_verify_checks_offloaded_outputs(server, artifact, capsys):
    code, out = call(capsys, "run", artifact, "--variant", "split", "--endpoint", f"edge={server.url}", "--token",
                     TOKEN, "--verify", "--json", "--repeat", "2", "--warmup", "0", "--rssi", "wifi-direct=-60")
    doc = json.loads(out)
    assert code == 0 and doc["verify"]["ok"] and doc["providers"][1] == server.url and doc["fallbacks"] == []
    (off,) = doc["offloads"]
    assert off["device"] == "edge" and off["signal_dbm"] == -60.0 and off["t_tx_ms"] > 0
    code, out = call(capsys, "run", artifact, "--variant", "split", "--endpoint", f"edge={server.url}", "--token",
                     TOKEN, "--repeat", "1", "--warmup", "0")
    assert code == 0 and "edge (remote)" in out and "fallback" not in out
    assert f"offload: slice 1 (edge) to {server.url}: send" in out
    down = f"http://127.0.0.1:{closed_port()}"
    code, out = call(capsys, "run", artifact, "--variant", "split", "--endpoint", f"edge={down}", "--local-fallback",
                     "--json", "--repeat", "2", "--warmup", "0")
    doc = json.loads(out)
    assert code == 0 and doc["fallbacks"][0]["runs"] == 2 and doc["fallbacks"][0]["endpoint"] == down
    code, out = call(capsys, "run", artifact, "--variant", "local", "--json", "--repeat", "1")
    assert "offloads" not in json.loads(out)             # a pipeline that offloads nothing: the JSON as before
    for bad in (["--endpoint", "edge"], ["--endpoint", "edge=tcp://x:1"], ["--endpoint", "egde=http://x:1"],
                ["--rssi", "wifi=loud"],
                ["--rssi", "wifi=-300"], ["--rssi", "lte=-70"]):
        with pytest.raises(UsageError, match="--endpoint|--rssi"):
            call(capsys, "run", artifact, "--variant", "local", *bad)
