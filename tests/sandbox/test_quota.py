"""A run cannot fill the host's disk or inode table from inside one command.

The attacker owns every command of a run. A per-file cap (RLIMIT_FSIZE) alone let one command
write many files each under it; only snapshots, after the command, counted the total. These
tests write past the workspace's size (``disk_mb``) and its file count (``max_files``) inside
one command and expect the kernel to refuse the write (ENOSPC/EDQUOT) while it happens, on every
backend that gives a workspace quota, with the workspace left whole on the host afterwards.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path
from types import SimpleNamespace

import pytest

from environments.task.sandboxing import sandbox_limits
from environments.task.spec import TaskLimits
from tests.sandbox.backends import BACKEND_PARAMS, make_sandbox

QUOTA_BACKENDS = [p for p in BACKEND_PARAMS if p.id != "local-bundled-bwrap"]  # same code path

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="workspace quotas need root")

DISK_MB = 32

# Three files of 0.4 x disk_mb, each under the per-file cap: the third must fail mid-write.
THREE_FILES = textwrap.dedent("""
    import errno, sys
    mb = int(sys.argv[1])
    chunk = b"x" * (1 << 20)
    for name in ("a.bin", "b.bin", "c.bin"):
        try:
            with open(name, "wb") as f:
                for _ in range(int(mb * 0.4)):
                    f.write(chunk)
                f.flush()
            print("WROTE", name, flush=True)
        except OSError as err:
            print("REFUSED", name, errno.errorcode.get(err.errno), flush=True)
            break
""")

MANY_FILES = textwrap.dedent("""
    import errno, os, sys
    os.makedirs("many", exist_ok=True)
    for i in range(int(sys.argv[1])):
        try:
            open(f"many/{i}", "w").close()
        except OSError as err:
            print("REFUSED", i, errno.errorcode.get(err.errno), flush=True)
            break
    else:
        print("MADE ALL", flush=True)
""")


def need_quota() -> None:
    """Skip, saying why, where no quota can be made here (not root, no loop devices); where
    labcoat runs as root (CI) that is a failure: the quota tests must have run."""
    from sandbox import quota

    why = quota.unavailable()
    if why is None:
        return
    if os.geteuid() == 0 or os.environ.get("LABCOAT_REQUIRE_DOCKER") == "1":
        pytest.fail(f"running as root, yet no workspace quota can be made here: {why}")
    pytest.skip(f"no quota here: {why}")


def task_limits(**kw) -> object:
    """The sandbox limits a task with these ``[limits]`` gets (the real mapping)."""
    return sandbox_limits(SimpleNamespace(limits=TaskLimits(**kw), python_requirements=[])).model_copy(
        update={"timeout": 60})


def tree_bytes(root: Path) -> int:
    total = 0
    for dirpath, _, names in os.walk(root):
        for n in names:
            total += os.lstat(os.path.join(dirpath, n)).st_size
    return total


def mounted_at(path: Path) -> bool:
    text = Path("/proc/self/mountinfo").read_text()
    return any(line.split()[4] == str(path) for line in text.splitlines())


def quota_images() -> list[str]:
    """This process's quota images (other labcoat processes on the machine have their own)."""
    from sandbox import quota

    root = quota.IMAGE_DIR
    mine = f"labcoat-quota-{os.getpid()}-*.img*"
    return sorted(p.name for p in root.glob(mine)) if root.exists() else []


@pytest.mark.parametrize("backend", QUOTA_BACKENDS)
def test_one_command_cannot_write_past_disk_mb(tmp_path, backend):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "keep.txt").write_text("the task's own file\n")
    before = quota_images()
    sb = make_sandbox(backend, ws, task_limits(disk_mb=DISK_MB))
    try:
        r = sb.exec([sb.python, "-c", THREE_FILES, str(DISK_MB)])
        assert "WROTE a.bin" in r.stdout and "WROTE b.bin" in r.stdout, r.stdout + r.stderr
        assert "REFUSED c.bin" in r.stdout and ("ENOSPC" in r.stdout or "EDQUOT" in r.stdout), \
            r.stdout + r.stderr
        assert "workspace is full" in r.stderr, r.stderr
        assert tree_bytes(ws) <= (DISK_MB + 4) << 20
        later = sb.exec(["sh", "-c", "rm c.bin && echo again > later.txt && cat keep.txt"])
        assert later.ok and "task's own" in later.stdout, later.stderr
    finally:
        sb.close()
    assert not mounted_at(ws)
    assert quota_images() == before
    assert sorted(p.name for p in ws.iterdir()) == ["a.bin", "b.bin", "keep.txt", "later.txt"]
    assert (ws / "a.bin").stat().st_size == int(DISK_MB * 0.4) << 20
    assert (ws / "later.txt").read_text() == "again\n"
    assert tree_bytes(ws) <= (DISK_MB + 4) << 20


