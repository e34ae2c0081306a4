"""Each live sandbox started by root has a host uid (and gid) of its own.

One shared uid (``nobody``) meant shared per-user kernel limits: one sandbox could take every
inotify instance its uid may hold (or every user namespace, every pending signal...) and leave
every other sandbox, and any host daemon running as that uid, with EMFILE. Each sandbox now
leases an unprivileged uid from a reserved range that no account names; two live sandboxes, in
one labcoat process or in two, never share one.
"""

from __future__ import annotations

import grp
import os
import pwd
import subprocess
import sys
import textwrap
import threading
import time
import uuid
from contextlib import ExitStack
from pathlib import Path

import pytest

from sandbox import SandboxLimits
from sandbox.base import SandboxError
from sandbox.ownership import IDS_ENV, lease_host_ids
from tests.sandbox.backends import docker_marks, make_sandbox
from tests.sandbox.hostile import survivors

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the case is about sandboxes started "
                                "by root (anyone else's run as their own uid)")

PAIRS = [
    pytest.param(("local", "local"), id="local+local"),
    pytest.param(("docker", "docker"), id="docker+docker", marks=docker_marks),
    pytest.param(("local", "docker"), id="local+docker", marks=docker_marks),
]
LIMITS = SandboxLimits(timeout=30, memory_mb=256)

# Holds every inotify instance its uid may create until the host writes "release".
HOG = textwrap.dedent("""
    import ctypes, os, time
    libc = ctypes.CDLL(None, use_errno=True)
    held = []
    while True:
        fd = libc.inotify_init()
        if fd < 0:
            break
        held.append(fd)
    print(len(held), ctypes.get_errno(), flush=True)
    open("held", "w").close()
    deadline = time.monotonic() + 25
    while not os.path.exists("release") and time.monotonic() < deadline:
        time.sleep(0.02)
""")
# Lives until the host writes "release" (seen from the host meanwhile), at most 25 s.
WAIT_FOR_RELEASE = ("import os, time; deadline = time.monotonic() + 25\n"
                    "while not os.path.exists('release') and time.monotonic() < deadline:\n"
                    "    time.sleep(0.02)")
ONE_INOTIFY = ("import ctypes; libc = ctypes.CDLL(None, use_errno=True); fd = libc.inotify_init(); "
               "print(fd, ctypes.get_errno())")


def _open(stack: ExitStack, backend: str, root: Path):
    ws = root / uuid.uuid4().hex[:8]
    ws.mkdir()
    return stack.enter_context(make_sandbox(backend, ws, LIMITS))


def _in_background(sb, argv: list[str]) -> tuple[threading.Thread, list]:
    out: list = []
    t = threading.Thread(target=lambda: out.append(sb.exec(argv)), daemon=True)
    t.start()
    return t, out


