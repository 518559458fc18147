"""benchmarks/fairboost.py --quick runs and writes the JSON it promises, and tables.py renders it.

Only that it works and is self-consistent is checked (every manager scored every mix, optimum is
the best of them under O, all-gpu is the T_norm baseline); the numbers come from full runs by hand.
"""
from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from benchmod import load
from extras import needs

pytestmark = [pytest.mark.slow, pytest.mark.multi]
needs("multi", "pymoo")


def test_quick_run_writes_scores_for_every_manager_and_renders(tmp_path, capsys):
    bench = load("fairboost")
    out = tmp_path / "fairboost-quick.json"
    assert bench.main(["--quick", "-o", str(out)]) == 0
    doc = json.loads(out.read_text())
    labels = [m["label"] for m in doc["managers"]]
    assert labels[:6] == ["all-gpu", "rr:cpu", "rr:gpu", "mosaic", "ga", "optimum"]
    assert len(doc["mixes"]) == 2 and all(len(r["models"]) == 3 for r in doc["mixes"])
    for r in doc["mixes"]:
        got = r["managers"]
        assert set(got) == set(labels) and all("O" in v for v in got.values()), got
        assert got["all-gpu"]["T_norm"] == pytest.approx(1.0)
        for v in got.values():
            assert v["O"] == pytest.approx(v["T_norm"] * v["J"]) and 0 < v["J"] <= 1 + 1e-12
            assert v["decision_s"] >= 0
        assert got["optimum"]["O"] >= max(v["O"] for k, v in got.items() if k not in ("optimum", "optimum-2", "ga")) - 1e-9
    per = doc["summary"]["3"]
    assert per["optimum"]["gap_to_optimum_median"] == 0.0 and per["all-gpu"]["T_norm"] == pytest.approx(1.0)
    assert doc["paper_ratios"]["3"]["ga"] == pytest.approx(1.47) and doc["paper_ratios"]["3"]["all-gpu"] == 2.85
    tables = load("tables")
    text = "\n".join(body for _, body in tables.r_fairboost(doc))
    assert "| `optimum` | 2 |" in text and "×2.85" in text and "Mixes of 3 models" not in text.split("\n")[0]


def test_transfer_with_the_same_agent_on_both_sides_loses_nothing_and_renders(tmp_path):
    """--transfer on --quick's synthetic mixes: the shipped agent given as the board's own, so the
    transferred and native planners are the same planner and lose exactly 0% to each other."""
    needs("learn", "torch", "torchrl")
    from hetcc.planners.fairboost import DEFAULT_AGENT

    bench = load("fairboost")
    out = tmp_path / "fairboost-quick.json"
    assert bench.main(["--quick", "--transfer", "odroid-n2plus", "--transfer-agent", str(DEFAULT_AGENT),
                       "-o", str(out)]) == 0
    tr = json.loads(out.read_text())["transfer"]
    assert tr["target"] == "odroid-n2plus" and tr["agent"]["command"] is None     # given, not trained here
    labels = [m["label"] for m in tr["managers"]]
    assert labels == [label for label, _, _ in bench.TRANSFER]
    assert {m["options"].get("agent") for m in tr["managers"] if m["planner"] == "fairboost"} == {None, "AGENT"}
    assert len(tr["mixes"]) == 2 and all(set(r["managers"]) == set(labels) for r in tr["mixes"])
    loss = tr["losses"]["3"]
    assert loss["planner"] == 0.0 and loss["agent_alone"] == 0.0 and loss["planner_met"] is True
    tables = load("tables")
    text = "\n".join(f"## {h}\n{b}" for h, b in tables.r_fairboost(json.loads(out.read_text())))
    assert "## Transfer to odroid-n2plus" in text and "| loss of mean O" in text and "0.0% PASS" in text


def test_the_transfer_board_agent_is_trained_once_with_the_shipped_command_and_cached(tmp_path, monkeypatch):
    bench = load("fairboost")
    runs = []

    def fake_run(cmd):
        runs.append(cmd)
        Path(cmd[cmd.index("-o") + 1]).write_bytes(b"agent")
        return SimpleNamespace(returncode=0)

    monkeypatch.setattr("subprocess.run", fake_run)
    shipped = "hetcc train fairboost --target orangepi5 -o agent.pt --seed 3 --steps 500"
    first = bench.board_agent("odroid-n2plus", None, tmp_path, shipped)
    again = bench.board_agent("odroid-n2plus", None, tmp_path, shipped)
    assert len(runs) == 1 and runs[0][3:7] == ["train", "fairboost", "--target", "odroid-n2plus"]
    assert runs[0][-4:] == ["--seed", "3", "--steps", "500"]
    assert first == again and first["command"] == "hetcc train fairboost --target odroid-n2plus -o agent.pt --seed 3 " \
                                                  "--steps 500"
    other = bench.board_agent("odroid-n2plus", None, tmp_path, shipped.replace("500", "600"))   # another command
    assert len(runs) == 2 and other["path"] != first["path"]
    with pytest.raises(SystemExit, match="--transfer-agent .* does not exist; train one with hetcc train fairboost"):
        bench.board_agent("odroid-n2plus", tmp_path / "missing.pt", tmp_path, shipped)


@pytest.mark.parametrize("flag", ["--target", "--transfer"])
def test_an_unknown_board_is_one_line_before_any_mix(flag, tmp_path, capsys):
    bench = load("fairboost")
    out = tmp_path / "x.json"
    assert bench.main(["--quick", flag, "nosuch", "-o", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"error: {flag} nosuch: unknown target 'nosuch'") and "mix of" not in err
    assert not out.exists()


def test_a_failed_training_of_the_transfer_agent_is_one_line(tmp_path, monkeypatch):
    bench = load("fairboost")
    monkeypatch.setattr("subprocess.run", lambda cmd: SimpleNamespace(returncode=2))
    with pytest.raises(SystemExit, match=r"training the odroid-n2plus agent failed \(its message above\)"):
        bench.board_agent("odroid-n2plus", None, tmp_path, "hetcc train fairboost --target orangepi5 -o agent.pt")