@pytest.mark.parametrize("backend", QUOTA_BACKENDS)
def test_one_command_cannot_make_more_files_than_the_cap(tmp_path, backend):
    ws = tmp_path / "ws"
    ws.mkdir()
    sb = make_sandbox(backend, ws, task_limits(disk_mb=DISK_MB, max_files=500))
    try:
        r = sb.exec([sb.python, "-c", MANY_FILES, "5000"])
        assert "REFUSED" in r.stdout and ("ENOSPC" in r.stdout or "EDQUOT" in r.stdout), \
            r.stdout + r.stderr
        assert "workspace is full" in r.stderr, r.stderr
        assert sb.exec(["sh", "-c", "rm -r many && touch fine"]).ok
    finally:
        sb.close()
    assert not mounted_at(ws)
    assert sorted(p.name for p in ws.iterdir()) == ["fine"]


# What a command leaves for the copy back must not make it follow a link out of the workspace,
# nor write more to the host than the image held: a file hard-linked 200 times is one file,
# and 40 sparse files of 30 MB holding one byte each are 40 blocks, not 1.2 GB.
LEFTOVERS = textwrap.dedent("""
    import os
    os.symlink("/etc", "etc-link")
    os.symlink("/etc/hostname", "hostname-link")
    os.mkdir("d")
    with open("d/big", "wb") as f:
        f.write(b"y" * (4 << 20))
    for i in range(200):
        os.link("d/big", f"hard{i}")
    for i in range(40):
        with open(f"sparse{i}", "wb") as f:
            f.seek(30 << 20)
            f.write(b"z")
    os.mkfifo("fifo")
    print("LEFT")
""")


@pytest.mark.parametrize("backend", [p for p in QUOTA_BACKENDS if p.id == "local-bwrap"])
def test_the_copy_back_follows_no_link_and_writes_no_more_than_the_image(tmp_path, backend):
    ws = tmp_path / "ws"
    ws.mkdir()
    etc_before = sorted(os.listdir("/etc"))
    with make_sandbox(backend, ws, task_limits(disk_mb=DISK_MB)) as sb:
        r = sb.exec([sb.python, "-c", LEFTOVERS])
        assert "LEFT" in r.stdout, r.stderr
    assert not mounted_at(ws)
    assert os.readlink(ws / "etc-link") == "/etc" and (ws / "etc-link").is_symlink()
    assert os.readlink(ws / "hostname-link") == "/etc/hostname"
    assert sorted(os.listdir("/etc")) == etc_before
    big = (ws / "d" / "big").stat()
    assert big.st_nlink == 201 and (ws / "hard199").stat().st_ino == big.st_ino
    blocks = sum((ws / f"sparse{i}").stat().st_blocks for i in range(40)) * 512
    assert (ws / "sparse0").stat().st_size == (30 << 20) + 1 and blocks < 4 << 20
    assert (ws / "fifo").is_fifo()


def test_a_mount_left_by_a_dead_owner_is_copied_back_and_removed(tmp_path):
    """A labcoat process killed with SIGKILL leaves its image mounted over the workspace; the
    next quota opened anywhere copies it back, unmounts it and deletes it."""
    from sandbox import quota

    need_quota()
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "before.txt").write_text("under the mount\n")
    quota.IMAGE_DIR.mkdir(mode=0o700, parents=True, exist_ok=True)
    # pid: this one; start time: not this one's, as when the owner died and its pid was reused
    image = quota.IMAGE_DIR / f"labcoat-quota-{os.getpid()}-1-0123abcd.img"
    quota._make_image(image, 8 << 20, 100)
    quota._mount(image, ws)
    (ws / "lost+found").rmdir()  # as the owner does once it has mounted
    (ws / "written.txt").write_text("by the dead owner's sandbox\n")
    (ws / "sub").mkdir()
    (ws / "sub" / "x").write_text("x")
    assert mounted_at(ws)
    other = tmp_path / "other"
    other.mkdir()
    with make_sandbox("local", other, task_limits(disk_mb=DISK_MB)) as sb:  # any open sweeps
        assert sb.exec(["true"]).ok
    assert not mounted_at(ws)
    assert not image.exists()
    assert sorted(p.name for p in ws.iterdir()) == ["sub", "written.txt"]
    assert (ws / "sub" / "x").read_text() == "x"
    assert not subprocess.run(["losetup", "-j", str(image)], capture_output=True,
                              text=True).stdout.strip()