def _host_uids(marker: str, timeout: float = 20) -> list[int]:
    """Real, effective, saved and fs uid of the process carrying ``marker``, read on the host."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for line in survivors(marker):
            status = Path(f"/proc/{line.split()[0]}/status").read_text()
            return [int(v) for v in next(x for x in status.splitlines()
                                         if x.startswith("Uid:")).split()[1:]]
        time.sleep(0.02)
    raise AssertionError(f"no process carrying {marker} was seen from the host")


@pytest.mark.parametrize("pair", PAIRS)
def test_two_live_sandboxes_run_as_different_unnamed_host_uids(pair, tmp_path):
    seen = []
    with ExitStack() as stack:
        boxes = [_open(stack, backend, tmp_path) for backend in pair]
        for sb in boxes:
            marker = f"labcoat-hostuid-{uuid.uuid4().hex[:8]}"
            t, out = _in_background(sb, [sb.python, "-c", WAIT_FOR_RELEASE, marker])
            try:
                seen.append(_host_uids(marker))
            finally:
                (sb.workspace / "release").touch()
                t.join(30)
            assert out and out[0].ok, out
    (a, *_), (b, *_) = seen
    assert a != b, f"two live sandboxes share host uid {a}"
    for uids in seen:
        assert len(set(uids)) == 1 and uids[0] != 0, uids
        with pytest.raises(KeyError):
            pwd.getpwuid(uids[0])  # no account's uid


@pytest.mark.parametrize("backend", [pytest.param("local"),
                                     pytest.param("docker", marks=docker_marks)])
def test_one_sandbox_holding_every_inotify_instance_leaves_another_unharmed(backend, tmp_path):
    with ExitStack() as stack:
        hog, victim = _open(stack, backend, tmp_path), _open(stack, backend, tmp_path)
        t, out = _in_background(hog, [hog.python, "-c", HOG])
        deadline = time.monotonic() + 20
        while not (hog.workspace / "held").exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        try:
            r = victim.exec([victim.python, "-c", ONE_INOTIFY])
        finally:
            (hog.workspace / "release").touch()
            t.join(30)
    assert out and out[0].ok, out
    count, errno = map(int, out[0].stdout.split())
    assert errno == 24 and count > 0, out[0].stdout  # EMFILE: its uid's limit, all taken
    fd, err = map(int, r.stdout.split())
    assert fd >= 0, f"the other sandbox got errno {err} from inotify_init"


def test_the_sandbox_uid_is_handed_back_with_the_workspace(tmp_path):
    """While the sandbox lives, the workspace is its uid's; after close, root's again."""
    ws = tmp_path / "ws"
    ws.mkdir()
    with make_sandbox("local", ws, LIMITS) as sb:
        r = sb.exec([sb.python, "-c", "import os; open('made', 'w'); print(os.getuid())"])
        assert r.ok, r.stderr
        uid = int(r.stdout)
        assert (ws / "made").stat().st_uid == uid == ws.stat().st_uid
    assert (ws / "made").stat().st_uid == 0 and ws.stat().st_uid == 0


# --- the lease itself -------------------------------------------------------------------------
def _named() -> set[int]:
    return {p.pw_uid for p in pwd.getpwall()} | {p.pw_gid for p in pwd.getpwall()} | {
        g.gr_gid for g in grp.getgrall()}


def test_an_id_an_account_or_group_names_is_never_handed_out(monkeypatch):
    named = _named()
    base = next(i for i in sorted(named) if i > 0 and i + 1 not in named)
    monkeypatch.setenv(IDS_ENV, f"{base}:2")
    with lease_host_ids() as ids:
        assert (ids.uid, ids.gid) == (base + 1, base + 1)
    monkeypatch.setenv(IDS_ENV, f"{base}:1")
    with pytest.raises(SandboxError, match="no free"):
        lease_host_ids()


def test_the_default_range_is_unnamed_and_unprivileged():
    with lease_host_ids() as ids:
        assert ids.uid >= 65536 and ids.uid not in _named() and ids.gid not in _named()


LEASE_AND_WAIT = ("import sys; from sandbox.ownership import lease_host_ids; "
                  "ids = lease_host_ids(); print(ids.uid, flush=True); sys.stdin.read()")


def test_a_lease_is_exclusive_across_processes_and_freed_when_its_owner_dies(monkeypatch):
    base = 0x6C63FF00  # out of the way of the sandboxes other tests open meanwhile
    monkeypatch.setenv(IDS_ENV, f"{base}:2")
    other = subprocess.Popen([sys.executable, "-c", LEASE_AND_WAIT], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True, cwd=Path(__file__).parents[2])
    try:
        theirs = int(other.stdout.readline())
        with lease_host_ids() as mine:
            assert {theirs, mine.uid} == {base, base + 1}
            with pytest.raises(SandboxError, match="no free"):
                lease_host_ids()
            other.kill()  # SIGKILL: nothing of labcoat's releases it, the kernel does
            other.wait()
            with lease_host_ids() as again:
                assert again.uid == theirs
    finally:
        other.kill()
        other.wait()
