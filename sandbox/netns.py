"""Outbound-only network for a sandbox that has the network (``SandboxLimits.network``).

A task's declared ``[prepare] network`` and the requirements build (:mod:`sandbox.pyenv`) once
ran in the host's own network namespace: the host's loopback services, its abstract unix
sockets and its ``/proc/net`` were theirs. Now such a sandbox keeps a network namespace of its
own, like every other one, and user-mode NAT joins that namespace to the outside: a process
on the host (``slirp4netns``) holds the namespace's tap device and turns each connection
made inside into an ordinary socket of its own. What the sandbox sees:

* an interface with ``10.0.2.100/24``, a default route through ``10.0.2.2`` and a DNS
  forwarder at ``10.0.2.3`` (the sandbox's ``/etc/resolv.conf`` names it: :func:`resolv_conf`);
* the outside, as the host's non-loopback addresses reach it;
* **not** the host's loopback: ``--disable-host-loopback`` refuses ``10.0.2.2`` (which would
  otherwise be the host's ``127.0.0.1``) and the host's loopback addresses themselves; the
  sandbox's ``127.0.0.1`` is its own. Abstract unix sockets belong to a network namespace, so
  the host's are out of sight, and ``/proc/net`` shows the namespace's own tables.

The one thing through the host's loopback is DNS: the forwarder at ``10.0.2.3`` asks the host's
resolvers, which may live on loopback (``systemd-resolved``), on port 53 only. A proxy or a
package index listening only on the host's loopback is therefore *unreachable* from a sandbox:
make it listen on a non-loopback address (slirp4netns cannot open a single loopback port; it
can only open the whole loopback, which is what this design refuses).

slirp4netns runs with ``--enable-sandbox`` (its own mount namespace, no capabilities once the
tap device is open) and ``--enable-seccomp``: it parses packets the sandbox writes. It is
Debian's ``slirp4netns`` package. ``pasta`` (Debian's ``passt``) does the same job and can
forward a single loopback port, but the version Debian 12 ships (2023-03 snapshot) could not
carry TCP for a namespace it attached to here, so it is not used. Without slirp4netns a
sandbox with the network does not open (:class:`NatMissing`): never a silent fallback to the
host's network, nor to none.
"""

from __future__ import annotations

import os
import select
import shutil
import subprocess
import tempfile
import time
from functools import lru_cache
from pathlib import Path

from sandbox.base import SandboxError

GATEWAY = "10.0.2.2"
DNS = "10.0.2.3"
READY_SECONDS = 10.0  # for slirp4netns to configure the namespace's interface
FIND_SECONDS = 10.0  # for bubblewrap to make the namespace's first process


class NatMissing(SandboxError):
    """No user-mode NAT tool on this machine: a sandbox with the network cannot open."""


def nat_tool() -> str | None:
    """The ``slirp4netns`` binary, or None."""
    return shutil.which("slirp4netns")


@lru_cache(maxsize=1)
def resolv_conf() -> Path:
    """A ``resolv.conf`` naming the NAT's DNS forwarder, in a folder private to this process,
    bind-mounted read-only as a sandbox's ``/etc/resolv.conf``."""
    folder = Path(tempfile.mkdtemp(prefix="labcoat-net-"))
    folder.chmod(0o755)  # the sandbox's uid (local) and the engine (docker) read the file
    path = folder / "resolv.conf"
    path.write_text(f"nameserver {DNS}\noptions edns0\n")
    path.chmod(0o644)
    return path


class Nat:
    """slirp4netns attached to the network namespace of process ``pid`` (outbound only),
    running until :meth:`close`."""

    def __init__(self, pid: int) -> None:
        tool = nat_tool()
        if tool is None:
            raise NatMissing(
                "this sandbox needs outbound network (a task's [prepare] network, or building "
                "its [python] requirements from the index), which labcoat gives through "
                "user-mode NAT, and slirp4netns is not installed: `apt-get install slirp4netns` "
                "(or build with LABCOAT_OFFLINE=1 from wheel folders)")
        ready_r, ready_w = os.pipe()
        self._exit_r, self._exit_w = os.pipe()  # slirp4netns exits once this closes
        try:
            self.proc = subprocess.Popen(
                [tool, "--configure", "--mtu=65520", "--disable-host-loopback",
                 "--enable-sandbox", "--enable-seccomp", "--ready-fd", str(ready_w),
                 "--exit-fd", str(self._exit_r), str(pid), "tap0"],
                pass_fds=(ready_w, self._exit_r), stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
        except OSError as err:
            for fd in (ready_r, ready_w, self._exit_r, self._exit_w):
                os.close(fd)
            raise SandboxError(f"cannot start slirp4netns: {err}") from err
        os.close(ready_w)
        os.close(self._exit_r)
        try:
            self._wait_ready(ready_r)
        except BaseException:
            self.close()
            raise
        finally:
            os.close(ready_r)

    def _wait_ready(self, ready: int) -> None:
        if select.select([ready], [], [], READY_SECONDS)[0] and os.read(ready, 1) == b"1":
            return
        code = self.proc.poll()
        said = self.proc.stderr.read().decode(errors="replace")[-400:] if code is not None else ""
        raise SandboxError("slirp4netns could not give the sandbox its network "
                           f"({'exit ' + str(code) if code is not None else 'no answer'}): {said}")

    def close(self) -> None:
        """Stop the NAT; idempotent."""
        if self._exit_w >= 0:
            os.close(self._exit_w)
            self._exit_w = -1
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        if self.proc.stderr:
            self.proc.stderr.close()


def namespace_child(parent: int, timeout: float = FIND_SECONDS) -> int:
    """The process under ``parent`` (bubblewrap) in a network namespace other than this
    process's (the sandbox's own, which the NAT attaches to), once it runs a program other
    than bubblewrap: bubblewrap sets the namespace's loopback up before it execs the command,
    and its netlink requests fail ("Failed RTM_NEWADDR") if the NAT configures the namespace
    at the same time."""
    own = os.readlink("/proc/self/ns/net")
    deadline = time.monotonic() + timeout
    while True:
        try:
            kids = Path(f"/proc/{parent}/task/{parent}/children").read_text().split()
            bwrap = os.readlink(f"/proc/{parent}/exe")
        except OSError:
            kids = []
        for kid in kids:
            try:
                if (os.readlink(f"/proc/{kid}/ns/net") != own
                        and os.readlink(f"/proc/{kid}/exe") != bwrap):
                    return int(kid)
            except OSError:
                continue
        if time.monotonic() > deadline or not Path(f"/proc/{parent}").exists():
            raise SandboxError("the sandbox's namespace did not start (no process in a network "
                               "namespace of its own under bubblewrap)")
        time.sleep(0.002)
