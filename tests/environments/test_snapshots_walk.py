"""The snapshot walk's shortcuts keep what the full comparison guaranteed.

An unchanged folder is recognised by counting the files whose ``lstat`` key matches the
previous tree (no entry is built for it, its bytes for the disk cap come from the stored
folder entry), and a new file is read once, through one descriptor of its folder, into the
object store. Each test here is a way those shortcuts could go wrong: a change the count
misses, bytes counted twice or not at all, an object half kept, a name swapped for a link
between the walk and the read.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from environments.record.snapshots import SnapshotStore
from sandbox.fs import CHUNK
from tests.environments.test_snapshots_scale import exact, lay, settle, written

SECRET = b"HOST-SECRET-29\n"


@pytest.fixture
def ws(tmp_path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    return ws


def hooked(monkeypatch) -> list[str]:
    """The files the next takes hash (each changed file once)."""
    hashed: list[str] = []
    real = SnapshotStore._leaf
    monkeypatch.setattr(SnapshotStore, "_leaf", lambda self, scan, rel, *a: hashed.append(rel)
                        or real(self, scan, rel, *a))
    return hashed


def leftovers(store: SnapshotStore) -> list[str]:
    return [p.name for p in store.objects.iterdir() if p.name.startswith("tmp-")]


def test_a_file_rewritten_in_place_among_many_unchanged_is_found_by_its_ctime(ws, tmp_path, monkeypatch):
    lay(ws, 2000, per_folder=2000)
    settle()
    store = SnapshotStore(tmp_path / "snaps")
    first = store.take(ws, "00000", initial=True)
    target = ws / "data" / "d000" / "f01234.txt"
    st = target.stat()
    target.write_text("9999\n")  # the same 5 bytes' length as "1234\n"
    os.utime(target, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert (target.stat().st_size, target.stat().st_mtime_ns) == (st.st_size, st.st_mtime_ns)
    hashed = hooked(monkeypatch)
    step = store.take(ws, "00001")
    assert hashed == ["data/d000/f01234.txt"]  # the 1,999 others are not read
    assert step.changed_since(first) == ["data/d000/f01234.txt"]
    assert store.read("00001", "data/d000/f01234.txt") == b"9999\n"
    assert step.count == 2000


@pytest.mark.parametrize("change", ["removed", "removed_and_added", "file_to_folder",
                                    "file_to_symlink", "folder_to_file", "folder_removed"])
def test_a_change_that_keeps_the_folder_looking_the_same_is_recorded(ws, tmp_path, change):
    """Each change keeps some count of the folder as it was (files, or files + folders):
    the step still records exactly what the workspace holds."""
    lay(ws, 300, per_folder=100)
    (ws / "data" / "d001" / "sub").mkdir()
    (ws / "data" / "d001" / "sub" / "s.txt").write_text("s\n")
    settle()
    store = SnapshotStore(tmp_path / "snaps")
    first = store.take(ws, "00000", initial=True)
    at0 = exact(ws)
    d = ws / "data" / "d001"
    if change == "removed":
        (d / "f00150.txt").unlink()
    elif change == "removed_and_added":  # as many files as before, one name different
        (d / "f00150.txt").unlink()
        (d / "g00150.txt").write_text("150\n")
    elif change == "file_to_folder":  # one file fewer, one folder more
        (d / "f00150.txt").unlink()
        (d / "f00150.txt").mkdir()
        (d / "f00150.txt" / "inner.txt").write_text("inner\n")
    elif change == "file_to_symlink":  # links are not followed nor recorded
        (d / "f00150.txt").unlink()
        os.symlink("f00151.txt", d / "f00150.txt")
    elif change == "folder_to_file":
        (d / "sub" / "s.txt").unlink()
        (d / "sub").rmdir()
        (d / "sub").write_text("now a file\n")
    elif change == "folder_removed":  # as many files, one folder fewer
        (d / "sub" / "s.txt").unlink()
        (d / "sub").rmdir()
    step = store.take(ws, "00001")
    expected = exact(ws)
    assert set(step.files) == set(expected), change
    assert step.count == len(expected)
    assert step.changed_since(first) == sorted(set(first.files) ^ set(step.files)
                                               | {r for r in step.files if r in first.files
                                                  and step.files[r].sha != first.files[r].sha})
    assert step.changed_since(first), change
    fresh = tmp_path / "fresh"
    store.restore("00001", fresh)
    assert exact(fresh) == expected
    store.restore("00000", ws)  # Undo: back exactly, the link and the new folder gone
    assert exact(ws) == at0 and (d / "f00150.txt").is_file() and not (d / "f00150.txt").is_symlink()
    assert (d / "sub" / "s.txt").read_text() == "s\n"


def nonbase_of(ws: Path, base: set[str]) -> int:
    return sum(p.stat().st_size for p in ws.rglob("*")
               if p.is_file() and str(p.relative_to(ws)) not in base)


def test_the_disk_cap_counts_an_unchanged_folder_with_subfolders_once(ws, tmp_path):
    """An unchanged folder's bytes come from its stored entry less its subfolders' (which
    count themselves): at the cap exactly the step is stored, one byte under it is not."""
    task = tmp_path / "task_env"
    (task / "data").mkdir(parents=True)
    (task / "data" / "given.bin").write_bytes(b"g" * 5000)  # the task's own: never counted
    for root in (task, ws):
        (root / "data").mkdir(exist_ok=True)
        (root / "data" / "given.bin").write_bytes(b"g" * 5000)
    store = SnapshotStore(tmp_path / "snaps", base_dir=task)
    store.take(ws, "00000", initial=True)
    (ws / "data" / "own.txt").write_bytes(b"o" * 700)
    (ws / "data" / "deep" / "deeper").mkdir(parents=True)
    (ws / "data" / "deep" / "a.txt").write_bytes(b"a" * 300)
    (ws / "data" / "deep" / "deeper" / "b.txt").write_bytes(b"b" * 200)
    settle()
    step1 = store.take(ws, "00001")
    assert step1.stored and step1.nonbase == 1200
    (ws / "top.txt").write_bytes(b"t" * 50)  # the root changes; data/ and beneath do not
    settle()  # (else top.txt's ctime is "racy", read again next step: a new root object)
    total = nonbase_of(ws, {"data/given.bin"})
    assert total == 1250
    refused = store.take(ws, "00002", cap_bytes=total - 1)
    assert not refused.stored and "over this task's limit" in refused.notes[0]
    kept = store.take(ws, "00002", cap_bytes=total)
    assert kept.stored and kept.nonbase == total
    assert store.tree(kept.tree)["d"]["data"] == store.tree(step1.tree)["d"]["data"]  # unchanged
    again = store.take(ws, "00003", cap_bytes=total)  # the whole workspace unchanged
    assert again.stored and again.tree == kept.tree
    assert not store.take(ws, "00004", cap_bytes=total - 1).stored


@pytest.mark.parametrize("size", [7, 2 * CHUNK + 5], ids=["small", "over_two_chunks"])
def test_a_new_file_whose_object_exists_is_named_and_nothing_is_left_behind(ws, tmp_path, size):
    data = (b"0123456789abcdef" * (size // 16 + 1))[:size]
    (ws / "a.bin").write_bytes(data)
    store = SnapshotStore(tmp_path / "snaps")
    store.take(ws, "00000", initial=True)
    objects = written(store)
    (ws / "copy.bin").write_bytes(data)  # the same bytes under a new name
    (ws / "sub").mkdir()
    (ws / "sub" / "again.bin").write_bytes(data)
    step = store.take(ws, "00001")
    sha = hashlib.sha256(data).hexdigest()
    assert {step.files[r].sha for r in ("a.bin", "copy.bin", "sub/again.bin")} == {sha}
    new = written(store) - objects
    assert all(p.parent.parent == store.trees for p in new), new  # folder objects only
    assert leftovers(store) == []
    assert store.read("00001", "sub/again.bin") == data
    assert (store.objects / sha[:2] / sha).read_bytes() == data


def test_a_large_new_file_is_stored_as_it_was_read(ws, tmp_path):
    data = os.urandom(CHUNK * 2 + 123)
    store = SnapshotStore(tmp_path / "snaps")
    store.take(ws, "00000", initial=True)
    (ws / "big.bin").write_bytes(data)
    step = store.take(ws, "00001")
    sha = step.files["big.bin"].sha
    assert sha == hashlib.sha256(data).hexdigest()
    assert (store.objects / sha[:2] / sha).read_bytes() == data and leftovers(store) == []


def test_the_tasks_own_files_are_not_copied_and_a_same_size_edit_is(ws, tmp_path):
    """A file the size of the task's copy is hashed first; only when it differs is it read
    again to be stored (what is stored is still what is named)."""
    task = tmp_path / "task_env"
    task.mkdir()
    for root in (task, ws):
        (root / "given.txt").write_text("given\n")
        (root / "big.bin").write_bytes(b"x" * (CHUNK + 10))
    store = SnapshotStore(tmp_path / "snaps", base_dir=task)
    first = store.take(ws, "00000", initial=True)
    assert first.files["given.txt"].base and first.files["big.bin"].base
    assert written(store) == {p for p in written(store) if p.parent.parent == store.trees}
    (ws / "given.txt").write_text("GIVEN\n")  # same size, other bytes
    (ws / "big.bin").write_bytes(b"y" * (CHUNK + 10))
    step = store.take(ws, "00001")
    for rel, data in (("given.txt", b"GIVEN\n"), ("big.bin", b"y" * (CHUNK + 10))):
        assert not step.files[rel].base and store.read("00001", rel) == data
        assert step.files[rel].sha == hashlib.sha256(data).hexdigest()
    (ws / "given.txt").write_text("given\n")  # back to the task's own: no copy needed
    back = store.take(ws, "00002")
    assert back.files["given.txt"].base and back.files["given.txt"].sha == first.files["given.txt"].sha
    assert leftovers(store) == []


@pytest.mark.parametrize("into", ["symlink", "fifo", "folder"])
def test_a_file_swapped_between_the_walk_and_the_read_is_named_never_followed(ws, tmp_path, monkeypatch, into):
    """The walk saw a regular file; before it is read it becomes a link to a host file, a
    FIFO (a blocking open would hang the host) or a folder. It is left out and named in
    the step's notes; the host file's bytes are in no object."""
    secret = tmp_path / "host_secret.txt"
    secret.write_bytes(SECRET)
    (ws / "keep.txt").write_text("keep\n")
    store = SnapshotStore(tmp_path / "snaps")
    store.take(ws, "00000", initial=True)
    (ws / "d").mkdir()
    (ws / "d" / "victim.txt").write_text("victim\n")
    (ws / "d" / "other.txt").write_text("other\n")
    real = SnapshotStore._scan

    def then_swap(self, scan, rel, prev, depth):
        node = real(self, scan, rel, prev, depth)
        if rel == "":  # the walk is done: swap before pass 2 reads
            victim = ws / "d" / "victim.txt"
            victim.unlink()
            if into == "symlink":
                os.symlink(secret, victim)
            elif into == "fifo":
                os.mkfifo(victim)
            else:
                victim.mkdir()
        return node

    monkeypatch.setattr(SnapshotStore, "_scan", then_swap)
    step = store.take(ws, "00001")
    assert "d/victim.txt" not in step.files and "d/other.txt" in step.files
    assert any("d/victim.txt" in note for note in step.notes), step.notes
    every = [p.read_bytes() for p in store.objects.rglob("*") if p.is_file()]
    assert SECRET not in every and leftovers(store) == []


def test_an_old_runs_base_files_are_still_known_by_path(ws, tmp_path):
    """A run recorded before trees lists its first snapshot's files by path: a file put back
    to the task's own content there is marked ``base`` again, not copied."""
    import json

    from environments.record.snapshots import _fsync_write

    task = tmp_path / "task_env"
    (task / "sub").mkdir(parents=True)
    (task / "sub" / "given.txt").write_text("given\n")
    store = SnapshotStore(tmp_path / "snaps", base_dir=task)
    sha = hashlib.sha256(b"given\n").hexdigest()
    files = {"sub/given.txt": {"sha": sha, "size": 6, "mode": 0o644, "base": True, "mtime_ns": 1, "ino": 2}}
    _fsync_write(store.manifests / "00000.json", json.dumps({"label": "00000", "files": files}))
    (ws / "sub").mkdir()
    (ws / "sub" / "given.txt").write_text("GIVEN\n")
    changed = store.take(ws, "00001")
    assert not changed.files["sub/given.txt"].base and store.read("00001", "sub/given.txt") == b"GIVEN\n"
    (ws / "sub" / "given.txt").write_text("given\n")
    back = store.take(ws, "00002")
    assert back.files["sub/given.txt"].base and back.files["sub/given.txt"].sha == sha
    assert not (store.objects / sha[:2] / sha).exists()
