"""Writes under ``--sysfs-root`` stay under it (issue 33, class 5) and reads there never hang
(class 4): a symbolic link at the last component, a hard link to a file outside, a FIFO or a
device, and a file swapped for a link after it was set, are refused with a reason: never
written, never read, never "restored"."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from hetcc.runtime.sysfs import Refused, Sysfs

CPU = "/sys/devices/system/cpu"
ONLINE = f"{CPU}/cpu1/online"


@pytest.fixture
def world(tmp_path) -> tuple[Path, Path]:
    """(the fake /sys, a file outside it that nothing may change)."""
    root = tmp_path / "root" / "sys"
    (root / "devices/system/cpu/cpu1").mkdir(parents=True)
    (root / "devices/system/cpu/cpu1/online").write_text("1\n")
    outside = tmp_path / "outside.txt"
    outside.write_text("precious\n")
    return root, outside


def test_a_symbolic_link_out_of_the_root_is_never_written(world):
    root, outside = world
    (root / "devices/system/cpu/cpu1/online").unlink()
    os.symlink(outside, root / "devices/system/cpu/cpu1/online")
    with pytest.raises(Refused, match="outside"):
        Sysfs(root).write(ONLINE, "0")
    with pytest.raises(Refused, match="outside"):
        Sysfs(root).read(ONLINE)
    assert outside.read_text() == "precious\n"


def test_a_hard_link_to_a_file_outside_is_never_written(world):
    root, outside = world
    (root / "devices/system/cpu/cpu1/online").unlink()
    os.link(outside, root / "devices/system/cpu/cpu1/online")
    fs = Sysfs(root)
    assert fs.read(ONLINE) == "precious"                  # reading it leaks nothing the tree does not hold
    with pytest.raises(Refused, match="hard link"):
        fs.write(ONLINE, "0")
    assert outside.read_text() == "precious\n"


def test_a_fifo_is_refused_at_once_not_waited_on(world):
    root, _ = world
    (root / "devices/system/cpu/cpu1/online").unlink()
    os.mkfifo(root / "devices/system/cpu/cpu1/online")
    fs = Sysfs(root)
    with pytest.raises(Refused, match="not a regular file"):
        fs.read(ONLINE)                                    # a blocking open would hang here
    with pytest.raises(Refused):
        fs.write(ONLINE, "0")                              # no reader: refused, never blocks


def test_a_device_is_refused(world):
    root, _ = world
    (root / "devices/system/cpu/cpu1/online").unlink()
    os.symlink("/dev/zero", root / "devices/system/cpu/cpu1/online")
    with pytest.raises(Refused):
        Sysfs(root).read(ONLINE)


def test_a_file_swapped_for_a_link_after_it_was_set_is_not_restored_through_it(world):
    root, outside = world
    fs = Sysfs(root)
    assert fs.set(ONLINE, "0") == "1"
    f = root / "devices/system/cpu/cpu1/online"
    f.unlink()
    os.symlink(outside, f)                                 # swapped while hetcc ran
    done = fs.restore()
    assert len(done) == 1 and isinstance(done[0][1], Refused) and "outside" in done[0][1].reason
    assert outside.read_text() == "precious\n"


def test_a_directory_link_out_of_the_root_is_refused(world, tmp_path):
    root, _ = world
    elsewhere = tmp_path / "elsewhere" / "cpu9"
    elsewhere.mkdir(parents=True)
    (elsewhere / "online").write_text("1\n")
    os.symlink(elsewhere, root / "devices/system/cpu/cpu9")
    with pytest.raises(Refused, match="outside"):
        Sysfs(root).write(f"{CPU}/cpu9/online", "0")
    assert (elsewhere / "online").read_text() == "1\n"


def test_links_inside_the_root_still_work(world):
    """/sys itself is full of links (class/devfreq/* -> devices/...): those stay usable."""
    root, _ = world
    (root / "class").mkdir()
    os.symlink(root / "devices/system/cpu/cpu1", root / "class/cpu1")
    fs = Sysfs(root)
    fs.write("/sys/class/cpu1/online", "0")
    assert (root / "devices/system/cpu/cpu1/online").read_text() == "0\n"
