"""The process that lives inside a local sandbox's namespaces and forks each command there.

Creating bubblewrap's namespaces (user, pid, net, ipc, uts) and mount tree costs 25-40 ms, more
than a third of a small script's run time; forking inside namespaces that already exist costs
about a millisecond. So a bubblewrap sandbox starts this program once, as its only child, and
sends it one request per command over an inherited unix socket -- the way ``docker exec`` runs
commands in a container that stays up.

This file is stdlib-only and runs without ``site`` (the host passes its source to
``python -I -S -c``); the host imports the same framing helpers, so both sides share one
definition of the protocol:

* a message is a 4-byte big-endian length and a JSON object;
* host -> here: ``{"argv", "env", "cwd"}`` with three file descriptors attached (stdin, stdout,
  stderr of the command), or ``{"op": "kill"}`` while a command runs;
* here -> host: ``{"status": <wait status>}`` once the command has exited and every other
  process it left in the namespace has been killed and reaped (:func:`sweep`: ``kill(-1)``
  from PID 1, then ``waitpid`` until no child is left), so nothing of a command outlives it.

It runs as PID 1 of the sandbox's pid namespace (bubblewrap's ``--as-pid-1``; the container's
init under Docker), so nothing of labcoat's but itself is visible to a command, and it is out
of a command's reach: it is not dumpable (no ptrace, no ``/proc/1/mem``, no ``/proc/1/fd``, no
``pidfd_getfd``), the kernel drops every signal a command sends it that it has no handler
for (SIGKILL and SIGSTOP included), and it holds no capability while it serves. Started as
root (a host run as root, where no user namespace may map the sandbox onto root), it drops
its bounding set and becomes the sandbox's leased host uid (its arguments) before reading the
first request. As PID 1 it
also reaps every orphan. A seccomp filter, inherited by every command, refuses new user
namespaces (every capability over fresh mount and network namespaces: kernel surface an ML
script never needs), the kernel keyring, BPF, perf and io_uring interfaces, which no
namespace isolates, System V IPC and POSIX message queues, whose objects outlive a command,
and ``socket(AF_VSOCK)``, a VM's channel to its host, which no network namespace covers.

When the host goes away (the socket reaches EOF) the command and everything else in the
namespace are killed and this process exits, which ends the pid namespace.
"""

from __future__ import annotations

import ctypes
import json
import os
import select
import signal
import socket
import struct
import sys
import time
from collections.abc import Callable, Iterable

_HEADER = struct.Struct(">I")
_MAX_FDS = 3


def send_msg(sock: socket.socket, obj: dict, fds: list[int] | None = None) -> None:
    data = json.dumps(obj).encode()
    frame = _HEADER.pack(len(data)) + data
    if fds:
        sent = socket.send_fds(sock, [frame], fds)
        frame = frame[sent:]
    if frame:
        sock.sendall(frame)


def _recv_exact(sock: socket.socket, n: int, start: bytes = b"") -> bytes | None:
    data = start
    while len(data) < n:
        chunk = sock.recv(min(n - len(data), 1 << 20))
        if not chunk:
            return None
        data += chunk
    return data


def recv_msg(sock: socket.socket) -> tuple[dict | None, list[int]]:
    """One message and the descriptors sent with it; ``(None, [])`` at EOF."""
    head, fds, _, _ = socket.recv_fds(sock, _HEADER.size, _MAX_FDS)
    if not head:
        return None, fds
    head = _recv_exact(sock, _HEADER.size, head)
    body = _recv_exact(sock, _HEADER.unpack(head)[0]) if head else None
    return (json.loads(body) if body is not None else None), fds


# --- inside the sandbox ----------------------------------------------------------------------
def kill_until_gone(find: Callable[[], Iterable[int]], rounds: int, pause: float) -> bool:
    """SIGKILL what ``find`` lists, again and again while forks race the kill, until it lists
    nothing (True) or ``rounds`` run out (False). The host's cgroup cleanup uses this where
    the kernel has no ``cgroup.kill``."""
    for _ in range(rounds):
        alive = list(find())
        if not alive:
            return True
        for pid in alive:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        time.sleep(pause)
    return not list(find())


