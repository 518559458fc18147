"""``hetcc train`` refuses bad options in one line before any model is analysed or torch loads, and
``hetcc planners`` lists fairboost with its options (no torch needed for either)."""
from __future__ import annotations

import pytest

from hetcc.cli.app import main


@pytest.mark.parametrize("argv,msg", [
    (["--min-models", "5", "--max-models", "3"], "--min-models 5 is more than --max-models 3"),
    (["--models", "resnet50,nosuch"], "'nosuch' is not a zoo model"),
    (["--models", "resnet50"], "at least two models"),
    (["--steps", "0"], "out of range"),
    (["--reward", "throughput"], "invalid choice: 'throughput'"),
])
def test_train_refuses_bad_options_in_one_line(argv, msg, capsys, tmp_path):
    assert main(["train", "fairboost", "-o", str(tmp_path / "a.pt"), *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert msg in err and len(err.splitlines()) == 1
    assert not (tmp_path / "a.pt").exists()


def test_train_needs_a_file_to_write(capsys, tmp_path):
    assert main(["train", "fairboost", "-o", str(tmp_path)]) == 2
    assert "give a file name" in capsys.readouterr().err


def test_planners_lists_fairboost_and_its_options(capsys):
    assert main(["planners", "fairboost"]) == 0
    out = capsys.readouterr().out
    assert "fairboost" in out and "agent" in out and "polish" in out


def test_the_shipped_files_match_their_recorded_sha256_and_command():
    import hashlib
    import json

    from hetcc.planners.fairboost import DEFAULT_AGENT

    data = DEFAULT_AGENT.parent
    doc = json.loads((data / "fairboost.json").read_text())
    for key in ("vqvae", "agent"):
        entry = doc[key]
        assert hashlib.sha256((data / entry["file"]).read_bytes()).hexdigest() == entry["sha256"], key
    assert doc["agent"]["command"].startswith("hetcc train fairboost --target orangepi5 ")
    assert doc["agent"]["vqvae_sha256"] == doc["vqvae"]["sha256"]
    assert doc["vqvae"]["command"].startswith("hetcc train vqvae ")


@pytest.mark.parametrize("what", ["fairboost", "vqvae", "autoscale"])
def test_train_into_a_missing_folder_is_one_line_before_any_work(what, capsys, tmp_path):
    out = tmp_path / "nowhere" / "agent.pt"
    assert main(["train", what, "-o", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert "does not exist; create it or choose another path" in err and "nowhere" in err and len(err.splitlines()) == 1
    assert not out.parent.exists()


@pytest.mark.parametrize("what", ["vqvae", "autoscale"])
def test_reward_is_refused_where_there_is_none_to_choose(what, capsys, tmp_path):
    assert main(["train", what, "-o", str(tmp_path / "x"), "--reward", "alg1"]) == 2
    err = capsys.readouterr().err.strip()
    assert "--reward is an option of hetcc train fairboost" in err and len(err.splitlines()) == 1
