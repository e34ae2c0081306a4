"""The one sandbox interface every backend implements.

Everything an actor's code runs goes through :meth:`Sandbox.exec`. The interface speaks in
sandbox paths (``/workspace``, mount targets) so that callers never care whether a backend
really remaps the filesystem (bubblewrap, Docker) or only pretends to (the plain fallback,
where :meth:`Sandbox.path_for` maps a target back to the host path).
"""

from __future__ import annotations

import posixpath
import re
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType

from pydantic import BaseModel, ConfigDict, Field

from sandbox.capture import Tee
from sandbox.fs import WorkspaceFS

WORKDIR = "/workspace"
FILE_LIMIT_ENV = "LABCOAT_FILE_BYTES"
"""How a backend tells the supervisor its commands' file-size cap (it sets RLIMIT_FSIZE)."""
CODE_TARGET = "/opt/labcoat"
"""Where the host's ``methods`` code root is mounted read-only (it is on ``PYTHONPATH``)."""

SECRET_NAME = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|AUTH)", re.I)


class SandboxError(RuntimeError):
    """The sandbox itself failed (not the command inside it): a broken engine, a bad mount."""


class SandboxLost(SandboxError):
    """The sandbox died under a command, and not by anything the command did: its Docker engine
    gone, its container removed or killed from outside, its bubblewrap namespace killed.

    Raised by :meth:`Sandbox.exec` instead of a result, so the step is no observation of the
    actor's: the run ends as an infrastructure failure after its last good step and can be
    continued (``agent.runner.drive``). A backend raises it only once the engine or the
    namespace itself says so (a container that no longer exists or exited on a signal from
    outside, an engine that does not answer, a supervisor killed rather than exiting), never
    on an exit code alone: 137 from a command's own ``kill -9 $$``, its time or memory limit
    stay the command's result."""

    def __init__(self, backend: str, detail: str) -> None:
        super().__init__(f"sandbox lost: {detail}")
        self.backend, self.detail = backend, detail


class SandboxBusy(SandboxError):
    """:meth:`Sandbox.files` waited its time for a running command to end."""


