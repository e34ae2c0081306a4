"""``score_steps``' one scratch and one sandbox kept across steps (environments/scoring/score_scratch.py).

The task's eval.py scores a fingerprint of everything it can see (the scored folder's names,
kinds, modes, contents and link texts, and ``/tmp`` and ``/dev/shm``), so two evaluations
agree only when they saw the same thing. When the step's workspace holds ``attack.txt`` it
then does what that file says, as code from the submission would (a task's eval may unpickle
the submission's model): each later step's score with ``--all-steps`` must still equal the
same step scored alone, in a fresh scratch and sandbox (``score_run(run, task, step=k)``).
Each attack is also run against a naive persistent scratch (one that trusts S, one that keys
files by mtime and size, one that does not empty /tmp) to show that it would get through.
"""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest

from agent.actor import Proposal
from agent.replay import ReplayActor
from agent.runner import create_run, drive
from environments.scoring import score_scratch, scratch_sync
from environments.scoring.score import score_run, score_steps
from tests.conftest import write_task
from tests.fast_set import representatives
from tests.sandbox.backends import LOCAL_AND_SLOW_DOCKER, docker_marks

FINGERPRINT_EVAL = textwrap.dedent('''
    import hashlib, os, stat
    MAGIC = 4242424242 * 10**9

    def _fingerprint(top, h):
        for root, dirs, files in os.walk(top):  # links are listed, never followed
            # mount points are the interpreter's read-only folders (a venv made under /tmp is
            # bound there, as CI's is): nothing a command leaves, and reading a whole venv
            # made each evaluation take seconds
            dirs[:] = sorted(d for d in dirs if not os.path.ismount(os.path.join(root, d)))
            for name in sorted(dirs + files):
                path = os.path.join(root, name)
                st = os.lstat(path)
                rel = os.path.relpath(path, top)
                h.update(f"{rel}|{stat.S_IFMT(st.st_mode)}|{st.st_mode & 0o7777:o}|".encode())
                if stat.S_ISREG(st.st_mode):
                    with open(path, "rb") as f:
                        h.update(f.read())
                elif stat.S_ISLNK(st.st_mode):
                    h.update(os.readlink(path).encode())

    def _same_size(path, text):
        st = os.stat(path)
        with open(path, "r+") as f:
            f.write(text[: st.st_size].ljust(st.st_size, "!"))
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))  # the mtime put back

    def _attack(folder, what):
        keep = os.path.join(folder, "keep.txt")
        if what == "in-place":
            _same_size(keep, "EVIL")
        elif what == "read-only":
            _same_size(os.path.join(folder, "data.txt"), "9 9 9")
        elif what == "chmod":
            st = os.stat(keep)
            os.chmod(keep, 0o600)
            os.utime(keep, ns=(st.st_atime_ns, st.st_mtime_ns))
        elif what == "symlink":
            os.remove(keep)
            os.symlink("/task/scripts/eval.py", keep)
        elif what == "fifo":
            os.remove(keep)
            os.mkfifo(keep)
        elif what == "new-names":
            with open(os.path.join(folder, "later.txt"), "w") as f:
                f.write("planted for a later step")
            os.makedirs(os.path.join(folder, "newdir", "deeper"))
            os.link(keep, os.path.join(folder, "hard.txt"))
        elif what == "folder-mode":
            os.chmod(os.path.join(folder, "sub"), 0o700)
        elif what == "tmp":
            for top in ("/tmp", "/dev/shm"):
                with open(os.path.join(top, "left.txt"), "w") as f:
                    f.write("left for the next step")
        elif what == "tmp-stuck":  # folders emptying cannot enter (the uid is no root)
            for top in ("/tmp", "/dev/shm"):
                os.makedirs(top + "/stuck/in")
                with open(top + "/stuck/in/left.txt", "w") as f:
                    f.write("left for the next step")
                os.chmod(top + "/stuck", 0o555)
        elif what == "folder-mtime":  # 8 bytes of its choosing on folders it owns
            for at in (folder, os.path.join(folder, "sub")):
                os.utime(at, ns=(MAGIC, MAGIC))
        elif what == "folder-size":  # an ext4 folder does not shrink when names go
            sub = os.path.join(folder, "sub")
            for i in range(400):
                open(os.path.join(sub, f"n{i:04d}-" + "x" * 40), "w").close()
        elif what == "root-mode":
            os.chmod(folder, 0o1755)

    def _carried(top, h):
        """What a step can see that no fresh scratch has: a time set to MAGIC, a grown
        folder, a sticky root."""
        for root, dirs, _ in os.walk(top):
            dirs[:] = [d for d in dirs if not os.path.ismount(os.path.join(root, d))]
            st = os.lstat(root)
            if MAGIC in (st.st_atime_ns, st.st_mtime_ns):
                h.update(b"magic time")
            if root != top and stat.S_ISDIR(st.st_mode) and st.st_size > 4096:
                h.update(b"grown folder")
            if st.st_mode & 0o1000 and root == top:
                h.update(b"sticky root")

    def get_score(folder):
        h = hashlib.sha256()
        for top in (folder, "/tmp", "/dev/shm"):
            h.update(top.encode())
            _fingerprint(top, h)
        _carried(folder, h)
        value = float(int(h.hexdigest()[:12], 16))
        attack = os.path.join(folder, "attack.txt")
        if os.path.isfile(attack):
            for what in open(attack).read().split():
                _attack(folder, what)
        return value
''')

