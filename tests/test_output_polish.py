"""Output polish (issue 33): a progress display writes nothing off a terminal; printing a compile
or workload result shows a short summary, not the analyses behind it; --plot says what it wrote."""
from __future__ import annotations

import io

from rich.console import Console

import hetcc
from hetcc.cli import main
from hetcc.planners.context import RichProgress
from text_models import CHAIN


def test_rich_progress_off_a_terminal_writes_nothing():
    buf = io.StringIO()
    progress = RichProgress(Console(file=buf))
    with progress.task("planning", total=3) as task:
        task.update(1)
        task.update(2)
    progress.finish()
    assert buf.getvalue() == ""


def test_results_print_as_short_summaries(tmp_path, write_text_model):
    model = str(write_text_model(CHAIN, tmp_path / "m.onnx"))
    one = hetcc.compile(model, "hikey970")
    assert repr(one).startswith("CompileResult(m on hikey970: ") and len(repr(one)) < 300
    two = hetcc.compile_workload([model, str(write_text_model(CHAIN, tmp_path / "n.onnx"))], "hikey970")
    assert repr(two).startswith("WorkloadResult(2 models (m, n) on hikey970") and len(repr(two)) < 300
    assert str(two) == repr(two)


def test_plot_says_what_it_wrote(tmp_path, capsys, write_text_model):
    art = tmp_path / "art"
    assert main(["compile", str(write_text_model(CHAIN, tmp_path / "m.onnx")), "-o", str(art), "-q"]) == 0
    capsys.readouterr()
    assert main(["inspect", str(art), "--plot", str(tmp_path / "s.svg"), "--json"]) == 0
    out, err = capsys.readouterr()
    assert f"wrote the plot {tmp_path / 's.svg'}" in err and "wrote the plot" not in out
    assert (tmp_path / "s.svg").is_file()
