"""How a task's sandboxes are configured: its limits and the code mounted into them.

Both the Environment (the run's sandbox) and scoring (a fresh sandbox per phase) open
sandboxes for a task; the configuration lives here, below both, so that scoring never has to
import the Environment to get it.
"""

from __future__ import annotations

import os

from pydantic import ValidationError

from environments.task import TaskSpec
from methods.registry import METHODS_DIR
from sandbox import CODE_TARGET, Mount, SandboxError, SandboxLimits
from sandbox.base import PythonEnv
from sandbox.pyenv import find_links, offline

PYTHON_ENV = "LABCOAT_PYTHON"
"""The interpreter every sandbox of this process runs the task's code with (``--python``)."""
DEVICE_ENV = "LABCOAT_DEVICE"
"""What that code sees: ``cpu``, ``cuda`` or ``cuda:N`` (``--device``)."""


def code_mounts() -> list[Mount]:
    """The host's ``methods`` package, mounted read-only so the sandbox runs the same code."""
    return [Mount(source=METHODS_DIR, target=f"{CODE_TARGET}/methods")]


def sandbox_limits(task: TaskSpec) -> SandboxLimits:
    """The task's ``[limits]`` as the sandbox enforces them: a write past ``disk_mb`` in one
    file, in all files together, or past ``max_files`` files, fails while the command runs."""
    lim = task.limits
    return SandboxLimits(timeout=lim.exec_timeout, memory_mb=lim.memory_mb, cpus=lim.cpus,
                         pids=lim.pids, output_bytes=lim.output_bytes, file_mb=lim.disk_mb,
                         disk_mb=lim.disk_mb, max_files=lim.max_files,
                         python_env=python_env(task))


def python_env(task: TaskSpec) -> PythonEnv:
    """The Python the task's commands, eval.py and prepare.py run with: its ``[python]``
    requirements (built once and cached in ``$LABCOAT_HOME/pyenvs``, from the index or the
    wheel folders), over the interpreter ``$LABCOAT_PYTHON`` names, on ``$LABCOAT_DEVICE``
    (what ``--python`` and ``--device`` set for the process)."""
    from environments.home import labcoat_home

    home = labcoat_home()
    wanted = task.python_requirements
    try:
        return PythonEnv(python=os.environ.get(PYTHON_ENV) or None, requirements=tuple(wanted),
                         find_links=find_links(home) if wanted else (), offline=offline(),
                         cache=home / "pyenvs", device=os.environ.get(DEVICE_ENV) or None)
    except ValidationError as err:
        raise SandboxError(f"${DEVICE_ENV} must be cpu, cuda or cuda:N, not "
                           f"{os.environ.get(DEVICE_ENV)!r}") from err
