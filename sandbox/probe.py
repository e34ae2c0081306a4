"""What a backend really gives a command here, found by running one in it.

``Isolation`` says what a backend is built to enforce; this asks the machine. ``labcoat sandbox
check`` shows it: the host uid the command ran as (read from the host's /proc, which no user
namespace can dress up), its uid map, which host-global knobs it could write, whether it could
trace PID 1 (or read its memory), whether it could make a user namespace of its own, and whether
it could set up an io_uring.
"""

from __future__ import annotations

import json
import os
import tempfile
import threading
import time
import uuid
from pathlib import Path

from pydantic import BaseModel, Field

from sandbox.base import SandboxLimits

_SCRIPT = """
import ctypes, json, os, sys, time
libc = ctypes.CDLL(None, use_errno=True)
libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
writable = []
for knob in ("kernel/core_pattern", "kernel/modprobe", "vm/overcommit_memory", "kernel/panic"):
    try:
        with open("/proc/sys/" + knob, "rb") as f:
            value = f.read()
        with open("/proc/sys/" + knob, "wb") as f:
            f.write(value)  # the value it had: a successful write changes nothing
        writable.append(knob)
    except OSError:
        pass
traced = libc.ptrace(16, 1, None, None) == 0
if traced:
    libc.ptrace(17, 1, None, None)
try:
    open("/proc/1/mem", "rb").close()
    mem = True
except OSError:
    mem = False
pid = os.fork()
if pid == 0:
    os._exit(0 if libc.unshare(0x10000000) == 0 else 1)
nested = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0
libc.syscall.restype = ctypes.c_long
ring = libc.syscall(425, 8, ctypes.create_string_buffer(120))  # io_uring_setup(8, &params)
if ring >= 0:
    os.close(ring)
fs = os.statvfs(".")  # the workspace's filesystem: its own (the quota image) or the host's
print(json.dumps({"uid": os.getuid(), "uid_map": open("/proc/self/uid_map").read().split(),
                  "proc_sys_writable": writable, "pid1_traceable": traced or mem,
                  "nested_userns": nested, "io_uring": ring >= 0,
                  "workspace_fs": [fs.f_blocks * fs.f_frsize, fs.f_files]}))
sys.stdout.flush()
time.sleep(float(sys.argv[1]))
"""


class Probe(BaseModel):
    """One command's view of its backend. ``host_uids`` are real/effective/saved/fs uids."""

    backend: str
    ran: bool = False
    error: str = ""
    host_uids: list[int] = Field(default_factory=list)
    uid: int | None = None
    uid_map: list[str] = Field(default_factory=list)
    proc_sys_writable: list[str] = Field(default_factory=list)
    pid1_traceable: bool | None = None
    nested_userns: bool | None = None
    io_uring: bool | None = None
    workspace_fs: list[int] = Field(default_factory=list, description="bytes, inodes of the "
                                    "filesystem the command saw its workspace on")
    host_fs: list[int] = Field(default_factory=list, description="the same, as the host sees "
                               "the folder the workspace was made in (equal: no quota)")

    @property
    def contained(self) -> bool:
        return (self.ran and bool(self.host_uids) and 0 not in self.host_uids
                and not self.proc_sys_writable and not self.pid1_traceable
                and not self.nested_userns and not self.io_uring)

    def summary(self) -> str:
        if not self.ran:
            return f"not probed: {self.error}"
        uids = "?" if not self.host_uids else str(self.host_uids[1])
        return (f"runs as host uid {uids} (uid_map {' '.join(self.uid_map) or '?'}); /proc/sys "
                + ("writable: " + ", ".join(self.proc_sys_writable) if self.proc_sys_writable
                   else "read-only")
                + f"; PID 1 {'TRACEABLE' if self.pid1_traceable else 'untraceable'}"
                + f"; nested user namespaces {'ALLOWED' if self.nested_userns else 'refused'}"
                + f"; io_uring {'ALLOWED' if self.io_uring else 'refused'}"
                + f"; {self.quota_line()}")

    def quota_line(self) -> str:
        """Whether the command's workspace was a filesystem of its own (the quota image)."""
        if len(self.workspace_fs) != 2:
            return "disk quota ?"
        size, files = self.workspace_fs
        if self.workspace_fs == self.host_fs:
            return "disk quota NOT enforced (the workspace is the host's filesystem)"
        return f"disk quota enforced (workspace: {size >> 20:,} MB, {files:,} files)"


def _host_uids(marker: str) -> list[int]:
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if marker.encode() not in (entry / "cmdline").read_bytes():
                continue
            status = (entry / "status").read_text()
        except OSError:
            continue
        line = next((x for x in status.splitlines() if x.startswith("Uid:")), "")
        return [int(v) for v in line.split()[1:]]
    return []


def probe(kind: str) -> Probe:
    """Run the probe in a fresh sandbox of ``kind`` over a throw-away workspace."""
    from sandbox.factory import open_sandbox

    marker = f"labcoat-probe-{uuid.uuid4().hex[:8]}"
    found = Probe(backend=kind)
    with tempfile.TemporaryDirectory(prefix="labcoat-probe-") as ws:
        try:
            with open_sandbox(kind, ws, SandboxLimits(timeout=30, memory_mb=256)) as sb:
                result: list = []
                worker = threading.Thread(target=lambda: result.append(
                    sb.exec([sb.python, "-c", _SCRIPT, "1.5", marker])), daemon=True)
                worker.start()
                deadline = time.monotonic() + 20
                while not found.host_uids and worker.is_alive() and time.monotonic() < deadline:
                    found.host_uids = _host_uids(marker)
                    time.sleep(0.02)
                worker.join(30)
        except Exception as err:  # a backend that cannot start says why, and nothing else fails
            found.error = str(err).splitlines()[0][:300] if str(err) else type(err).__name__
            return found
    if not result or not result[0].ok:
        found.error = (result[0].stderr.strip()[-300:] if result else "the probe never ended")
        return found
    data = json.loads(result[0].stdout.splitlines()[0])
    host = os.statvfs(tempfile.gettempdir())
    data["host_fs"] = [host.f_blocks * host.f_frsize, host.f_files]
    return found.model_copy(update={**data, "ran": True})
