"""The host's handle on a long-lived bubblewrap namespace that runs a local sandbox's commands.

One namespace per sandbox (so per run), started at the first command: bubblewrap then runs
:mod:`sandbox.supervisor`, which forks every later command inside the same namespaces. The
namespace's processes share one cgroup holding the sandbox's memory, CPU and process caps;
a command's OOM kill shows as a new ``oom_kill`` event of that cgroup, and whatever a command
leaves running is killed by the supervisor before its result comes back (which the host then
checks against the cgroup's list of processes).
"""

from __future__ import annotations

import logging
import os
import select
import signal
import socket
import subprocess
import threading
import weakref
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from pathlib import Path

from sandbox import netns, supervisor
from sandbox.base import SandboxError
from sandbox.capture import CappedBuffer, drain
from sandbox.cgroups import Cgroup

log = logging.getLogger(__name__)

SUPERVISOR_SOURCE = Path(supervisor.__file__).read_text()
"""What ``python -I -S -c`` runs as a sandbox's PID 1, on both backends."""
KILL_GRACE = 5.0  # seconds the supervisor gets to kill a timed-out command and answer


class NamespaceGone(SandboxError):
    """The supervisor is not there to take a request (it died, or was never started)."""


class SupervisorChannel(ABC):
    """The host's side of the supervisor protocol over a connected socket: send a command, wait
    for its status (killing it on a timeout). The backends differ only in how the supervisor
    was started and how it ends: a bubblewrap namespace here, a container's init in docker."""

    sock: socket.socket
    cgroup: Cgroup | None = None

    @property
    @abstractmethod
    def alive(self) -> bool: ...

    @abstractmethod
    def why(self) -> str:
        """Why the supervisor is gone, for the log and the error (one line)."""

    @abstractmethod
    def close(self) -> None: ...

    def submit(self, argv: Sequence[str], env: Mapping[str, str], cwd: str, fds: list[int]) -> None:
        """Start a command with ``fds`` as its stdin, stdout and stderr."""
        try:
            supervisor.send_msg(self.sock, {"argv": list(argv), "env": dict(env), "cwd": cwd}, fds)
        except OSError as err:
            raise NamespaceGone(f"the sandbox's supervisor is gone: {self.why()}") from err

    def result(self, timeout: float) -> tuple[int | None, bool]:
        """``(wait status, timed_out)``; the status is None when the supervisor died meanwhile.

        On timeout the supervisor kills the command (and all it started); if it does not answer
        within :data:`KILL_GRACE`, the caller tears the whole sandbox down.
        """
        status = self._answer(timeout)
        if status is not _NO_ANSWER:
            return status, False
        try:
            supervisor.send_msg(self.sock, {"op": "kill"})
        except OSError:
            return None, True
        status = self._answer(KILL_GRACE)
        return (None if status is _NO_ANSWER else status), True

    def _answer(self, timeout: float) -> int | None | object:
        ready, _, _ = select.select([self.sock], [], [], timeout)
        if not ready:
            return _NO_ANSWER
        try:
            msg, fds = supervisor.recv_msg(self.sock)
        except (OSError, ValueError):
            msg, fds = None, []
        for fd in fds:
            os.close(fd)
        if msg is None:  # the caller reads the cgroup's OOM count, then closes
            log.warning("the sandbox's supervisor died: %s", self.why())
            return None
        return int(msg["status"])

    def oom_kills(self) -> int:
        """OOM kills in the sandbox's cgroup so far (0 without one)."""
        return self.cgroup.oom_kills() if self.cgroup is not None else 0


