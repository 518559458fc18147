"""What ``hetcc compile --planner autoscale`` prints: one line per variant (AutoScale action), the
actions the model cannot take and those ``--min-accuracy`` left out, and the policy file."""
from __future__ import annotations

from typing import Any

from hetcc.cli.common import make_table


def policy_json(result: Any) -> dict[str, Any]:
    """The ``--json`` block of a policy compile (``hetcc.compiler.autoscale.PolicyVariants.summary``)."""
    return result.policy.summary()


def print_policy(console: Any, result: Any) -> None:
    """The text summary of a policy compile (``result``: a ``CompileResult`` with ``policy``)."""
    pv = result.policy
    doc = pv.policy
    has_power = result.target.has_power_model
    floor = doc["min_accuracy"]
    console.print(f"[bold]{result.program.name}[/bold] on {result.target.name}: {result.analysis.problem.num_layers} "
                  f"layers; AutoScale policy of {len(pv.plans)} variants, QoS target {doc['qos_ms']:g} ms"
                  + (f", min accuracy {floor * 100:g}%" if floor else "") + f", objective {result.objective.metric}")
    table = make_table(console, ["variant", "device", "precision", "compute ms", "latency ms", "energy mJ",
                                 "accuracy"], {"variant", "device", "precision"})
    for action in doc["actions"]:
        plan = pv.plans[action["variant"]]
        device = action["device"] + (f" via {action['link']}" if action.get("link") else "")
        table.add_row(action["variant"] + (" *" if action["variant"] == pv.default else ""), device,
                      action["precision"], f"{action['compute_ms']:.2f}", f"{plan.latency_ms:.2f}"
                      + ("" if plan.feasible else " (misses)"),
                      f"{plan.energy_mj:.2f}" if has_power else "-", f"{action['accuracy']:.1%}")
    console.print(table)
    console.print(f"  * default variant {pv.default} (least {result.objective.metric} within the QoS target, else "
                  "the fastest); compute ms excludes a remote variant's link, latency ms includes it at the default "
                  "signal")
    for e in pv.excluded:
        console.print(f"  not offered: {e['variant']}: {e['reason']}", markup=False)
    for e in pv.below_accuracy:
        console.print(f"  left out by --min-accuracy: {e['variant']}: {e['reason']}", markup=False)
    source = f"the Q-table of {pv.qtable}" if pv.qtable else "an untrained Q-table (hetcc train autoscale trains one)"
    console.print(f"  policy: policy/autoscale.json (hetcc.autoscale/1) with {source}", markup=False)


__all__ = ["policy_json", "print_policy"]