SWEEP_SECONDS = 10.0
"""How long :func:`sweep` kills and reaps before it gives the namespace up (a process stuck in
uninterruptible I/O dies only when that I/O ends)."""


def sweep(wakeup: int | None = None, bound: float = SWEEP_SECONDS) -> bool:
    """End everything else in this pid namespace; True once nothing but this process is left.

    Nothing is looked up in ``/proc`` (where a thread group whose leader thread exited reads
    as a zombie while its other threads run on). As PID 1 of the namespace, ``kill(-1,
    SIGKILL)`` reaches every other process in it, whole thread groups, and nothing outside
    it; every process runs as this uid, so the kernel lets it. Every orphan is reparented to
    PID 1, so once ``waitpid`` says there is no child left (ECHILD), nothing a command started
    is alive in the namespace, not even a zombie (what the host itself put in a container with
    ``docker exec`` is not this process's child, nor its to kill). The kill is repeated
    while waiting, for processes a fork was making at the first one; ``wakeup`` (readable on
    SIGCHLD) lets the wait end as soon as a child dies."""
    deadline = time.monotonic() + bound
    while True:
        try:
            os.kill(-1, signal.SIGKILL)
        except OSError:  # ESRCH: nothing else; EPERM: only what the host itself started in
            pass  # a container (`docker exec` as root), which is none of a command's
        while True:
            try:
                if os.waitpid(-1, os.WNOHANG)[0] == 0:
                    break
            except ChildProcessError:
                return True
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        if wakeup is None:
            time.sleep(min(0.01, left))
            continue
        if select.select([wakeup], [], [], min(0.05, left))[0]:
            try:
                os.read(wakeup, 4096)
            except BlockingIOError:
                pass


def _child(req: dict, fds: list[int]) -> None:
    """In the forked child: become the command. Never returns."""
    code = 127
    try:
        os.setsid()
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
        os.closerange(3, 1 << 16)
        for sig in ("SIGPIPE", "SIGXFSZ"):  # Python ignores these; the command must not inherit that
            if hasattr(signal, sig):
                signal.signal(getattr(signal, sig), signal.SIG_DFL)
        try:  # the command, not this process, is what the OOM killer should pick
            with open("/proc/self/oom_score_adj", "w") as f:
                f.write("1000")
        except OSError:
            pass
        os.chdir(req["cwd"])
        argv = req["argv"]
        os.execvpe(argv[0], argv, req["env"])
    except OSError as err:
        code = 127 if isinstance(err, FileNotFoundError) else 126
        os.write(2, f"sandbox: cannot run {req['argv'][:1]}: {err}\n".encode())
    finally:
        os._exit(code)


def _wait(sock: socket.socket, pid: int, wakeup: int) -> int | None:
    """The command's wait status; kills it on a host ``kill``; None when the host is gone.

    ``wakeup`` becomes readable on every SIGCHLD, so orphans are reaped as they die (a fork
    bomb's zombies would otherwise hold the pids cap) and the command's own exit is seen."""
    watch = [sock, wakeup]
    host_gone = False
    while True:
        ready, _, _ = select.select(watch, [], [], 0.5)
        if wakeup in ready:
            try:
                os.read(wakeup, 4096)
            except BlockingIOError:
                pass
        while True:  # reap everything that exited; stop at the command itself
            try:
                done, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return None
            if done == pid:
                return None if host_gone else status
            if done == 0:
                break
        if sock not in ready:
            continue
        msg, extra = recv_msg(sock)
        for fd in extra:
            os.close(fd)
        if msg is None:
            host_gone = True
            watch.remove(sock)
        if msg is None or msg.get("op") == "kill":
            os.kill(pid, signal.SIGKILL)


def serve(sock: socket.socket) -> None:
    """Run the host's commands one at a time; answer each only once the namespace is empty
    again but for this process. If it cannot be emptied, exit without answering: PID 1's exit
    makes the kernel kill everything in the namespace, and the host starts a fresh one."""
    wakeup = _sigchld_pipe()
    while True:
        req, fds = recv_msg(sock)
        if req is None:
            sweep(wakeup)
            return
        if "argv" not in req:  # a "kill" that crossed the answer of a command that just ended
            for fd in fds:
                os.close(fd)
            continue
        pid = os.fork()
        if pid == 0:
            _child(req, fds)
        for fd in fds:
            os.close(fd)
        status = _wait(sock, pid, wakeup)
        if not sweep(wakeup):
            os.write(2, b"sandbox: what a command left would not die; ending the sandbox\n")
            return
        if status is None:
            return
        send_msg(sock, {"status": status})


