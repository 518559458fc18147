"""Output that cannot be turned against the reader (issue 33, class 10): strings from models,
manifests and files are printed with terminal control characters escaped and rich markup
literal; emoji codes are never substituted; CSV cells a spreadsheet would run as formulas are
written behind an apostrophe that hetcc's readers take off again."""
from __future__ import annotations

import io

from hetcc.cli import main
from hetcc.cli.common import make_console, make_table
from hetcc.core.text import csv_cell, csv_unquote
from text_models import CHAIN

EVIL = "m\x1b[31mx[red]y\u202e"


def test_inspect_escapes_a_model_name_s_control_characters_and_markup(tmp_path, capsys, write_text_model):
    model = write_text_model(CHAIN, tmp_path / f"{EVIL}.onnx")
    art = tmp_path / "art"
    assert main(["compile", str(model), "-o", str(art), "-q"]) == 0
    capsys.readouterr()
    assert main(["inspect", str(art)]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\u202e" not in out
    assert "\\x1b[31mx[red]y\\u202e" in out          # shown as written, the markup literal


def test_consoles_and_tables_screen_control_characters_and_keep_emoji_codes():
    console = make_console()
    console.file = io.StringIO()
    console.print("planner single:cloud: ok \x1b[2J")
    table = make_table(console, ["name"], {"name"})
    table.add_row("a\x07b")
    console.print(table)
    text = console.file.getvalue()
    assert "single:cloud: ok" in text and "\\x1b[2J" in text and "\x1b" not in text
    assert "a\\x07b" in text and "\x07" not in text


def test_formula_cells_are_written_inert_and_read_back():
    for value in ("=HYPERLINK(\"x\")", "+1+2", "@SUM(A1)", "-cmd", "'quoted", "\tx"):
        cell = csv_cell(value)
        assert cell.startswith("'") and csv_unquote(cell) == value
    for value in ("-1.5", "1e3", "plain", "", "a=b"):
        assert csv_cell(value) == value and csv_unquote(value) == value


def test_an_observations_file_round_trips_a_formula_like_model_path(tmp_path):
    from hetcc.measure.observations import format_observations, parse_observations

    rows = [{"kind": "latency", "model": "=evil.onnx", "value": 1.5, "unit": "ms", "device": "big"}]
    text = format_observations(rows)
    assert "'=evil.onnx" in text and "\n=evil" not in text and ",=evil" not in text
    obs = parse_observations(text, "t.csv", tmp_path, check_files=False)
    assert [m.rsplit("/", 1)[-1] for m in obs[0].models] == ["=evil.onnx"]


def test_a_sweep_table_writes_formula_text_inert(tmp_path):
    from hetcc.experiments.sweep.table import csv_value, read_table

    assert csv_value("=1+1") == "'=1+1" and csv_value(-2.5) == "-2.5"
    p = tmp_path / "cells.csv"
    p.write_text("cell,status,error\nk,error,'=1+1\n")
    assert read_table(p)[0]["error"] == "=1+1"
