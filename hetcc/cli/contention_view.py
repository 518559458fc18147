"""``hetcc inspect`` of a workload planned for models running at once: the manifest's
``contention`` block as tables (per device the models whose stages it runs and its predicted
utilisation; per model its pipeline, alone vs shared throughput; the four metrics of FairBoost's
Table 3). Standard library and rich only, like ``hetcc.cli.artifact``.
"""
from __future__ import annotations

from typing import Any


def pipeline_text(stages: Any) -> str:
    """``big[L0-L14] > gpu[L15-L31]``: a pipeline's stages in order (layers inclusive)."""
    return " > ".join(f"{st.device}[L{st.first}-L{st.stop - 1}]" for st in stages)


def print_contention(console: Any, contention: Any) -> None:
    """Print the ``contention`` block of a workload manifest (see the module docstring)."""
    from rich.table import Table

    met = contention.metrics
    console.print(f"  predicted while all run at once: T_w {met.throughput_ips:.4g} inf/s, T_norm "
                  f"{met.normalised:.3f} (over every model whole on the GPU), Jain J {met.jain:.3f}, "
                  f"overall O {met.overall:.3f}")
    devices = Table(show_edge=False, title="devices", title_justify="left")
    for col in ("device", "state", "utilisation", "models (share of its time)"):
        devices.add_column(col, justify="right" if col == "utilisation" else "left")
    for name, d in contention.devices.items():
        models = ", ".join(f"{m} {d.busy[m]:.0%}" if m in d.busy else m for m in d.models) or "-"
        devices.add_row(name, d.state, f"{d.utilisation:.0%}", models)
    console.print(devices)
    models = Table(show_edge=False, title="models", title_justify="left")
    for col in ("model", "pipeline", "alone inf/s", "shared inf/s", "shared/alone", "ideal inf/s"):
        models.add_column(col, justify="left" if col in ("model", "pipeline") else "right")
    for name, m in contention.models.items():
        ratio = f"{m.throughput_ips / m.alone_ips:.0%}" if m.alone_ips > 0 else "-"
        models.add_row(name, pipeline_text(m.pipeline), f"{m.alone_ips:.4g}", f"{m.throughput_ips:.4g}", ratio,
                       f"{m.ideal_ips:.4g}")
    console.print(models)


__all__ = ["pipeline_text", "print_contention"]