def _sigchld_pipe() -> int:
    """A descriptor that turns readable on SIGCHLD (the handler itself does nothing)."""
    r, w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    signal.set_wakeup_fd(w, warn_on_full_buffer=False)
    return r


_libc = ctypes.CDLL(None, use_errno=True)
_PR_SET_DUMPABLE, _PR_CAPBSET_DROP, _PR_SET_NO_NEW_PRIVS, _PR_SET_SECCOMP = 4, 24, 38, 22


def _prctl(*args: int) -> int:
    return _libc.prctl(*[ctypes.c_ulong(a) for a in args])


def _not_dumpable() -> None:
    """Commands run as this process's uid; without this they could ptrace it, or take its socket
    through /proc/<pid>/fd or pidfd_getfd, and drive or answer the host themselves. (A forked
    command is dumpable again once it execs.)"""
    if _prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_DUMPABLE, 0) failed")


def become(uid: int, gid: int) -> None:
    """From root inside the sandbox to ``uid``:``gid`` with no capability left to regain: the
    bounding set is emptied first (while CAP_SETPCAP is still held), then every id changes,
    which clears the permitted and effective sets."""
    for cap in range(64):
        if _prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 and ctypes.get_errno() != 22:  # EINVAL
            raise OSError(ctypes.get_errno(), f"cannot drop capability {cap}")
    os.setgroups([])
    os.setresgid(gid, gid, gid)
    os.setresuid(uid, uid, uid)
    if 0 in os.getresuid() or 0 in os.getresgid():
        raise OSError("still root after dropping privileges")


# Syscalls no namespace isolates, or that hand out a fresh set of capabilities; a command
# gets EPERM (ENOSYS for clone3, so that libc falls back to clone, whose flags we can see).
_CLONE_NEWUSER = 0x10000000
_DENY = {  # name: (x86_64, aarch64)
    "keyctl": (250, 219), "add_key": (248, 217), "request_key": (249, 218),
    "bpf": (321, 280), "perf_event_open": (298, 241), "userfaultfd": (323, 282),
    "kexec_load": (246, 104), "open_by_handle_at": (304, 265), "setns": (308, 268),
    # io_uring does a command's I/O from kernel workers, out of this filter's sight, and is a
    # large kernel surface of its own
    "io_uring_setup": (425, 425), "io_uring_enter": (426, 426), "io_uring_register": (427, 427),
    # objects of the sandbox's IPC namespace outlive the command that made them, where nothing
    # that empties /tmp sees them: a note one command leaves for the next (a timed task's next
    # repeat, the next step scored in the same sandbox). POSIX shared memory and semaphores
    # (shm_open, sem_open: what multiprocessing and torch use) are files in /dev/shm instead.
    "shmget": (29, 194), "semget": (64, 190), "msgget": (68, 186), "mq_open": (240, 180),
}
_ARCH = {"x86_64": (0xC000003E, 0, 272, 56, 435, 41), "aarch64": (0xC00000B7, 1, 97, 220, 435, 198)}
# Address families socket() refuses (EAFNOSUPPORT, as where the kernel lacks them): a network
# namespace isolates IP and unix sockets, not a VM's vsock to its hypervisor and host
# services, which "no network" must cover too.
_AF_VSOCK = 40
_REFUSED_FAMILIES = (_AF_VSOCK,)


