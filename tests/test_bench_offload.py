"""benchmarks/offload_shaping.py --quick runs (in a subprocess) and writes the JSON it promises:
both links of mi8pro-edge-cloud at each signal level, the tabled figures taken from the target,
delivered figures measured (positive, the fits' inputs recorded), every offload logged by the
server and the server stopped cleanly. Its accuracy is what the full run records, not asserted."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from extras import needs

needs("serve", "fastapi", "uvicorn")
pytestmark = [pytest.mark.serve, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[1]


def test_offload_shaping_quick(tmp_path):
    from hetcc.targets import load_target

    out = tmp_path / "offload_shaping-quick.json"
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "offload_shaping.py"), "--quick", "--out",
                           str(out)], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "HETCC_CACHE_DIR": str(tmp_path / "cache")})
    assert proc.returncode == 0, proc.stderr[-3000:]
    doc = json.loads(out.read_text())
    assert doc["script"] == "offload_shaping" and doc["args"]["quick"] is True and doc["server_exit"] == 0
    links = load_target("mi8pro-edge-cloud").links
    rows = doc["results"]
    assert {(r["link"], r["signal_dbm"]) for r in rows} == {(n, d) for n in ("wifi", "wifi-direct")
                                                            for d in (-85.0, -60.0)}
    for r in rows:
        link = links[r["link"]]
        assert r["tabled_mbps"] == pytest.approx(link.bandwidth_mbps_at(r["signal_dbm"]))
        assert r["tabled_rtt_ms"] == link.rtt_ms
        assert r["delivered_up_mbps"] > 0 and r["delivered_down_mbps"] > 0 and r["delivered_rtt_ms"] > 0
        assert len(r["payload_bytes"]) == len(doc["payload_ms"]) == len(r["t_tx_ms"]) == len(r["t_rx_ms"])
        # a bigger payload took longer both ways (shaped at a few Mbit/s, not loopback speed)
        assert r["t_tx_ms"][-1] > r["t_tx_ms"][0] and r["t_rx_ms"][-1] > r["t_rx_ms"][0]
    assert doc["server_offloads_logged"] == 3 * len(doc["payload_ms"]) * len(rows)
    assert isinstance(doc["target_met"], bool)
