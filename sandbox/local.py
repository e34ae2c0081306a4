"""The local backend: bubblewrap namespaces where ``bwrap`` works, else a plain subprocess.

With bubblewrap a command gets new user/pid/net/ipc/uts namespaces (so no network at all and
an unprivileged uid), a read-only view of the system and of the Python installation, a private
``/tmp``, and only ``/workspace`` writable. Memory, CPU and process caps come from a per-command
cgroup where the cgroup tree is writable, else from rlimits. Without bubblewrap the command is
a plain subprocess in its own process group: limits still apply, but the filesystem and network
are the host's, and :meth:`LocalSandbox.isolation` says so.
"""

from __future__ import annotations

import logging
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from functools import lru_cache
from pathlib import Path

from sandbox.base import (
    WORKDIR,
    ExecResult,
    Isolation,
    Sandbox,
    clean_env,
    code_pythonpath,
)
from sandbox.capture import CappedBuffer, drain
from sandbox.cgroups import CommandCgroup, cgroups_usable

log = logging.getLogger(__name__)

SANDBOX_UID = 65534
# Runs in the child before exec: join the command's cgroups, then apply rlimits. A shell
# wrapper instead of preexec_fn because preexec_fn is unsafe in threaded hosts (the TUI).
_WRAPPER = (
    'for d in $LABCOAT_CG; do echo $$ > "$d/cgroup.procs" || exit 125; done; '
    "unset LABCOAT_CG; ulimit -c 0; "
    '[ -n "$LABCOAT_DATA_KB" ] && ulimit -d "$LABCOAT_DATA_KB"; unset LABCOAT_DATA_KB; '
    'exec "$@"'
)


@lru_cache(maxsize=1)
def bwrap_path() -> str | None:
    """``bwrap`` if it is installed *and* can create namespaces here (tried once)."""
    path = shutil.which("bwrap")
    if not path:
        return None
    probe = subprocess.run(
        [path, "--unshare-all", "--ro-bind", "/", "/", "--uid", str(SANDBOX_UID), "true"],
        capture_output=True,
        timeout=10,
    )
    if probe.returncode != 0:
        log.warning("bwrap is installed but cannot sandbox here: %s", probe.stderr.decode()[:200])
        return None
    return path


@lru_cache(maxsize=1)
def _cgroups() -> bool:
    return cgroups_usable()


def _python_roots() -> list[str]:
    """Folders the interpreter and its packages live in, outside the system dirs."""
    roots = {sys.prefix, sys.base_prefix, str(Path(sys.executable).resolve().parent.parent)}
    return sorted(r for r in roots if not r.startswith("/usr/"))