WORKSPACE_ATTACKS = ["in-place", "read-only", "chmod", "symlink", "fifo", "new-names", "folder-mode"]
FOLDER_ATTACKS = ["folder-mtime", "folder-size", "root-mode"]
ATTACKS = [*WORKSPACE_ATTACKS, *FOLDER_ATTACKS, "tmp", "tmp-stuck"]
#: what makes the kept sandbox be closed: the next step is scored afresh, the one after in a
#: new kept scratch (nothing since the sandbox is renewed: a folder emptying cannot enter was)
FALLS_BACK: set[str] = set()


def fingerprint_task(root):
    return write_task(root, eval_body=FINGERPRINT_EVAL, read_only="data.txt\nlib/*\n", files={
        "env/lib/helper.py": "X = 1\n", "env/sub/keep_me.txt": "pristine\n"})


def write(name: str, content: str) -> Proposal:
    return Proposal(action="Write File", args={"file_name": name, "content": content})


def script(body: str) -> list[Proposal]:
    """A step that runs ``body`` in the run's sandbox (renames, removals, folders)."""
    return [write("ops.py", textwrap.dedent(body)),
            Proposal(action="Execute Script", args={"script_name": "ops.py"})]


def make_run(task_root, tmp_path, proposals, sandbox):
    actor = ReplayActor(proposals)
    run, task = create_run(task_root, actor, tmp_path / "runs", sandbox=sandbox)
    drive(run, task, actor)
    assert len(run.steps()) == len(proposals), [s.observation for s in run.steps()][-1:]
    return run, task


def alone(run, task, steps, sandbox):
    return [score_run(run, task, step=k, sandbox=sandbox).value for k in steps]


BACKENDS = [pytest.param("local", id="local"), pytest.param("docker", id="docker", marks=docker_marks)]
# the equality on docker is the same logic over a slower sandbox (a container per step): its
# leftovers are tested in the fast set (..._on_docker), the whole equality in the slow set
EQUALITY_BACKENDS = LOCAL_AND_SLOW_DOCKER


@pytest.mark.parametrize("backend", EQUALITY_BACKENDS)
def test_all_steps_equal_each_step_scored_alone(tmp_path, backend, scorer_stats):
    """Files added, changed, removed and renamed, a folder replaced by a file, a read-only
    file changed by the agent, code (moved aside), a package, a __pycache__."""
    proposals = [
        write("keep.txt", "kept\n"), write("sub/a.csv", "1,2\n"), write("sub/b.csv", "3,4\n"),
        write("model.py", "W = 1\n"), write("pkg/__init__.py", ""),
        *script("""
            import os, shutil
            os.rename("sub/a.csv", "sub/renamed.csv")
            os.remove("sub/b.csv")
            os.makedirs("__pycache__", exist_ok=True)
            open("__pycache__/x.cpython.pyc", "wb").write(b"junk")
            open("data.txt", "w").write("100 200\\n")
            os.makedirs("deep/er", exist_ok=True)
            open("deep/er/f.txt", "w").write("deep")
        """),
        write("model.py", "W = 2\n"),
        *script("""
            import shutil
            shutil.rmtree("deep")
            open("deep", "w").write("now a file")
            open("lib/helper.py", "w").write("X = 2\\n")
        """),
        write("sub/renamed.csv", "5,6\n"),
    ]
    assert_all_steps_as_alone(fingerprint_task, tmp_path, proposals, backend, scorer_stats)


