"""The Docker backend against a command that attacks labcoat's own processes in its container.

A command owns the container's user for as long as it runs. What must hold anyway: PID 1 (the
supervisor) and anything else of labcoat's it can see cannot be traced, written, robbed of its
descriptors or signalled into stopping; the supervisor's socket cannot be reached; nothing of
a command's, PID 1 included, is alive at the next command. Each test runs several commands on
one sandbox, so what a command leaves behind is seen by the next (the single-script cases, on
every backend, are in ``hostile.py``; that the container goes with its host, in
``test_docker.py``).
"""

from __future__ import annotations

import textwrap

import pytest

from sandbox import SandboxLimits
from tests.sandbox.backends import docker_unavailable, require_docker_image
from tests.sandbox.hostile import make_context, survivors, take_over_pid1

pytestmark = [pytest.mark.docker,
              pytest.mark.skipif(docker_unavailable() is not None,
                                 reason=docker_unavailable() or "a Docker engine answers")]

# PID 1 as the next command sees it: executable, command line, start time, state.
PID1 = textwrap.dedent("""
    import os
    stat = open("/proc/1/stat").read().rpartition(")")[2].split()
    print(os.readlink("/proc/1/exe") if os.access("/proc/1/exe", os.R_OK) else "exe hidden")
    print(open("/proc/1/cmdline", "rb").read().hex(), stat[19], stat[0])
""")

# Every process but this one and the command's own (their command line says "reach-own"):
# trace it, poke its memory, take its descriptors. process_vm_writev at address 0 answers
# EFAULT once access is granted, EPERM when it is not: the probe changes nothing even where it
# gets through.
REACH = textwrap.dedent("""
    import ctypes, os
    libc = ctypes.CDLL(None, use_errno=True)
    libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]

    class IoVec(ctypes.Structure):
        _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]

    got, byte, L = [], ctypes.create_string_buffer(1), ctypes.c_long
    for pid in sorted(int(n) for n in os.listdir("/proc") if n.isdigit()):
        try:
            if pid == os.getpid() or b"reach-own" in open(f"/proc/{pid}/cmdline", "rb").read():
                continue
        except OSError:
            continue
        if libc.ptrace(16, pid, None, None) == 0:  # PTRACE_ATTACH: wait for the stop, detach
            got.append(("attach", pid))
            os.waitpid(pid, 0x40000000)
            libc.ptrace(17, pid, None, None)
        if libc.ptrace(0x4206, pid, None, None) == 0:  # PTRACE_SEIZE: detached when this exits
            got.append(("seize", pid))
        local, remote = IoVec(ctypes.addressof(byte), 1), IoVec(0, 1)
        if libc.syscall(L(311), L(pid), ctypes.byref(local), L(1), ctypes.byref(remote), L(1),
                        L(0)) == -1:
            if ctypes.get_errno() != 1:  # EPERM: refused; anything else got past the check
                got.append(("process_vm_writev", pid, ctypes.get_errno()))
        for what, mode in (("mem", "r+b"), ("environ", "rb"), ("fd", None), ("cwd", None)):
            path = f"/proc/{pid}/{what}"
            try:
                os.listdir(path) if mode is None else open(path, mode).close()
                got.append((what, pid))
            except OSError:
                pass
        try:
            pidfd = os.pidfd_open(pid)
        except OSError:
            continue
        for fd in range(64):
            taken = libc.syscall(L(438), L(pidfd), L(fd), L(0))  # pidfd_getfd
            if taken >= 0:
                got.append(("pidfd_getfd", pid, fd, os.readlink(f"/proc/self/fd/{taken}")))
                os.close(taken)
        os.close(pidfd)
    print("GOT", got)
""")

# Every unix socket a command can name: socket files anywhere, and the names in
# /proc/net/unix (abstract ones too). Connect to each, and try to bind each path anew.
SOCKETS = textwrap.dedent("""
    import os, socket, stat
    names = set()
    for top, dirs, files in os.walk("/"):
        if top in ("/proc", "/sys"):
            dirs[:] = []
            continue
        for f in files:
            path = os.path.join(top, f)
            try:
                if stat.S_ISSOCK(os.lstat(path).st_mode):
                    names.add(path)
            except OSError:
                pass
    for line in open("/proc/net/unix").read().splitlines()[1:]:
        parts = line.split()
        if len(parts) > 7:
            names.add(parts[7].replace("@", "\\0", 1) if parts[7].startswith("@") else parts[7])
    reached = []

    def attempt(what, name, act):
        s = socket.socket(socket.AF_UNIX)
        try:
            act(s)
            reached.append((what, name))
        except OSError:
            pass
        finally:
            s.close()

    for name in sorted(names):
        attempt("connect", name, lambda s: s.connect(name))
        if not name.startswith("\\0"):
            attempt("unlink", name, lambda s: os.unlink(name))
            attempt("bind", name, lambda s: s.bind(name))
    print("SOCKETS", len(names), "REACHED", reached)
""")


@pytest.fixture
def sb(tmp_path):
    require_docker_image()
    from sandbox.docker import DockerSandbox

    ws = tmp_path / "ws"
    ws.mkdir()
    with DockerSandbox(ws, SandboxLimits(timeout=30, memory_mb=512)) as sandbox:
        yield sandbox


def py(sb, code: str):
    return sb.exec([sb.python, "-c", code])


def pid1(sb) -> str:
    r = py(sb, PID1)
    assert r.ok, r.stderr
    return r.stdout


def test_a_taken_over_pid_1_does_not_reach_the_next_command(sb, tmp_path):
    ctx = make_context(tmp_path, 0)
    before = pid1(sb)
    (sb.workspace / "take.py").write_text(textwrap.dedent(take_over_pid1(ctx)))
    attack = sb.exec([sb.python, "take.py"])
    assert "ATTEMPT" in attack.stdout, attack
    assert "ATTEMPT injected" not in attack.stdout, attack.stdout
    assert pid1(sb) == before  # the same process, still what labcoat started
    assert survivors(ctx.marker) == []


def test_no_process_of_labcoats_can_be_traced_written_or_robbed(sb):
    r = py(sb, REACH)
    assert r.ok, r.stderr
    assert r.stdout.strip() == "GOT []", r.stdout
    (sb.workspace / "reach.py").write_text(REACH)
    r = sb.exec(["sh", "-c", f"{sb.python} reach.py; exit $?; : reach-own"])  # a shell between
    assert r.ok and r.stdout.strip() == "GOT []", (r.stdout, r.stderr)


@pytest.mark.parametrize("sig", ["SIGKILL", "SIGSTOP", "SIGTERM", "SIGINT", "SIGHUP",
                                 "SIGQUIT", "SIGUSR1", "SIGSEGV", "SIGCHLD"])
def test_signals_to_pid_1_change_nothing(sb, sig):
    before, cid = pid1(sb), sb.container_id
    r = py(sb, f"import os, signal, time; os.kill(1, signal.{sig}); time.sleep(0.3); "
               "print(open('/proc/1/stat').read().rpartition(')')[2].split()[0])")
    assert r.ok, r.stderr
    assert r.stdout.strip() != "T", "PID 1 was stopped"
    assert pid1(sb) == before and sb.container_id == cid  # not restarted either
    assert py(sb, "print(6 * 7)").stdout == "42\n"


def test_the_supervisors_socket_cannot_be_reached(sb):
    r = py(sb, SOCKETS)
    assert r.ok, r.stderr
    assert r.stdout.split("REACHED")[1].strip() == "[]", r.stdout

