"""How a task's sandboxes are configured: its limits and the code mounted into them.

Both the Environment (the run's sandbox) and scoring (a fresh sandbox per phase) open
sandboxes for a task; the configuration lives here, below both, so that scoring never has to
import the Environment to get it.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from environments.task.spec import TaskSpec
from methods.registry import METHODS_DIR
from sandbox import CODE_TARGET, Mount, SandboxError, SandboxLimits, caps
from sandbox.base import PythonEnv
from sandbox.pyenv import find_links, offline

PYTHON_ENV = "LABCOAT_PYTHON"
"""The interpreter every sandbox of this process runs the task's code with (``--python``)."""
DEVICE_ENV = "LABCOAT_DEVICE"
"""What that code sees: ``cpu``, ``cuda`` or ``cuda:N`` (``--device``)."""


class Runtime(BaseModel):
    """The interpreter and the device a run's code runs with (``--python``, ``--device``;
    None: the backend's own). Stored in ``run.json``, so that continuing the run or scoring it
    later uses the run's own, whatever the later process was given."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    python: str | None = Field(None, description="a host interpreter's absolute path")
    device: str | None = Field(None, pattern=r"^(cpu|cuda(:[0-9]+)?)$")

    def describe(self) -> str:
        parts = [f"--python {self.python}" if self.python else "", f"--device {self.device}" if self.device else ""]
        return " ".join(p for p in parts if p) or "the backend's own Python and no device flag"


def current_runtime() -> Runtime:
    """The runtime this process's sandboxes use now (what ``--python``/``--device`` set)."""
    try:
        return Runtime(python=os.environ.get(PYTHON_ENV) or None, device=os.environ.get(DEVICE_ENV) or None)
    except ValidationError as err:
        raise SandboxError(f"${DEVICE_ENV} must be cpu, cuda or cuda:N, not "
                           f"{os.environ.get(DEVICE_ENV)!r}") from err


def set_runtime(runtime: Runtime) -> None:
    """Every sandbox this process opens from now on uses ``runtime`` (and so do the processes
    it starts: a batch's workers)."""
    for name, value in ((PYTHON_ENV, runtime.python), (DEVICE_ENV, runtime.device)):
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


@contextmanager
def using_runtime(runtime: Runtime) -> Iterator[None]:
    """``runtime`` for what runs inside, then the process's own again."""
    before = current_runtime()
    set_runtime(runtime)
    try:
        yield
    finally:
        set_runtime(before)


def runtime_note(recorded: Runtime, given: Runtime) -> str | None:
    """A sentence when a command was given another runtime than the run's (which it uses)."""
    if given == Runtime() or given == recorded:
        return None
    return (f"the run was started with {recorded.describe()}: it goes on with that, not with "
            f"{given.describe()} (start a new run, or --fork it, to change them)")


def code_mounts() -> list[Mount]:
    """The host's ``methods`` package, mounted read-only so the sandbox runs the same code."""
    return [Mount(source=METHODS_DIR, target=f"{CODE_TARGET}/methods")]


def sandbox_limits(task: TaskSpec) -> SandboxLimits:
    """The task's ``[limits]`` as the sandbox enforces them: a write past ``disk_mb`` in one
    file, in all files together, or past ``max_files`` files, fails while the command runs.
    Refused (:class:`sandbox.caps.LimitRefused`) above this machine's ceilings, which the
    person sets (:mod:`sandbox.caps`): a task folder cannot size the host's disk or kernel."""
    lim = task.limits
    limits = SandboxLimits(timeout=lim.exec_timeout, memory_mb=lim.memory_mb, cpus=lim.cpus,
                           pids=lim.pids, output_bytes=lim.output_bytes, file_mb=lim.disk_mb,
                           disk_mb=lim.disk_mb, max_files=lim.max_files,
                           python_env=python_env(task))
    root = getattr(task, "root", None)
    caps.check(limits, f"{root}/task.toml" if root else "the task's")
    return limits


def python_env(task: TaskSpec) -> PythonEnv:
    """The Python the task's commands, eval.py and prepare.py run with: its ``[python]``
    requirements (built once and cached in ``$LABCOAT_HOME/pyenvs``, from the index or the
    wheel folders), over the interpreter ``$LABCOAT_PYTHON`` names, on ``$LABCOAT_DEVICE``
    (what ``--python`` and ``--device`` set for the process)."""
    from environments.task.home import labcoat_home

    home = labcoat_home()
    wanted = task.python_requirements
    runtime = current_runtime()
    return PythonEnv(python=runtime.python, requirements=tuple(wanted),
                     find_links=find_links(home) if wanted else (), offline=offline(),
                     cache=home / "pyenvs", device=runtime.device)