def _seccomp_program() -> bytes | None:
    """A classic-BPF seccomp filter for this machine's architecture (None where unknown)."""
    arch = _ARCH.get(os.uname().machine)
    if arch is None:
        return None
    audit, col, unshare, clone, clone3, sock = arch
    ld, jeq, jset, ret = 0x20, 0x15, 0x45, 0x06
    allow, eperm, enosys = 0x7FFF0000, 0x00050000 | 1, 0x00050000 | 38
    eafnosupport = 0x00050000 | 97
    kill = 0x80000000  # SECCOMP_RET_KILL_PROCESS: a foreign architecture's syscalls
    jge = 0x35
    prog = [(ld, 0, 0, 4), (jeq, 1, 0, audit), (ret, 0, 0, kill), (ld, 0, 0, 0)]
    if col == 0:  # x86_64's x32 numbers (bit 30) share the arch: they would slip past
        prog += [(jge, 0, 1, 0x40000000), (ret, 0, 0, eperm)]
    prog += [(jeq, 0, 1, clone3), (ret, 0, 0, enosys)]
    for nr in (unshare, clone):
        # arg0 (the flags) low word at offset 16: refuse CLONE_NEWUSER
        prog += [(jeq, 0, 4, nr), (ld, 0, 0, 16), (jset, 0, 1, _CLONE_NEWUSER),
                 (ret, 0, 0, eperm), (ret, 0, 0, allow)]
    families = len(_REFUSED_FAMILIES)  # arg0 (the address family) low word at offset 16
    prog += [(jeq, 0, families + 3, sock), (ld, 0, 0, 16)]
    for i, family in enumerate(_REFUSED_FAMILIES):  # a match jumps past the allow below
        prog += [(jeq, families - i, 0, family)]
    prog += [(ret, 0, 0, allow), (ret, 0, 0, eafnosupport)]
    for nrs in _DENY.values():
        prog += [(jeq, 0, 1, nrs[col]), (ret, 0, 0, eperm)]
    prog.append((ret, 0, 0, allow))
    return b"".join(struct.pack("HBBI", *ins) for ins in prog)


def _confine() -> None:
    """Load the seccomp filter (after no_new_privs, which it requires): every command this
    process forks inherits it, and it cannot be removed."""
    program = _seccomp_program()
    if program is None:
        return
    if _prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS) failed")
    buf = ctypes.create_string_buffer(program)

    class SockFprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    fprog = SockFprog(len(program) // 8, ctypes.addressof(buf))
    if _libc.prctl(_PR_SET_SECCOMP, 2, ctypes.byref(fprog), 0, 0) != 0:  # SECCOMP_MODE_FILTER
        raise OSError(ctypes.get_errno(), "cannot load the seccomp filter")


def _cap_files() -> None:
    """The largest file any command may write (``LABCOAT_FILE_BYTES``): one runaway write, or a
    sparse file's apparent size, cannot fill the host's disk, which the workspace shares."""
    import resource

    limit = os.environ.pop("LABCOAT_FILE_BYTES", "")  # sandbox.base.FILE_LIMIT_ENV (stdlib only here)
    if limit.isdigit():
        resource.setrlimit(resource.RLIMIT_FSIZE, (int(limit), int(limit)))


def harden(drop_to: tuple[int, int] | None) -> None:
    """Everything this process does before it serves: no signals but the kernel's defaults
    (as PID 1 those from inside are dropped), root given up, out of reach, confined.

    Refuses to run anywhere but as PID 1 of a pid namespace: :func:`sweep`'s ``kill(-1)``
    reaches only that namespace from there (from anywhere else, every process of its uid)."""
    if os.getpid() != 1:
        raise SystemExit("sandbox: the supervisor runs only as PID 1 of its own pid namespace")
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_DFL)
    _cap_files()
    if drop_to is not None and os.getuid() == 0:
        become(*drop_to)
    _not_dumpable()
    _confine()


def host_socket(where: str) -> socket.socket:
    """The host's end of the protocol: an inherited descriptor (bubblewrap), or, for a
    container's init, which inherits none, a connection to the host's listener at ``where``
    (a socket file the host bind-mounts read-only and unlinks once it has taken this one
    connection). Called after :func:`harden`: no command exists yet, and none can reach it."""
    if where.isdigit():
        return socket.socket(fileno=int(where))
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(where)
    return sock


if __name__ == "__main__":
    harden((int(sys.argv[2]), int(sys.argv[3])) if len(sys.argv) > 3 else None)
    serve(host_socket(sys.argv[1]))
