"""A large snapshot's walk split between processes: the groups are balanced, a child's result
comes back, a child that dies or hangs leaves its folders to the parent, and a split
snapshot records exactly what one process records, attacks on the lstat key included."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import NamedTuple

import pytest

from environments.record import snapshots, split_scan
from environments.record.snapshots import SnapshotStore
from environments.record.split_scan import Unit, partition, run_split
from tests.environments.test_snapshots_scale import lay, settle


class Node(NamedTuple):
    count: int
    folders: dict


def tree(files: int = 0, **folders: Node) -> Node:
    return Node(files + sum(f.count for f in folders.values()), folders)


def test_groups_hold_about_equal_files_and_a_large_folder_is_opened_up():
    big = tree(0, **{f"p{i}": tree(100) for i in range(6)})
    root = tree(5, big=big, b=tree(300), c=tree(100))
    groups = partition(root, lambda n: n.folders, 2)
    loads = sorted(sum(u.sub.count for u in g) for g in groups)
    assert loads == [500, 500]
    rels = sorted(u.rel for g in groups for u in g)
    assert rels == ["b", "big/p0", "big/p1", "big/p2", "big/p3", "big/p4", "big/p5", "c"]
    assert {u.depth for g in groups for u in g if u.rel.startswith("big/")} == {2}


def test_files_side_by_side_in_one_folder_are_shared_out_by_inode():
    root = tree(3, data=tree(50_000))
    groups = partition(root, lambda n: n.folders, 4)
    assert sorted((u.rel, u.share, u.depth) for g in groups for u in g) == [
        ("data", (k, 4), 1) for k in range(4)]
    assert len(groups) == 4  # one share each
    flat_root = partition(tree(40_000), lambda n: n.folders, 2)
    assert sorted(u.share for g in flat_root for u in g) == [(0, 2), (1, 2)]
    assert {u.rel for g in flat_root for u in g} == {""}


def units(*rels: str) -> list[Unit]:
    return [Unit(rel, None, 1) for rel in rels]


def test_each_group_but_the_first_is_walked_by_another_process():
    found = run_split([units("a"), units("b", "c"), units("d")],
                      lambda group: {u.rel: os.getpid() for u in group})
    assert found["a"] == os.getpid()
    assert found["b"] == found["c"] != os.getpid()
    assert found["d"] not in (os.getpid(), found["b"])


def test_a_child_holds_none_of_the_parents_descriptors():
    """Another thread's pipe (a sandbox command's output) must see EOF when its writer closes,
    not when a walk forked meanwhile ends."""
    r, w = os.pipe()
    try:
        def work(group):
            def is_open(fd):
                try:
                    os.fstat(fd)
                    return True
                except OSError:
                    return False
            return {u.rel: (is_open(r), is_open(w)) for u in group}

        found = run_split([units("here"), units("there")], work)
        assert found == {"here": (True, True), "there": (False, False)}
    finally:
        os.close(r)
        os.close(w)


def test_a_child_that_dies_or_hangs_is_left_out_and_gone(monkeypatch, tmp_path):
    monkeypatch.setattr(split_scan, "GRACE_S", 1.0)
    parent = os.getpid()

    def work(group):
        if os.getpid() != parent:
            (tmp_path / group[0].rel).write_text(str(os.getpid()))
            if group[0].rel == "dies":
                os._exit(3)
            if group[0].rel == "hangs":
                time.sleep(600)
            if group[0].rel == "interrupted":  # Ctrl-C in the child: it leaves, says nothing
                raise KeyboardInterrupt
        return {u.rel: "walked" for u in group}

    t = time.monotonic()
    found = run_split([units("here"), units("dies"), units("hangs"), units("interrupted"), units("fine")], work)
    assert found == {"here": "walked", "fine": "walked"}
    assert time.monotonic() - t < 30
    for name in ("dies", "hangs", "interrupted"):
        pid = int((tmp_path / name).read_text())
        with pytest.raises(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)  # reaped: no zombie left behind


def test_a_failure_in_the_parents_own_group_reaps_the_children(tmp_path):
    parent = os.getpid()

    def work(group):
        if os.getpid() == parent:
            for _ in range(1000):  # until the child is surely running
                if (tmp_path / "child").exists():
                    break
                time.sleep(0.01)
            raise RuntimeError("parent's walk failed")
        (tmp_path / "child.tmp").write_text(str(os.getpid()))
        os.rename(tmp_path / "child.tmp", tmp_path / "child")
        time.sleep(600)
        return {}

    with pytest.raises(RuntimeError):
        run_split([units("a"), units("b")], work)
    with pytest.raises(ChildProcessError):
        os.waitpid(int((tmp_path / "child").read_text()), os.WNOHANG)


def change_everything(ws: Path) -> None:
    """A step's worth of changes spread over every group, attacks on the lstat key among them."""
    target = ws / "data" / "d001" / "f00120.txt"
    st = target.stat()
    target.write_text("x" * st.st_size)  # same size, mtime put back: only ctime tells
    os.utime(target, ns=(st.st_atime_ns, st.st_mtime_ns))
    (ws / "data" / "d003" / "f00310.txt").unlink()
    (ws / "data" / "d005" / "new.txt").write_text("new\n")
    (ws / "data" / "d006" / "deeper").mkdir()
    (ws / "data" / "d006" / "deeper" / "in.txt").write_text("in\n")
    os.mkfifo(ws / "data" / "d002" / "pipe")
    os.symlink("/etc/shadow", ws / "data" / "d004" / "link")
    (ws / "data" / "d004" / os.fsdecode(b"bad\xffname")).write_text("?")
    for name in os.listdir(ws / "data" / "d007"):
        (ws / "data" / "d007" / name).unlink()
    (ws / "data" / "d007").rmdir()
    (ws / "data" / "d007").symlink_to("/etc")  # a folder turned into a link out
    os.chmod(ws / "data" / "d000" / "f00001.txt", 0o600)


