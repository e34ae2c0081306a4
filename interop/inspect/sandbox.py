"""labcoat's sandbox as an Inspect sandbox provider: ``sandbox="labcoat"`` (its config picks the
backend), ``"labcoat-local"`` (bubblewrap) and ``"labcoat-docker"``.

Each sample gets its own labcoat :class:`~sandbox.base.Sandbox` over a fresh workspace folder
(``labcoat-inspect-<pid>-<random>`` under ``config.workspaces``, by default the temp folder), so
what labcoat guarantees holds per sample: no network, capabilities dropped, a seccomp filter,
memory/CPU/pid caps, a disk and file-count quota on the workspace, its own leased host uid when
started by root, and nothing left once it closes. Sample cleanup closes the sandbox (its
container, namespace, cgroup, quota image, leased ids) and removes the folder; task cleanup
closes any the task still holds; ``inspect sandbox cleanup labcoat`` removes what a killed
process left (labelled containers, quota mounts, its workspace folders).

How Inspect's contract maps (``inspect_ai.util.SandboxEnvironment``):

* ``exec``: the command runs in the workspace (``/workspace``; a relative ``cwd`` is under it)
  with labcoat's clean environment plus ``env`` (names that look like credentials are dropped,
  as for every labcoat command); ``timeout`` None is the config's ``limits.timeout``; a command
  past its timeout raises ``TimeoutError`` (no retry: a retried command with side effects is a
  different experiment); each output stream is capped at Inspect's
  ``SandboxEnvironmentLimits.MAX_EXEC_OUTPUT_SIZE`` and a stream past it raises
  ``OutputLimitExceededError`` carrying the head and tail kept. ``user``: commands always run as
  the sandbox's own unprivileged uid; any other user raises ``SandboxUserUnsupportedError``.
  A sandbox lost under a command (its engine gone) raises ``SandboxUnavailableError``.
* ``read_file``/``write_file``: paths in the workspace go through labcoat's descriptor-safe
  file layer while no command runs (a symlink is never followed by the host); other paths (and
  workspace symlinks) are copied through the workspace by a command inside the sandbox, so the
  host never touches them. Reads past ``MAX_READ_FILE_SIZE`` raise ``OutputLimitExceededError``.
"""

from __future__ import annotations

import json
import os
import posixpath
import secrets
import shutil
import tempfile
import threading
from pathlib import Path
from typing import Any, ClassVar, Literal, Union, overload

import anyio
from inspect_ai.util import (
    ExecResult,
    OutputLimitExceededError,
    SandboxEnvironment,
    SandboxEnvironmentConfigType,
    SandboxEnvironmentLimits,
    SandboxUnavailableError,
    SandboxUserUnsupportedError,
    sandboxenv,
)
from pydantic import BaseModel, ConfigDict, Field, field_validator

from sandbox.base import SandboxError, SandboxLimits, SandboxLost
from sandbox.factory import open_sandbox, resolve_kind, why_unavailable
from sandbox.fs import WorkspaceError, WorkspaceFS

FOLDER_PREFIX = "labcoat-inspect-"
XFER_PREFIX = ".labcoat-inspect-xfer-"


class LabcoatSandboxConfig(BaseModel):
    """The ``config`` of a ``labcoat`` sandbox (a model, a dict, or a path to a JSON file)."""

    # Inspect keys sandboxes by their spec, so the config must hash (its limits by value)
    model_config = ConfigDict(extra="forbid", frozen=True)

    backend: Literal["auto", "local", "docker"] = Field(
        "auto", description="docker when an engine answers with labcoat's image, else local "
        "(bubblewrap); the labcoat-local/labcoat-docker types fix it")
    limits: SandboxLimits = Field(default_factory=SandboxLimits, description="labcoat's caps "
                                  "per command and per sandbox (network is never allowed)")
    workspaces: Path | None = Field(None, description="where each sample's workspace folder "
                                    "is made (default: the temp folder)")

    @field_validator("limits")
    @classmethod
    def _no_network(cls, limits: SandboxLimits) -> SandboxLimits:
        if limits.network:
            raise ValueError("a labcoat sandbox for Inspect never has the network")
        return limits

    def __hash__(self) -> int:
        return hash(self.model_dump_json())


