"""The host's line to the supervisor that runs as a Docker sandbox's PID 1.

A container's init inherits no descriptor from the host, so the line is made the other way
round: the host listens on a unix socket in a private folder of its own, that one socket file
is bind-mounted read-only into the container, and the supervisor connects to it as soon as it
has made itself unreachable (:func:`sandbox.supervisor.harden`), before any command exists.
The host takes exactly one connection, checks that its peer is the container's init, and
closes the listener and unlinks the file: from then on the name a command can see in the
container leads nowhere (connect is refused, the mount is read-only, there is no folder
around it to write in), and the supervisor answers nobody but the host.

Over the connection the protocol is the bubblewrap namespace's (:mod:`sandbox.namespace`):
argv/env/cwd as JSON with stdin/stdout/stderr as passed descriptors, a ``kill`` on timeout,
the wait status back.
"""

from __future__ import annotations

import os
import shutil
import socket
import struct
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from sandbox.base import SandboxError
from sandbox.namespace import SupervisorChannel

TARGET = "/run/labcoat-supervisor.sock"
"""Where the socket file appears inside the container (the supervisor's argument)."""


class Listener:
    """A one-connection unix listener in a fresh 0700 folder, removed by :meth:`close`."""

    def __init__(self, uid: int, gid: int) -> None:
        # 0700: the host's alone. A socket's path must fit in 108 bytes: a long $TMPDIR yields.
        tmp = tempfile.gettempdir()
        self.folder = Path(tempfile.mkdtemp(prefix="labcoat-sv-",
                                            dir=tmp if len(tmp) < 64 else "/tmp"))
        self.path = self.folder / "s"
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            self.sock.bind(str(self.path))
            self.sock.listen(1)
            # The container's user must be able to connect; the folder keeps everyone else
            # on the host out, and inside the container only this file is mounted.
            if os.getuid() == 0:
                os.chown(self.path, uid, gid)
            os.chmod(self.path, 0o600)
        except BaseException:
            self.close()
            raise

    def accept(self, peer_pid: Callable[[], int], timeout: float) -> socket.socket:
        """The supervisor's connection; ``peer_pid()`` is the container's init as this host
        sees it (0 while it is not running). Anything else that connects is refused."""
        deadline = time.monotonic() + timeout
        self.sock.settimeout(0.05)
        while time.monotonic() < deadline:
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                if peer_pid() == 0:
                    raise SandboxError("the sandbox container stopped before its supervisor "
                                       "connected") from None
                continue
            pid = struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED,
                                                      struct.calcsize("3i")))[0]
            if pid == peer_pid():
                conn.settimeout(None)
                return conn
            conn.close()
            raise SandboxError(f"a process other than the container's init (pid {pid}) "
                               "connected to the supervisor's socket")
        raise SandboxError(f"the sandbox's supervisor did not connect within {timeout:.0f} s")

    def close(self) -> None:
        """No second connection: the listener and its name are gone (idempotent)."""
        self.sock.close()
        shutil.rmtree(self.folder, ignore_errors=True)


class SupervisorLink(SupervisorChannel):
    """A connected supervisor, driven like a bubblewrap namespace's (``submit``, ``result``
    with the kill-on-timeout grace); the container around it is the engine's to end."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock

    @property
    def alive(self) -> bool:
        """False once the supervisor is gone (its end closed) or this end was closed."""
        if self.sock.fileno() < 0:
            return False
        try:
            return self.sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) != b""
        except BlockingIOError:
            return True
        except OSError:
            return False

    def why(self) -> str:
        return "the container's supervisor closed its socket (killed, or out of memory)"

    def close(self) -> None:
        self.sock.close()
