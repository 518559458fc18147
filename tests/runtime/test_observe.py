"""hetcc.runtime.observe: co-runner CPU and memory from a fake /proc, RSSI traces and
/proc/net/wireless, and one-line refusals of bad traces."""
from __future__ import annotations

import pytest

from hetcc.runtime.errors import PolicyError, TraceError
from hetcc.runtime.observe import CpuSampler, Observer, RssiTrace, read_meminfo, read_wireless, self_cpu_seconds

PAGE = __import__("os").sysconf("SC_PAGE_SIZE")


def fake_proc(root, busy, idle, own, used_kb=4_000_000, rss_pages=0, wireless=None):
    (root / "self").mkdir(parents=True, exist_ok=True)
    (root / "stat").write_text(f"cpu  {busy} 0 0 {idle} 0 0 0 0 0 0\ncpu0 1 2 3 4 5 6 7 8 0 0\n")
    # comm with a space and a parenthesis, as a process may be named
    fields = ["S"] + ["0"] * 10 + [str(own), "0"] + ["0"] * 30
    (root / "self" / "stat").write_text("123 (py (x) y) " + " ".join(fields) + "\n")
    (root / "self" / "statm").write_text(f"1000 {rss_pages} 0 0 0 0 0\n")
    (root / "meminfo").write_text(f"MemTotal:       10000000 kB\nMemFree:  1 kB\n"
                                  f"MemAvailable:   {10_000_000 - used_kb} kB\n")
    if wireless is not None:
        (root / "net").mkdir(exist_ok=True)
        (root / "net" / "wireless").write_text(wireless)


def test_cpu_excludes_own_process(tmp_path):
    fake_proc(tmp_path, busy=1000, idle=1000, own=100)
    s = CpuSampler(tmp_path, min_interval_s=0.0, own_seconds=lambda: self_cpu_seconds(tmp_path))
    # 100 more jiffies of 200: 80 busy, of which 30 ours -> co-runners 50 / 200
    fake_proc(tmp_path, busy=1080, idle=1120, own=130)
    assert s.sample() == pytest.approx(50 / 200)
    fake_proc(tmp_path, busy=1080, idle=1320, own=130)
    assert s.sample() == 0.0
    fake_proc(tmp_path, busy=1280, idle=1320, own=330)    # busy only with our own work
    assert s.sample() == 0.0
    fake_proc(tmp_path, busy=1380, idle=1320, own=330)
    assert s.sample() == 1.0
    # no new ticks: the last value again
    assert s.sample() == 1.0


def test_cpu_rate_limited_and_missing_proc(tmp_path):
    fake_proc(tmp_path, busy=1000, idle=1000, own=0)
    s = CpuSampler(tmp_path, min_interval_s=3600, own_seconds=lambda: self_cpu_seconds(tmp_path))
    fake_proc(tmp_path, busy=2000, idle=1000, own=0)
    assert s.sample() == 0.0               # within the interval: the cached value, no read
    assert CpuSampler(tmp_path / "nope").sample() == 0.0


