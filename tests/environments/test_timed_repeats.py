"""A timed scoring's repeats keep one workspace, laid again between repeats only where the
last repeat touched it: each thing a repeat can leave there for the next (a file, an in-place
edit with its mtime put back, a note on a folder, a folder's mode, a link, a FIFO) is gone
before the next repeat runs, and the task's read-only data is laid once per scoring.

The submission plants its leftover on its first run and answers wrongly whenever it finds
one, so a scoring succeeds only if no repeat after the first saw anything of the one before.
"""

from __future__ import annotations

import textwrap

import pytest

from environments.scoring import scratch_sync
from environments.scoring.evaluate import evaluate
from environments.task.spec import load_task
from sandbox.fs import WorkspaceFS
from sandbox.local import LocalSandbox
from tests.environments.test_scoring_steps import (
    EMPTY_TMP,
    folder_mode_only,
    trusting_sync,
)
from tests.environments.test_seam import FAST, timed_task
from tests.fast_set import representatives
from tests.sandbox.backends import docker_marks

SUBMISSION = textwrap.dedent('''
    import os, pathlib
    WS = pathlib.Path(__file__).resolve().parent
    ATTACK = {attack!r}
    RO = WS / "data" / "ro.txt"
    MAGIC = 4242424242 * 10**9

    def plant():
        for attack in ATTACK.split():
            plant_one(attack)

    def plant_one(ATTACK):
        if ATTACK == "new-file":
            (WS / "pkg" / "cache.txt").write_text("answer")
        elif ATTACK in ("in-place", "read-only"):
            target = WS / "notes.txt" if ATTACK == "in-place" else RO
            st = target.stat()
            with open(target, "r+b") as f:
                f.write(b"X")  # same size
            os.utime(target, ns=(st.st_atime_ns, st.st_mtime_ns))
        elif ATTACK == "folder-note":
            os.setxattr(WS / "pkg", "user.cache", b"answer")
            os.setxattr(WS, "user.cache", b"answer")
        elif ATTACK == "folder-mode":
            os.chmod(WS / "pkg", 0o777)
        elif ATTACK == "link":
            os.unlink(WS / "notes.txt")
            os.symlink("/tmp", WS / "notes.txt")
        elif ATTACK == "hard-link":
            os.link(WS / "notes.txt", WS / "pkg" / "kept.txt")
        elif ATTACK == "fifo":
            os.mkfifo(WS / "pkg" / "pipe")
        elif ATTACK == "folder-mtime":  # 8 bytes of its choosing: tokens, for one
            for at in (WS, WS / "pkg"):
                os.utime(at, ns=(MAGIC, MAGIC))
        elif ATTACK == "folder-size":  # an ext4 folder does not shrink when names go
            for i in range(400):
                (WS / "pkg" / ("n%04d-" % i + "x" * 40)).touch()
        elif ATTACK == "root-mode":
            os.chmod(WS, 0o1755)
        elif ATTACK == "tmp-stuck":  # folders the sandbox's uid cannot empty
            for top in ("/tmp", "/dev/shm"):
                os.makedirs(top + "/stuck", exist_ok=True)
                (pathlib.Path(top) / "stuck" / "answer").write_text("answer")
                os.chmod(top + "/stuck", 0o555)

    def found():
        notes = WS / "notes.txt"
        return [what for what, there in [
            ("file", (WS / "pkg" / "cache.txt").exists() or (WS / "pkg" / "kept.txt").exists()
             or os.path.lexists(WS / "pkg" / "pipe")),
            ("edit", not notes.is_symlink() and notes.read_bytes() != b"notes\\n"),
            ("read-only edit", RO.read_bytes() != b"pristine\\n"),
            ("note", any(os.listxattr(p) for p in (WS, WS / "pkg"))),
            ("mode", (WS / "pkg").stat().st_mode & 0o777 != 0o755),
            ("link", notes.is_symlink()),
            ("folder time", any(MAGIC in (p.stat().st_mtime_ns, p.stat().st_atime_ns)
                                for p in (WS, WS / "pkg"))),
            ("folder size", (WS / "pkg").stat().st_size > 4096),
            ("root mode", WS.stat().st_mode & 0o1000),
            ("tmp", any(os.path.exists(t + "/stuck/answer") for t in ("/tmp", "/dev/shm"))),
        ] if there]

    def run(challenge):
        if found():
            return "left over: " + ", ".join(found())
        plant()
        return challenge.strip()[::-1]
''')
ATTACKS = ["new-file", "in-place", "read-only", "folder-note", "folder-mode", "link", "hard-link",
           "fifo", "folder-mtime", "folder-size", "root-mode", "tmp-stuck"]


