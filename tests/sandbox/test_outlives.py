"""Nothing a command starts outlives it, however it hides.

Each case is an attacker's command that leaves something running when it returns: a detached
daemon, a thread group whose leader thread exited with the raw ``exit`` syscall (the leader then
reads ``Z`` in ``/proc`` while its other threads run on), a stopped process, a parent blocked
in ``vfork`` behind a child that never execs, a process with many threads. What is left writes
a heartbeat file in the workspace (or carries a marker in its command line); once the command
has returned, the heartbeat must have stopped, seen both from the host and from the next
command, and nothing with the marker may be alive.

Run on every backend that claims to kill a command's whole tree (the plain runner through its
per-command cgroup), as root in CI.
"""

from __future__ import annotations

import textwrap
import time
import uuid

import pytest

from sandbox import SandboxLimits
from tests.fast_set import representatives
from tests.sandbox.backends import BACKEND_PARAMS, make_sandbox
from tests.sandbox.hostile import survivors

# Detach like a daemon (fork, setsid, fork), run PAYLOAD in the grandchild, and return only
# once it has beaten at least once, so that the command really leaves it running.
DETACH = """
import ctypes, os, sys, threading, time
libc = ctypes.CDLL(None, use_errno=True)
SYS_EXIT = {{"x86_64": 60, "aarch64": 93}}[os.uname().machine]

def beat(name="beat"):
    n = 0
    while True:
        n += 1
        with open(name + f".{{threading.get_native_id()}}", "w") as f:
            f.write(f"{{n}} {{time.time()}}")
        os.replace(name + f".{{threading.get_native_id()}}", name)
        time.sleep(0.01)

if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        try:
{payload}
        finally:
            os._exit(0)
    os._exit(0)
os.wait()
deadline = time.monotonic() + 10
while not os.path.exists("beat") and time.monotonic() < deadline:
    time.sleep(0.01)
time.sleep(0.1)
print("left running" if os.path.exists("beat") else "never started")
"""

PAYLOADS = {
    # The leader thread exits with SYS_exit (not exit_group): /proc/<pid>/stat says Z, yet the
    # thread group lives on in its second thread.
    "zombie-leader": """
threading.Thread(target=beat).start()
time.sleep(0.05)
libc.syscall(SYS_EXIT, 0)
""",
    "daemon": """
beat()
""",
    "many-threads": """
for _ in range(64):
    threading.Thread(target=beat, daemon=True).start()
time.sleep(3600)
""",
    # The parent sleeps in vfork (killable only) while its child, sharing its memory, beats
    # and never execs or exits.
    "vfork": """
libc.vfork.restype = ctypes.c_int
if libc.vfork() == 0:
    beat()
""",
}

STOPPED = """
import os, subprocess, sys, time
subprocess.Popen([sys.executable, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGSTOP)",
                  {marker!r}], start_new_session=True)
time.sleep(0.5)
print("left stopped")
"""

STILL = """
import time
first = open("beat").read()
time.sleep({pause})
print("still" if open("beat").read() == first else "BEATING")
"""


@pytest.fixture(params=[p for p in BACKEND_PARAMS if p.id != "local-bundled-bwrap"])
def sb(request, tmp_path):
    """Every isolating backend, and the plain runner (its cgroup is what kills there)."""
    ws = tmp_path / "ws"
    ws.mkdir()
    with make_sandbox(request.param, ws, SandboxLimits(timeout=30, memory_mb=512)) as sandbox:
        if not sandbox.describe().process_tree_kill:
            pytest.skip(f"{sandbox.backend} says it cannot kill a process tree here")
        yield sandbox


def _beating(path, pause: float = 0.4) -> bool:
    first = path.read_bytes()
    time.sleep(pause)
    return path.read_bytes() != first


@pytest.mark.parametrize("case", representatives(sorted(PAYLOADS), ["daemon", "zombie-leader"]))
def test_nothing_a_command_left_keeps_running(sb, case):
    script = DETACH.format(payload=textwrap.indent(PAYLOADS[case].strip(), " " * 12))
    r = sb.exec([sb.python, "-c", script])
    assert r.ok and r.stdout.strip() == "left running", (r.stdout, r.stderr)
    heartbeat = sb.workspace / "beat"
    assert not _beating(heartbeat), f"{case}: still running on the host after its command"
    after = sb.exec([sb.python, "-c", STILL.format(pause=0.4)])
    assert after.ok and after.stdout.strip() == "still", (after.stdout, after.stderr)


def test_a_stopped_process_is_gone(sb):
    marker = f"labcoat-stopped-{uuid.uuid4().hex[:8]}"
    r = sb.exec([sb.python, "-c", STOPPED.format(marker=marker)])
    assert r.ok and r.stdout.strip() == "left stopped", (r.stdout, r.stderr)
    assert survivors(marker) == []


def test_the_host_ends_a_namespace_whose_cgroup_holds_more_than_the_supervisor(tmp_path):
    """The host's own check after each command: anything in the namespace's cgroup besides
    bubblewrap and the supervisor ends the namespace (the next command gets a fresh one)."""
    import subprocess

    with make_sandbox("local", tmp_path, SandboxLimits(timeout=30)) as sb:
        assert sb.exec(["true"]).ok
        ns = sb._ns
        if ns.cgroup is None:
            pytest.skip("no writable cgroups here")
        stray = subprocess.Popen(["sleep", "60"])
        try:
            for d in ns.cgroup.dirs.values():
                (d / "cgroup.procs").write_text(str(stray.pid))
            assert sb.exec(["true"]).ok  # its answer stands...
            assert not ns.alive  # ...but that namespace is gone, with what its cgroup held
            assert stray.wait(timeout=10) == -9
            assert sb.exec(["true"]).ok and sb._ns is not ns and sb._ns.alive
        finally:
            stray.kill()
            stray.wait()
