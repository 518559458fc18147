"""``hetcc run DIR --policy``: run a model artifact under its AutoScale policy
(``hetcc.runtime.policy_run``): every inference picks its variant from the Q-table, and what was
measured is learned and written back into the artifact (docs/autoscale-runtime.md).

Light like ``hetcc.cli.artifact`` (which dispatches here and hands over how feeds are made and
outputs saved): the standard library, the runtime, rich when installed.
"""
from __future__ import annotations

import argparse
from typing import Any, Callable

from hetcc.core.errors import UsageError
from hetcc.cli.common import fmt, json_text, make_console, make_table, shown

__all__ = ["cmd_run_policy", "DECISIONS_SHOWN"]

#: the most per-inference decisions ``--json`` lists (the last ones; the summary counts all)
DECISIONS_SHOWN = 1000
#: ``hetcc run --policy`` without --repeat
POLICY_REPEAT_DEFAULT = 10


def _refuse(args: argparse.Namespace) -> None:
    clash = [flag for flag, on in (
        ("--variant", getattr(args, "variant", None) is not None),
        ("--model", getattr(args, "model", None) is not None),
        ("--verify", getattr(args, "verify", False)),
        ("--duration", getattr(args, "duration", None) is not None),
    ) if on]
    if clash:
        raise UsageError(f"{clash[0]} with --policy: the policy picks the variant of every inference; run a "
                         f"variant alone with hetcc run DIR --variant NAME {clash[0] if clash[0] != '--variant' else ''}"
                         .rstrip())


def cmd_run_policy(args: argparse.Namespace, feeds_of: Callable[[Any], dict], save: Callable[[dict], Any] | None
                   = None, executor_options: dict[str, Any] | None = None) -> int:
    """Run ``args.dir`` under its policy for ``--repeat`` inferences. ``feeds_of(pipeline)`` gives
    the feeds (``--input`` / ``--seed``); ``save(outputs)`` writes the last outputs (--save-outputs);
    ``executor_options`` (endpoints, token) go to the Executor."""
    from hetcc.runtime import Executor
    from hetcc.runtime.policy_run import PolicyRunner, parse_policy_options

    _refuse(args)
    options = parse_policy_options(getattr(args, "policy_option", None) or [])
    repeat = getattr(args, "repeat", None) or POLICY_REPEAT_DEFAULT
    apply_hw = getattr(args, "apply_hardware", False)
    keep = apply_hw and getattr(args, "keep_hardware", False)
    ex = Executor(args.dir, strict_providers=args.strict_providers,
                  local_fallback=getattr(args, "local_fallback", False), timeout=getattr(args, "timeout", None),
                  apply_hardware=apply_hw, sysfs_root=getattr(args, "sysfs_root", "/"), restore_hardware=not keep,
                  **(executor_options or {}))
    runner = PolicyRunner(ex, options, trace=getattr(args, "trace", None))
    out: dict = {}
    try:
        feeds = feeds_of(ex.pipeline())
        if getattr(args, "warmup", 0):   # every allowed variant once, untimed: sessions open, caches warm
            for i, name in enumerate(runner.policy.variants):
                if runner.allowed[i]:
                    try:
                        ex.run(feeds, variant=name)
                    except Exception:  # noqa: BLE001 - a failing variant is the policy's to learn about
                        pass
        for _ in range(repeat):
            out = runner.run(feeds)
    finally:
        runner.close()
        restored = ex.close()
    saved = save(out) if save is not None and out else None
    summary = runner.summary()
    hardware = None
    if apply_hw:   # each variant's knobs and frequencies, applied when it runs (a switch costs its writes)
        hardware = {"applied": [r.to_json() for r in ex.hardware_reports], "kept": keep,
                    "restored": None if restored is None else restored.to_json()}
    if args.json:
        decisions = runner.decisions[-DECISIONS_SHOWN:]
        doc = {"policy": summary, "saved_outputs": saved, "decisions_shown": len(decisions),
               "decisions": [d.to_json() for d in decisions]}
        if hardware is not None:
            doc["hardware"] = hardware
        print(json_text(doc))
        return 0
    console = make_console()
    console.print(f"policy run: {summary['inferences']} inference(s) of {shown(str(args.dir))} under "
                  f"{summary['policy']} ({summary['persists']} update(s) written; energy: {summary['energy_source']})",
                  markup=False)
    table = make_table(console, ["variant", "runs", "p50 ms", "mean ms", "mean mJ", "chosen by exploring"],
                       {"variant"})
    by: dict[str, list] = {}
    for d in runner.decisions:
        by.setdefault(d.ran, []).append(d)
    for name in runner.policy.variants:
        ds = by.get(name)
        if not ds:
            continue
        lat = sorted(d.latency_ms for d in ds)
        table.add_row(name, str(len(ds)), f"{lat[len(lat) // 2]:.3f}", f"{sum(lat) / len(lat):.3f}",
                      fmt(sum(d.energy_mj for d in ds) / len(ds), 3), str(sum(d.explored for d in ds)))
    console.print(table)
    fb = [d for d in runner.decisions if d.fallback is not None]
    if fb:
        last = fb[-1]
        console.print(f"fallbacks: {len(fb)} (latest: {last.variant} failed: {last.error}; ran {last.fallback})",
                      markup=False)
    o = summary["overhead_us"]
    parts = [f"observe+choose p50 {o['decide']['p50']:.1f} us (p90 {o['decide']['p90']:.1f}; CPU "
             f"{o['decide_cpu']['p50']:.1f})", f"update p50 {o['update']['p50']:.1f} us (CPU {o['update_cpu']['p50']:.1f})"]
    if o["persist"]:
        parts.append(f"persist p50 {o['persist']['p50']:.0f} us")
    console.print("decision overhead: " + ", ".join(parts), markup=False)
    if saved:
        console.print(f"outputs: {len(saved)} file(s) saved", markup=False)
    for r in ex.hardware_reports if apply_hw else ():
        console.print(f"hardware (variant {r.variant}): " + "; ".join(r.lines()), markup=False)
    return 0