class PythonEnv(BaseModel):
    """The Python a sandbox's commands run with, when not the backend's own: another
    interpreter, packages a task pins over it, the accelerator its code sees. A backend makes
    it real when it opens (:mod:`sandbox.pyenv`: an environment built once per requirements
    hash, in a sandbox of its own, and cached); the default changes nothing."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    python: str | None = Field(None, description="the interpreter: local, a host path mounted "
                               "read-only; docker, a path inside the image")
    requirements: tuple[str, ...] = Field((), description="PEP 508 requirements installed over "
                                          "the interpreter (sandbox.pyenv.requirement_line)")
    find_links: tuple[Path, ...] = Field((), description="folders of wheels pip installs from")
    offline: bool = Field(False, description="the wheel folders only, never the package index")
    cache: Path | None = Field(None, description="where built environments are kept "
                               "($LABCOAT_HOME/pyenvs); needed with requirements")
    device: str | None = Field(None, pattern=r"^(cpu|cuda(:[0-9]+)?)$",
                               description="cpu, cuda or cuda:N; None: the backend's default (no GPU)")


class SandboxLimits(BaseModel):
    """Resource caps applied to every command a sandbox runs."""

    model_config = ConfigDict(extra="forbid")

    timeout: float = Field(600.0, gt=0, description="default wall-clock seconds per command")
    memory_mb: int = Field(4096, ge=16)
    cpus: float = Field(2.0, gt=0)
    pids: int = Field(256, ge=8)
    output_bytes: int = Field(1_000_000, ge=256, description="stdout+stderr kept per command")
    file_mb: int = Field(1024, ge=1, description="largest file a command may write "
                         "(RLIMIT_FSIZE; past it the write fails and SIGXFSZ ends the command)")
    disk_mb: int = Field(1024, ge=1, description="MB the workspace may grow by while the "
                         "sandbox lives (an ext4 image's size, sandbox/quota.py; past it ENOSPC)")
    max_files: int = Field(200_000, ge=16, description="files and folders the workspace may "
                           "gain while the sandbox lives (the image's inode count)")
    network: bool = Field(False, description="commands reach the outside network, outbound "
                          "only (their own network namespace behind user-mode NAT, never the "
                          "host's loopback: sandbox/netns.py): only ever for a task's prepare.py "
                          "that declares [prepare] network and the requirements build")
    pass_env: tuple[str, ...] = Field((), description="names passed to commands although they "
                                      "look like credentials: only ever the ones a task declares "
                                      "for its prepare.py ([prepare] env); actors' sandboxes none")
    python_env: PythonEnv = Field(default_factory=PythonEnv, description="the interpreter, "
                                  "packages and device of the commands (sandbox/pyenv.py)")


class Mount(BaseModel):
    """A host folder made visible inside the sandbox at ``target``."""

    source: Path
    target: str
    read_only: bool = True


class ExecResult(BaseModel):
    """What one command did. ``truncated`` says output beyond the cap was dropped."""

    exit_code: int
    stdout: str = ""
    stderr: str = ""
    seconds: float = 0.0
    timed_out: bool = False
    oom_killed: bool = False
    truncated: bool = False

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out and not self.oom_killed


class Isolation(BaseModel):
    """What a backend actually enforces here, reported by ``labcoat sandbox check``."""

    backend: str
    available: bool
    detail: str = ""
    filesystem: bool = False
    network: bool = False
    env_scrubbed: bool = True
    memory: bool = False
    cpu: bool = False
    pids: bool = False
    process_tree_kill: bool = False
    unprivileged_user: bool = False
    disk_quota: str = Field("not enforced", description="'enforced (ext4 image)' or "
                            "'not enforced: <why>' (sandbox/quota.py)")
    warnings: list[str] = Field(default_factory=list)


def clean_env(extra: Mapping[str, str] | None, cpus: float, pythonpath: str,
              allow: Collection[str] = (), python: str | None = None) -> dict[str, str]:
    """The whole environment a sandboxed command sees: nothing inherited from the host.

    Names that look like credentials are dropped even when a caller passes them explicitly,
    so an API key can never reach an actor's code by accident; ``allow`` (a sandbox's
    ``limits.pass_env``, set only for a task's prepare.py) lets the names a task declared through.
    ``python`` (the sandbox's interpreter, as seen inside) puts its folder first on ``PATH``:
    a task's scripts that run ``python`` or a tool its requirements install (MLAgentBench's
    prepare.py runs ``kaggle``) get the task's environment, not the image's bare one.
    """
    threads = str(max(1, int(cpus)))
    path = "/usr/local/bin:/usr/bin:/bin"
    folder = posixpath.dirname(python) if python else ""
    env = {
        "PATH": f"{folder}:{path}" if folder and folder not in path.split(":") else path,
        "HOME": "/tmp",
        "LANG": "C.UTF-8",
        "PYTHONPATH": pythonpath,
        "PYTHONUNBUFFERED": "1",
        "PYTHONDONTWRITEBYTECODE": "1",
        "MPLBACKEND": "Agg",
        "OMP_NUM_THREADS": threads,
        "MKL_NUM_THREADS": threads,
        "OPENBLAS_NUM_THREADS": threads,
    }
    for name, value in (extra or {}).items():
        if not SECRET_NAME.search(name) or name in allow:
            env[name] = value
    return env


def code_pythonpath(mounts: Sequence[Mount], path_for: Callable[[str], str] = str) -> str:
    """PYTHONPATH for the packages mounted as ``CODE_TARGET/<package>``: their parent folders.

    The workbench mounts ``methods`` at ``/opt/labcoat/methods`` so that the sandbox runs the
    host's own method code; backends that really remap paths get ``/opt/labcoat``.
    """
    roots: list[str] = []
    for m in mounts:
        if m.target.startswith(CODE_TARGET + "/"):
            root = str(Path(path_for(m.target)).parent)
            if root not in roots:
                roots.append(root)
    return ":".join(roots)


class Sandbox(ABC):
    """A place to run commands against one workspace, with limits and no network.

    A sandbox is opened once per run (or per scoring) and used for many commands; backends
    with start-up costs (a container) pay them once. Use it as a context manager.
    """

    backend: str = "abstract"

    def __init__(
        self,
        workspace: str | Path,
        limits: SandboxLimits | None = None,
        mounts: Sequence[Mount] = (),
    ) -> None:
        self.workspace = Path(workspace).resolve()
        if not self.workspace.is_dir():
            raise SandboxError(f"workspace {self.workspace} is not a directory")
        self.limits = limits or SandboxLimits()
        self.mounts = list(mounts)
        # held by every command (a backend's exec) and by :meth:`files`: the host reaches the
        # workspace's files only while no command of this sandbox runs
        self._lock = threading.RLock()

    @property
    def workdir(self) -> str:
        """The workspace's path as commands inside the sandbox see it."""
        return WORKDIR

    @property
    def python(self) -> str:
        """The interpreter to run inside the sandbox."""
        return "python"

    def path_for(self, target: str) -> str:
        """The path that commands inside the sandbox use for a mount target."""
        return target

    @abstractmethod
    def exec(
        self,
        argv: Sequence[str],
        timeout: float | None = None,
        *,
        env: Mapping[str, str] | None = None,
        stdin: str | bytes | int | None = None,
        cwd: str | None = None,
        tee: Tee | None = None,
    ) -> ExecResult:
        """Run ``argv`` in ``cwd`` (default: the workspace) and wait for it, within the limits.

        ``stdin`` is text fed to the command, or a descriptor it gets as its stdin (a socket:
        an interactive submission's oracle channel, which the caller keeps its own end of).
        ``tee(stream, chunk)`` sees the output as it comes (a task's prepare.py at the terminal)."""

    @contextmanager
    def files(self, timeout: float | None = None) -> Iterator[WorkspaceFS]:
        """The workspace's files, through the one descriptor-safe layer (:mod:`sandbox.fs`),
        while no command of this sandbox runs: it holds the lock every command holds (and a
        command ends with everything it started), so what the host does here cannot race a
        sandboxed process. ``timeout`` (seconds) bounds the wait for a running command;
        :class:`SandboxBusy` past it. The same thread may run commands inside."""
        if not self._lock.acquire(timeout=-1 if timeout is None else timeout):
            raise SandboxBusy(f"a command is still running in the sandbox after {timeout} s")
        try:
            yield WorkspaceFS(self.workspace)
        finally:
            self._lock.release()

    def close(self) -> None:
        """Release what the backend holds (a container); idempotent."""

    def renew(self) -> None:
        """Let the next command start from a state no earlier command could shape: new
        ``/tmp`` and ``/dev/shm`` mounts (never emptied ones: a folder made unwritable keeps
        its files through any emptying by the same uid), new IPC, network and pid namespaces,
        no process left; kept are the workspace, its quota image and the host uid it runs as.
        Between a timed scoring's repeats and ``score --all-steps``' steps
        (``environments/scoring/``). Only between two commands; a backend that cannot renew
        raises :class:`SandboxError` (the caller then opens a new sandbox)."""
        raise SandboxError(f"the {self.backend} sandbox cannot start its commands afresh")

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    @classmethod
    @abstractmethod
    def isolation(cls) -> Isolation:
        """What this backend enforces on this machine (probing it, cheaply)."""

    def describe(self) -> Isolation:
        """What this open sandbox enforces (a backend may run degraded, e.g. without bwrap)."""
        return self.with_network(type(self).isolation())

    def with_network(self, report: Isolation) -> Isolation:
        """``report`` as this sandbox's limits leave it: with ``network``, not network-isolated."""
        if not self.limits.network:
            return report
        return report.model_copy(update={"network": False, "warnings": [
            *report.warnings, "network: outbound only, through user-mode NAT (declared by the task for its "
            "prepare.py, or building its requirements)"]})
