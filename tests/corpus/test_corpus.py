"""Every corpus model (tests/corpus/models.py) compiles for hikey970 and for this host, and
``hetcc run --verify`` finds the sliced artifact equal to the unsliced model; a forced four-slice
plan with two-tensor cuts verifies too, so the cuts inside each architecture are exercised even
where the planner keeps the model whole. Through the CLI, in-process, as a user runs it."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from extras import needs

from hetcc.cli import main
from models import BY_NAME, CORPUS

pytestmark = [pytest.mark.corpus, pytest.mark.slow, pytest.mark.timeout(1200)]

needs("corpus")

PLANS = {
    "hikey970": ("--target", "hikey970"),
    "host": ("--target", "host"),
    "hikey970-even4": ("--target", "hikey970", "--planner", "even:4", "--max-cut-tensors", "2"),
}


def cli(capfd, *argv) -> tuple[int, str]:
    code = main([str(a) for a in argv])
    out, err = capfd.readouterr()   # file descriptors: onnxruntime's own log lines too
    return code, out + err


def compile_and_verify(capfd, model: Path, out: Path, *flags) -> tuple[dict, str]:
    code, text = cli(capfd, "compile", model, "-o", out, *flags)
    assert code == 0, text
    code, verified = cli(capfd, "run", out, "--verify")
    assert code == 0, verified
    assert "outputs match the unsliced model" in verified, verified
    rel = [float(x) for x in re.findall(r"relative ([0-9.eE+-]+) ok", verified)]
    assert rel and max(rel) <= 1e-4, verified
    # the user's model is hetcc's to read quietly: no onnxruntime warning per weight listed as an input
    assert "appears in graph inputs" not in text + verified
    return json.loads((out / "manifest.json").read_text()), text


@pytest.mark.parametrize("name", [e.name for e in CORPUS])
def test_model_compiles_and_verifies(name, corpus_model, profile_cache, tmp_path, monkeypatch, capfd):
    monkeypatch.setenv("HETCC_CACHE_DIR", str(profile_cache))
    entry = BY_NAME[name]
    model = corpus_model(name)
    if entry.check is not None:
        entry.check(model)
    for plan, flags in PLANS.items():
        manifest, text = compile_and_verify(capfd, model, tmp_path / plan, *flags)
        assert [i["name"] for i in manifest["model"]["inputs"]] == list(entry.inputs)
        slices = manifest["variants"][manifest["default_variant"]]["slices"]
        layers = int(re.search(r"(\d+) layers", text).group(1))
        if plan == "hikey970-even4":
            assert len(slices) == min(4, layers), (plan, len(slices), layers)
        assert 1 <= len(slices) <= layers
