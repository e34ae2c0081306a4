"""Per-command cgroups (v1 or v2) for memory, CPU and process caps, where writable.

rlimits cannot cap a process tree's memory or process count when the host runs as root (root
is exempt from RLIMIT_NPROC), and cannot see a daemon that left the process group. A cgroup
can: it caps the tree, reports OOM kills, and lists every process to kill at the end.
"""

from __future__ import annotations

import os
import signal
import time
import uuid
from pathlib import Path

ROOT = Path("/sys/fs/cgroup")


def _own_path(controller: str) -> str:
    """This process's cgroup path for a v1 controller ('' key for v2)."""
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        if controller in controllers.split(","):
            return path
    return "/"


def _v2() -> bool:
    return (ROOT / "cgroup.controllers").exists()


class CommandCgroup:
    """One throw-away cgroup per command. ``join()`` runs in the child before exec."""

    def __init__(self, memory_bytes: int, cpus: float, pids: int) -> None:
        self.name = f"labcoat-{uuid.uuid4().hex[:12]}"
        self.dirs: dict[str, Path] = {}
        if _v2():
            base = ROOT / _own_path("").lstrip("/")
            d = base / self.name
            d.mkdir()
            self.dirs["unified"] = d
            self._write(d / "memory.max", memory_bytes)
            self._write(d / "memory.swap.max", 0, required=False)
            self._write(d / "pids.max", pids)
            self._write(d / "cpu.max", f"{int(cpus * 100000)} 100000", required=False)
        else:
            for ctrl in ("memory", "pids", "cpu"):
                d = ROOT / ctrl / _own_path(ctrl).lstrip("/") / self.name
                d.mkdir()
                self.dirs[ctrl] = d
            self._write(self.dirs["memory"] / "memory.limit_in_bytes", memory_bytes)
            self._write(self.dirs["memory"] / "memory.memsw.limit_in_bytes", memory_bytes,
                        required=False)
            self._write(self.dirs["pids"] / "pids.max", pids)
            self._write(self.dirs["cpu"] / "cpu.cfs_period_us", 100000)
            self._write(self.dirs["cpu"] / "cpu.cfs_quota_us", int(cpus * 100000))

    @staticmethod
    def _write(path: Path, value: object, required: bool = True) -> None:
        try:
            path.write_text(str(value))
        except OSError:
            if required:
                raise

    def join(self) -> None:
        """Move the calling process into every controller (called between fork and exec)."""
        pid = str(os.getpid())
        for d in self.dirs.values():
            with open(d / "cgroup.procs", "w") as f:
                f.write(pid)

    def pids(self) -> set[int]:
        found: set[int] = set()
        for d in self.dirs.values():
            try:
                found.update(int(p) for p in (d / "cgroup.procs").read_text().split())
            except OSError:
                pass
        return found

    def kill_all(self) -> None:
        """SIGKILL every process in the group, repeating while forks race the kill."""
        for _ in range(50):
            pids = self.pids()
            if not pids:
                return
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            time.sleep(0.02)

    def oom_killed(self) -> bool:
        if "unified" in self.dirs:
            events = self.dirs["unified"] / "memory.events"
            text = events.read_text() if events.exists() else ""
        else:
            text = (self.dirs["memory"] / "memory.oom_control").read_text()
        for line in text.splitlines():
            key, _, value = line.partition(" ")
            if key == "oom_kill" and int(value or 0) > 0:
                return True
        return False

    def remove(self) -> None:
        self.kill_all()
        for d in self.dirs.values():
            for _ in range(50):
                try:
                    d.rmdir()
                    break
                except OSError:
                    time.sleep(0.02)


def cgroups_usable() -> bool:
    """Whether a command cgroup can be made here (tried once, for real)."""
    try:
        cg = CommandCgroup(64 << 20, 1.0, 16)
    except OSError:
        return False
    cg.remove()
    return True
