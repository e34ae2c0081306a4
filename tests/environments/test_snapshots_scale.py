"""A step's snapshot costs what the step changed: folder objects shared between steps, files
found unchanged without being read, restores that touch only what differs, old runs' manifests
(every file listed) still restored."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from environments.record.snapshots import (
    FileEntry,
    Manifest,
    SnapshotStore,
    _fsync_write,
)
from sandbox.clock import kernel_clock_ns
from sandbox.fs import WorkspaceFS


def lay(ws: Path, n: int, per_folder: int = 500, same: bool = False) -> None:
    """``n`` small files; ``same``: all with one content (one object to store: a fast test)."""
    for i in range(n):
        folder = ws / "data" / f"d{i // per_folder:03d}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"f{i:05d}.txt").write_text("0\n" if same else f"{i}\n")


def settle() -> None:
    """Wait until the kernel's coarse clock passes now: what was written so far then has a
    ctime a snapshot may remember (one of the current tick is read again next step)."""
    now = time.time_ns()
    while kernel_clock_ns() <= now:
        time.sleep(0.001)


def written(store: SnapshotStore) -> set[Path]:
    return {p for d in (store.objects, store.trees) for p in d.rglob("*") if p.is_file()}


def exact(ws: Path) -> dict[str, tuple[bytes, int]]:
    return {str(p.relative_to(ws)): (p.read_bytes(), p.stat().st_mode & 0o777)
            for p in sorted(ws.rglob("*")) if p.is_file() and not p.is_symlink()}


@pytest.fixture
def ws(tmp_path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    return ws


def test_an_unchanged_folder_is_one_object_shared_by_every_step(ws, tmp_path):
    lay(ws, 20)
    (ws / "train.py").write_text("print(1)\n")
    settle()
    store = SnapshotStore(tmp_path / "snaps")
    first = store.take(ws, "00000", initial=True)
    (ws / "train.py").write_text("print(2)\n")
    second = store.take(ws, "00001")
    assert first.tree != second.tree
    data_of = [store.tree(m.tree)["d"]["data"][0] for m in (first, second)]
    assert data_of[0] == data_of[1]  # the data folder's object is the same one
    assert second.changed_since(first) == ["train.py"]
    assert second.count == 21 and sorted(second.files)[-1] == "train.py"


def test_a_10k_file_workspace_records_its_second_step_in_a_few_objects(ws, tmp_path, monkeypatch):
    lay(ws, 10_000, same=True)
    settle()
    store = SnapshotStore(tmp_path / "snaps")
    store.take(ws, "00000", initial=True)
    before = written(store)
    hashed = []
    real = SnapshotStore._leaf
    monkeypatch.setattr(SnapshotStore, "_leaf", lambda self, fs, rel, *a: hashed.append(rel) or real(self, fs, rel, *a))
    (ws / "data" / "d007" / "f03600.txt").write_text("changed\n")
    (ws / "new.txt").write_text("new\n")
    step = store.take(ws, "00001")
    new = written(store) - before
    # two files, and the folders above them: d007, data, the root
    assert sorted(hashed) == ["data/d007/f03600.txt", "new.txt"]
    assert len(new) == 2 + 3, sorted(p.name for p in new)
    assert (store.manifests / "00001.json").stat().st_size < 1000
    assert step.changed_since(store.load("00000")) == ["data/d007/f03600.txt", "new.txt"]
    assert step.count == 10_001


def test_nothing_changed_writes_no_object_and_keeps_the_key(ws, tmp_path):
    lay(ws, 50)
    settle()
    store = SnapshotStore(tmp_path / "snaps")
    first = store.take(ws, "00000", initial=True)
    before = written(store)
    second = store.take(ws, "00001")
    assert written(store) == before and second.tree == first.tree
    os.utime(ws / "data" / "d000" / "f00003.txt")  # touched, same content: same key, new lstat
    third = store.take(ws, "00002")
    assert third.tree != first.tree and third.key() == first.key()
    assert third.changed_since(second) == []


def test_restore_fork_and_undo_are_exact(ws, tmp_path):
    lay(ws, 30, per_folder=10)
    (ws / "empty").mkdir()
    (ws / "run.sh").write_text("echo\n")
    os.chmod(ws / "run.sh", 0o755)
    store = SnapshotStore(tmp_path / "snaps")
    store.take(ws, "00000", initial=True)
    at0 = exact(ws)
    (ws / "data" / "d001" / "f00012.txt").write_text("edited\n")
    (ws / "data" / "d002" / "f00025.txt").unlink()
    (ws / "extra").mkdir()
    (ws / "extra" / "x.txt").write_text("x\n")
    os.symlink("/etc/passwd", ws / "link")
    store.take(ws, "00001")
    at1 = exact(ws)

    store.restore("00000", ws)  # Undo in place
    assert exact(ws) == at0 and not (ws / "extra").exists() and (ws / "empty").is_dir()
    assert not (ws / "link").is_symlink()
    store.restore("00001", ws)
    assert exact(ws) == at1
    fresh = tmp_path / "fresh"
    store.restore("00000", fresh)
    assert exact(fresh) == at0

    fork = SnapshotStore(tmp_path / "fork")  # a fork adopts 0..1 and goes on from there
    fork.adopt(store, ["00000", "00001"])
    fork_ws = tmp_path / "fork_ws"
    fork.restore("00001", fork_ws)
    assert exact(fork_ws) == at1
    (fork_ws / "data" / "d000" / "f00001.txt").write_text("fork\n")
    step = fork.take(fork_ws, "00002")
    assert step.changed_since(fork.load("00001")) == ["data/d000/f00001.txt"]
    fork.restore("00001", fork_ws)
    assert exact(fork_ws) == at1


def test_a_restore_reads_only_what_differs(ws, tmp_path, monkeypatch):
    lay(ws, 200)
    settle()
    store = SnapshotStore(tmp_path / "snaps")
    store.take(ws, "00000", initial=True)
    (ws / "data" / "d000" / "f00007.txt").write_text("x\n")  # the same size: it must be read
    settle()
    store.take(ws, "00001")
    read, wrote = [], []
    real_chunks, real_write = WorkspaceFS.chunks, WorkspaceFS.write
    monkeypatch.setattr(WorkspaceFS, "chunks", lambda self, rel: read.append(rel) or real_chunks(self, rel))
    monkeypatch.setattr(WorkspaceFS, "write", lambda self, rel, *a, **kw: wrote.append(rel)
                        or real_write(self, rel, *a, **kw))
    store.restore("00000", ws)
    assert read == wrote == ["data/d000/f00007.txt"]  # the others' lstat keys are the snapshot's
    assert (ws / "data" / "d000" / "f00007.txt").read_text() == "7\n"


def test_an_old_runs_manifest_still_restores_and_is_followed_by_a_tree(ws, tmp_path):
    """A run recorded before folder objects: its manifest lists every file (``files``)."""
    store = SnapshotStore(tmp_path / "snaps")
    blobs = {"a.txt": b"alpha\n", "sub/b.txt": b"beta\n"}
    files = {}
    for rel, data in blobs.items():
        import hashlib
        sha = hashlib.sha256(data).hexdigest()
        (store.objects / sha[:2]).mkdir(exist_ok=True)
        (store.objects / sha[:2] / sha).write_bytes(data)
        files[rel] = {"sha": sha, "size": len(data), "mode": 0o644, "base": False,
                      "mtime_ns": 1, "ino": 2}
    _fsync_write(store.manifests / "00000.json", json.dumps({"label": "00000", "files": files}))
    old = store.load("00000")
    assert old.flat is not None and old.count == 2 and isinstance(old.files["a.txt"], FileEntry)
    (ws / "stray.txt").write_text("gone\n")
    store.restore("00000", ws)
    assert exact(ws) == {"a.txt": (b"alpha\n", 0o644), "sub/b.txt": (b"beta\n", 0o644)}
    assert store.read("00000", "sub/b.txt") == b"beta\n"
    (ws / "a.txt").write_text("changed\n")
    step = store.take(ws, "00001")
    assert step.tree and step.flat is None
    assert step.changed_since(old) == ["a.txt"]
    assert Manifest.model_validate_json((store.manifests / "00001.json").read_text()).tree == step.tree
    fork = SnapshotStore(tmp_path / "fork")
    fork.adopt(store, ["00000", "00001"])
    fork.restore("00000", tmp_path / "fork_ws")
    assert exact(tmp_path / "fork_ws") == exact_old(blobs)


def exact_old(blobs: dict[str, bytes]) -> dict[str, tuple[bytes, int]]:
    return {rel: (data, 0o644) for rel, data in blobs.items()}


def test_a_change_hidden_behind_its_old_size_and_mtime_is_still_recorded(ws, tmp_path):
    """The actor controls mtime (``os.utime``) and size, not ctime: a file rewritten with the
    same size and its old mtime put back, at once after the snapshot (the same clock tick)
    and again later, is recorded each time."""
    lay(ws, 30)
    store = SnapshotStore(tmp_path / "snaps")
    target = ws / "data" / "d000" / "f00012.txt"
    previous = store.take(ws, "00000", initial=True)
    for i in range(1, 8):
        st = target.stat()
        target.write_text(f"{i:02d}\n"[-3:])  # the same 3 bytes' length, new content
        os.utime(target, ns=(st.st_atime_ns, st.st_mtime_ns))
        assert target.stat().st_size == st.st_size and target.stat().st_mtime_ns == st.st_mtime_ns
        step = store.take(ws, f"{i:05d}")
        assert step.changed_since(previous) == ["data/d000/f00012.txt"], i
        assert store.read(step.label, "data/d000/f00012.txt") == target.read_bytes()
        previous = step


def test_scoring_lays_each_step_over_the_one_before(ws, tmp_path, monkeypatch):
    """``restore(over=)``: a folder equal in both steps is not listed, a file equal in both
    not read; the result is exactly the step, whichever order the steps come in."""
    lay(ws, 40, per_folder=10)
    store = SnapshotStore(tmp_path / "snaps")
    store.take(ws, "00000", initial=True)
    (ws / "data" / "d001" / "f00015.txt").write_text("changed\n")
    (ws / "out").mkdir()
    (ws / "out" / "a.txt").write_text("a")
    store.take(ws, "00001")
    (ws / "out" / "b.txt").write_text("b")
    os.chmod(ws / "data" / "d003" / "f00039.txt", 0o600)
    (ws / "data" / "d002" / "f00022.txt").unlink()
    store.take(ws, "00002")
    expect = {}
    for label in ("00000", "00001", "00002"):
        store.restore(label, tmp_path / f"fresh{label}")
        expect[label] = exact(tmp_path / f"fresh{label}")
    listed, read = [], []
    real_listdir, real_chunks = WorkspaceFS.listdir, WorkspaceFS.chunks
    monkeypatch.setattr(WorkspaceFS, "listdir", lambda self, rel: listed.append(rel) or real_listdir(self, rel))
    monkeypatch.setattr(WorkspaceFS, "chunks", lambda self, rel: read.append(rel) or real_chunks(self, rel))
    into, held = tmp_path / "scratch", None
    for label in ("00000", "00002", "00001", "00000", "00002"):
        listed.clear()
        store.restore(label, into, over=held)
        assert exact(into) == expect[label], label
        if held is not None:
            assert "data/d000" not in listed and len(listed) <= 6, listed  # ., data, what changed
        held = label
    assert read == []  # unchanged files are known by the trees, not read back


def test_a_file_written_in_the_snapshots_clock_tick_is_read_again_next_step(ws, tmp_path, monkeypatch):
    """git's racy entries: a ctime of the tick the snapshot started in could be stamped
    again by a write right after it (same size, mtime put back), so it is not remembered."""
    from environments.record import snapshots

    lay(ws, 3)
    settle()
    store = SnapshotStore(tmp_path / "snaps")
    store.take(ws, "00000", initial=True)
    target = ws / "data" / "d000" / "f00001.txt"
    target.write_text("9\n")
    monkeypatch.setattr(snapshots, "kernel_clock_ns", lambda: target.stat().st_ctime_ns)
    step = store.take(ws, "00001")  # as if it started in the tick of that write
    assert store._lookup(step, "data/d000/f00001.txt").ctime_ns == 0
    assert store._lookup(step, "data/d000/f00002.txt").ctime_ns != 0  # older: remembered
    monkeypatch.undo()
    settle()
    hashed = []
    real = SnapshotStore._leaf
    monkeypatch.setattr(SnapshotStore, "_leaf", lambda self, scan, rel, *a: hashed.append(rel) or real(self, scan, rel, *a))
    again = store.take(ws, "00002")
    assert hashed == ["data/d000/f00001.txt"]
    assert store._lookup(again, "data/d000/f00001.txt").ctime_ns == target.stat().st_ctime_ns
