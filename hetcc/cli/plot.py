"""``hetcc inspect --plot FILE``: the schedule drawn with matplotlib (PNG, SVG, PDF, JPEG) or as
one self-contained HTML page (the SVG and a table of the slices).

A row per device, a bar per slice at its predicted start (never thinner than
``MIN_BAR_FRACTION`` of the axis), labelled with layers, MHz and mJ where there is room, lighter
at lower frequencies; the deadline as a line; model, target, objective and totals in the title.
"""
from __future__ import annotations

import io
from pathlib import Path
from typing import Any

from hetcc.core.paths import confine_libraries
from hetcc.cli.common import fmt
from hetcc.core.errors import UsageError


#: formats --plot writes (matplotlib's, without those needing LaTeX or extra packages; html: the SVG
#: and a table of the slices in one page)
PLOT_FORMATS = ("png", "svg", "pdf", "jpg", "jpeg", "html")


def plot_path(text: str) -> Path:
    """The --plot file: a name ending in one of PLOT_FORMATS in an existing directory; an
    existing directory, symlink or non-regular file of that name is refused (never replaced)."""
    path = Path(text)
    fmt = path.suffix[1:].lower()
    if not text.strip() or fmt not in PLOT_FORMATS:
        raise UsageError(f"--plot {text!r}: name an image file ending in .{', .'.join(PLOT_FORMATS)}, "
                         "e.g. --plot schedule.png")
    from hetcc.files.atomic import check_replaceable_file

    check_replaceable_file(path, "--plot")
    parent = path.parent
    if not parent.is_dir():
        raise UsageError(f"--plot {text}: no directory {str(parent)!r}; create it first or name another file")
    return path


#: the narrowest bar drawn, as a fraction of the time axis: a 0.01 ms slice stays visible
MIN_BAR_FRACTION = 0.004


def plot_schedule(manifest: Any, path: Path, variant: str | None = None) -> None:
    """Draw one variant's schedule: a row per device, a bar per slice at its predicted start and
    length (at least MIN_BAR_FRACTION of the axis), labelled with layers, frequency and energy where
    the bar has room, each row summed in its label, the deadline as a red line; the title carries
    model, target, objective and totals. ``.html``: the SVG and a table of the slices in one file."""
    v = manifest.variant(variant)
    name = variant or manifest.default_variant
    fig = schedule_figure(manifest, v, name)     # UsageError without matplotlib
    import matplotlib.pyplot as plt

    fmt = path.suffix[1:].lower()
    image = io.BytesIO()
    fig.savefig(image, format="svg" if fmt == "html" else fmt)
    plt.close(fig)
    data = _plot_html(manifest, v, name, image.getvalue().decode("utf-8")) if fmt == "html" else image.getvalue()
    from hetcc.files.atomic import write_file

    write_file(path, data, "--plot", "name a writable file")   # complete or not there: never half-written


def schedule_figure(manifest: Any, v: Any, name: str) -> Any:
    """The matplotlib Figure of variant ``v`` (named ``name``) of ``manifest`` (see ``plot_schedule``)."""
    try:
        confine_libraries()           # its font cache and config under hetcc's cache
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise UsageError("--plot needs matplotlib: pip install matplotlib") from None
    devices: list[str] = []
    for s in v.slices:                     # rows in order of first use, top to bottom
        if s.device not in devices:
            devices.append(s.device)
    colours = {d: plt.get_cmap("tab10")(k % 10) for k, d in enumerate(devices)}
    total = sum(s.predicted.latency_ms for s in v.slices)
    deadline = v.objective.deadline_ms
    span = max(total, deadline or 0.0) * 1.04 or 1.0
    min_w = MIN_BAR_FRACTION * span
    width_in = 12.0
    fig, ax = plt.subplots(figsize=(width_in, 1.9 + 0.75 * len(devices)))
    ax_px = width_in * fig.dpi * 0.78      # the axes' share of the figure's width, roughly
    fmax = {d: max((s.frequency_mhz or 0.0) for s in v.slices if s.device == d) for d in devices}
    shaded = any(len({s.frequency_mhz for s in v.slices if s.device == d}) > 1 for d in devices)
    t = 0.0
    for s in v.slices:
        lat = s.predicted.latency_ms
        row = devices.index(s.device)
        shade = 0.3 + 0.7 * (s.frequency_mhz or 0.0) / fmax[s.device] if fmax[s.device] else 1.0
        ax.barh(row, max(lat, min_w), left=t, height=0.6, color=colours[s.device], alpha=shade, edgecolor="white",
                linewidth=0.6)
        label = _bar_label(s)
        room_px = max(lat, min_w) / span * ax_px
        if room_px > 6.2 * max(len(line) for line in label.split("\n")):   # ~6 px per 7-pt character
            ax.text(t + max(lat, min_w) / 2, row, label, ha="center", va="center", fontsize=7, color="white")
        elif len(v.slices) <= 20:          # a few narrow slices: their id above the bar
            ax.text(t + max(lat, min_w) / 2, row - 0.36, str(s.id), ha="center", va="bottom", fontsize=6)
        t += lat
    if deadline is not None:
        ax.axvline(deadline, color="crimson", linestyle="--", linewidth=1.4)
        text = f"deadline {deadline:.3g} ms" + (f" ({v.objective.deadline_spec})" if v.objective.deadline_spec else "")
        right = deadline > 0.6 * span       # the words on the side of the line with room
        ax.text(deadline, -0.62, f"{text} " if right else f" {text}", ha="right" if right else "left", va="center",
                color="crimson", fontsize=8)
    ax.set_yticks(range(len(devices)), [_row_label(d, v.slices) for d in devices], fontsize=8)
    ax.set_ylim(len(devices) - 0.5, -0.7)   # first device on top, room for the ids above the bars
    ax.set_xlim(0, span)
    ax.set_xlabel("predicted time (ms)" + ("; a lighter bar runs at a lower frequency" if shaded else ""))
    ax.grid(axis="x", alpha=0.3)
    ax.set_title(_plot_title(manifest, v, name), fontsize=10)
    fig.tight_layout()
    return fig