def assert_all_steps_as_alone(make_task, tmp_path, proposals, backend, scorer_stats) -> None:
    """A run of ``proposals`` on ``make_task``'s task: every step with --all-steps scores as
    it does alone, through the kept scratch and one sandbox, laying only what changed."""
    run, task = make_run(make_task(tmp_path / "task"), tmp_path, proposals, backend)
    steps = list(range(1, len(proposals) + 1))
    together = [s.value for s in score_steps(run, task, sandbox=backend)]
    assert None not in together
    assert together == alone(run, task, steps, backend)
    final = scorer_stats[-1]
    assert final["fresh"] == 0 and final["opened"] == 1, final
    assert final["incremental"] == len(set(together)), final
    assert final["laid"] < 4 * len(steps), final  # not steps x files


def attack_run(tmp_path, what: str, backend: str, make_task=fingerprint_task):
    proposals = [write("keep.txt", "keep this\n"), write("sub/x.txt", "x\n"),
                 write("attack.txt", what), write("attack.txt", "none"), write("other.txt", "o\n")]
    return make_run(make_task(tmp_path / "task"), tmp_path, proposals, backend)


def later_scores(run, task, backend):
    """(steps 4 and 5 with --all-steps, the same steps scored alone)."""
    together = {s.step: s.value for s in score_steps(run, task, sandbox=backend)}
    return [together[4], together[5]], alone(run, task, [4, 5], backend)


@pytest.mark.parametrize("what", representatives(ATTACKS, ["in-place", "fifo", "folder-size", "tmp-stuck"]))
def test_an_evaluation_leaves_nothing_for_the_next_step(tmp_path, what, scorer_stats):
    assert_nothing_left(fingerprint_task, tmp_path, what, "local", scorer_stats)


@pytest.mark.parametrize("backend", [pytest.param("docker", marks=docker_marks)])
def test_an_evaluation_leaves_nothing_for_the_next_step_on_docker(tmp_path, backend, scorer_stats):
    assert_nothing_left(fingerprint_task, tmp_path, " ".join(ATTACKS), backend, scorer_stats)


def assert_nothing_left(make_task, tmp_path, what: str, backend: str, scorer_stats) -> None:
    """Steps 4 and 5, after step 3's attack ``what``, score with --all-steps as they do alone;
    the attack was caught in the kept scratch, not avoided by a fresh one (but what cannot be
    emptied, which closes the sandbox)."""
    run, task = attack_run(tmp_path, what, backend, make_task)
    together, fresh = later_scores(run, task, backend)
    assert None not in fresh and together == fresh
    stats = scorer_stats[-1]
    if any(w in FALLS_BACK for w in what.split()):
        assert stats["fresh"] == 1 and stats["opened"] == 2, stats
    else:
        assert stats["fresh"] == 0 and stats["opened"] == 1, stats


# --- the same attacks against naive persistent scratches: each gets through ----------------

def trusting_sync(self, want, sources):
    """A scratch that trusts S: it lays only what the step changed (no walk of S)."""
    for rel, src in want.files.items():
        if self.laid.get(rel, (None, None))[1] != src:
            self.fs.write(rel, sources[src.side].chunks(src.rel), mode=src.mode)
            self.remember(rel, src)
    return 0


def mtime_and_size(st):
    return scratch_sync.Key(0, 0, st.st_size, st.st_mtime_ns, st.st_mode)


#: what scoring ran between steps and repeats before ``Sandbox.renew``: the sandbox's uid
#: emptying its own ``/tmp`` and ``/dev/shm``
EMPTY_TMP = ["/bin/sh", "-c", "rm -rf /tmp/* /tmp/.[!.]* /dev/shm/* 2>/dev/null; true"]


def empty_tmp_instead(self) -> None:
    self._sb.exec(EMPTY_TMP, timeout=60)


def folder_mode_only(self, rel, st) -> bool:
    return st.st_mode & 0o7777 == scratch_sync.FOLDER_MODE


@pytest.mark.parametrize(("what", "naive"), representatives([
    *[(w, "trusts S") for w in WORKSPACE_ATTACKS],
    ("in-place", "mtime and size"), ("read-only", "mtime and size"), ("tmp", "no renewing"),
    ("tmp-stuck", "no renewing"), ("tmp-stuck", "emptying instead of renewing"),
    ("folder-mtime", "folder times kept"), ("root-mode", "folder times kept"),
    ("folder-size", "folders keyed by mode")],  # the fast set: each defence taken away once
    ["in-place-trusts S", "in-place-mtime and size", "tmp-no renewing", "tmp-stuck-emptying instead of renewing",
     "folder-mtime-folder times kept", "folder-size-folders keyed by mode"]))
