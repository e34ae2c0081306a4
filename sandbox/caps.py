"""Ceilings on what a task may ask of this machine, and what the sandbox here cannot cap.

A task folder's ``[limits]`` are the folder author's wishes, not the person's: ``disk_mb =
200000`` once made a 210 GB quota image on a disk with 71 GB free, and ``pids = 10000000``
ended labcoat with the kernel's bare ``[Errno 22] Invalid argument``. So every limit that
takes a machine resource has a ceiling the person controls: by default what the machine has
(:func:`machine_ceilings`), each one overridable by an environment variable
(:data:`CEILING_ENV`); a task asking for more is refused before any sandbox opens, with a
message that names the limit, the ceiling, where the ceiling came from and how to change it
(:func:`check`). Limits are never silently lowered: a task run under other limits than it
declared would be scored under conditions nobody chose.

The other half is honesty about what is enforced: :func:`unenforced_note` turns a backend's
:class:`~sandbox.base.Isolation` into the one line ``labcoat run`` prints when a cap the task
declares is not enforced here (as a non-root user, no writable cgroup: no process-count or
CPU cap, memory only through ``RLIMIT_DATA``; no disk quota).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from sandbox.base import Isolation, SandboxError, SandboxLimits

CEILING_ENV = {"disk_mb": "LABCOAT_MAX_DISK_MB", "memory_mb": "LABCOAT_MAX_MEMORY_MB",
               "pids": "LABCOAT_MAX_PIDS"}
"""The person's own ceiling for each limit, in the limit's unit (MB, MB, processes)."""
DISK_SHARE = 0.9  # of the free disk where quota images go: the rest is the host's
PID_SHARE = 0.5  # of the kernel's pid and thread limits: the host keeps room to act
INODE_BYTES = 256  # an ext4 inode, which the quota image holds for each of max_files


class LimitRefused(SandboxError, ValueError):
    """A task's limit above this machine's ceiling (the message says which, and how to raise
    it). A :class:`SandboxError` (no sandbox can open with it) and a ``ValueError``, like the
    task folder's other errors (``TaskError``): every command that opens a task's sandbox
    says it as one line."""


@dataclass(frozen=True)
class Ceiling:
    value: int
    source: str  # where it came from, for the message


def _free_mb(where: Path) -> int:
    """Free MB (for an unprivileged writer) on the filesystem holding ``where`` or its
    nearest existing parent."""
    while not where.exists() and where != where.parent:
        where = where.parent
    st = os.statvfs(where)
    return (st.f_bavail * st.f_frsize) >> 20


def _read_int(path: str, default: int) -> int:
    try:
        return int(Path(path).read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return default


def _memory_mb() -> int:
    for line in _read("/proc/meminfo").splitlines():
        if line.startswith("MemTotal:"):
            return int(line.split()[1]) >> 10
    return 1 << 20


def _read(path: str) -> str:
    try:
        return Path(path).read_text()
    except OSError:
        return ""


def machine_ceilings() -> dict[str, Ceiling]:
    """Each ceiling: the person's (:data:`CEILING_ENV`) where set, else the machine's."""
    from sandbox import quota

    disk_at = quota.IMAGE_DIR
    pid_max = _read_int("/proc/sys/kernel/pid_max", 32768)
    threads = _read_int("/proc/sys/kernel/threads-max", pid_max)
    found = {
        "disk_mb": Ceiling(int(_free_mb(disk_at) * DISK_SHARE),
                           f"{DISK_SHARE:.0%} of the disk free at {disk_at}"),
        "memory_mb": Ceiling(_memory_mb(), "this machine's memory"),
        "pids": Ceiling(int(min(pid_max, threads) * PID_SHARE),
                        f"{PID_SHARE:.0%} of the kernel's pid_max/threads-max"),
    }
    for name, env in CEILING_ENV.items():
        given = os.environ.get(env, "").strip()
        if not given:
            continue
        if not given.isdigit() or int(given) < 1:
            raise LimitRefused(f"${env} must be a whole number above 0, not {given!r}")
        found[name] = Ceiling(int(given), f"${env}")
    return found


def check(limits: SandboxLimits, where: str) -> None:
    """Refuse ``limits`` (a task's, declared in ``where``) if any is above its ceiling."""
    ceilings = machine_ceilings()
    inodes_mb = (limits.max_files * INODE_BYTES) >> 20  # the quota image holds them too
    asked = {"disk_mb": (limits.disk_mb, limits.disk_mb + inodes_mb),
             "memory_mb": (limits.memory_mb, limits.memory_mb), "pids": (limits.pids, limits.pids)}
    over = []
    for name, (declared, needs) in asked.items():
        ceiling = ceilings[name]
        if needs > ceiling.value:
            what = f"{name} = {declared}" + (f" (with max_files = {limits.max_files}'s inode "
                                             f"table, {needs})" if declared <= ceiling.value else "")
            change = "" if ceiling.source.startswith("$") else f"; set ${CEILING_ENV[name]} to change it"
            over.append(f"{what} is above this machine's ceiling of {ceiling.value} "
                        f"({ceiling.source}{change})")
    if over:
        raise LimitRefused(f"{where} [limits]: " + "; ".join(over) + ". Lower the task's "
                           "limits, or raise the ceiling if this machine really has room.")


def unenforced(report: Isolation) -> list[str]:
    """The caps a task's ``[limits]`` declare that ``report``'s backend does not enforce."""
    gaps = []
    if not report.pids:
        gaps.append("pids (process count)")
    if not report.cpu:
        gaps.append("cpus")
    if not report.pids and not report.cpu:  # no cgroup: rlimits alone
        gaps.append("memory of the whole process tree (each process's RLIMIT_DATA only)")
    if report.disk_quota and not report.disk_quota.startswith("enforced"):
        gaps.append(f"disk_mb and max_files ({report.disk_quota}; each file is still capped)")
    return gaps


def unenforced_note(report: Isolation) -> str | None:
    """One line for ``labcoat run``: which caps the sandbox cannot enforce here, and why."""
    gaps = unenforced(report)
    if not gaps:
        return None
    why = " (no writable cgroup: run as root, or give labcoat a delegated cgroup)" \
        if not report.pids else ""
    return (f"sandbox {report.backend}: NOT enforced here: {'; '.join(gaps)}{why}. "
            "`labcoat sandbox check` says more.")


def scratch_mb(limits: SandboxLimits) -> int:
    """The size of each of a sandbox's memory-backed scratch folders (``/tmp``, ``/dev/shm``):
    files written there are files too, so no more than ``disk_mb``, and they are held in
    memory, so no more than ``memory_mb``. Without a size a tmpfs takes half the host's
    memory, past both caps wherever no cgroup charges it (a task's prepare.py once wrote
    1,100 MB past the default disk cap)."""
    return max(1, min(limits.memory_mb, limits.disk_mb))