def test_where_no_quota_can_be_made_the_sandbox_runs_and_says_so(tmp_path, monkeypatch):
    from sandbox import quota
    from sandbox.local import LocalSandbox

    monkeypatch.setattr(quota, "unavailable", lambda: "no loop devices here (test)")
    monkeypatch.setattr(quota, "_warned", False)
    with LocalSandbox(tmp_path, task_limits(disk_mb=DISK_MB), use_bwrap=True) as sb:
        assert not mounted_at(tmp_path)
        assert sb.exec(["true"]).ok
        report = sb.describe()
    assert report.disk_quota == "not enforced: no loop devices here (test)"
    assert any("disk quota not enforced" in w for w in report.warnings)
    assert LocalSandbox.isolation().disk_quota.startswith("not enforced")


def test_an_open_sandbox_says_its_quota_is_enforced(tmp_path):

    need_quota()
    with make_sandbox("local", tmp_path, task_limits(disk_mb=DISK_MB)) as sb:
        assert mounted_at(tmp_path)
        assert sb.describe().disk_quota == "enforced (ext4 image)"


def test_an_owner_that_died_while_copying_in_leaves_the_workspace_whole(tmp_path):
    """Killed before its image held the whole workspace (``.img.part``): the recovery drops the
    image and copies nothing back, so nothing underneath is pruned."""
    from sandbox import quota

    need_quota()
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "data.txt").write_text("not yet copied in\n")
    quota.IMAGE_DIR.mkdir(mode=0o700, parents=True, exist_ok=True)
    image = quota.IMAGE_DIR / f"labcoat-quota-{os.getpid()}-1-4567cdef.img.part"
    quota._make_image(image, 8 << 20, 100)
    quota._mount(image, ws)
    assert quota.recover_stale() == [str(ws)]
    assert not mounted_at(ws) and not image.exists()
    assert (ws / "data.txt").read_text() == "not yet copied in\n"


def test_the_agent_is_told_the_workspace_is_full(tmp_path):
    """Through a task's ``[limits]`` and Execute Script, as an actor sees it."""
    import shutil

    from environments.acting.environment import Environment, code_mounts
    from environments.task.spec import load_task
    from sandbox.local import LocalSandbox
    from tests.conftest import write_task

    need_quota()
    toml = ('metric = "total"\ndirection = "higher"\nbaseline = 6.0\nsolve = ["train.py"]\n'
            f'[limits]\ndisk_mb = {DISK_MB}\nmax_files = 300\n')
    task = load_task(write_task(tmp_path / "task", toml=toml,
                                files={"env/fill.py": MANY_FILES}))
    ws = tmp_path / "ws"
    shutil.copytree(task.env_dir, ws)
    with LocalSandbox(ws, sandbox_limits(task), code_mounts()) as sb:
        obs = Environment(task, ws, sb).step("Execute Script",
                                             {"script_name": "fill.py", "arguments": "1000"})
    assert "REFUSED" in obs.text and "ENOSPC" in obs.text, obs.text
    assert "the workspace is full" in obs.text and "max_files" in obs.text, obs.text


def test_images_live_only_in_a_folder_that_is_roots_alone(tmp_path, monkeypatch):
    """A folder another user could have made first (and so swap an image in) is refused."""
    from sandbox import SandboxError, quota

    need_quota()
    planted = tmp_path / "planted"
    planted.mkdir(mode=0o777)
    os.chmod(planted, 0o777)
    monkeypatch.setattr(quota, "IMAGE_DIR", planted)
    ws = tmp_path / "ws"
    ws.mkdir()
    with pytest.raises(SandboxError, match="only root"):
        make_sandbox("local", ws, task_limits(disk_mb=DISK_MB))
    assert not mounted_at(ws) and not list(planted.glob("*.img*"))


@pytest.mark.parametrize("backend", [p for p in QUOTA_BACKENDS if p.id == "docker"])
def test_docker_refuses_an_engine_that_cannot_see_the_quota(tmp_path, monkeypatch, backend):
    """An engine in another mount namespace would bind the directory under the image: what the
    container wrote there would be overwritten at close. The sandbox refuses to start."""
    from sandbox import SandboxError
    from sandbox.docker import DockerSandbox

    need_quota()
    assert DockerSandbox._sees_quota  # checked on the real engine by the tests above
    monkeypatch.setattr(DockerSandbox, "_sees_quota", lambda self: False)
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "keep.txt").write_text("kept\n")
    with pytest.raises(SandboxError, match="does not see"):
        make_sandbox(backend, ws, task_limits(disk_mb=DISK_MB))
    assert not mounted_at(ws) and quota_images() == []
    assert (ws / "keep.txt").read_text() == "kept\n"