def test_each_attack_gets_through_a_naive_scratch(tmp_path, monkeypatch, what, naive):
    """The mutations: each defence taken away in turn, its attack gets through, so it is
    that defence which stops it."""
    if naive == "trusts S":
        monkeypatch.setattr(scratch_sync.Scratch, "sync", trusting_sync)
    elif naive == "mtime and size":
        monkeypatch.setattr(scratch_sync.Key, "of", staticmethod(mtime_and_size))
    elif naive == "no renewing":
        monkeypatch.setattr(score_scratch.StepScorer, "_clean", lambda self: None)
    elif naive == "emptying instead of renewing":
        monkeypatch.setattr(score_scratch.StepScorer, "_clean", empty_tmp_instead)
    elif naive == "folder times kept":
        monkeypatch.setattr(scratch_sync.Scratch, "_put_folders_back", lambda self, wanted: None)
    else:
        monkeypatch.setattr(scratch_sync.Scratch, "_kept_folder", folder_mode_only)
    run, task = attack_run(tmp_path, what, "local")
    together, fresh = later_scores(run, task, "local")
    assert None not in together and together != fresh


def test_a_workspace_the_rules_cannot_plan_is_evaluated_afresh(tmp_path):
    """A file where a read-only file needs a folder (``lib``) is evaluated the old way."""
    proposals = [write("keep.txt", "k\n"), *script("""
        import shutil
        shutil.rmtree("lib")
        open("lib", "w").write("a file now")
    """), write("other.txt", "o\n")]
    run, task = make_run(fingerprint_task(tmp_path / "task"), tmp_path, proposals, "local")
    together = [s.value for s in score_steps(run, task, sandbox="local")]
    assert together == alone(run, task, [1, 2, 3, 4], "local")


def test_plan_follows_the_scratch_rules(tmp_path):
    task_root = fingerprint_task(tmp_path / "task")
    from environments.task.spec import load_task

    task = load_task(task_root)
    ws = tmp_path / "ws"
    for rel, text in {"a.py": "", "pkg/__init__.py": "", "data.txt": "changed", "lib/helper.py": "",
                      "lib/mine.py": "", "__pycache__/m.pyc": "", "x/__pycache__/y.txt": "",
                      "notes.md": ""}.items():
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws / rel).write_text(text)
    plan = scratch_sync.plan(task, ws, scratch_sync.read_only_files(task))
    assert {rel: (s.side, s.rel) for rel, s in plan.files.items()} == {
        ".labcoat-source/a.py": ("run", "a.py"),
        ".labcoat-source/pkg/__init__.py.txt": ("run", "pkg/__init__.py"),
        "data.txt": ("env", "data.txt"), "lib/helper.py": ("env", "lib/helper.py"),
        "lib/mine.py": ("run", "lib/mine.py"),  # read-only by pattern: kept in place
        "notes.md": ("run", "notes.md")}
    assert "x" in plan.folders and "pkg" in plan.folders and "x/__pycache__" not in plan.folders
    # a read-only file in a __pycache__ of env/ is laid, then removed with it by strip_code
    (task_root / "env" / "lib" / "__pycache__").mkdir()
    (task_root / "env" / "lib" / "__pycache__" / "helper.cpython.pyc").write_bytes(b"x")
    plan = scratch_sync.plan(task, ws, scratch_sync.read_only_files(task))
    assert "lib/__pycache__/helper.cpython.pyc" not in plan.files
    assert "lib/__pycache__" not in plan.folders
    os.makedirs(ws / ".labcoat-source")
    assert scratch_sync.plan(task, ws, scratch_sync.read_only_files(task)) is None


def test_a_step_too_large_for_the_kept_sandbox_is_scored_afresh(tmp_path, scorer_stats):
    """The quota image is sized when the kept sandbox opens; a later step that does not fit
    is evaluated in a fresh scratch and sandbox, and the step after it in a new kept one."""
    from environments.scoring.evaluate import evaluate
    from environments.task.spec import load_task
    from sandbox import quota

    if quota.unavailable():
        pytest.skip(f"no quota image here: {quota.unavailable()}")
    toml = 'metric = "total"\ndirection = "higher"\nbaseline = 6.0\n[limits]\ndisk_mb = 1\n'
    root = write_task(tmp_path / "task", toml=toml, eval_body=FINGERPRINT_EVAL)
    task = load_task(root)
    steps = []
    for k, big in enumerate([0, 3, 0]):
        ws = tmp_path / f"ws{k}"
        ws.mkdir()
        (ws / "keep.txt").write_text(f"step {k}\n")
        for i in range(big):
            (ws / f"big{i}.bin").write_bytes(os.urandom(1 << 20))
        steps.append(ws)
    with score_scratch.StepScorer(task, "local") as scorer:
        together = [scorer.evaluate(ws).value for ws in steps]
    assert None not in together
    assert together == [evaluate(task, ws, "local").value for ws in steps]
    assert scorer_stats[-1] == {**scorer_stats[-1], "incremental": 2, "fresh": 1, "opened": 2}