class LocalSandbox(Sandbox):
    """Runs commands on this machine, isolated by bubblewrap when it can be."""

    backend = "local"

    def __init__(self, workspace, limits=None, mounts=(), *, use_bwrap: bool | None = None):
        super().__init__(workspace, limits, mounts)
        self.bwrap = None if use_bwrap is False else bwrap_path()
        if use_bwrap and not self.bwrap:
            raise RuntimeError("bubblewrap was asked for but does not work here")
        self.cgroups = _cgroups()
        if not self.bwrap:
            log.warning(
                "local sandbox without bubblewrap: commands are NOT isolated from the host "
                "filesystem or network (limits still apply). Install bubblewrap or use docker."
            )

    @property
    def workdir(self) -> str:
        return WORKDIR if self.bwrap else str(self.workspace)

    @property
    def python(self) -> str:
        return sys.executable

    def path_for(self, target: str) -> str:
        if self.bwrap:
            return target
        if target == WORKDIR or target.startswith(WORKDIR + "/"):
            return str(self.workspace) + target[len(WORKDIR):]
        for m in self.mounts:
            if target == m.target or target.startswith(m.target + "/"):
                return str(m.source) + target[len(m.target):]
        return target

    def _code_path(self) -> str:
        """PYTHONPATH: the folders holding each package mounted under ``CODE_TARGET``."""
        return code_pythonpath(self.mounts, self.path_for)

    def _bwrap_argv(self, cwd: str, env: Mapping[str, str]) -> list[str]:
        args = [self.bwrap, "--unshare-all", "--die-with-parent", "--new-session",
                "--hostname", "sandbox", "--ro-bind", "/usr", "/usr"]
        for top in ("/bin", "/lib", "/lib32", "/lib64", "/sbin"):
            p = Path(top)
            if p.is_symlink():
                args += ["--symlink", os.readlink(p), top]
            elif p.exists():
                args += ["--ro-bind", top, top]
        for etc in ("/etc/ld.so.cache", "/etc/alternatives", "/etc/localtime", "/etc/ssl"):
            args += ["--ro-bind-try", etc, etc]
        args += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]
        for root in _python_roots():
            args += ["--ro-bind", root, root]
        args += ["--bind", str(self.workspace), WORKDIR]
        for m in self.mounts:
            args += ["--ro-bind" if m.read_only else "--bind", str(m.source), m.target]
        args += ["--chdir", cwd, "--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_UID),
                 "--clearenv"]
        for k, v in env.items():
            args += ["--setenv", k, v]
        return args + ["--"]

    def exec(
        self,
        argv: Sequence[str],
        timeout: float | None = None,
        *,
        env: Mapping[str, str] | None = None,
        stdin: str | bytes | None = None,
        cwd: str | None = None,
    ) -> ExecResult:
        timeout = timeout or self.limits.timeout
        cwd = cwd or self.workdir
        inner_env = clean_env(env, self.limits.cpus, self._code_path())
        if not self.bwrap:
            inner_env["HOME"] = str(self.workspace)
        cgroup = None
        wrapper_env = dict(inner_env) if not self.bwrap else {"PATH": inner_env["PATH"]}
        mem_bytes = self.limits.memory_mb << 20
        if self.cgroups:
            cgroup = CommandCgroup(mem_bytes, self.limits.cpus, self.limits.pids)
            wrapper_env["LABCOAT_CG"] = " ".join(str(d) for d in cgroup.dirs.values())
        else:
            wrapper_env["LABCOAT_DATA_KB"] = str(mem_bytes >> 10)
        full = ["/bin/sh", "-c", _WRAPPER, "sandbox"]
        full += self._bwrap_argv(cwd, inner_env) if self.bwrap else []
        full += list(argv)
        out, err = CappedBuffer(self.limits.output_bytes), CappedBuffer(self.limits.output_bytes)
        start = time.perf_counter()
        timed_out = False
        try:
            proc = subprocess.Popen(
                full,
                stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=wrapper_env,
                cwd=self.workspace if self.bwrap else cwd,
                start_new_session=True,
            )
            readers = [drain(os.dup(proc.stdout.fileno()), out),
                       drain(os.dup(proc.stderr.fileno()), err)]
            proc.stdout.close()
            proc.stderr.close()
            if stdin is not None:
                threading.Thread(target=_feed, args=(proc, stdin), daemon=True).start()
            try:
                proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                timed_out = True
            self._kill_tree(proc, cgroup)
            proc.wait()
            for r in readers:
                r.join(timeout=5)
            oom = bool(cgroup and cgroup.oom_killed())
        finally:
            if cgroup:
                cgroup.remove()
        stderr = err.text()
        if not cgroup and "MemoryError" in stderr[-2000:]:
            oom = True
        code = proc.returncode
        return ExecResult(
            exit_code=code if code >= 0 else 128 - code,
            stdout=out.text(),
            stderr=stderr,
            seconds=time.perf_counter() - start,
            timed_out=timed_out,
            oom_killed=oom,
            truncated=out.truncated or err.truncated,
        )

    @staticmethod
    def _kill_tree(proc: subprocess.Popen, cgroup: CommandCgroup | None) -> None:
        """Kill everything the command started: its group, and every process in its cgroup."""
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        if cgroup:
            cgroup.kill_all()

    @classmethod
    def isolation(cls) -> Isolation:
        return _report(bwrap_path() is not None, _cgroups())

    def describe(self) -> Isolation:
        return _report(self.bwrap is not None, self.cgroups)


def _report(bw: bool, cg: bool) -> Isolation:
    warnings = []
    if not bw:
        warnings.append("no working bubblewrap: filesystem and network are NOT isolated")
    if not cg:
        warnings.append(
            "cgroups not writable: memory capped by RLIMIT_DATA only, no CPU or "
            "process-count cap, daemons that leave the process group survive"
        )
    return Isolation(
        backend="local",
        available=True,
        detail=("bubblewrap namespaces" if bw else "plain subprocess")
        + (" + cgroups" if cg else " + rlimits"),
        filesystem=bw,
        network=bw,
        memory=True,
        cpu=cg,
        pids=cg,
        process_tree_kill=cg or bw,
        unprivileged_user=bw,
        warnings=warnings,
    )


def _feed(proc: subprocess.Popen, data: str | bytes) -> None:
    try:
        proc.stdin.write(data.encode() if isinstance(data, str) else data)
        proc.stdin.close()
    except (BrokenPipeError, OSError):
        pass
