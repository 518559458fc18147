"""Target descriptions: one TOML file per board, loaded into frozen dataclasses and validated.

A target is data (after TVM's tag registry): devices with their execution provider, DVFS table,
power and throughput parameters, transfer coefficients, capacity and supported operators, plus
the board's hardware knobs and wireless links. Legality that cannot be data is a small named
predicate (after torch.fx ``OperatorSupport``, ``predicates``), named from the file. Every
malformed file fails with a ``TargetError`` that names the file and the key path
("hikey970.toml: devices.gpu.dvfs[2].volt: must be in (0, 2] V").

Modules: ``model`` (State, DvfsLevel, Link, Device, Knob, Target), ``schema`` (the declarative
key table ``KEYS``: type, unit, range, required, meaning; the one validator it drives; the
cross-key ``RULES``; ``schema_doc()`` prints the table), ``predicates`` and ``loader``.

Schema ``hetcc.target/1`` (units are in the key names; MB = 10**6 bytes):

    schema = "hetcc.target/1"
    name, description: str
    kind = "modelled" | "measured"     # analytical cost model vs. costs profiled on the device
    base_power_mw: float >= 0          # drawn by the board for the whole inference
    [knobs.<name>]                     # optional hardware knobs, chosen once per plan
        values = [...]                 # monotone order: a later value is faster and draws more
                                       # power; the last one is the default (the analytical
                                       # table's assumption); strictly ascending numbers
        devices = ["<device>", ...]    # the devices it affects
        effect = "active_cores"        # a CPU cluster's online cores (0 = it runs nothing):
            parallel_fraction: [0, 1]  #   compute x Amdahl speedup(n)/speedup(N), power x n/N
        effect = "memory_frequency"    # EMC clock (MHz): memory bandwidth x f/f_max of each
            power_mw_at_max: mW        #   device listed; base power less this x (1 - f/f_max)
        description: str (optional)
        control = {hotplug = [cpu ids]} | {clock = "/sys/...", unit = "Hz"|"kHz"|"MHz", lock (optional)}
                                       # optional: how the OS sets it (hetcc.targets.controls)
                                       # DVFS frequencies are not knobs: they stay planner states
    [links.<name>]                     # optional wireless links to remote devices
        kind: str; signal_dbm: [ascending floats]; bandwidth_mbps, tx_power_mw, rx_power_mw:
        [floats, one per signal level]; rtt_ms: float; default_signal_dbm: float
    [devices.<name>]                   # in execution-preference order; the file order is kept
        kind = "cpu"|"gpu"|"npu"|"dsp"|"remote"; execution_provider: str
        provider_options: table (optional); affinity: [core ids] (optional, cpu only)
        description: str (optional); link: str (remote devices: the link they are reached by)
        endpoint: str (optional, remote devices: where the runtime would send the slice,
                  "scheme://host:port", e.g. "tcp://edge.local:7070")
        power_model: bool (default true; false = no power figures, e.g. the measured host)
        control = {cpufreq = "/sys/..."} | {devfreq = "/sys/..."}   # optional: how the OS sets
                                       # its frequency (the runtime's --apply-hardware)
        dvfs = [{freq_mhz, volt, static_power_mw}, ...]   # ascending frequency; volt on every
                                       # level or none (then Eq. 5 scales with f / f_max alone);
                                       # a level may add transfer = {beta_ms_per_mb, delta_ms,
                                       # power_mw} (any of them): its own, else the device's
          or, for a fixed frequency: freq_mhz (optional), volt (optional), static_power_mw
        dynamic_power_mw: float        # at f_max, fully busy
        peak_gflops = {conv, matmul, other, dwconv (optional)}   # effective GFLOP/s at f_max
                                       # (modelled targets); dwconv: depthwise/grouped convolutions,
                                       # absent = the conv figure
        int8_peak_gops = {conv, matmul, other, dwconv (optional)}   # optional: effective int8 GOP/s
                                       # at f_max of integer kernels (QLinearConv, ConvInteger, QDQ
                                       # groups); absent = peak_gflops; needs int8/uint8 in dtypes
        mem_bandwidth_gbps: float      # effective GB/s (modelled targets)
        layer_overhead_ms: float       # fixed cost per layer (modelled targets)
        node_overhead_ms: float        # fixed cost per ONNX node in a layer (optional, default 0):
                                       # kernel launches happen per node, not per layer
        transfer = {beta_ms_per_mb, delta_ms, power_mw (optional)}   # C = beta*MB + delta
        capacity_bytes: int (optional, bytes per slice; absent = unlimited)
        capacity_counts = "params" | "params+activations"   # optional (default params): what a
                                       # slice holds against it; with activations, its parameters +
                                       # activation_bytes_factor (default 1) x the bytes of every
                                       # tensor its nodes produce
        supported_ops: [op types] (optional, absent = all) ; unsupported_ops: [op types]
        dtypes: [element types it computes in] ; predicates: [registered predicate names]
        precisions = {float32, float16, int8}   # optional: latency factor (> 0) of the device's
                                       # work at each precision relative to the one peak_gflops
                                       # assume; the precisions a precision-picking planner may
                                       # use here (each needs its dtype); absent = every
                                       # precision dtypes allow, at factor 1
"""
from __future__ import annotations

from .loader import builtin_targets, load_bytes, load_target
from .model import (DEVICE_KINDS, INDEX_DTYPES, KNOB_EFFECTS, KNOWN_DTYPES, OP_CLASSES, PRECISIONS, SCHEMA,
                    TARGET_KINDS, Device, DvfsLevel, Knob, Link, State, Target)
from .predicates import PREDICATES, Predicate, register_predicate
from .schema import KEYS, RULES, Key, schema_doc, validate

__all__ = ["DEVICE_KINDS", "Device", "DvfsLevel", "INDEX_DTYPES", "KEYS", "KNOB_EFFECTS", "KNOWN_DTYPES", "Key",
           "Knob", "Link", "OP_CLASSES", "PRECISIONS", "PREDICATES", "Predicate", "RULES", "SCHEMA", "State", "TARGET_KINDS",
           "Target", "builtin_targets", "load_bytes", "load_target", "register_predicate", "schema_doc",
           "validate"]
