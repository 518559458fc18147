"""``hetcc cache list|clear [--zoo|--modules|--profiles]``: what hetcc cached, for which model and
machine, when, how big; clearing removes hetcc's own files of the chosen kinds only (recognised by
their layout and names), never a link or what it points to, and says what it freed. And
``hetcc profile --reprofile`` measures the cached session-boundary cost again."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from hetcc.cli import main
from hetcc.files.cache import describe_size, entries, remove
from text_models import CHAIN

SHA = "0123456789abcdef"
KEY = "a" * 32


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    root = tmp_path / "cache"
    root.mkdir()
    monkeypatch.setenv("HETCC_CACHE_DIR", str(root))
    return root


def put(path: Path, data: bytes | str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    return path


@pytest.fixture
def filled(cache, tmp_path) -> dict[str, Path]:
    """A cache with one entry of each kind, a write cut short, and things hetcc did not write:
    a file of another name in each layout folder, folders outside the layout, links to files and
    folders outside the cache (each a name hetcc would write)."""
    outside = put(tmp_path / "outside" / "precious.onnx", b"not the cache's")
    (tmp_path / "outside" / "seed0").mkdir()
    put(tmp_path / "outside" / "seed0" / "vgg16.onnx", b"also not the cache's")
    ours = {
        "zoo": put(cache / "zoo" / "seed3" / "resnet18.onnx", b"z" * 1000),
        "tmp": put(cache / "zoo" / "seed3" / ".resnet18.onnx.tmp-ab12cd34", b"t" * 10),
        "modules": put(cache / "modules" / SHA / "net.onnx", b"m" * 200),
        "layers": put(cache / "profiles" / f"layers-{KEY}.json",
                      json.dumps({"layers_ms": [1.0], "model_ms": 1.0,
                                  "about": {"model": "chain", "machine": "x86_64|Some CPU|2|ort1.0"}})),
        "boundary": put(cache / "profiles" / f"boundary-{'b' * 32}.json", json.dumps({"delta_ms": 0.1})),
    }
    foreign = [
        put(cache / "zoo" / "seed3" / "notes.txt", "mine"),
        put(cache / "zoo" / "mine" / "resnet18.onnx", "mine"),            # not seed<N>/
        put(cache / "modules" / "NOTHEX" / "net.onnx", "mine"),
        put(cache / "profiles" / "layers-short.json", "mine"),
        put(cache / "profiles" / "mine.json", "mine"),
        put(cache / "README", "mine"),
    ]
    (cache / "zoo" / "seed3" / "alexnet.onnx").symlink_to(outside)            # a link with a zoo name
    (cache / "zoo" / "seed0").symlink_to(tmp_path / "outside" / "seed0")       # a linked layout folder
    return {"ours": ours, "foreign": foreign, "outside": outside,
            "outside_zoo": tmp_path / "outside" / "seed0" / "vgg16.onnx"}


def listed(capsys, *flags) -> dict:
    assert main(["cache", "list", "--json", *flags]) == 0
    return json.loads(capsys.readouterr().out)


def test_list_names_each_entry_kind_model_seed_machine_time_and_size(capsys, cache, filled):
    doc = listed(capsys)
    assert doc["cache_dir"] == str(cache)
    got = {e["path"]: e for e in doc["entries"]}
    assert sorted(got) == sorted(p.relative_to(cache).as_posix() for p in filled["ours"].values())
    zoo = got["zoo/seed3/resnet18.onnx"]
    assert (zoo["kind"], zoo["model"], zoo["seed"], zoo["bytes"], zoo["unfinished"]) == ("zoo", "resnet18", 3, 1000, False)
    assert got["zoo/seed3/.resnet18.onnx.tmp-ab12cd34"]["unfinished"] is True
    mod = got[f"modules/{SHA}/net.onnx"]
    assert (mod["kind"], mod["model"], mod["bytes"]) == ("modules", "net", 200) and SHA in mod["what"]
    layers = got[f"profiles/layers-{KEY}.json"]
    assert (layers["model"], layers["machine"]) == ("chain", "x86_64|Some CPU|2|ort1.0")
    assert got[f"profiles/boundary-{'b' * 32}.json"]["machine"] is None    # not this machine's key
    assert doc["bytes"] == sum(p.stat().st_size for p in filled["ours"].values())
    assert all(e["modified"].endswith("+00:00") for e in doc["entries"])


def test_list_of_one_kind_and_the_table(capsys, cache, filled):
    assert [e["path"] for e in listed(capsys, "--modules")["entries"]] == [f"modules/{SHA}/net.onnx"]
    assert main(["cache", "list", "--zoo"]) == 0
    out = capsys.readouterr().out
    assert "zoo model resnet18, seed 3" in out and "a write cut short" in out and "torch module" not in out
    assert "2 files, 1.0 kB" in out


def test_an_empty_or_absent_cache_lists_nothing(capsys, cache):
    os.rmdir(cache)
    assert main(["cache", "list"]) == 0
    assert "nothing cached in" in capsys.readouterr().out
    assert main(["cache", "clear"]) == 0
    assert "removed 0 files" in capsys.readouterr().out and not cache.exists()


def test_clear_one_kind_removes_only_its_entries_and_says_what_it_freed(capsys, cache, filled):
    ours = filled["ours"]
    sizes = ours["layers"].stat().st_size + ours["boundary"].stat().st_size
    assert main(["cache", "clear", "--profiles"]) == 0
    out = capsys.readouterr().out
    assert f"removed profiles/layers-{KEY}.json" in out
    assert not ours["layers"].exists() and not ours["boundary"].exists()
    assert out.strip().splitlines()[-1] == f"removed 2 files (profiles) from {cache}, {describe_size(sizes)} freed"
    assert all(ours[k].exists() for k in ("zoo", "tmp", "modules"))
    assert all(p.exists() for p in filled["foreign"])
    assert (cache / "profiles").is_dir()      # still holds files hetcc did not write


def test_clear_everything_leaves_links_their_targets_and_foreign_files(capsys, cache, filled):
    total = sum(p.stat().st_size for p in filled["ours"].values())
    assert main(["cache", "clear"]) == 0
    out = capsys.readouterr().out
    assert f"removed 5 files (zoo, modules, profiles) from {cache}, {describe_size(total)} freed" in out
    assert not any(p.exists() for p in filled["ours"].values())
    assert all(p.exists() for p in filled["foreign"])
    assert filled["outside"].read_bytes() == b"not the cache's" and (cache / "zoo" / "seed3" / "alexnet.onnx").is_symlink()
    assert filled["outside_zoo"].exists() and (cache / "zoo" / "seed0").is_symlink()
    assert not (cache / "modules" / SHA).exists()      # the layout folder it emptied is gone
    assert listed(capsys)["entries"] == []


def test_a_linked_kind_folder_is_not_followed(cache, tmp_path):
    put(tmp_path / "elsewhere" / "seed0" / "resnet18.onnx", b"x")
    (cache / "zoo").symlink_to(tmp_path / "elsewhere")
    assert entries(cache) == []
    assert remove(cache, entries(cache)).freed == 0 and (tmp_path / "elsewhere" / "seed0" / "resnet18.onnx").exists()


def test_a_file_swapped_for_a_link_after_listing_is_left_alone(cache, tmp_path):
    target = put(tmp_path / "keep.onnx", b"keep")
    entry = put(cache / "zoo" / "seed0" / "resnet18.onnx", b"x")
    found = entries(cache)
    entry.unlink()
    entry.symlink_to(target)
    result = remove(cache, found)
    assert result.entries == () and len(result.failed) == 1 and target.read_bytes() == b"keep"


@pytest.fixture
def chain(tmp_path, write_text_model):
    return write_text_model(CHAIN, tmp_path / "chain.onnx")


def test_what_a_host_compile_caches_is_listed_as_this_machine_and_cleared(capsys, cache, chain):
    """The layout is the one hetcc writes: a compile --target host caches its two profiles."""
    assert main(["compile", str(chain), "--target", "host", "-q"]) == 0
    capsys.readouterr()
    got = listed(capsys)["entries"]
    assert sorted(e["what"] for e in got) == ["per-layer timings", "session-boundary cost"]
    boundary = next(e for e in got if e["what"] == "session-boundary cost")
    assert boundary["machine"].startswith("this machine (")
    assert main(["cache", "clear", "--zoo", "--modules"]) == 0
    assert "removed 0 files (zoo, modules)" in capsys.readouterr().out
    assert main(["cache", "clear"]) == 0
    assert "removed 2 files" in capsys.readouterr().out
    assert not (cache / "profiles").exists()


def boundary_comment(csv: Path) -> str:
    return next(line for line in csv.read_text().splitlines() if "boundary_delta_ms=" in line)


@pytest.mark.slow
def test_profile_reprofile_measures_the_cached_boundary_again(capsys, cache, chain, tmp_path):
    out = tmp_path / "a.csv"
    assert main(["profile", str(chain), "-o", str(out), "--freqs", "current", "--repeats", "1", "-q"]) == 0
    (cached,) = (cache / "profiles").glob("boundary-*.json")
    cached.write_text(json.dumps({"delta_ms": 123.0, "beta_ms_per_byte": 0.0, "samples": []}))
    assert main(["profile", str(chain), "-o", str(out), "--freqs", "current", "--repeats", "1", "-q"]) == 0
    assert "boundary_delta_ms=123.0 " in boundary_comment(out)           # the cache, as before
    assert main(["profile", str(chain), "-o", str(out), "--freqs", "current", "--repeats", "1", "-q",
                 "--reprofile"]) == 0
    assert "boundary_delta_ms=123.0 " not in boundary_comment(out)
    assert json.loads(cached.read_text())["delta_ms"] != 123.0          # the new figure replaced it
