"""hetcc.runtime.sysfs: reads and writes under a root, remembered and put back, against a fake
sysfs tree in tmp_path (nothing here touches the real /sys). OS refusals are simulated by
monkeypatching the module's ``open``: tests may run as root, where chmod stops nothing."""
from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from hetcc.runtime import sysfs as S
from runtime_artifacts import refuse_opens
from hetcc.runtime.sysfs import Change, Refused, Sysfs

CPU = "/sys/devices/system/cpu"
POLICY = f"{CPU}/cpufreq/policy0"


@pytest.fixture
def tree(tmp_path) -> Path:
    """tmp_path/sys stands for /sys: cpu0..2 online files and one cpufreq policy (kHz)."""
    root = tmp_path / "sys"
    files = {f"devices/system/cpu/cpu{c}/online": "1" for c in range(3)}
    files.update({"devices/system/cpu/cpufreq/policy0/scaling_min_freq": "1000000",
                  "devices/system/cpu/cpufreq/policy0/scaling_max_freq": "2000000"})
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text + "\n")
    return root


def text(root: Path, path: str) -> str:
    return (root / path[len("/sys/"):]).read_text()


@pytest.fixture
def writes(monkeypatch) -> list[tuple[str, str]]:
    """Every write, in order: (file name, value)."""
    log: list[tuple[str, str]] = []
    real = Sysfs.write

    def logged(self, path, value):
        log.append((path.rsplit("/", 1)[1] if "cpufreq" in path else path.split("/")[-2], value))
        return real(self, path, value)
    monkeypatch.setattr(Sysfs, "write", logged)
    return log


def refuse(monkeypatch, exc, when=lambda path, mode: "w" in mode):
    refuse_opens(monkeypatch, exc, when)


def test_paths_are_read_and_written_under_the_root(tree):
    fs = Sysfs(tree)
    assert fs.file(f"{CPU}/cpu1/online") == os.path.join(str(tree), "devices/system/cpu/cpu1/online")
    assert fs.read(f"{CPU}/cpu1/online") == "1" and fs.read_int(f"{POLICY}/scaling_max_freq") == 2000000
    fs.write(f"{CPU}/cpu1/online", "0")
    assert text(tree, f"{CPU}/cpu1/online") == "0\n"            # as echo 0 > file
    assert fs.exists(f"{CPU}/cpu1/online") and fs.isdir(f"{CPU}/cpu1") and not fs.isdir(f"{CPU}/cpu9")
    assert sorted(fs.listdir(f"{CPU}/cpufreq")) == ["policy0"] and fs.listdir(f"{CPU}/nothing") == []
    assert Sysfs.under("/").root == "/sys" and Sysfs.under("").root == "/sys"
    assert Sysfs.under(tree.parent).root == os.path.join(str(tree.parent), "sys")


def test_set_writes_only_a_change_and_restore_goes_newest_first(tree, writes):
    fs = Sysfs(tree)
    before = {c: text(tree, f"{CPU}/cpu{c}/online") for c in range(3)}
    assert fs.set(f"{CPU}/cpu0/online", "1", "cpu0") is None and writes == []     # holds it already
    assert fs.set(f"{CPU}/cpu1/online", "0", "cpu1") == "1"
    assert fs.set(f"{CPU}/cpu2/online", "0", "cpu2") == "1"
    assert fs.set(f"{CPU}/cpu1/online", "1", "cpu1 again") == "0"              # the first original is kept
    assert fs.changed
    writes.clear()
    done = fs.restore()
    assert [(c.what, r) for c, r in done] == [("cpu2", None), ("cpu1", None)]
    assert writes == [("cpu2", "1"), ("cpu1", "1")]                            # newest first
    assert {c: text(tree, f"{CPU}/cpu{c}/online") for c in range(3)} == before
    assert not fs.changed and fs.restore() == []                               # nothing left to put back
    fs.set(f"{CPU}/cpu1/online", "0")                                           # remembered anew after restore
    assert fs.restore()[0][0] == Change("", (f"{CPU}/cpu1/online",), ("1",))


def test_a_pair_is_written_in_the_order_that_keeps_min_below_max(tree, writes):
    fs = Sysfs(tree)
    lo, hi = f"{POLICY}/scaling_min_freq", f"{POLICY}/scaling_max_freq"
    assert S.min_max_order(lo, hi, 3000000, 2000000) == (hi, lo)
    assert S.min_max_order(lo, hi, 1500000, 2000000) == (lo, hi)
    fs.set_pair(lo, hi, 1500000, (1000000, 2000000), "cpu")                     # down: min first
    assert writes == [("scaling_min_freq", "1500000"), ("scaling_max_freq", "1500000")]
    writes.clear()
    fs.set_pair(lo, hi, 1800000, (1500000, 1500000), "cpu")                     # up: max first, not remembered again
    assert writes == [("scaling_max_freq", "1800000"), ("scaling_min_freq", "1800000")]
    writes.clear()
    assert [(c.what, c.old, r) for c, r in fs.restore()] == [("cpu", (1000000, 2000000), None)]
    assert writes == [("scaling_min_freq", "1000000"), ("scaling_max_freq", "2000000")]   # from 1.8 GHz: min first
    assert text(tree, lo) == "1000000\n" and text(tree, hi) == "2000000\n"