def load_config(config: SandboxEnvironmentConfigType | None) -> LabcoatSandboxConfig:
    if config is None:
        return LabcoatSandboxConfig()
    if isinstance(config, LabcoatSandboxConfig):
        return config
    if isinstance(config, str):
        path = Path(config)
        if path.suffix != ".json" or not path.is_file():
            raise ValueError(f"a labcoat sandbox's config file is JSON (got {config!r})")
        return LabcoatSandboxConfig.model_validate(json.loads(path.read_text()))
    if isinstance(config, BaseModel):
        return LabcoatSandboxConfig.model_validate(config.model_dump())
    raise TypeError(f"a labcoat sandbox's config cannot be a {type(config).__name__}")


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@sandboxenv(name="labcoat")
class LabcoatSandboxEnvironment(SandboxEnvironment):
    """One sample's labcoat sandbox and the workspace folder it owns."""

    fixed_backend: ClassVar[str | None] = None
    # every environment not yet cleaned up, by task: task_cleanup's last chance
    _open: ClassVar[dict[str, set[LabcoatSandboxEnvironment]]] = {}
    _open_lock: ClassVar[threading.Lock] = threading.Lock()

    def __init__(self, sandbox: Any, folder: Path, task_name: str) -> None:
        super().__init__()
        self.sandbox = sandbox
        self.folder = folder
        self.task_name = task_name

    # --- configuration ----------------------------------------------------------------------------

    @classmethod
    def config_deserialize(cls, config: dict[str, Any]) -> BaseModel:
        return LabcoatSandboxConfig(**config)

    @classmethod
    def backend_for(cls, config: SandboxEnvironmentConfigType | None) -> str:
        return cls.fixed_backend or load_config(config).backend

    # --- lifecycle --------------------------------------------------------------------------------

    @classmethod
    async def task_init(cls, task_name: str, config: SandboxEnvironmentConfigType | None) -> None:
        """Fail before any sample where this machine cannot isolate, saying why."""
        kind = cls.backend_for(config)

        def check() -> None:
            resolved = resolve_kind(kind)  # auto with neither docker nor bubblewrap: SandboxError
            why = why_unavailable(resolved)
            if why is not None:
                raise SandboxError(f"labcoat's {resolved} sandbox cannot run here: {why}")

        await anyio.to_thread.run_sync(check)

    @classmethod
    async def sample_init(cls, task_name: str, config: SandboxEnvironmentConfigType | None,
                          metadata: dict[str, str]) -> dict[str, SandboxEnvironment]:
        cfg = load_config(config)
        kind = cls.backend_for(config)
        # each stream capped where Inspect caps it (labcoat caps each stream at output_bytes)
        limits = cfg.limits.model_copy(update={
            "output_bytes": max(256, SandboxEnvironmentLimits.MAX_EXEC_OUTPUT_SIZE)})
        base = cfg.workspaces or Path(tempfile.gettempdir())

        def make() -> LabcoatSandboxEnvironment:
            base.mkdir(parents=True, exist_ok=True)
            folder = Path(tempfile.mkdtemp(prefix=f"{FOLDER_PREFIX}{os.getpid()}-", dir=base))
            try:
                sb = open_sandbox(kind, folder, limits)
            except BaseException:
                shutil.rmtree(folder, ignore_errors=True)
                raise
            return cls(sb, folder, task_name)

        env = await anyio.to_thread.run_sync(make)
        with cls._open_lock:
            cls._open.setdefault(task_name, set()).add(env)
        return {"default": env}

    @classmethod
    async def sample_cleanup(cls, task_name: str, config: SandboxEnvironmentConfigType | None,
                             environments: dict[str, SandboxEnvironment], interrupted: bool) -> None:
        for env in environments.values():
            if isinstance(env, LabcoatSandboxEnvironment):
                await anyio.to_thread.run_sync(env.close)

    @classmethod
    async def task_cleanup(cls, task_name: str, config: SandboxEnvironmentConfigType | None,
                           cleanup: bool) -> None:
        if not cleanup:  # --no-sandbox-cleanup: what is left stays for inspection
            return
        with cls._open_lock:
            left = list(cls._open.pop(task_name, ()))
        for env in left:
            await anyio.to_thread.run_sync(env.close)

    @classmethod
    async def cli_cleanup(cls, id: str | None) -> None:
        """``inspect sandbox cleanup labcoat``: what killed processes left (labelled
        containers, mounted quota images, workspace folders of dead owners)."""
        await anyio.to_thread.run_sync(cleanup_stale, id)

    def close(self) -> None:
        """Close the sandbox (container, namespace, cgroup, quota, leased ids), then remove
        the workspace folder; idempotent."""
        with self._open_lock:
            held = self._open.get(self.task_name)
            if held is not None:
                held.discard(self)
                if not held:
                    self._open.pop(self.task_name, None)
        try:
            self.sandbox.close()
        finally:
            if self.folder.exists():
                WorkspaceFS(self.folder).remove_root()

    # --- commands ---------------------------------------------------------------------------------

    async def exec(self, cmd: list[str], input: str | bytes | None = None, cwd: str | None = None,
                   env: dict[str, str] | None = None, user: str | None = None,
                   timeout: int | None = None, timeout_retry: bool = True,
                   concurrency: bool = True) -> ExecResult[str]:
        if user is not None:
            raise SandboxUserUnsupportedError(
                f"a labcoat sandbox runs commands only as its own unprivileged uid, not {user!r}")
        workdir = self.sandbox.workdir
        where = workdir if cwd is None else posixpath.normpath(posixpath.join(workdir, cwd))
        try:
            result = await anyio.to_thread.run_sync(
                lambda: self.sandbox.exec(list(cmd), timeout, env=env or None, stdin=input, cwd=where))
        except SandboxLost as err:
            raise SandboxUnavailableError(str(err)) from err
        if result.timed_out:
            raise TimeoutError(f"command timed out after {timeout or self.sandbox.limits.timeout} s")
        if result.truncated:
            raise OutputLimitExceededError(SandboxEnvironmentLimits.MAX_EXEC_OUTPUT_SIZE_STR,
                                           truncated_output=result.stdout)
        return ExecResult(success=result.exit_code == 0, returncode=result.exit_code,
                          stdout=result.stdout, stderr=result.stderr)

    # --- files ------------------------------------------------------------------------------------

    def _in_workspace(self, file: str) -> tuple[str, str | None]:
        """(the path as the sandbox sees it, its workspace-relative path or None outside)."""
        workdir = self.sandbox.workdir
        path = posixpath.normpath(posixpath.join(workdir, file))
        if path == workdir:
            return path, "."
        if path.startswith(workdir + "/"):
            return path, path[len(workdir) + 1:]
        return path, None

    async def write_file(self, file: str, contents: str | bytes) -> None:
        data = contents.encode("utf-8") if isinstance(contents, str) else bytes(contents)
        path, rel = self._in_workspace(file)
        await anyio.to_thread.run_sync(self._write, path, rel, data)

    def _write(self, path: str, rel: str | None, data: bytes) -> None:
        if rel is not None:
            with self.sandbox.files() as fs:
                kind = fs.kind(rel)
                if kind == "dir":
                    raise IsADirectoryError(f"{path} is a directory")
                if kind in (None, "file"):
                    try:
                        fs.write(rel, data)
                    except WorkspaceError as err:
                        raise PermissionError(f"{path}: {err}") from None
                    return
        # outside the workspace (or over a workspace symlink): copied by a command inside
        xfer = self._xfer_name()
        with self.sandbox.files() as fs:
            fs.write(xfer, data)
        self._run_copy(['if [ -d "$2" ]; then echo "Is a directory" >&2; exit 21; fi; '
                        'mkdir -p "$(dirname "$2")" && cat "$1" > "$2"; s=$?; rm -f "$1"; exit $s'],
                       f"{self.sandbox.workdir}/{xfer}", path, xfer, keep=False)

    @overload
    async def read_file(self, file: str, text: Literal[True] = True) -> str: ...

    @overload
    async def read_file(self, file: str, text: Literal[False]) -> bytes: ...

    async def read_file(self, file: str, text: bool = True) -> Union[str | bytes]:
        path, rel = self._in_workspace(file)
        data = await anyio.to_thread.run_sync(self._read, path, rel)
        return data.decode("utf-8") if text else data

    def _read(self, path: str, rel: str | None) -> bytes:
        cap = SandboxEnvironmentLimits.MAX_READ_FILE_SIZE
        if rel is not None:
            with self.sandbox.files() as fs:
                kind = fs.kind(rel)
                if kind is None:
                    raise FileNotFoundError(f"{path}: no such file")
                if kind == "dir":
                    raise IsADirectoryError(f"{path} is a directory")
                if kind == "file":
                    return self._read_capped(fs, rel, path, cap)
                if kind != "symlink":
                    raise PermissionError(f"{path} is a {kind}, not a regular file")
        xfer = self._xfer_name()
        self._run_copy(['if [ -d "$1" ]; then echo "Is a directory" >&2; exit 21; fi; '
                        'cat "$1" > "$2"'], path, f"{self.sandbox.workdir}/{xfer}", xfer, keep=True)
        with self.sandbox.files() as fs:
            try:
                return self._read_capped(fs, xfer, path, cap)
            finally:
                fs.remove(xfer)

    @staticmethod
    def _read_capped(fs: WorkspaceFS, rel: str, path: str, cap: int) -> bytes:
        try:
            data, size = fs.read(rel, cap + 1)
        except WorkspaceError as err:
            raise PermissionError(f"{path}: {err}") from None
        if size > cap or len(data) > cap:
            raise OutputLimitExceededError(SandboxEnvironmentLimits.MAX_READ_FILE_SIZE_STR,
                                           truncated_output=None)
        return data

    def _xfer_name(self) -> str:
        return f"{XFER_PREFIX}{secrets.token_hex(6)}"

    def _run_copy(self, script: list[str], src: str, dst: str, xfer: str, *, keep: bool) -> None:
        """Run a copy ``script`` (``$1`` to ``$2``) in the sandbox; its failure as the
        ``OSError`` Inspect's contract names."""
        try:
            result = self.sandbox.exec(["/bin/sh", "-c", script[0], "sh", src, dst],
                                       cwd=self.sandbox.workdir)
        except SandboxLost as err:
            raise SandboxUnavailableError(str(err)) from err
        if result.ok:
            return
        if keep:  # the transfer file, made by the failed copy
            with self.sandbox.files() as fs:
                fs.remove(xfer)
        else:
            with self.sandbox.files() as fs:
                if fs.kind(xfer) is not None:
                    fs.remove(xfer)
        why = (result.stderr or result.stdout).strip()
        target = dst if not keep else src
        if result.exit_code == 21 or "Is a directory" in why:
            raise IsADirectoryError(f"{target} is a directory")
        if "No such file" in why:
            raise FileNotFoundError(f"{target}: no such file")
        raise PermissionError(f"{target}: {why or 'cannot be copied in the sandbox'}")