def test_memory_of_others(tmp_path):
    fake_proc(tmp_path, 1, 1, 0, used_kb=4_000_000, rss_pages=(1_000_000 * 1024) // PAGE)
    assert read_meminfo(tmp_path) == (10_000_000 * 1024, 4_000_000 * 1024)
    o = Observer(proc=tmp_path, mem_interval_s=0.0, own_seconds=lambda: 0.0)
    assert o.co_mem() == pytest.approx(0.3, abs=1e-3)      # 4 GB used, 1 GB of it ours
    base = Observer(proc=tmp_path, mem_baseline=True, mem_interval_s=0.0, own_seconds=lambda: 0.0)
    assert base.co_mem() == 0.0
    fake_proc(tmp_path, 1, 1, 0, used_kb=6_000_000, rss_pages=(1_000_000 * 1024) // PAGE)
    assert base.co_mem() == pytest.approx(0.2, abs=1e-3)


WIRELESS = """Inter-| sta-|   Quality        |   Discarded packets               | Missed | WE
 face | tus | link level noise |  nwid  crypt   frag  retry   misc | beacon | 22
p2p-wlan0-0: 0000   30.  -83.  -256        0      0      0      0      0        0
 wlan0: 0000   54.  -56.  -256        0      0      0      0      0        0
"""


def test_proc_net_wireless(tmp_path):
    fake_proc(tmp_path, 1, 1, 0, wireless=WIRELESS)
    assert read_wireless(tmp_path) == (-56.0, -83.0)
    o = Observer(proc=tmp_path)
    ob = o.observe()
    assert (ob.rssi_w, ob.rssi_p, ob.rssi_source) == (-56.0, -83.0, "/proc/net/wireless")
    assert read_wireless(tmp_path / "none") == (None, None)


def test_trace_by_inference_and_time(tmp_path):
    p = tmp_path / "rssi.csv"
    p.write_text("t,wifi_dbm,p2p_dbm\n0,-50,-55\n1.5,-70,\n3,-90,-95\n")
    tr = RssiTrace(p)
    assert len(tr) == 3 and tr.at(0) == (-50, -55) and tr.at(1) == (-70, None)
    assert tr.at(99) == (-90, -95)                                  # the last row held
    assert tr.at_time(0.2) == (-50, -55) and tr.at_time(1.5) == (-70, None) and tr.at_time(10) == (-90, -95)
    ob = Observer(trace=p).observe(2)
    assert (ob.rssi_w, ob.rssi_p, ob.rssi_source) == (-90, -95, "trace")
    assert Observer(trace=p, trace_by="time").observe(2).rssi_w == -50   # just started


@pytest.mark.parametrize("text,match", [
    ("", "empty"),
    ("t,wifi\n0,-50\n", "line 1: no column 'wifi_dbm'"),
    ("t,wifi_dbm,p2p_dbm\n", "no rows"),
    ("t,wifi_dbm,p2p_dbm\n0,strong,-50\n", "line 2: wifi_dbm 'strong' is not a number"),
    ("t,wifi_dbm,p2p_dbm\n0,-50,-50\n1,-50,20\n", r"line 3: p2p_dbm 20 dBm is outside \[-150, 0\]"),
    ("t,wifi_dbm,p2p_dbm\n2,-50,-50\n1,-50,-50\n", "line 3: t 1 goes backwards"),
    ("t,wifi_dbm,p2p_dbm\n0,nan,-50\n", "not a finite number"),
    ("t,wifi_dbm,p2p_dbm\n0,-50\n", "line 2: 2 cells"),
])
def test_bad_trace_is_one_line(tmp_path, text, match):
    p = tmp_path / "bad.csv"
    p.write_text(text)
    with pytest.raises(TraceError, match=match) as e:
        RssiTrace(p)
    assert str(p) in str(e.value) and "\n" not in str(e.value)
    assert isinstance(e.value, PolicyError) and e.value.exit_code == 2


def test_missing_or_binary_trace(tmp_path):
    with pytest.raises(TraceError, match="no such trace file"):
        RssiTrace(tmp_path / "gone.csv")
    with pytest.raises(TraceError, match="a directory"):
        RssiTrace(tmp_path)
    (tmp_path / "b.csv").write_bytes(b"\xff\xfe\x00")
    with pytest.raises(TraceError, match="not UTF-8"):
        RssiTrace(tmp_path / "b.csv")


def test_real_proc_reads_sane_fractions():
    """On this machine's /proc: fractions in [0, 1] while this process keeps a CPU busy."""
    import time
    o = Observer(min_interval_s=0.0)
    t = time.perf_counter()
    while time.perf_counter() - t < 0.3:     # keep one CPU busy in this process
        pass
    ob = o.observe()
    assert 0.0 <= ob.co_cpu <= 1.0 and 0.0 <= ob.co_mem <= 1.0
    o.close()