def score_attack(tmp_path, attack: str, sandbox: str = "local"):
    task = load_task(timed_task(tmp_path))
    ws = tmp_path / "ws"
    (ws / "pkg").mkdir(parents=True)
    (ws / "pkg" / "__init__.py").write_text("")
    (ws / "notes.txt").write_text("notes\n")
    (ws / "fast.py").write_text(FAST.replace("def run", "def _honest") + SUBMISSION.format(attack=attack))
    return evaluate(task, ws, sandbox)


@pytest.mark.parametrize("attack", representatives(ATTACKS, ["new-file", "link", "fifo", "tmp-stuck"]))
def test_nothing_a_repeat_leaves_in_its_workspace_reaches_the_next(tmp_path, attack):
    result = score_attack(tmp_path, attack)
    assert result.value is not None and result.paired is not None, result.detail
    assert "pairs" in result.detail


@pytest.mark.parametrize("backend", [pytest.param("docker", marks=docker_marks)])
def test_nothing_a_repeat_leaves_reaches_the_next_on_docker(tmp_path, backend):
    everything = " ".join(a for a in ATTACKS if a != "link") + " link"  # the link replaces notes.txt last
    result = score_attack(tmp_path, everything, backend)
    assert result.value is not None and result.paired is not None, result.detail


@pytest.mark.parametrize(("attack", "naive"), representatives([
    ("new-file", "trusts the workspace"), ("fifo", "trusts the workspace"),
    ("in-place", "mtime and size"), ("folder-note", "no notes removed"),
    ("tmp-stuck", "emptying instead of renewing"), ("folder-mtime", "folder times kept"),
    ("root-mode", "folder times kept"), ("folder-size", "folders keyed by mode")],
    ["new-file-trusts the workspace", "in-place-mtime and size", "folder-note-no notes removed",
     "tmp-stuck-emptying instead of renewing", "folder-mtime-folder times kept",
     "folder-size-folders keyed by mode"]))  # the fast set: each defence taken away once
def test_each_leftover_reaches_the_next_repeat_past_a_naive_reset(tmp_path, monkeypatch, attack, naive):
    """The mutations: each defence taken away in turn, its attack gets through."""
    if naive == "emptying instead of renewing":
        monkeypatch.setattr(LocalSandbox, "renew", lambda self: self.exec(EMPTY_TMP, timeout=60))
    elif naive == "folder times kept":
        monkeypatch.setattr(scratch_sync.Scratch, "_put_folders_back", lambda self, wanted: None)
    elif naive == "folders keyed by mode":
        monkeypatch.setattr(scratch_sync.Scratch, "_kept_folder", folder_mode_only)
    elif naive == "trusts the workspace":
        monkeypatch.setattr(scratch_sync.Scratch, "sync", trusting_sync)
    elif naive == "mtime and size":
        monkeypatch.setattr(scratch_sync.Key, "of", staticmethod(
            lambda st: scratch_sync.Key(0, 0, st.st_size, st.st_mtime_ns, st.st_mode)))
    else:
        monkeypatch.setattr(WorkspaceFS, "clear_xattrs", lambda self, rel: 0)
    result = score_attack(tmp_path, attack)
    assert result.value is None and "left over" in result.detail, result


def test_read_only_data_is_laid_once_per_scoring(tmp_path, monkeypatch):
    """The pristine ``data/ro.txt`` is read from ``env/`` once for the submission's workspace,
    however many repeats run (it was copied again before every repeat), and twice for the
    pristine side's (its copy of ``env/``, then the read-only files laid over it)."""
    env_reads = []
    real = WorkspaceFS.chunks

    def chunks(self, rel, *args, **kw):
        if self.root.name == "env" and rel == "data/ro.txt":
            env_reads.append(rel)
        return real(self, rel, *args, **kw)

    monkeypatch.setattr(WorkspaceFS, "chunks", chunks)
    result = score_attack(tmp_path, "none")
    assert result.value is not None, result.detail
    assert int(result.detail.split(" interleaved pairs")[0]) >= 2
    assert len(env_reads) == 1 + 2, env_reads
