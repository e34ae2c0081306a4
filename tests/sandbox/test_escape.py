"""Ways out of a sandbox that need more than one script to show: host root, PID 1, host knobs.

Each test plays an attacker who owns every command of a run. They run as root here (CI runs
as root), which is the case that matters: a sandbox started by root must not hand its
commands root on the host, and must not leave anything of labcoat's inside (init, the
supervisor) that a command can trace, signal into doing work, or replace.
"""

from __future__ import annotations

import os
import textwrap
import threading
import time
import uuid
from pathlib import Path

import pytest

from sandbox import SandboxLimits
from tests.sandbox.backends import BACKEND_PARAMS, make_sandbox
from tests.sandbox.hostile import survivors

ISOLATING = [p for p in BACKEND_PARAMS if p.id != "local-plain"]  # the plain runner isolates nothing

# Global knobs: a write that succeeds (even of the same value) means the host can be steered.
# Writing the value read back changes nothing, so the test is safe where it "succeeds".
HOST_KNOBS = textwrap.dedent("""
    import os
    wrote = []
    for knob in ("kernel/core_pattern", "kernel/modprobe", "vm/overcommit_memory",
                 "kernel/panic", "fs/suid_dumpable"):
        path = "/proc/sys/" + knob
        try:
            value = open(path, "rb").read()
            with open(path, "wb") as f:
                f.write(value)
            wrote.append(knob)
        except OSError:
            pass
    for path in ("/proc/sysrq-trigger", "/sys/kernel/uevent_helper", "/proc/sys/kernel/hostname"):
        try:
            open(path, "ab").close()
            wrote.append(path)
        except OSError:
            pass
    print("WROTE", wrote)
""")

# Every process of labcoat's that a command can see: trace it, write its memory, take its fds,
# stop it. Anything that works is printed; the supervisor's work goes on only if none did.
REACH_OTHERS = textwrap.dedent("""
    import ctypes, os, signal
    libc = ctypes.CDLL(None, use_errno=True)
    libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
    me = os.getpid()
    got = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) in (me, os.getppid() if os.getppid() != 1 else -1):
            continue
        pid = int(name)
        if libc.ptrace(16, pid, None, None) == 0:  # PTRACE_ATTACH
            got.append(("ptrace", pid))
            libc.ptrace(17, pid, None, None)  # PTRACE_DETACH
        if libc.ptrace(0x4206, pid, None, None) == 0:  # PTRACE_SEIZE
            got.append(("seize", pid))
            libc.ptrace(17, pid, None, None)
        for what, mode in (("mem", "r+b"), ("environ", "rb")):
            try:
                with open(f"/proc/{pid}/{what}", mode) as f:
                    f.read(1)
                got.append((what, pid))
            except OSError:
                pass
        try:
            os.listdir(f"/proc/{pid}/fd")
            got.append(("fds", pid))
        except OSError:
            pass
        try:
            fd = os.pidfd_open(pid)
            for target in range(0, 8):
                n = libc.syscall(438, fd, target, 0)  # pidfd_getfd
                if n >= 0:
                    got.append(("getfd", pid, target))
                    os.close(n)
            os.close(fd)
        except OSError:
            pass
    for sig in (signal.SIGSTOP, signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGUSR1):
        try:
            os.kill(1, sig)
        except OSError:
            pass
    os.kill(1, signal.SIGCONT) if hasattr(signal, "SIGCONT") else None
    print("GOT", got)
""")