def _bar_label(s: Any) -> str:
    layers = f"L{s.first_layer}" if s.first_layer == s.last_layer else f"L{s.first_layer}-{s.last_layer}"
    parts = [f"{s.frequency_mhz:g} MHz"] if s.frequency_mhz else []
    if s.predicted.energy_mj is not None:
        parts.append(f"{s.predicted.energy_mj:.3g} mJ")
    return layers + ("\n" + " · ".join(parts) if parts else "")


def _row_label(device: str, slices: Any) -> str:
    """A device row's label: its slices, frequencies, time and energy, summed."""
    mine = [s for s in slices if s.device == device]
    freqs = sorted({s.frequency_mhz for s in mine if s.frequency_mhz})
    mhz = "" if not freqs else (f"{freqs[0]:g} MHz" if len(freqs) == 1 else f"{freqs[0]:g}-{freqs[-1]:g} MHz")
    ms = sum(s.predicted.latency_ms for s in mine)
    energies = [s.predicted.energy_mj for s in mine]
    mj = f", {sum(energies):.3g} mJ" if all(e is not None for e in energies) else ""
    return f"{device}\n{len(mine)} slice{'s' if len(mine) > 1 else ''}, {mhz + ', ' if mhz else ''}{ms:.3g} ms{mj}"


def _plot_title(manifest: Any, v: Any, name: str) -> str:
    obj, pr = v.objective, v.predicted
    head = f"{manifest.model.name} on {manifest.target.name}"
    if len(manifest.variants) > 1:
        head += f", variant {name}"
    limits = ""
    if obj.deadline_ms is not None:
        limits += f", deadline {obj.deadline_ms:.3g} ms"
    if obj.power_cap_mw is not None:
        limits += f", power cap {obj.power_cap_mw / 1e3:g} W"
    totals = f"{pr.latency_ms:.3g} ms" + (f", {pr.energy_mj:.3g} mJ" if pr.energy_mj is not None else "")
    state = "" if v.feasible else " — INFEASIBLE"
    return (f"{head}: objective {obj.metric}{limits}; planner {v.planner.name}\n"
            f"{len(v.slices)} slice{'s' if len(v.slices) > 1 else ''}, predicted {totals}{state}")


def _plot_html(manifest: Any, v: Any, name: str, svg: str) -> bytes:
    """One self-contained page: the SVG drawing and a table of the slices (no scripts, no links)."""
    from html import escape

    svg = svg[svg.index("<svg"):]           # drop the XML declaration and doctype
    rows = "".join(
        "<tr>" + "".join(f"<td>{escape(str(c))}</td>" for c in (
            s.id, f"L{s.first_layer}-L{s.last_layer}", s.device, fmt(s.frequency_mhz, 0) if s.frequency_mhz else "-",
            fmt(s.predicted.latency_ms, 3), fmt(s.predicted.energy_mj, 3))) + "</tr>\n" for s in v.slices)
    title = escape(_plot_title(manifest, v, name).replace("\n", "; "))
    return (f"<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>{title}</title>"
            "<style>body{font-family:sans-serif}table{border-collapse:collapse}"
            "td,th{border:1px solid #ccc;padding:2px 8px;text-align:right}</style></head>\n<body>\n"
            f"<h3>{title}</h3>\n{svg}\n<table>\n<tr><th>slice</th><th>layers</th><th>device</th><th>MHz</th>"
            f"<th>latency ms</th><th>energy mJ</th></tr>\n{rows}</table>\n</body></html>\n").encode("utf-8")


