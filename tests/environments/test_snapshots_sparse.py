"""Run folders cost what they hold (issue 37, class 7): a sparse file stays sparse.

A sandboxed script can make a 1,000 MB file that holds one byte (``truncate``, then a write):
it costs nothing against the workspace's quota, and before this every copy labcoat made of it
(the step's snapshot, a restore, a fork, a scoring scratch copy, an imported log's step) wrote
all 1,000 MB. The attacks come first: a run of three such steps, and an MLAgentBench log of 52 kB
imported as four steps, must leave run folders of a few MB (disk usage: ``st_blocks``). Then
each copy path on its own, and the fallback where a filesystem reports no holes.
"""

from __future__ import annotations

import errno
import hashlib
import os
from pathlib import Path

import pytest

from agent.actor import Proposal
from agent.replay import ReplayActor
from agent.runner import create_run, drive
from environments.imports.mlab import import_log
from environments.record import snapshots as snapshots_module
from environments.record.backups import Backups
from environments.record.snapshots import SnapshotStore
from environments.scoring.evaluate import _scratch as scoring_scratch
from environments.task.prepare import prepare_task
from environments.task.spec import load_task
from sandbox import fs as fs_module
from sandbox.fs import WorkspaceError, WorkspaceFS, copy_tree
from tests.conftest import write_task
from tests.environments.test_mlab_import import ARGS, good_steps, make_log, make_task
from tests.sandbox.backends import docker_marks

MB = 1 << 20
HOLLOW = 1000 * MB  # the file: 1,000 MB apparent, one byte of data
STEP_HOLLOW = 300 * MB  # a run's sparse file, one byte more each step (hashing its holes as
# zeros is what a step of it costs: ~0.8 s a GB here, so the 1,000 MB would be slow)
LOG_HOLLOW = 250 * MB  # each of an imported log's four sparse step files
BIG = 200 * MB  # a sparse file for each copy path on its own (its hash reads the holes as zeros)
SMALL = 40 * MB  # what a run folder of such steps may hold on disk (its data are a few kB)
BOTH = pytest.mark.parametrize("sandbox", ["local", pytest.param("docker", marks=docker_marks)])


def disk_usage(root: Path) -> int:
    """Bytes ``root`` takes on disk (``st_blocks``), each inode once, as ``du`` counts."""
    seen, total = set(), 0
    for folder, _, names in os.walk(root):
        for name in names:
            st = os.lstat(os.path.join(folder, name))
            if st.st_ino not in seen:
                seen.add(st.st_ino)
                total += st.st_blocks * 512
    return total


