"""Handing a workspace to a sandbox's uid before each command costs what changed.

``hand_over`` used to ``lstat`` every entry before every command (1.3 s at 100,000 files). It
now looks at a folder's entries only when the folder's (inode, ctime) changed since the last
hand-over: these tests hold that a file the host adds is still handed over (in the same clock
tick too), that an unchanged folder is not listed again, and that no link (a folder swapped
for one between hand-overs) leads a chown out of the workspace.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from sandbox import ownership
from sandbox.ownership import hand_back, hand_over
from tests.sandbox.backends import docker_marks, make_sandbox

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="chown to another uid needs root")

UID = GID = 0x6C63FFF0  # an id of labcoat's range that no test leases


def owners(root: Path) -> dict[str, tuple[int, int]]:
    out = {}
    for path in [root, *root.rglob("*")]:
        st = path.lstat()
        out[str(path.relative_to(root))] = (st.st_uid, st.st_gid)
    return out


def tree(root: Path, folders: int = 3, files: int = 5) -> Path:
    for d in range(folders):
        (root / f"d{d}" / "sub").mkdir(parents=True)
        for f in range(files):
            (root / f"d{d}" / f"f{f}.txt").write_text("x")
        (root / f"d{d}" / "sub" / "deep.txt").write_text("y")
    return root


def settled() -> None:
    """Past the kernel's timestamp tick, so the folders' ctimes are older than the next walk."""
    time.sleep(0.05)


@pytest.fixture(autouse=True)
def _forget():
    yield
    ownership._handed.clear()


def test_everything_is_handed_over_then_back(tmp_path):
    ws = tree(tmp_path / "ws")
    hand_over([ws], UID, GID)
    assert set(owners(ws).values()) == {(UID, GID)}
    hand_back([ws], UID)
    assert set(owners(ws).values()) == {(0, 0)}
    assert not ownership._handed  # a later sandbox with this uid walks everything again


def test_a_file_the_host_adds_right_after_a_hand_over_is_handed_over_next(tmp_path):
    """Right after (where the kernel stamps coarse ctimes, in the same tick: that folder was
    not remembered, so the next hand-over looks at it; kernels since 6.13 stamp a fine ctime
    after one was read) and once the folders' ctimes are old enough to be remembered."""
    ws = tree(tmp_path / "ws")
    hand_over([ws], UID, GID)
    for i in range(40):
        if i % 2:
            settled()  # and the case where the folder's ctime is old enough to be remembered
        hand_over([ws], UID, GID)
        (ws / "d1" / f"host{i}.txt").write_text("from the host")  # root's
        os.mkdir(ws / "d2" / "sub" / f"dir{i}")
        hand_over([ws], UID, GID)
        assert owners(ws)[f"d1/host{i}.txt"] == (UID, GID), i
        assert owners(ws)[f"d2/sub/dir{i}"] == (UID, GID), i


def test_a_file_replaced_by_rename_is_handed_over(tmp_path):
    """How the host writes (sandbox.fs: a temp file renamed over the name)."""
    ws = tree(tmp_path / "ws")
    hand_over([ws], UID, GID)
    settled()
    hand_over([ws], UID, GID)  # every folder remembered now
    tmp = ws / "d0" / "sub" / ".tmp"
    tmp.write_text("new")
    os.replace(tmp, ws / "d0" / "sub" / "deep.txt")
    hand_over([ws], UID, GID)
    assert owners(ws)["d0/sub/deep.txt"] == (UID, GID)


def test_an_unchanged_folder_is_not_listed_again(tmp_path, monkeypatch):
    ws = tree(tmp_path / "ws", folders=4)
    hand_over([ws], UID, GID)
    settled()
    hand_over([ws], UID, GID)  # the folders' ctimes are old now: remembered
    (ws / "d3" / "new.txt").write_text("n")
    listed = []
    real = os.listdir
    monkeypatch.setattr(os, "listdir", lambda fd: listed.append(fd) or real(fd))
    hand_over([ws], UID, GID)
    assert len(listed) == 1  # d3 only: 13 other folders opened, none of their files looked at
    assert owners(ws)["d3/new.txt"] == (UID, GID)


def test_a_folder_swapped_for_a_link_between_hand_overs_leads_nowhere(tmp_path):
    """What a command could do after a hand-over remembered its folders: put a link to a host
    folder where a remembered folder was. Nothing outside the workspace changes owner."""
    ws = tree(tmp_path / "ws")
    outside = tmp_path / "host"
    outside.mkdir()
    (outside / "secret.txt").write_text("s")
    hand_over([ws], UID, GID)
    settled()
    hand_over([ws], UID, GID)
    os.rename(ws / "d0" / "sub", ws / "d0" / "moved")
    os.symlink(outside, ws / "d0" / "sub")
    os.rename(ws / "d1", ws / "d1-moved")
    os.symlink(outside, ws / "d1")
    hand_over([ws], UID, GID)
    assert set(owners(outside).values()) == {(0, 0)}
    assert owners(ws)["d0/moved/deep.txt"] == (UID, GID)
    assert owners(ws)["d0/sub"] == (UID, GID)  # the link itself (lchown), not its target


@pytest.mark.parametrize("backend", ["local", pytest.param("docker", marks=docker_marks)])
def test_what_the_host_writes_between_commands_the_next_command_can_write(backend, tmp_path):
    """A sandbox's commands and the host take turns, fast: a file and a folder the host makes
    (plainly, root's, not by sandbox.fs) right after a command, into folders the earlier
    hand-overs remembered, are the sandbox's by the next command."""
    from sandbox import SandboxLimits

    ws = tmp_path / "ws"
    (ws / "keep" / "deep").mkdir(parents=True)
    with make_sandbox(backend, ws, SandboxLimits(timeout=30)) as sb:
        for i in range(4):
            r = sb.exec(["sh", "-c", f"echo {i} > keep/deep/mine{i}.txt && "
                         f"echo ok >> keep/host{i - 1}.txt 2>&1 || [ {i} = 0 ]; "
                         f"touch keep/dir{i - 1}/inside 2>&1 || [ {i} = 0 ]"])
            assert r.exit_code == 0, (i, r.stdout, r.stderr)
            (ws / "keep" / f"host{i}.txt").write_text("from the host\n")  # root's, 0644
            os.mkdir(ws / "keep" / f"dir{i}", 0o755)  # root's
            if i % 2:
                settled()  # so the next hand-over remembers keep/, and the one after must see it changed
        assert (ws / "keep" / "host2.txt").read_text() == "from the host\nok\n"
        assert (ws / "keep" / "dir2" / "inside").exists()


def test_a_folder_stamped_in_the_walks_clock_tick_is_not_remembered(tmp_path, monkeypatch):
    """git's racy entries: a ctime not older than the kernel's clock when the walk began could
    be stamped again by a change right after, so that folder is listed again next time."""
    ws = tree(tmp_path / "ws")
    hand_over([ws], UID, GID)
    settled()

    def remembered() -> set[str]:
        (folders,) = ownership._handed.values()
        return set(folders)

    monkeypatch.setattr(ownership, "kernel_clock_ns", lambda: (ws / "d1").stat().st_ctime_ns)
    hand_over([ws], UID, GID)
    assert "d1" not in remembered()
    monkeypatch.undo()
    hand_over([ws], UID, GID)
    assert {"", "d0", "d1", "d1/sub"} <= remembered()
