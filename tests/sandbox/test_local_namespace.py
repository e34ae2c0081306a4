"""The bubblewrap backend keeps one namespace per sandbox: commands share it, nothing else does.

A long-lived namespace must behave like a fresh one per command where it matters: what a
command leaves running is gone before the next starts, a command that attacks the supervisor
costs only that command, and the namespace dies with its host.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import pytest

from sandbox import SandboxLimits
from sandbox.local import LocalSandbox
from tests.sandbox.backends import make_sandbox
from tests.sandbox.hostile import survivors

ROOT = Path(__file__).resolve().parents[2]

LIST_PROCS = ("import os; print(sorted(int(p) for p in os.listdir('/proc') if p.isdigit() "
              "and open(f'/proc/{p}/stat').read().rpartition(')')[2].split()[0] != 'Z'))")


@pytest.fixture
def sb(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    with make_sandbox("local", ws, SandboxLimits(timeout=20, memory_mb=256)) as sandbox:
        yield sandbox


def py(sb: LocalSandbox, code: str, timeout: float | None = None):
    return sb.exec([sb.python, "-c", textwrap.dedent(code)], timeout=timeout)


def test_commands_share_one_namespace_and_nothing_lingers_between_them(sb):
    marker = f"labcoat-linger-{uuid.uuid4().hex[:8]}"
    first = py(sb, f"""
        import subprocess, sys
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", {marker!r}],
                         start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        open("/tmp/kept", "w").write("x")
    """)
    assert first.ok, first.stderr
    assert survivors(marker) == []
    second = py(sb, LIST_PROCS + "\nprint(open('/tmp/kept').read())")
    assert second.ok, second.stderr
    procs, kept = second.stdout.splitlines()
    # the supervisor (PID 1) and this command: the daemon of the first command is gone
    assert len(eval(procs)) == 2, procs
    assert kept == "x"  # one namespace: /tmp lives as long as the sandbox, as in a container
    assert sb._ns is not None and sb._ns.alive


def test_a_command_killing_everything_it_sees_kills_nothing_of_labcoats(sb):
    """The supervisor is PID 1: the kernel drops a SIGKILL from inside its namespace, so the
    namespace, and the next command in it, live on."""
    assert py(sb, "print('warm')").ok
    first_ns = sb._ns
    attack = py(sb, "import os, signal\nos.kill(-1, signal.SIGKILL)\nos.kill(1, signal.SIGKILL)")
    assert attack.exit_code in (0, 1), attack  # ESRCH at worst: nothing else to kill
    after = py(sb, "print('still works')")
    assert after.ok and after.stdout.strip() == "still works", after
    assert sb._ns is first_ns


def test_a_command_cannot_reach_into_the_supervisor(sb):
    """Same uid, but the supervisor is not dumpable: its memory, environment and descriptors
    (the socket to the host) are out of reach."""
    probe = py(sb, """
        import os
        sup = os.getppid()
        for what in ("environ", "mem"):
            try:
                open(f"/proc/{sup}/{what}", "rb").read(1)
                print("READ", what)
            except OSError as e:
                print("denied", what, e.errno)
        if hasattr(os, "pidfd_open"):
            import ctypes
            fd = os.pidfd_open(sup)
            got = ctypes.CDLL(None, use_errno=True).syscall(438, fd, 3, 0)  # pidfd_getfd
            print("GOT" if got >= 0 else "denied getfd", ctypes.get_errno())
    """)
    assert probe.ok, probe.stderr
    assert "READ" not in probe.stdout and "GOT" not in probe.stdout, probe.stdout


def test_a_frozen_supervisor_ends_in_a_timeout_and_a_fresh_namespace(sb):
    marker = f"labcoat-frozen-{uuid.uuid4().hex[:8]}"
    frozen = py(sb, f"""
        import os, signal, sys, time
        sys.argv.append({marker!r})
        os.kill(os.getppid(), signal.SIGSTOP)  # the supervisor forked this command
        time.sleep(60)
    """, timeout=2)
    assert frozen.timed_out and frozen.seconds < 40  # its 2 s timeout, not the 60 s sleep
    assert survivors(marker) == []
    assert py(sb, "print('fresh')").stdout.strip() == "fresh"


def test_the_next_command_runs_after_an_oom_kill(sb):
    bomb = py(sb, "chunks = []\nwhile True: chunks.append(bytearray(32 << 20))")
    assert bomb.oom_killed and not bomb.ok
    after = py(sb, "print(sum(range(10)))")
    assert after.ok and after.stdout.strip() == "45" and not after.oom_killed


def test_close_ends_the_namespace(sb):
    assert py(sb, "print(1)").ok
    proc = sb._ns.proc
    sb.close()
    assert proc.poll() is not None
    assert sb._ns is None
    assert py(sb, "print(2)").stdout.strip() == "2"  # a closed sandbox starts again if used


def procs(group: Path) -> str:
    """A cgroup's process list ('' once the group is removed)."""
    try:
        return (group / "cgroup.procs").read_text().strip()
    except FileNotFoundError:
        return ""