def plot_contention(manifest: Any, path: Path) -> None:
    """Draw a workload planned for models running at once (its manifest's ``contention`` block):
    a row per device, a bar per model (each model a colour) as long as the share of the device's
    time the contention model predicts it takes, stacked to the device's utilisation; each
    model's shared and alone throughput in the legend, T_w, T_norm, J and O in the title. Same
    formats as ``plot_schedule`` (``.html``: the SVG and a table of the models)."""
    try:
        confine_libraries()           # its font cache and config under hetcc's cache
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise UsageError("--plot needs matplotlib: pip install matplotlib") from None
    c = manifest.workload.contention
    devices = list(c.devices)
    names = list(c.models)
    colours = {n: plt.get_cmap("tab10")(k % 10) for k, n in enumerate(names)}
    fig, ax = plt.subplots(figsize=(11.0, 1.9 + 0.75 * len(devices)))
    for row, d in enumerate(devices):
        left = 0.0
        for n in names:
            share = c.devices[d].busy.get(n, 0.0)
            if share <= 0:
                continue
            ax.barh(row, share * 100, left=left, height=0.6, color=colours[n], edgecolor="white", linewidth=0.6)
            if share >= 0.06:
                ax.text(left + share * 50, row, f"{share:.0%}", ha="center", va="center", fontsize=7, color="white")
            left += share * 100
    from matplotlib.patches import Patch

    handles = [Patch(color=colours[n], label=f"{n}: {c.models[n].throughput_ips:.3g} inf/s shared, "
                                             f"{c.models[n].alone_ips:.3g} alone") for n in names]
    ax.set_yticks(range(len(devices)), [f"{d} ({c.devices[d].state})\nbusy {c.devices[d].utilisation:.0%}"
                                        for d in devices], fontsize=8)
    ax.set_ylim(len(devices) - 0.5, -0.6)
    ax.set_xlim(0, 100)
    ax.set_xlabel("predicted share of the device's time while all models run (%)")
    ax.grid(axis="x", alpha=0.3)
    ax.legend(handles=handles, fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.28), ncol=min(3, len(names)))
    met = c.metrics
    title = (f"workload of {len(names)} models on {manifest.target.name}; planner {manifest.workload.planner.name}, "
             f"objective {manifest.workload.objective.metric}\nT_w {met.throughput_ips:.3g} inf/s, T_norm "
             f"{met.normalised:.3f}, J {met.jain:.3f}, O {met.overall:.3f}")
    ax.set_title(title, fontsize=10)
    fig.tight_layout()
    kind = path.suffix[1:].lower()
    image = io.BytesIO()
    fig.savefig(image, format="svg" if kind == "html" else kind)
    plt.close(fig)
    if kind == "html":
        from html import escape

        svg = image.getvalue().decode("utf-8")
        svg = svg[svg.index("<svg"):]
        rows = "".join("<tr>" + "".join(f"<td>{escape(str(v))}</td>" for v in (
            n, " > ".join(f"{s.device}[L{s.first}-L{s.stop - 1}]" for s in c.models[n].pipeline),
            fmt(c.models[n].alone_ips, 3), fmt(c.models[n].throughput_ips, 3), fmt(c.models[n].ideal_ips, 3))) + "</tr>\n"
            for n in names)
        head = escape(title.replace("\n", "; "))
        data = (f"<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>{head}</title>"
                "<style>body{font-family:sans-serif}table{border-collapse:collapse}"
                "td,th{border:1px solid #ccc;padding:2px 8px;text-align:right}</style></head>\n<body>\n"
                f"<h3>{head}</h3>\n{svg}\n<table>\n<tr><th>model</th><th>pipeline</th><th>alone inf/s</th>"
                f"<th>shared inf/s</th><th>ideal inf/s</th></tr>\n{rows}</table>\n</body></html>\n").encode("utf-8")
    else:
        data = image.getvalue()
    from hetcc.files.atomic import write_file

    write_file(path, data, "--plot", "name a writable file")