class Namespace(SupervisorChannel):
    """bubblewrap + supervisor, alive until :meth:`close` (or until this object is collected)."""

    def __init__(self, launch: Sequence[str], python: str, *, env: Mapping[str, str],
                 cwd: Path, cgroup: Cgroup | None,
                 drop_to: tuple[int, int] | None = None, outbound: bool = False) -> None:
        """``outbound``: the namespace's network gets user-mode NAT (:mod:`sandbox.netns`)
        before this returns, so before any command runs; it is stopped with the namespace."""
        host, inner = socket.socketpair()
        ids = [str(i) for i in drop_to] if drop_to else []
        try:
            self.proc, self._keeper = _spawn_kept(
                [*launch, python, "-I", "-S", "-c", SUPERVISOR_SOURCE, str(inner.fileno()), *ids],
                pass_fds=(inner.fileno(),), stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=dict(env), cwd=cwd,
                start_new_session=True)
        except BaseException:
            host.close()
            raise
        finally:
            inner.close()
        self.sock = host
        self.cgroup = cgroup
        self.errors = CappedBuffer(8192)  # bubblewrap's or the supervisor's own complaints
        drain(os.dup(self.proc.stderr.fileno()), self.errors)
        self.proc.stderr.close()
        self._nats: list[netns.Nat] = []  # filled below; stopped by the finalizer
        self._finalizer = weakref.finalize(self, _destroy, self.sock, self.proc, cgroup,
                                           self._keeper, self._nats)
        if outbound:
            try:
                self._nats.append(netns.Nat(netns.namespace_child(self.proc.pid)))
            except BaseException as err:
                self.close()
                if isinstance(err, SandboxError) and self.proc.returncode not in (None, 0):
                    raise SandboxError(f"{err} (bubblewrap: {self.why()})") from err
                raise

    @property
    def alive(self) -> bool:
        return self._finalizer.alive and self.proc.poll() is None

    def why(self) -> str:
        code = self.proc.poll()
        said = self.errors.text().strip()[-500:]
        return f"exit code {code}" + (f": {said}" if said else "") if code is not None else "running"

    def close(self) -> None:
        """End the namespace and everything in it; idempotent."""
        self._finalizer()

    def result(self, timeout: float) -> tuple[int | None, bool]:
        """As :meth:`SupervisorChannel.result`, checked from outside: once the supervisor has
        answered, its cgroup holds nothing but bubblewrap and the supervisor. Were anything
        else left (the supervisor empties the namespace before it answers), the namespace is
        ended, and the next command gets a fresh one."""
        status, timed_out = super().result(timeout)
        left = self.strays()
        if left:
            log.error("%d process(es) outlived a command in the sandbox; ending its namespace",
                      len(left))
            self.close()
        return status, timed_out

    def strays(self) -> set[int]:
        """Processes in the namespace's cgroup other than bubblewrap and the supervisor (its
        child); empty without a cgroup."""
        if self.cgroup is None or not self.alive:
            return set()
        return self.cgroup.pids() - {self.proc.pid, *_children(self.proc.pid)}


_NO_ANSWER = object()


def _spawn_kept(argv: list[str], **popen) -> tuple[subprocess.Popen, threading.Event]:
    """Popen from a thread that lives as long as the namespace.

    bubblewrap's ``--die-with-parent`` is the kernel's parent-death signal, which fires when
    the *thread* that started it exits: started from a short-lived worker (the TUI runs each
    of a person's steps in one), the namespace would die with that worker. The returned event
    lets the keeper thread end, once the namespace is gone.
    """
    started: list[subprocess.Popen | BaseException] = []
    ready, release = threading.Event(), threading.Event()

    def keep() -> None:
        try:
            started.append(subprocess.Popen(argv, **popen))
        except BaseException as err:  # handed to the caller
            started.append(err)
            return
        finally:
            ready.set()
        release.wait()

    threading.Thread(target=keep, name="labcoat-sandbox-namespace", daemon=True).start()
    ready.wait()
    if isinstance(started[0], BaseException):
        raise started[0]
    return started[0], release


def _destroy(sock: socket.socket, proc: subprocess.Popen, cgroup: Cgroup | None,
             keeper: threading.Event, nats: list[netns.Nat]) -> None:
    """Kill the namespace outright: its init's death takes every process in it along."""
    try:
        for nat in nats:
            nat.close()
        sock.close()  # a supervisor that outlives the kill below still sees EOF and exits
        for pid in _children(proc.pid):  # the supervisor, pid 1 inside
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        try:
            proc.wait(timeout=KILL_GRACE)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            proc.wait()
        if cgroup is not None:
            cgroup.remove()  # kills any straggler first
    finally:
        keeper.set()


def _children(pid: int) -> list[int]:
    try:
        return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        pass
    found = []
    for entry in Path("/proc").iterdir():
        try:
            stat = (entry / "stat").read_bytes() if entry.name.isdigit() else b""
        except OSError:
            continue
        fields = stat.rpartition(b")")[2].split()
        if len(fields) > 1 and int(fields[1]) == pid:
            found.append(int(entry.name))
    return found