def test_a_split_snapshot_records_what_one_process_records(tmp_path, monkeypatch):
    ws = tmp_path / "ws"
    lay(ws, 800, per_folder=100)
    (ws / "top.txt").write_text("top\n")
    settle()
    serial, split = SnapshotStore(tmp_path / "serial"), SnapshotStore(tmp_path / "split")
    serial.take(ws, "00000", initial=True)
    split.take(ws, "00000", initial=True)
    change_everything(ws)

    forks = []
    real_fork = os.fork
    monkeypatch.setattr(split_scan.os, "fork", lambda: forks.append(1) or real_fork())
    one = serial.take(ws, "00001")
    assert forks == []  # 801 files: one process
    monkeypatch.setattr(split_scan, "MIN_FILES", 0)
    monkeypatch.setattr(split_scan, "cores", lambda: 3)
    apart = split.take(ws, "00001")
    assert len(forks) == 2
    assert (apart.content, apart.count, apart.nonbase, apart.notes) == (one.content, one.count, one.nonbase, one.notes)
    changed = apart.changed_since(split.load("00000"))
    assert changed == one.changed_since(serial.load("00000"))
    assert "data/d001/f00120.txt" in changed and "data/d005/new.txt" in changed
    assert split.read("00001", "data/d001/f00120.txt") == (ws / "data" / "d001" / "f00120.txt").read_bytes() == b"xxxx"
    assert "data/d002/pipe" in apart.notes[0] and "bad" in apart.notes[0]

    again = split.take(ws, "00002")  # nothing changed: nothing to record, from the children too
    assert len(forks) == 4
    assert again.content == apart.content and again.changed_since(apart) == []
    assert_same_disk_cap(split, ws, apart.nonbase)


def assert_same_disk_cap(store: SnapshotStore, ws: Path, nonbase: int) -> None:
    """The bytes counted for the disk cap, by every process, are the workspace's own beyond
    the task's: one byte under them is over the cap (nothing stored), exactly them is not."""
    assert nonbase > 0
    assert store.take(ws, "00010", cap_bytes=nonbase - 1).stored is False
    assert store.take(ws, "00011", cap_bytes=nonbase).stored is True


def test_where_fork_is_refused_the_parent_walks_alone(monkeypatch):
    def refused():
        raise BlockingIOError(11, "Resource temporarily unavailable")

    monkeypatch.setattr(split_scan.os, "fork", refused)
    found = run_split([units("a"), units("b")], lambda group: {u.rel: os.getpid() for u in group})
    assert found == {"a": os.getpid()}  # "b" is left to the caller's own walk


def test_a_folder_shared_out_by_inode_records_what_one_process_records(tmp_path, monkeypatch):
    ws = tmp_path / "ws"
    lay(ws, 700, per_folder=700)  # data/d000: 700 files side by side
    for i in range(500):
        (ws / f"top{i:03d}.txt").write_text(f"{i}\n")  # and 500 in the workspace itself
    settle()
    serial, split = SnapshotStore(tmp_path / "serial"), SnapshotStore(tmp_path / "split")
    serial.take(ws, "00000", initial=True)
    split.take(ws, "00000", initial=True)
    flat = ws / "data" / "d000"
    target = flat / "f00120.txt"
    st = target.stat()
    target.write_text("x" * st.st_size)
    os.utime(target, ns=(st.st_atime_ns, st.st_mtime_ns))
    for i in range(0, 700, 7):
        (flat / f"f{i:05d}.txt").unlink()
    for i in range(6):  # what a note names comes in the order of one walk
        os.mkfifo(flat / f"pipe{i:02d}")
        (flat / f"sub{i}").mkdir()
        (flat / f"sub{i}" / "in.txt").write_text("in\n")
        os.mkfifo(flat / f"sub{i}" / "pipe")
    (ws / "top007.txt").write_text("changed\n")
    (ws / os.fsdecode(b"bad\xffname")).write_text("?")

    one = serial.take(ws, "00001")
    monkeypatch.setattr(split_scan, "MIN_FILES", 0)
    monkeypatch.setattr(split_scan, "cores", lambda: 3)
    log = tmp_path / "shares"  # written by whichever process lists a share
    real_list = snapshots._list

    def listed(fs, rel, pf, depth, share=(0, 1)):
        with open(log, "a") as f:
            f.write(f"{rel}|{share[0]}|{share[1]}|{os.getpid()}\n")
        return real_list(fs, rel, pf, depth, share)

    monkeypatch.setattr(snapshots, "_list", listed)
    apart = split.take(ws, "00001")
    shares = [line.split("|") for line in log.read_text().splitlines()]
    for rel in ("", "data/d000"):
        by = {(k, pid) for r, k, n, pid in shares if r == rel and n == "3"}
        assert sorted(k for k, _ in by) == ["0", "1", "2"], shares
        assert len({pid for _, pid in by}) == 3  # each share listed by its own process
    assert (apart.content, apart.count, apart.nonbase, apart.notes) == (one.content, one.count, one.nonbase, one.notes)
    assert apart.changed_since(split.load("00000")) == one.changed_since(serial.load("00000"))
    assert "and 3 more" in apart.notes[0]  # 1 + 6 + 6 left out, 10 named
    assert split.read("00001", "data/d000/f00120.txt") == target.read_bytes()
    again = split.take(ws, "00002")
    assert again.content == apart.content and again.changed_since(apart) == []
    assert_same_disk_cap(split, ws, apart.nonbase)
