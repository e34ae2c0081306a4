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
  process it left in the namespace has been killed.

When the host goes away (the socket reaches EOF) the command and everything else in the
namespace are killed and this process exits; bubblewrap's init then ends the pid namespace.
"""

from __future__ import annotations

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
def _others() -> list[int]:
    """Live processes of this pid namespace other than bubblewrap's init (1) and this one."""
    me, found = os.getpid(), []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) in (1, me):
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                state = f.read().rpartition(b")")[2].split()[0]
        except (OSError, IndexError):
            continue
        if state != b"Z":  # zombies are dead already; init reaps them
            found.append(int(name))
    return found


def kill_until_gone(find: Callable[[], Iterable[int]], rounds: int, pause: float) -> None:
    """SIGKILL what ``find`` lists, again and again while forks race the kill (the host's
    cgroup cleanup uses this too)."""
    for _ in range(rounds):
        alive = list(find())
        if not alive:
            return
        for pid in alive:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        time.sleep(pause)


def sweep() -> None:
    """Kill whatever the last command left behind (daemons, detached children)."""
    kill_until_gone(_others, 2000, 0.002)


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


def _wait(sock: socket.socket, pid: int) -> int | None:
    """The command's wait status; kills it on a host ``kill``; None when the host is gone."""
    try:
        pidfd: int | None = os.pidfd_open(pid)
    except (AttributeError, OSError):  # no pidfds (Linux < 5.3): poll instead
        pidfd = None
    watch = [sock] + ([pidfd] if pidfd is not None else [])
    poll = None if pidfd is not None else 0.01
    host_gone = False
    try:
        while True:
            ready, _, _ = select.select(watch, [], [], poll)
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                return None if host_gone else status
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
    finally:
        if pidfd is not None:
            os.close(pidfd)


def serve(sock: socket.socket) -> None:
    while True:
        req, fds = recv_msg(sock)
        if req is None:
            sweep()
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
        status = _wait(sock, pid)
        sweep()
        if status is None:
            return
        send_msg(sock, {"status": status})


def _not_dumpable() -> None:
    """Commands run as this process's uid; without this they could ptrace it, or take its socket
    through /proc/<pid>/fd or pidfd_getfd, and drive or answer the host themselves. (A forked
    command is dumpable again once it execs.)"""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE, 0
    except (OSError, AttributeError):
        pass


if __name__ == "__main__":
    _not_dumpable()
    serve(socket.socket(fileno=int(sys.argv[1])))
