"""The offload client's traffic shaping: the link tables' bandwidth and round trip against what the shaped client delivers.

    python benchmarks/offload_shaping.py             # 7 signal levels x both links of mi8pro-edge-cloud
    python benchmarks/offload_shaping.py --quick     # 2 levels x both links (a test runs it)

This machine has no ``tc netem`` (the sch_netem kernel module is missing), so the runtime shapes
its own traffic (``hetcc.runtime.offload.ShapedLink``: a token bucket paces the request and the
response bodies at the link's bandwidth for the signal strength, half the round trip is added
each way). For each link of mi8pro-edge-cloud (wifi: the cloud, wifi-direct: the edge tablet)
and each signal level, payloads of a few sizes (chosen to take about 10 to 80 ms at the tabled
bandwidth) go to an Identity model on a loopback ``hetcc serve`` and back, several times (the
least time of each direction kept: shaping and a busy machine only ever add time). A least-squares
line through (bytes, time) of each direction gives the delivered bandwidth (1 / slope) and half the
delivered round trip (the intercept); both are compared with the tables. Target: within 10%.
Writes benchmarks/results/offload_shaping[-quick].json.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _common import RESULTS_DIR, ServeProcess, machine_info, make_console, utc_now, write_json  # noqa: E402

TARGET = "mi8pro-edge-cloud"
TOKEN = "offload-shaping-benchmark"
LEVELS_FULL = [-90.0, -85.0, -80.0, -75.0, -70.0, -60.0, -50.0]
LEVELS_QUICK = [-85.0, -60.0]
#: transfer times (ms at the tabled bandwidth) of the payloads
TIMES_FULL = [0.0, 10.0, 20.0, 40.0, 80.0]   # 0: a 64-byte tensor, the round trip measured rather than extrapolated
TIMES_QUICK = [0.0, 40.0]
TARGET_ERROR = 0.10


def identity_model(path: Path) -> Path:
    import onnx
    import onnx.parser

    model = onnx.parser.parse_model('<ir_version: 8, opset_import: ["" : 17]>\n'
                                    "ident (float[N] x) => (float[N] y) { y = Identity(x) }")
    onnx.save(model, str(path))
    return path


def fit(xs: list[float], ys: list[float]) -> tuple[float, float]:
    """(slope, intercept) of the least-squares line."""
    slope, intercept = np.polyfit(np.asarray(xs, float), np.asarray(ys, float), 1)
    return float(slope), float(intercept)


def measure(client_cls, link, name: str, dbm: float, url: str, times_ms: list[float], repeat: int) -> dict:
    from hetcc.runtime.offload import ShapedLink

    shaped = ShapedLink.from_link(link, dbm, name=name)
    client = client_cls(url, token=TOKEN, link=shaped, timeout=60)
    sent, tx, received, rx, waits = [], [], [], [], []
    for t in times_ms:
        n = max(16, int(shaped.bytes_per_s * t / 1e3) // 4)
        x = np.zeros(n, np.float32)
        samples = [client.run({"x": x}) for _ in range(repeat)]
        # least of runs, each direction: shaping only ever adds time, and so does a busy machine
        sent.append(samples[0].bytes_sent)
        tx.append(min(r.t_tx_ms for r in samples))
        received.append(samples[0].bytes_received)
        rx.append(min(r.t_rx_ms for r in samples))
        waits.append(min(r.wait_ms for r in samples))
    up_slope, up_icpt = fit(sent, tx)
    down_slope, down_icpt = fit(received, rx)
    up_mbps = 8e-3 / up_slope        # bytes per ms -> Mbit/s
    down_mbps = 8e-3 / down_slope
    rtt = up_icpt + down_icpt
    tab_bw, tab_rtt = shaped.bandwidth_mbps, shaped.rtt_ms
    return {"link": name, "signal_dbm": dbm, "tabled_mbps": tab_bw, "delivered_up_mbps": up_mbps,
            "delivered_down_mbps": down_mbps, "tabled_rtt_ms": tab_rtt, "delivered_rtt_ms": rtt,
            "bandwidth_error": max(abs(up_mbps - tab_bw), abs(down_mbps - tab_bw)) / tab_bw,
            "rtt_error": abs(rtt - tab_rtt) / tab_rtt if tab_rtt else abs(rtt),
            "payload_bytes": sent, "t_tx_ms": tx, "t_rx_ms": rx, "server_wait_ms": waits}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="2 signal levels, 2 payload sizes (64 bytes and 40 ms), 3 runs each")
    ap.add_argument("--repeat", type=int, default=None, help="runs per payload, the least time of each direction "
                    "kept (default 5; quick 3)")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)
    from hetcc.runtime.offload import OffloadClient
    from hetcc.targets import load_target

    levels = LEVELS_QUICK if args.quick else LEVELS_FULL
    times = TIMES_QUICK if args.quick else TIMES_FULL
    repeat = args.repeat or (3 if args.quick else 5)
    target = load_target(TARGET)
    started, machine = utc_now(), machine_info()
    rows = []
    with tempfile.TemporaryDirectory(prefix="hetcc-offload-") as tmp:
        server = ServeProcess(identity_model(Path(tmp) / "ident.onnx"),
                              dict(os.environ, HETCC_SERVE_TOKEN=TOKEN, HETCC_CACHE_DIR=str(Path(tmp) / "cache")))
        try:
            for name in ("wifi", "wifi-direct"):
                for dbm in levels:
                    rows.append(measure(OffloadClient, target.links[name], name, dbm, server.url, times, repeat))
        finally:
            code = server.stop()
    offloads = server.count(r"POST /v1/run 200\b")
    console = make_console()
    from rich.table import Table

    t = Table(title=f"{TARGET}: tabled link vs the shaped client on a loopback hetcc serve (target: within 10%)")
    for col in ("link", "dBm", "tabled Mbit/s", "up", "down", "error", "tabled RTT ms", "delivered", "error"):
        t.add_column(col, justify="left" if col == "link" else "right")
    for r in rows:
        t.add_row(r["link"], f"{r['signal_dbm']:g}", f"{r['tabled_mbps']:.1f}", f"{r['delivered_up_mbps']:.2f}",
                  f"{r['delivered_down_mbps']:.2f}", f"{r['bandwidth_error']:.1%}", f"{r['tabled_rtt_ms']:.1f}",
                  f"{r['delivered_rtt_ms']:.2f}", f"{r['rtt_error']:.1%}")
    console.print(t)
    worst_bw = max(r["bandwidth_error"] for r in rows)
    worst_rtt = max(r["rtt_error"] for r in rows)
    doc = {"script": "offload_shaping", "started": started, "machine": machine,
           "args": {"quick": args.quick, "repeat": args.repeat}, "repeat": repeat, "target": TARGET,
           "target_error": TARGET_ERROR,
           "payload_ms": times, "results": rows, "worst_bandwidth_error": worst_bw, "worst_rtt_error": worst_rtt,
           "target_met": worst_bw <= TARGET_ERROR and worst_rtt <= TARGET_ERROR,
           "server_exit": code, "server_offloads_logged": offloads}
    out = args.out or RESULTS_DIR / f"offload_shaping{'-quick' if args.quick else ''}.json"
    write_json(doc, out)
    print(f"worst bandwidth error {worst_bw:.1%}, worst RTT error {worst_rtt:.1%} "
          f"({'within' if doc['target_met'] else 'NOT within'} {TARGET_ERROR:.0%}); wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