@sandboxenv(name="labcoat-local")
class LabcoatLocalSandboxEnvironment(LabcoatSandboxEnvironment):
    """labcoat's bubblewrap sandbox (config's backend ignored)."""

    fixed_backend = "local"


@sandboxenv(name="labcoat-docker")
class LabcoatDockerSandboxEnvironment(LabcoatSandboxEnvironment):
    """labcoat's Docker sandbox (config's backend ignored)."""

    fixed_backend = "docker"


def cleanup_stale(id: str | None = None) -> list[str]:
    """Remove what killed labcoat processes left: labelled containers of dead owners, mounted
    quota images of dead owners, and ``labcoat-inspect-<pid>-*`` workspace folders of dead
    pids in the temp folder (or only the folder named ``id``). What was removed."""
    removed: list[str] = []
    try:
        from sandbox.docker import remove_stale

        removed += remove_stale()
    except Exception:  # no engine, no SDK: no containers to remove
        pass
    from sandbox.quota import recover_at_start

    removed += recover_at_start()
    base = Path(tempfile.gettempdir())
    for folder in base.glob(f"{FOLDER_PREFIX}*"):
        if id is not None and folder.name != id:
            continue
        pid = folder.name[len(FOLDER_PREFIX):].split("-", 1)[0]
        if folder.is_dir() and pid.isdigit() and not _pid_alive(int(pid)):
            WorkspaceFS(folder).remove_root()
            removed.append(str(folder))
    return removed