def test_a_sandbox_never_closed_is_copied_back_when_its_process_exits(tmp_path):

    need_quota()
    ws = tmp_path / "ws"
    ws.mkdir()
    script = textwrap.dedent("""
        import sys
        from sandbox import SandboxLimits
        from sandbox.local import LocalSandbox
        sb = LocalSandbox(sys.argv[1], SandboxLimits(timeout=30, disk_mb=16), use_bwrap=True)
        assert sb.exec(["sh", "-c", "echo made > made.txt"]).ok
    """)  # and exits without closing it
    repo = Path(__file__).resolve().parents[2]
    done = subprocess.run([sys.executable, "-c", script, str(ws)], cwd=repo,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert not mounted_at(ws)
    assert (ws / "made.txt").read_text() == "made\n"


def kill_owner(script: str, ws: Path, *args: str) -> None:
    """Run ``script`` (given ``ws`` and ``args``) in a process of its own until it prints
    READY with its quota'd sandbox open over ``ws``, then kill it with SIGKILL: nothing of its
    own cleanup runs, so its quota image stays mounted at ``ws``."""
    import signal

    repo = Path(__file__).resolve().parents[2]
    owner = subprocess.Popen([sys.executable, "-c", script, str(ws), *args], cwd=repo,
                             stdout=subprocess.PIPE, text=True)
    try:
        assert owner.stdout.readline().strip() == "READY"
    finally:
        owner.send_signal(signal.SIGKILL)
        owner.wait()
    assert mounted_at(ws)  # nothing of the owner's ran at its death


@pytest.mark.parametrize("backend",
                         [p for p in QUOTA_BACKENDS if p.id in ("local-bwrap", "docker")])
def test_an_owner_killed_with_sigkill_is_recovered_by_the_next_start(tmp_path, backend):
    need_quota()
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "old.txt").write_text("deleted by the run\n")
    script = textwrap.dedent("""
        import sys, time
        from tests.sandbox.backends import make_sandbox
        from tests.sandbox.test_quota import task_limits
        sb = make_sandbox(sys.argv[2], sys.argv[1], task_limits(disk_mb=16))
        assert sb.exec(["sh", "-c", "rm old.txt && echo made > made.txt"]).ok
        print("READY", flush=True)
        time.sleep(600)
    """)
    kill_owner(script, ws, backend)
    other = tmp_path / "other"
    other.mkdir()
    with make_sandbox("local", other, task_limits(disk_mb=DISK_MB)):
        pass
    assert not mounted_at(ws)
    assert sorted(p.name for p in ws.iterdir()) == ["made.txt"]


def test_a_second_process_cannot_mount_over_a_live_ones_quota(tmp_path):
    """Two labcoat processes with sandboxes over one workspace: the second image would lie over
    the first, and whichever closed first would take both mounts away (a mount cannot be taken
    from under another) or leave the other's writes in a detached image. The second refuses."""
    from sandbox import SandboxError, quota

    need_quota()
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "base.txt").write_text("base\n")
    first = quota.WorkspaceQuota(ws, 8, 100)  # as another process holds it (not in our registry)
    first.users = 1
    try:
        (ws / "first.txt").write_text("first\n")
        with pytest.raises(SandboxError, match="another labcoat process"):
            make_sandbox("local", ws, task_limits(disk_mb=DISK_MB))
        assert os.stat(ws).st_dev == os.fstat(first.top).st_dev
    finally:
        first.release()
    assert not mounted_at(ws)
    assert sorted(p.name for p in ws.iterdir()) == ["base.txt", "first.txt"]


# Rewrites a file in place with the same size and sets its mtime back: the copy back's old
# quick check (size and mtime, as rsync's) then kept the host's old bytes under the workspace,
# so the folder a person opens after the run showed what the command did not leave.
SAME_SIZE_SAME_MTIME = textwrap.dedent("""
    import os
    for name in ("data.csv", "sub/model.txt"):
        st = os.stat(name)
        with open(name, "r+b") as f:
            f.write(b"EVIL")
        os.utime(name, ns=(st.st_atime_ns, st.st_mtime_ns))
    print("DONE")
""")


@pytest.mark.parametrize("backend", QUOTA_BACKENDS)
def test_a_file_rewritten_with_its_old_size_and_mtime_is_copied_back(tmp_path, backend):
    need_quota()
    ws = tmp_path / "ws"
    (ws / "sub").mkdir(parents=True)
    (ws / "data.csv").write_bytes(b"good,data\n")
    (ws / "sub" / "model.txt").write_bytes(b"good model\n")
    (ws / "same.txt").write_bytes(b"untouched\n")
    with make_sandbox(backend, ws, task_limits(disk_mb=DISK_MB)) as sb:
        r = sb.exec([sb.python, "-c", SAME_SIZE_SAME_MTIME])
        assert "DONE" in r.stdout, r.stderr
        seen = (ws / "data.csv").read_bytes()  # what the host's snapshot reads meanwhile
    assert seen == b"EVIL,data\n"
    assert not mounted_at(ws)
    assert (ws / "data.csv").read_bytes() == b"EVIL,data\n"
    assert (ws / "sub" / "model.txt").read_bytes() == b"EVIL model\n"
    assert (ws / "same.txt").read_bytes() == b"untouched\n"
