"""``Sandbox.renew``: the next command starts from state no earlier command could shape.

A command can leave a folder in ``/tmp`` or ``/dev/shm`` that its own uid cannot empty (mode
0555 keeps its files from an ``rm -rf`` by the same uid); only new mounts are sure to be empty.
After ``renew`` the next command has new ``/tmp`` and ``/dev/shm`` mounts and new IPC, pid
and network namespaces, while the workspace, its quota and the uid it runs as are kept.
"""

from __future__ import annotations

import pytest

from sandbox import SandboxError, SandboxLimits
from tests.sandbox.backends import docker_marks, make_sandbox

BACKENDS = pytest.mark.parametrize("backend", [
    pytest.param("local", id="local"), pytest.param("docker", id="docker", marks=docker_marks)])

# a folder its maker cannot write, holding a file, in both temporary folders; then what an
# emptying by the same uid (what scoring did between repeats and steps) leaves of it
STUCK = ("for t in /tmp /dev/shm; do mkdir -p $t/stuck && echo kept > $t/stuck/f && "
         "chmod 555 $t/stuck; done; rm -rf /tmp/* /dev/shm/* 2>/dev/null; "
         "cat /tmp/stuck/f /dev/shm/stuck/f")
LOOK = ("cat /tmp/stuck/f /dev/shm/stuck/f 2>/dev/null | tr '\\n' ' '; echo; "
        "ls -A /tmp /dev/shm | tr '\\n' ' '; echo; "
        "id -u; echo $$; cat ws.txt")


def sh(sb, script: str) -> str:
    r = sb.exec(["/bin/sh", "-c", script], timeout=60)
    assert r.exit_code == 0 or "stuck" in script, r.stderr
    return r.stdout


@pytest.fixture
def sb(tmp_path, backend):
    ws = tmp_path / "ws"
    ws.mkdir()
    with make_sandbox(backend, ws, SandboxLimits(timeout=60)) as box:
        yield box


@BACKENDS
def test_renew_gives_fresh_temporary_mounts_and_keeps_the_workspace(sb):
    sh(sb, "echo mine > ws.txt")
    assert sh(sb, STUCK).split() == ["kept", "kept"]  # emptying leaves them
    before = sh(sb, LOOK).splitlines()
    assert before[0].split() == ["kept", "kept"] and "stuck" in before[1]
    sb.renew()
    after = sh(sb, LOOK).splitlines()
    assert "kept" not in after[0] and "stuck" not in " ".join(after[:2]), after
    uid_before, pid_before, ws_before = before[-3:]
    uid_after, pid_after, ws_after = after[-3:]
    assert uid_after == uid_before and ws_after == ws_before == "mine"
    # a new pid namespace numbers from 1 again (namespaces' inode numbers are reused: no proof)
    assert int(pid_after) < int(pid_before), (pid_before, pid_after)


@BACKENDS
def test_renew_leaves_no_process(sb):
    sh(sb, "echo $$ > /tmp/pid")
    sb.renew()
    out = sh(sb, "cat /proc/[0-9]*/comm | sort | tr '\\n' ' '; echo; if test -e /tmp/pid; then echo LEFT; fi")
    procs, *rest = out.splitlines()
    others = [n for n in procs.split() if n not in ("sh", "cat", "sort", "tr", "test")]
    # the supervisor alone; /tmp may hold mount points (a venv under /tmp), never the file
    assert len(others) <= 1 and "LEFT" not in rest, out


def test_a_backend_that_isolates_nothing_cannot_renew(tmp_path):
    with make_sandbox("local-plain", tmp_path, SandboxLimits(timeout=60)) as sb:
        with pytest.raises(SandboxError):
            sb.renew()
