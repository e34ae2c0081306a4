"""Throw-away cgroups (v1 or v2) for memory, CPU and process caps, where writable.

A bubblewrap sandbox holds one for its namespace (every command it runs lives inside); a plain
subprocess sandbox makes one per command.

rlimits cannot cap a process tree's memory or process count when the host runs as root (root
is exempt from RLIMIT_NPROC), and cannot see a daemon that left the process group. A cgroup
can: it caps the tree, reports OOM kills, and lists every process to kill at the end (or, on
cgroup v2, kills them all itself).
"""

from __future__ import annotations

import errno
import logging
import os
import time
import uuid
from pathlib import Path

from sandbox.base import SandboxError
from sandbox.supervisor import kill_until_gone

log = logging.getLogger(__name__)

ROOT = Path("/sys/fs/cgroup")


class CgroupError(SandboxError, OSError):
    """A cap the kernel would not set: a :class:`SandboxError` (what callers say as one line)
    and an ``OSError``, as the cgroup's other failures are."""


def _own_path(controller: str) -> str:
    """This process's cgroup path for a v1 controller ('' key for v2)."""
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        if controller in controllers.split(","):
            return path
    return "/"


def _v2() -> bool:
    return (ROOT / "cgroup.controllers").exists()


class Cgroup:
    """A cgroup with the given caps, made now and removed by :meth:`remove`."""

    def __init__(self, memory_bytes: int, cpus: float, pids: int) -> None:
        # The owner's pid and start time are in the name, so that a later sandbox can tell a
        # group left by a host killed with SIGKILL (nothing removes it then) and remove it.
        self.name = f"labcoat-{os.getpid()}-{owner_start_time(os.getpid())}-{uuid.uuid4().hex[:8]}"
        self.dirs: dict[str, Path] = {}
        try:
            self._make(memory_bytes, cpus, pids)
        except BaseException:
            self.remove()
            raise

    def _make(self, memory_bytes: int, cpus: float, pids: int) -> None:
        if _v2():
            base = ROOT / _own_path("").lstrip("/")
            remove_stale(base)
            d = base / self.name
            d.mkdir()
            self.dirs["unified"] = d
            self._write(d / "memory.max", memory_bytes)
            self._write(d / "memory.swap.max", 0, required=False)
            self._write(d / "pids.max", pids)
            self._write(d / "cpu.max", f"{int(cpus * 100000)} 100000", required=False)
        else:
            for ctrl in ("memory", "pids", "cpu"):
                remove_stale(ROOT / ctrl / _own_path(ctrl).lstrip("/"))
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
        """Set one knob; a refused required one is a :class:`CgroupError` saying which knob and
        value (never the kernel's bare errno: ``pids.max`` refuses values past its limit)."""
        try:
            path.write_text(str(value))
        except OSError as err:
            if required:
                raise CgroupError(f"the sandbox's cgroup refused {path.name} = {value}: "
                                  f"{err.strerror or err}") from err

    def pids(self) -> set[int]:
        found: set[int] = set()
        for d in self.dirs.values():
            try:
                found.update(int(p) for p in (d / "cgroup.procs").read_text().split())
            except OSError:
                pass
        return found

    def kill_all(self) -> bool:
        """SIGKILL every process in the group; True once ``cgroup.procs`` lists none.

        cgroup v2's ``cgroup.kill`` (Linux 5.14+) kills the group and its subgroups at once,
        forks racing it included; elsewhere (v1, older kernels) the listed processes are
        killed again and again while forks race the kill. ``cgroup.procs`` lists a thread
        group whose leader thread exited while others run, so neither misses one; and both
        end only when it lists nothing."""
        unified = self.dirs.get("unified")
        if unified is not None and (unified / "cgroup.kill").exists():
            try:
                (unified / "cgroup.kill").write_text("1")
            except OSError:
                pass
        return kill_until_gone(self.pids, 1000, 0.005)

    def oom_kills(self) -> int:
        """OOM kills inside this cgroup so far (compare before and after a command)."""
        try:
            if "unified" in self.dirs:
                text = (self.dirs["unified"] / "memory.events").read_text()
            else:
                text = (self.dirs["memory"] / "memory.oom_control").read_text()
        except OSError:
            return 0
        for line in text.splitlines():
            key, _, value = line.partition(" ")
            if key == "oom_kill":
                return int(value or 0)
        return 0

    def remove(self) -> None:
        if not self.kill_all():
            log.error("processes in cgroup %s would not die; it is left behind", self.name)
        for d in self.dirs.values():
            for _ in range(50):
                try:
                    d.rmdir()
                    break
                except OSError:
                    time.sleep(0.02)


def owner_start_time(pid: int) -> str:
    """Clock ticks after boot at which labcoat process ``pid`` started ('' if gone): tells a
    reused pid. A process killed but not yet reaped (a zombie: where nobody reaps orphans, as
    in some containers, it stays one) is gone: nothing of it can still hold what it owned.
    Only for labcoat's own (trusted) host processes, never to judge what a command left."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    except OSError:
        return ""
    return "" if len(fields) < 20 or fields[0] in ("Z", "X") else fields[19]


def remove_stale(base: Path) -> None:
    """Remove the empty groups of labcoat processes that no longer run (killed hosts)."""
    try:
        entries = list(base.glob("labcoat-*-*-*"))
    except OSError:
        return
    for d in entries:
        _, pid, started, _ = d.name.split("-", 3)
        if not pid.isdigit() or owner_start_time(int(pid)) == started:
            continue
        for _ in range(25):  # an emptied group can stay busy for a moment while it winds down
            try:
                d.rmdir()  # only ever succeeds on an empty group: a live one is left alone
                break
            except OSError as err:
                if err.errno != errno.EBUSY:
                    break
                time.sleep(0.02)


def cgroups_usable() -> bool:
    """Whether a command cgroup can be made here (tried once, for real)."""
    try:
        cg = Cgroup(64 << 20, 1.0, 16)
    except OSError:
        return False
    cg.remove()
    return True
