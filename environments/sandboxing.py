"""How a task's sandboxes are configured: its limits and the code mounted into them.

Both the Environment (the run's sandbox) and scoring (a fresh sandbox per phase) open
sandboxes for a task; the configuration lives here, below both, so that scoring never has to
import the Environment to get it.
"""

from __future__ import annotations

from environments.task import TaskSpec
from methods.registry import METHODS_DIR
from sandbox import CODE_TARGET, Mount, SandboxLimits


def code_mounts() -> list[Mount]:
    """The host's ``methods`` package, mounted read-only so the sandbox runs the same code."""
    return [Mount(source=METHODS_DIR, target=f"{CODE_TARGET}/methods")]


def sandbox_limits(task: TaskSpec) -> SandboxLimits:
    """The task's ``[limits]`` as the sandbox enforces them: a write past ``disk_mb`` in one
    file, in all files together, or past ``max_files`` files, fails while the command runs."""
    lim = task.limits
    return SandboxLimits(timeout=lim.exec_timeout, memory_mb=lim.memory_mb, cpus=lim.cpus,
                         pids=lim.pids, output_bytes=lim.output_bytes, file_mb=lim.disk_mb,
                         disk_mb=lim.disk_mb, max_files=lim.max_files)