def test_a_refused_write_is_reported_and_changes_nothing(tree, monkeypatch):
    fs = Sysfs(tree)
    refuse(monkeypatch, PermissionError(errno.EACCES, "Permission denied", "the file"))
    with pytest.raises(Refused) as info:
        fs.set(f"{CPU}/cpu1/online", "0", "cpu1")
    r = info.value
    assert (r.reason, r.fix) == ("permission denied", "run as root (sudo)")
    assert isinstance(r, OSError) and r.errno == errno.EACCES and str(r) == "[Errno 13] Permission denied: 'the file'"
    assert text(tree, f"{CPU}/cpu1/online") == "1\n" and not fs.changed


def test_a_pair_is_never_left_half_set(tree, monkeypatch):
    fs = Sysfs(tree)
    lo, hi = f"{POLICY}/scaling_min_freq", f"{POLICY}/scaling_max_freq"
    refuse(monkeypatch, OSError(errno.EINVAL, "Invalid argument"),
           when=lambda path, mode: "w" in mode and path.endswith("max_freq") and "1500000" not in Path(path).read_text())
    with pytest.raises(Refused, match="Invalid argument") as info:
        fs.set_pair(lo, hi, 1500000, (1000000, 2000000))
    assert info.value.reason == "value not accepted by the kernel (EINVAL)"
    assert text(tree, lo) == "1000000\n" and text(tree, hi) == "2000000\n" and not fs.changed


def test_a_refused_restore_is_reported_and_forgotten(tree, monkeypatch):
    fs = Sysfs(tree)
    fs.set(f"{CPU}/cpu1/online", "0", "cpu1")
    fs.set(f"{CPU}/cpu2/online", "0", "cpu2")
    refuse(monkeypatch, OSError(errno.EBUSY, "Device or resource busy"), when=lambda path, mode: "cpu2" in path)
    done = fs.restore()
    assert [(c.what, r and r.reason) for c, r in done] == [("cpu2", "the kernel refused: busy (EBUSY)"),
                                                          ("cpu1", None)]
    assert text(tree, f"{CPU}/cpu1/online") == "1\n" and text(tree, f"{CPU}/cpu2/online") == "0\n"
    assert fs.restore() == []


def test_a_missing_file_is_refused_never_created(tree):
    fs = Sysfs(tree)
    with pytest.raises(Refused) as info:
        fs.write(f"{CPU}/cpu7/online", "0")
    assert info.value.reason == "no such file" and "control paths" in info.value.fix
    assert not (tree / "devices/system/cpu/cpu7").exists()
    with pytest.raises(Refused) as info:
        fs.read("/sys/kernel/debug/bpmp/debug/clk/emc/rate")
    assert "mount debugfs" in info.value.fix
    with pytest.raises(Refused, match="Is a directory") as info:     # str(): the OS's own words
        fs.write(f"{CPU}/cpu1", "0")
    assert info.value.reason == "a directory, not a file"
    (tree / "devices/system/cpu/cpu1/online").write_text("online\n")
    with pytest.raises(Refused, match="cannot read a number there"):
        fs.read_int(f"{CPU}/cpu1/online")


@pytest.mark.parametrize("path", ["/sys/../outside/victim", "/sys/devices/../../outside/victim", "/outside/victim",
                                  "/sys/devices/link/victim", "sys/devices/system/cpu/cpu1/online"])
def test_a_path_outside_the_root_is_never_read_or_written(tree, path):
    victim = tree.parent / "outside" / "victim"
    victim.parent.mkdir()
    victim.write_text("1\n")
    (tree / "devices/link").symlink_to(victim.parent)                  # a symbolic link out of the tree
    fs = Sysfs(tree)
    for call in (lambda: fs.write(path, "0"), lambda: fs.set(path, "0"), lambda: fs.read(path)):
        with pytest.raises(Refused) as info:
            call()
        assert "check the target's control paths" in info.value.fix
    assert not fs.exists(path) and not fs.isdir(os.path.dirname(path)) and fs.listdir(os.path.dirname(path)) == []
    assert victim.read_text() == "1\n" and not fs.changed


def test_a_link_inside_the_tree_is_followed(tree):
    (tree / "class/cpu").mkdir(parents=True)
    (tree / "class/cpu/cpu1").symlink_to(tree / "devices/system/cpu/cpu1")
    fs = Sysfs(tree)
    assert fs.set("/sys/class/cpu/cpu1/online", "0") == "1"
    assert text(tree, f"{CPU}/cpu1/online") == "0\n"


@pytest.mark.parametrize("exc, want", [
    (PermissionError(errno.EACCES, "Permission denied"), "permission"),
    (OSError(errno.EPERM, "Operation not permitted"), "permission"),
    (OSError(errno.EROFS, "Read-only file system"), "read-only"),
    (OSError(errno.ENOENT, "No such file or directory"), "missing"),
    (OSError(errno.EISDIR, "Is a directory"), "directory"),
    (OSError(errno.EINVAL, "Invalid argument"), "refused"),
    (OSError(errno.EBUSY, "Device or resource busy"), "busy"),
    (OSError(errno.EIO, "Input/output error"), "other"),
])
def test_the_classification_of_an_os_refusal(exc, want):
    assert S.kind(exc) == want
    reason, _ = S.why(exc, "/sys/x")
    if want == "other":
        assert reason == "Input/output error (EIO)"