def test_the_namespace_dies_with_its_host(tmp_path):
    """A host killed with -9 mid-command leaves nothing running (the supervisor sees EOF)."""
    marker = f"labcoat-orphan-{uuid.uuid4().hex[:8]}"
    ws = tmp_path / "ws"
    ws.mkdir()
    host = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import sys
        from sandbox.local import LocalSandbox
        sb = LocalSandbox({str(ws)!r}, use_bwrap=True)
        sb._namespace()
        cg = sb._ns.cgroup
        print(" ".join(str(d) for d in cg.dirs.values()) if cg else "", flush=True)
        sb.exec([sb.python, "-c", "import time; time.sleep(120)", {marker!r}])
    """)], cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=subprocess.PIPE,
        text=True)
    groups = [Path(d) for d in host.stdout.readline().split()]
    deadline = time.monotonic() + 30
    while not survivors(marker):
        assert time.monotonic() < deadline and host.poll() is None, "the command never started"
        time.sleep(0.05)
    host.kill()
    host.wait()
    deadline = time.monotonic() + 10
    while survivors(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert survivors(marker) == []
    # Nothing of the killed host removes its cgroup; once its last process is gone (the
    # supervisor sees EOF and exits), the next sandbox to make a cgroup removes it: this
    # test's below, or one another test makes meanwhile (a group gone is a group ended).
    deadline = time.monotonic() + 10
    while any(procs(d) for d in groups):
        assert time.monotonic() < deadline, "the killed host's namespace never ended"
        time.sleep(0.05)
    with LocalSandbox(ws, use_bwrap=True) as again:
        assert again.exec([again.python, "-c", "print(1)"]).ok
    assert not any(d.exists() for d in groups), groups


def test_a_kill_that_crosses_a_finished_commands_answer_is_ignored(sb):
    """The host's timeout can fire just as a command ends: the late kill must not be taken for
    a request, whose answer would then be read as the next command's result."""
    from sandbox import supervisor

    assert py(sb, "print('first')").ok
    supervisor.send_msg(sb._ns.sock, {"op": "kill"})  # arrives while the supervisor is idle
    after = py(sb, "import sys; sys.exit(3)")
    assert after.exit_code == 3, after
    assert py(sb, "print('next')").stdout.strip() == "next"


def test_the_namespace_outlives_the_thread_that_started_it(sb):
    """bubblewrap dies with the *thread* that spawned it (parent-death signal); the TUI runs
    each of a person's steps in a short-lived worker, and the namespace must stay for the next."""
    import threading

    worker = threading.Thread(target=lambda: py(sb, "print('from a worker')"))
    worker.start()
    worker.join()
    started = sb._ns
    time.sleep(0.3)
    assert started.alive
    assert py(sb, "print('again')").stdout.strip() == "again"
    assert sb._ns is started