def hollow(path: Path, size: int = HOLLOW, at: int = 0, byte: bytes = b"x") -> None:
    """A sparse file of ``size`` bytes holding ``byte`` at ``at`` and a hole elsewhere."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as f:
        f.truncate(size)
        f.seek(at)
        f.write(byte)


def content_of(path: Path, at: int, n: int) -> tuple[int, bytes]:
    """(the file's apparent size, its ``n`` bytes at ``at``)."""
    with open(path, "rb") as f:
        f.seek(at)
        return os.fstat(f.fileno()).st_size, f.read(n)


# ---- the attacks ------------------------------------------------------------------------------

SPARSE_STEP = ("import os, sys\nn = len([p for p in os.listdir('.') if p.startswith('step')])\n"
               "open(f'step{n}', 'w').close()\n"
               "with open('hollow.bin', 'r+b' if os.path.exists('hollow.bin') else 'wb') as f:\n"
               f"    f.truncate({STEP_HOLLOW})\n    f.seek(n * 4096)\n    f.write(b'%d' % n)\n"
               "print(os.stat('hollow.bin').st_blocks * 512, 'bytes on disk')\n")


@BOTH
def test_three_steps_with_a_sparse_file_leave_a_small_run_folder(tmp_path, sandbox):
    """Each step changes one byte of a sparse file: before, every step's snapshot stored it
    whole (the issue's 1,000 MB file: 3.0 GB after 3 steps; 900 MB here); now the run folder
    holds its data only."""
    task = write_task(tmp_path / "task", files={"env/sparse.py": SPARSE_STEP})
    actor = ReplayActor([Proposal(action="Execute Script", args={"script_name": "sparse.py"})] * 3)
    run, spec = create_run(task, actor, tmp_path / "runs", sandbox=sandbox)
    drive(run, spec, actor)
    steps = run.steps()
    assert len(steps) == 3 and not any(s.error for s in steps), [s.observation for s in steps]
    assert all(run.snapshots.load(s.snapshot).stored for s in steps)
    assert disk_usage(run.path) < SMALL, f"{disk_usage(run.path) / MB:,.0f} MB on disk"
    restored = tmp_path / "restored"  # and what was stored is the file, every byte in place
    run.snapshots.restore(steps[-1].snapshot, restored)
    assert content_of(restored / "hollow.bin", 2 * 4096, 1) == (STEP_HOLLOW, b"2")
    assert content_of(restored / "hollow.bin", 4096, 1) == (STEP_HOLLOW, b"1")
    assert disk_usage(restored) < SMALL


def test_a_52_kb_log_with_sparse_step_copies_imports_small(tmp_path):
    """An MLAgentBench log whose four step copies each hold a sparse file (a few kB on disk):
    before, the import wrote each whole (the issue's 1,000 MB files made 4.9 GB; 250 MB here
    keeps the test fast, the hashing of the holes being what it costs); now the run folder
    holds what the log holds."""
    task = make_task(tmp_path)
    log = make_log(tmp_path / "log", good_steps([1, 2, 3]), args=ARGS)
    for i in range(4):
        hollow(log / "env_log" / "traces" / f"step_{i}_files" / "weights.bin", size=LOG_HOLLOW,
               at=i * 4096, byte=b"%d" % i)
    assert disk_usage(log) < MB
    outcome = import_log(log, tmp_path / "runs", task_ref=str(task))
    assert outcome.status == "imported", outcome
    run_dir = Path(outcome.run_dir)
    assert disk_usage(run_dir) < SMALL, f"{disk_usage(run_dir) / MB:,.0f} MB on disk"
    assert content_of(run_dir / "workspace" / "weights.bin", 3 * 4096, 1) == (LOG_HOLLOW, b"3")


def test_a_log_step_past_the_cap_in_apparent_size_is_refused(tmp_path):
    """The cap counts a file's apparent size: a 2 MB sparse file (4 kB on disk) is over a
    1 MB cap, so the log is refused before anything dense could be written."""
    task = make_task(tmp_path, disk_mb=1)
    log = make_log(tmp_path / "log", good_steps([1, 2, 3]), args=ARGS)
    hollow(log / "env_log" / "traces" / "step_1_files" / "weights.bin", size=2 * MB)
    with pytest.raises(Exception, match="exceed"):
        import_log(log, tmp_path / "runs", task_ref=str(task))


# ---- each copy path ---------------------------------------------------------------------------

def test_copy_tree_keeps_holes_and_counts_apparent_size(tmp_path):
    hollow(tmp_path / "src" / "a" / "big.bin", at=HOLLOW // 2)
    (tmp_path / "src" / "small.txt").write_text("dense")
    copy_tree(WorkspaceFS(tmp_path / "src"), WorkspaceFS(tmp_path / "dst"))
    assert content_of(tmp_path / "dst" / "a" / "big.bin", HOLLOW // 2, 1) == (HOLLOW, b"x")
    assert (tmp_path / "dst" / "small.txt").read_text() == "dense"
    assert disk_usage(tmp_path / "dst") < MB
    with pytest.raises(WorkspaceError, match="exceed"):
        copy_tree(WorkspaceFS(tmp_path / "src"), WorkspaceFS(tmp_path / "capped"), max_bytes=HOLLOW - 1)


def test_a_file_that_grows_after_the_walk_is_copied_as_counted(tmp_path, monkeypatch):
    """The cap counts each file's apparent size when it is opened, and the copy stops there:
    a file grown (sparsely) after the walk cannot pass the cap."""
    src = tmp_path / "src"
    hollow(src / "grows.bin", size=MB)
    real_walk = WorkspaceFS.walk

    def walk_then_grow(self, *a, **kw):
        found = real_walk(self, *a, **kw)
        hollow(src / "grows.bin", size=HOLLOW)
        return found
    monkeypatch.setattr(WorkspaceFS, "walk", walk_then_grow)
    with pytest.raises(WorkspaceError, match="exceed"):
        copy_tree(WorkspaceFS(src), WorkspaceFS(tmp_path / "dst"), max_bytes=10 * MB)
    assert disk_usage(tmp_path / "dst") < MB


def test_write_copy_and_append_keep_a_workspace_file_sparse(tmp_path):
    ws = WorkspaceFS(tmp_path / "ws")
    hollow(tmp_path / "ws" / "big.bin", at=HOLLOW - 1)
    ws.copy("big.bin", "copied.bin")
    ws.write("big.bin", b"tail", append=True)
    assert content_of(tmp_path / "ws" / "copied.bin", HOLLOW - 1, 1) == (HOLLOW, b"x")
    assert content_of(tmp_path / "ws" / "big.bin", HOLLOW, 1) == (HOLLOW + 4, b"t")
    assert disk_usage(tmp_path / "ws") < MB


def test_snapshot_restore_and_fork_store_holes_as_holes(tmp_path, monkeypatch):
    ws = tmp_path / "ws"
    hollow(ws / "big.bin", size=BIG, at=12345, byte=b"y")
    (ws / "note.txt").write_text("hello")
    store = SnapshotStore(tmp_path / "run" / "snapshots")
    store.take(ws, "00000", initial=True)
    hollow(ws / "big.bin", size=BIG, at=54321, byte=b"z")
    store.take(ws, "00001", cap_bytes=2 * BIG)
    assert disk_usage(tmp_path / "run") < MB
    manifest = store.load("00001")
    entry = manifest.files["big.bin"]
    assert entry.size == BIG and not entry.base
    store.restore("00001", tmp_path / "back")
    assert content_of(tmp_path / "back" / "big.bin", 54321, 1) == (BIG, b"z")
    assert (tmp_path / "back" / "note.txt").read_text() == "hello"
    assert disk_usage(tmp_path / "back") < MB
    h = hashlib.sha256()  # the object is named by the content, its holes read as zeros
    with open(tmp_path / "back" / "big.bin", "rb") as f:
        while chunk := f.read(64 * MB):
            h.update(chunk)
    assert h.hexdigest() == entry.sha
    # a fork on another filesystem (no hard links): its objects are copied, holes kept
    monkeypatch.setattr(snapshots_module.os, "link", _no_link)
    fork = SnapshotStore(tmp_path / "fork" / "snapshots")
    fork.adopt(store, ["00000", "00001"])
    assert disk_usage(tmp_path / "fork") < MB
    fork.restore("00001", tmp_path / "forked")
    assert content_of(tmp_path / "forked" / "big.bin", 54321, 1) == (BIG, b"z")


def _no_link(*_a, **_kw):
    raise OSError(errno.EXDEV, "cross-device link")


def test_reading_a_snapshot_file_is_capped(tmp_path):
    """A viewer's or a diff's read of a stored file never reads it whole into memory."""
    ws = tmp_path / "ws"
    hollow(ws / "big.bin", size=BIG)
    store = SnapshotStore(tmp_path / "snapshots")
    store.take(ws, "00000", initial=True)
    data = store.read("00000", "big.bin")
    assert len(data) == snapshots_module.READ_LIMIT < BIG
    assert store.read("00000", "big.bin", limit=10) == b"x" + bytes(9)


def test_an_undo_backup_of_a_sparse_file_is_kept_sparse(tmp_path):
    ws = WorkspaceFS(tmp_path / "ws")
    hollow(tmp_path / "ws" / "big.bin", size=60 * MB, at=7, byte=b"u")
    backups = Backups(tmp_path / "run" / "backups")
    backups.save("big.bin", ws)
    ws.write("big.bin", b"edited")
    assert disk_usage(tmp_path / "run") < MB
    assert backups.restore("big.bin", ws)
    assert content_of(tmp_path / "ws" / "big.bin", 7, 1) == (60 * MB, b"u")
    assert disk_usage(tmp_path / "ws") < MB


def test_a_scoring_scratch_copy_keeps_holes(tmp_path):
    """Scoring's scratch copy of a workspace (``copy_tree``) and its read-only files laid back
    from the task (``WorkspaceFS.write`` of ``chunks``) go through ``sandbox/fs.py``: both
    sparse, a sparse file the agent made and one the task ships."""
    task = load_task(write_task(tmp_path / "task", read_only="data.txt\nshipped.bin\n"))
    hollow(task.env_dir / "shipped.bin", at=HOLLOW // 3, byte=b"s")
    hollow(tmp_path / "ws" / "made.bin", at=HOLLOW // 5, byte=b"m")
    scratch = scoring_scratch(task, tmp_path / "ws", tmp_path / "scratch")
    assert content_of(scratch / "made.bin", HOLLOW // 5, 1) == (HOLLOW, b"m")
    assert content_of(scratch / "shipped.bin", HOLLOW // 3, 1) == (HOLLOW, b"s")
    assert disk_usage(scratch) < MB


def test_a_task_folders_prepared_copy_keeps_holes(tmp_path):
    """A task folder (downloaded, perhaps hostile) shipping a sparse file: its prepared copy
    (``shutil.copytree`` with :func:`sandbox.fs.copy_file`) holds the file's data only."""
    task = write_task(tmp_path / "task", files={"scripts/prepare.py": "open('../env/done', 'w').close()\n"})
    hollow(task / "env" / "shipped.bin", size=BIG, at=BIG // 2, byte=b"p")
    prepared = prepare_task(load_task(task), cache=tmp_path / "cache", sandbox="local", stdin=None,
                            show=lambda _: None)
    assert (prepared.env_dir / "done").exists()
    assert content_of(prepared.env_dir / "shipped.bin", BIG // 2, 1) == (BIG, b"p")
    assert disk_usage(prepared.root) < MB


def test_without_seek_data_a_copy_is_whole_and_right(tmp_path, monkeypatch):
    """Where the filesystem has no SEEK_DATA (EINVAL), a copy falls back to reading the file
    whole: correct, only not sparse."""
    hollow(tmp_path / "src" / "big.bin", size=8 * MB, at=5 * MB, byte=b"q")
    real = os.lseek

    def no_holes(fd, pos, how):
        if how in (os.SEEK_DATA, os.SEEK_HOLE):
            raise OSError(errno.EINVAL, "not supported")
        return real(fd, pos, how)
    monkeypatch.setattr(fs_module.os, "lseek", no_holes)
    copy_tree(WorkspaceFS(tmp_path / "src"), WorkspaceFS(tmp_path / "dst"))
    assert content_of(tmp_path / "dst" / "big.bin", 5 * MB, 1) == (8 * MB, b"q")
    with open(tmp_path / "dst" / "big.bin", "rb") as f:
        assert f.read() == (tmp_path / "src" / "big.bin").read_bytes()


def test_a_dense_file_is_never_searched_for_holes(tmp_path, monkeypatch):
    """Only a file with fewer blocks than its size is searched (SEEK_DATA): a dense file's copy
    costs what it did."""
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "dense.bin").write_bytes(os.urandom(3 * MB))
    real, asked = os.lseek, []

    def spy(fd, pos, how):
        asked.append(how)
        return real(fd, pos, how)
    monkeypatch.setattr(fs_module.os, "lseek", spy)
    copy_tree(WorkspaceFS(tmp_path / "src"), WorkspaceFS(tmp_path / "dst"))
    assert os.SEEK_DATA not in asked and os.SEEK_HOLE not in asked
    assert (tmp_path / "dst" / "dense.bin").read_bytes() == (tmp_path / "src" / "dense.bin").read_bytes()