@pytest.fixture(params=ISOLATING)
def sb(request, tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    with make_sandbox(request.param, ws, SandboxLimits(timeout=30, memory_mb=512)) as sandbox:
        yield sandbox


def py(sb, code: str, timeout: float | None = None):
    return sb.exec([sb.python, "-c", code], timeout=timeout)


def _host_uids(marker: str) -> list[tuple[int, ...]]:
    """Real, effective, saved and fs uids (as the host sees them) of processes with marker."""
    out = []
    for line in survivors(marker):
        pid = line.split()[0]
        status = Path(f"/proc/{pid}/status").read_text()
        uid_line = next(x for x in status.splitlines() if x.startswith("Uid:"))
        out.append(tuple(int(v) for v in uid_line.split()[1:]))
    return out


def test_commands_are_never_host_root(sb):
    """Seen from the host, every uid of a sandboxed process is unprivileged, whoever started
    labcoat (a user namespace that maps the sandbox's uid onto host root does not count)."""
    marker = f"labcoat-uid-{uuid.uuid4().hex[:8]}"
    done = threading.Event()
    result: list = []

    def run() -> None:  # lives until the host has looked (the file "release"), at most 20 s
        result.append(py(sb, f"import os, sys, time; sys.argv.append({marker!r}); "
                             "deadline = time.monotonic() + 20\n"
                             "while not os.path.exists('release') and time.monotonic() < deadline:\n"
                             "    time.sleep(0.02)"))
        done.set()

    threading.Thread(target=run, daemon=True).start()
    uids: list = []
    deadline = time.monotonic() + 20
    while not uids and not done.is_set() and time.monotonic() < deadline:
        uids = _host_uids(marker)
        time.sleep(0.05)
    (sb.workspace / "release").touch()
    done.wait(30)
    assert result and result[0].ok, result
    assert uids, "the command was never seen from the host"
    for ids in uids:
        assert 0 not in ids, f"a sandboxed command runs as host uid 0: {ids}"


def test_host_global_knobs_are_read_only(sb):
    r = py(sb, HOST_KNOBS)
    assert r.ok, r.stderr
    assert r.stdout.strip() == "WROTE []", r.stdout


def test_labcoat_processes_inside_cannot_be_reached(sb):
    """PID 1 and the supervisor: no ptrace, no /proc/<pid>/mem, no descriptors, no signals
    that stop them doing their work, and the next command still runs."""
    r = py(sb, REACH_OTHERS)
    assert r.ok, r.stderr
    assert r.stdout.strip() == "GOT []", r.stdout
    after = py(sb, "print('next command runs')")
    assert after.ok and after.stdout.strip() == "next command runs", after


def test_pid_1_is_the_same_after_every_command(sb):
    """Whatever a command does, PID 1 is what labcoat started: its command line and start time
    do not change (an execve would change the first, a replacement the second)."""
    probe = ("print(open('/proc/1/cmdline','rb').read().hex()); "
             "print(open('/proc/1/stat').read().rpartition(')')[2].split()[19])")  # start time
    first = py(sb, "import os\n" + probe)
    assert first.ok, first.stderr
    attack = py(sb, textwrap.dedent("""
        import ctypes, os
        libc = ctypes.CDLL(None, use_errno=True)
        libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
        print("attach", libc.ptrace(16, 1, None, None), ctypes.get_errno())
        try:
            with open("/proc/1/mem", "r+b") as f:
                print("mem open")
        except OSError as e:
            print("mem", e.errno)
    """))
    assert "attach 0" not in attack.stdout and "mem open" not in attack.stdout, attack.stdout
    second = py(sb, "import os\n" + probe)
    assert second.ok and second.stdout == first.stdout, (first.stdout, second.stdout)


def test_a_command_cannot_read_the_host_workspace_path(sb):
    """No process a command can see carries the host's path of the workspace (it would tell
    a core_pattern payload where to find its script)."""
    host_path = str(sb.workspace)
    r = py(sb, textwrap.dedent(f"""
        import os
        seen = []
        for name in os.listdir("/proc"):
            if name.isdigit() and int(name) != os.getpid():  # this script holds the path
                for what in ("cmdline", "environ"):
                    try:
                        if {host_path!r}.encode() in open(f"/proc/{{name}}/{{what}}", "rb").read():
                            seen.append((name, what))
                    except OSError:
                        pass
        print("SEEN", seen)
    """))
    assert r.ok, r.stderr
    assert r.stdout.strip() == "SEEN []", r.stdout


def test_nested_user_namespaces_are_refused(sb):
    """A user namespace inside the sandbox would hand a command every capability over new
    mount and network namespaces: more kernel to attack, nothing an ML script needs."""
    r = py(sb, textwrap.dedent("""
        import ctypes, os
        libc = ctypes.CDLL(None, use_errno=True)
        pid = os.fork()
        if pid == 0:
            os._exit(0 if libc.unshare(0x10000000) == 0 else 1)  # CLONE_NEWUSER
        print("UNSHARED" if os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0 else "refused")
    """))
    assert r.ok, r.stderr
    assert r.stdout.strip() == "refused", r.stdout


@pytest.mark.skipif(os.geteuid() != 0, reason="the case is about a sandbox started by root")
def test_workspace_is_handed_back_to_its_owner(tmp_path):
    """Files a command made belong to the host user again once the sandbox closes."""
    ws = tmp_path / "ws"
    ws.mkdir()
    with make_sandbox("local", ws, SandboxLimits(timeout=30)) as sandbox:
        assert sandbox.exec([sandbox.python, "-c", "open('made.txt','w').write('x')"]).ok
    st = (ws / "made.txt").stat()
    assert (st.st_uid, ws.stat().st_uid) == (0, 0)


def test_what_ml_code_needs_still_works(sb):
    """The filter and the unprivileged uid leave what ML scripts use: threads (clone3 falls
    back to clone), subprocesses, multiprocessing pools (POSIX semaphores in /dev/shm), a
    torch DataLoader with worker processes, and pandas (MLAgentBench's eval.py files)."""
    r = py(sb, textwrap.dedent("""
        import multiprocessing as mp, subprocess, threading
        out = []
        t = threading.Thread(target=lambda: out.append("thread"))
        t.start(); t.join()
        out.append(subprocess.run(["echo", "subprocess"], capture_output=True, text=True).stdout.strip())
        with mp.Pool(2) as pool:
            out.append(sum(pool.map(abs, [-1, -2])))
        from torch.utils.data import DataLoader
        out.append([b.tolist() for b in DataLoader(list(range(4)), batch_size=2, num_workers=2)])
        import pandas
        out.append(int(pandas.DataFrame({"a": [1, 2]})["a"].sum()))
        print(out)
    """))
    assert r.ok, r.stderr
    assert r.stdout.strip() == "['thread', 'subprocess', 3, [[0, 1], [2, 3]], 3]", r.stdout


def test_io_uring_is_refused(sb):
    """io_uring runs a command's I/O in kernel workers, past the syscall filter, and is a large,
    often-exploited kernel surface no ML script needs: every one of its calls gets EPERM."""
    r = py(sb, textwrap.dedent("""
        import ctypes, os
        libc = ctypes.CDLL(None, use_errno=True)
        libc.syscall.restype = ctypes.c_long
        params = ctypes.create_string_buffer(120)  # struct io_uring_params
        got = []
        for nr, args in ((425, (8, params)), (426, (0, 0, 0, 0, None, 0)), (427, (0, 0, None, 0))):
            ret = libc.syscall(nr, *args)
            got.append((nr, ret, ctypes.get_errno()))
            if ret >= 0:
                os.close(ret) if nr == 425 else None
        print(got)
    """))
    assert r.ok, r.stderr
    assert r.stdout.strip() == "[(425, -1, 1), (426, -1, 1), (427, -1, 1)]", r.stdout


IPC_NOTE = textwrap.dedent("""
    import ctypes, os, sys
    libc = ctypes.CDLL(None, use_errno=True)
    rt = ctypes.CDLL("librt.so.1", use_errno=True)
    create = sys.argv[1] == "leave"
    flags = 0o1000 | 0o600 if create else 0  # IPC_CREAT
    got = {}
    for name, call in (("shm", lambda: libc.shmget(0x1ab, 4096 if create else 0, flags)),
                       ("sem", lambda: libc.semget(0x1ab, 1 if create else 0, flags)),
                       ("msg", lambda: libc.msgget(0x1ab, flags)),
                       ("mq", lambda: rt.mq_open(b"/labcoat-note", os.O_RDWR | (os.O_CREAT if create else 0),
                                                 0o600, None))):
        ret = call()
        got[name] = ret if ret >= 0 else -ctypes.get_errno()
    print(got)
""")


def test_ipc_objects_that_would_outlive_a_command_are_refused(sb):
    """A System V segment, semaphore set or message queue, or a POSIX message queue, lives in
    the sandbox's IPC namespace after the command that made it ends, where nothing that
    empties /tmp sees it: a timed task's repeat could leave a note for the next. Making one,
    or reaching one by its key or name, is refused (EPERM)."""
    left = sb.exec([sb.python, "-c", IPC_NOTE, "leave"])
    found = sb.exec([sb.python, "-c", IPC_NOTE, "find"])
    assert left.ok and found.ok, left.stderr + found.stderr
    assert left.stdout.strip() == "{'shm': -1, 'sem': -1, 'msg': -1, 'mq': -1}", left.stdout
    assert found.stdout.strip() == "{'shm': -1, 'sem': -1, 'msg': -1, 'mq': -1}", found.stdout


def test_the_probe_reports_local_contained():
    """What `labcoat sandbox check` shows for local: contained, io_uring refused, and (started
    by root) a host uid of labcoat's reserved range."""
    from sandbox.ownership import id_range
    from sandbox.probe import probe

    found = probe("local")
    assert found.ran and found.contained and found.io_uring is False, found
    assert "io_uring refused" in found.summary()
    if os.geteuid() == 0:
        assert found.host_uids[1] in id_range(), found