def test_no_command_runs_until_the_clock_is_past_the_recorded_ctimes(tmp_path):
    """A change stamped in the same clock tick as the host's record would keep its ctime."""
    from sandbox.clock import kernel_clock_ns

    scratch = scratch_sync.Scratch(tmp_path)
    scratch.latest_ctime = kernel_clock_ns() + 20_000_000  # a ctime 20 ms ahead of the clock
    scratch.settle()
    assert kernel_clock_ns() > scratch.latest_ctime
    whole = (kernel_clock_ns() // scratch_sync.SECOND + 1) * scratch_sync.SECOND
    scratch.latest_ctime = whole  # a filesystem that keeps only seconds: that whole second
    scratch.settle()
    assert kernel_clock_ns() >= whole + scratch_sync.SECOND


def test_the_kept_scratch_is_touched_only_through_sandbox_fs(tmp_path, monkeypatch):
    """The seam's audit (tests/environments/test_seam.py) over ``score_steps``: the host reads,
    writes, lists and removes in the kept scratch only through ``sandbox/fs.py``."""
    from tests.environments.test_seam import Watch, audited

    run, task = attack_run(tmp_path, "symlink fifo new-names", "local")
    watch = Watch(monkeypatch)
    with audited(watch):
        scores = score_steps(run, task, sandbox="local")
    assert None not in [s.value for s in scores]
    bad = watch.violations()
    assert not bad, "\n".join(map(str, bad))


def test_a_sandbox_that_shares_the_hosts_tmp_is_not_kept(tmp_path, scorer_stats):
    """Backend ``none`` runs commands on the host: emptying its /tmp would empty the host's,
    so every step is evaluated the old way."""
    from environments.scoring.evaluate import evaluate
    from environments.task.spec import load_task

    task = load_task(write_task(tmp_path / "task"))
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "result.txt").write_text("8")
    with score_scratch.StepScorer(task, "none") as scorer:
        got = [scorer.evaluate(ws).value, scorer.evaluate(ws).value]
        assert scorer.incremental is False
    assert got == [8.0, 8.0] == [evaluate(task, ws, "none").value] * 2
    assert scorer_stats[-1]["fresh"] == 2 and scorer_stats[-1]["incremental"] == 0


def _tree_of(folder):
    """Every entry beneath ``folder``: kind, mode and content (link text for a link)."""
    import stat as st_

    out = {}
    for root, dirs, files in os.walk(folder):
        for name in dirs + files:
            path = os.path.join(root, name)
            st = os.lstat(path)
            rel = os.path.relpath(path, folder)
            body = (Path(path).read_bytes() if st_.S_ISREG(st.st_mode) else
                    os.readlink(path) if st_.S_ISLNK(st.st_mode) else None)
            out[rel] = (st_.S_IFMT(st.st_mode), st.st_mode & 0o7777, body)
    return out


def _lay_over(ws, files: dict[str, str]) -> None:
    """``ws`` made to hold ``files``, rewriting only what differs (unchanged files keep
    their inode and times, as ``SnapshotStore.restore`` leaves them)."""
    import shutil

    ws.mkdir(exist_ok=True)
    wanted_dirs = {"/".join(rel.split("/")[:i]) for rel in files for i in range(1, rel.count("/") + 1)}
    for root, dirs, names in os.walk(ws, topdown=False):
        for name in names:
            rel = os.path.relpath(os.path.join(root, name), ws)
            if rel not in files:
                os.remove(os.path.join(root, name))
        for name in dirs:
            rel = os.path.relpath(os.path.join(root, name), ws)
            if rel not in wanted_dirs:
                shutil.rmtree(os.path.join(root, name))
    for rel, text in files.items():
        path = ws / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.exists() or path.read_text() != text:
            path.write_text(text)


def test_the_kept_scratch_holds_what_a_fresh_one_would(tmp_path):
    """No sandbox: S synced step after step (and tampered with between steps, as an
    evaluation could) holds exactly ``evaluate``'s fresh scratch of each step."""
    from environments.scoring.evaluate import _scratch
    from environments.scoring.submission import strip_code
    from environments.task.spec import load_task
    from sandbox.fs import WorkspaceFS

    task = load_task(fingerprint_task(tmp_path / "task"))
    (task.env_dir / "lib" / "__pycache__").mkdir()
    (task.env_dir / "lib" / "__pycache__" / "h.pyc").write_bytes(b"cache")
    steps = [
        {"keep.txt": "k", "a.py": "A", "pkg/__init__.py": "", "sub/x.csv": "1"},
        {"keep.txt": "k", "a.py": "A2", "pkg/__init__.py": "", "sub/x.csv": "1", "data.txt": "mine",
         "__pycache__/a.pyc": "c", "deep/er/f.txt": "f", "run.sh": "#!/bin/sh\n"},
        {"keep.txt": "k", "sub": "a file now", "deep/er/f.txt": "f", "lib/helper.py": "mine",
         "lib/own.py": "own", "run.sh": "#!/bin/sh\n"},
        {"keep.txt": "k2", "sub/y.csv": "2", "deep": "a file too", "run.sh": "#!/bin/sh\n"},
    ]
    pristine = scratch_sync.read_only_files(task)
    kept = scratch_sync.Scratch(tmp_path / "S")
    kept.fs.make_root()
    env = WorkspaceFS(task.env_dir)
    ws = tmp_path / "R"  # one folder, each step laid over the last (as a restore does)
    for k, files in enumerate(steps):
        _lay_over(ws, {**files, "stable.txt": "the same in every step"})
        for rel, mode in (("keep.txt", 0o600 if k == 1 else 0o644), ("run.sh", 0o755)):
            if (ws / rel).exists() and (ws / rel).stat().st_mode & 0o777 != mode:
                os.chmod(ws / rel, mode)  # only then: a chmod is a change (of ctime)
        fresh = _scratch(task, ws, tmp_path / f"fresh{k}")
        strip_code(fresh, keep=task.is_read_only)
        kept.sync(scratch_sync.plan(task, ws, pristine), {"run": WorkspaceFS(ws), "env": env})
        assert _tree_of(kept.folder) == _tree_of(fresh), k
        kept.settle()  # as before a command: what follows is stamped later
        s = kept.folder  # an evaluation's leftovers, for the next sync to undo
        st = os.stat(s / "stable.txt")
        (s / "stable.txt").write_text("S" * st.st_size)
        os.utime(s / "stable.txt", ns=(st.st_atime_ns, st.st_mtime_ns))
        os.chmod(s / "data.txt", 0o777)
        (s / "planted.txt").write_text("p")
        os.symlink("/etc/passwd", s / "link")
        os.mkfifo(s / "fifo")
        os.link(s / "data.txt", s / "hard")
        if (s / ".labcoat-source").is_dir():
            os.chmod(s / ".labcoat-source", 0o700)


def test_a_fork_of_a_run_is_scored_in_one_kept_scratch(tmp_path, scorer_stats):
    """A fork inherits its parent's snapshots and adds its own steps: all of them scored
    together equal each scored alone, through one kept scratch and sandbox."""
    import json

    from typer.testing import CliRunner

    from environments.record.runs import RunDir
    from tui.cli import app

    run, task = attack_run(tmp_path, "in-place new-names", "local")
    actions = tmp_path / "more.jsonl"
    actions.write_text("".join(json.dumps({"action": "Write File", "args": a}) + "\n" for a in [
        {"file_name": "keep.txt", "content": "forked\n"}, {"file_name": "fork.txt", "content": "f"}]))
    res = CliRunner().invoke(app, ["run", "--fork", str(run.path), "--at", "3", "--actions",
                                   str(actions), "--no-score", "--json"])
    assert res.exit_code == 0, res.output
    fork = RunDir.open(json.loads(res.stdout)["run_dir"])
    assert len(fork.steps()) == 5 and [s.inherited for s in fork.steps()] == [True] * 3 + [False] * 2
    together = [s.value for s in score_steps(fork, task, sandbox="local")]
    assert None not in together and together == alone(fork, task, [1, 2, 3, 4, 5], "local")
    assert scorer_stats[-1]["fresh"] == 0 and scorer_stats[-1]["opened"] == 1
