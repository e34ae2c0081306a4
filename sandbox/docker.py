"""The Docker backend: one locked-down container per sandbox, labcoat's supervisor its PID 1.

The container (``network_mode=none``; for a task's prepare.py that declares the network and the
requirements build (``SandboxLimits.network``), outbound only, through user-mode NAT attached to
the container's own network namespace: :mod:`sandbox.netns`), read-only root, ``cap_drop=ALL``, ``no-new-privileges``,
an unprivileged user, pids/memory/CPU caps, a tmpfs ``/tmp``, the workspace bind-mounted at
``/workspace`` and the sandbox's mounts read-only) is started once, when the sandbox opens: a
fresh container per command costs 200-500 ms.

* **PID 1 is the supervisor** (:mod:`sandbox.supervisor`, the local backend's): it forks each
  command, kills everything else in the container once the command ends, reaps orphans, and
  is out of a command's reach (not dumpable, so no ptrace, ``/proc/1/mem``, ``/proc/1/fd`` or
  ``pidfd_getfd``; no handler for the signals a command could send, which the kernel then
  drops for a pid namespace's init). No ``docker exec`` any more: no wrapper process a command
  could trace, and a command costs a fork instead of ~60 ms of engine round trips.
* **The socket.** The host listens on a unix socket in a private (0700) host folder; that one
  socket *file* is bind-mounted read-only into the container, the supervisor connects at
  start-up, before any command exists, and the host accepts exactly that connection (checked:
  the peer is the container's init), then closes the listener and unlinks the file. What a
  command can do with the mounted name: nothing (connecting is refused, the mount is read-only,
  there is no folder to write in). stdin/stdout/stderr travel as passed descriptors, so output
  caps and stdin are the local backend's.
* **Host death.** If the host process dies, even by SIGKILL, the socket reaches EOF, the
  supervisor kills everything and exits, PID 1's exit stops the container and ``auto_remove``
  deletes it. Containers carry labels (owner pid, its start time, the host, the boot): any
  that a dead process left behind anyway are removed when the next :class:`DockerSandbox`
  starts.
* **Timeouts.** On a timeout the supervisor kills the command and all it left; if it does not
  answer within a grace period, or dies (an OOM kill, say), the container is replaced.
* **OOM.** The engine's ``oom`` events for the container are followed on a thread; a command
  during which one arrived is reported ``oom_killed``.
* **Ownership.** Files in ``/workspace`` belong to the host user: the container runs as the host
  uid:gid; when the host user is root, as a uid:gid leased for this sandbox alone from labcoat's
  reserved range (no account's, no other live sandbox's: :mod:`sandbox.ownership`), with the
  workspace handed to it before each command (root on the host can still read, change and
  delete everything) and handed back to root when the sandbox closes. A rootless engine runs
  commands as the container's root, which is the host user outside.
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import threading
import time
import uuid
import weakref
from collections.abc import Mapping, Sequence
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
    SandboxLimits,
    SandboxLost,
    clean_env,
    code_pythonpath,
)
from sandbox.capture import Streams, Tee
from sandbox.docker_link import TARGET, Listener, SupervisorLink
from sandbox.image import (
    IMAGE,
    SANDBOX_PYTHON,
    ImageError,
    engine_client,
    engine_info,
    image_info,
)
from sandbox.namespace import SUPERVISOR_SOURCE, NamespaceGone
from sandbox.ownership import HostIds, hand_back, hand_over, lease_host_ids

log = logging.getLogger(__name__)

LABEL = "labcoat.sandbox"
LABEL_RUN = "labcoat.run"
LABEL_PID = "labcoat.pid"
LABEL_PID_START = "labcoat.pid_start"
LABEL_HOST = "labcoat.host"
LABEL_BOOT = "labcoat.boot"
NETWORK_MODE = "none"
"""Every container's network mode, with ``limits.network`` too: such a container gets
slirp4netns attached to its own network namespace once it runs (outbound only, like the local
backend's: :mod:`sandbox.netns`). Never ``host`` (the host's loopback, abstract sockets and
``/proc/net``), nor a bridge (its gateway is the host, and CI's dockerd runs ``--bridge=none``)."""
CONNECT_SECONDS = 30.0  # for the supervisor to start and connect (a cold page cache is slow)
DIE_WAIT = 5.0  # for the engine's ``die`` event of a container whose supervisor went silent
# getpass.getuser() and friends look here first; the uid may have no passwd entry.
_IDENTITY = {"USER": "sandbox", "LOGNAME": "sandbox"}


def _sandbox_user(rootless: bool = False) -> tuple[int, int, HostIds | None]:
    """Who commands run as: the host user's ids; when the host user is root, ids leased for
    this sandbox alone (returned with their lease, which the sandbox holds until it closes).

    A rootless engine maps the container's root to the host user (and every other uid to a
    subordinate id that could not write the workspace), so there the container's root, which
    holds no capabilities and is the host user outside, is the right one.
    """
    if rootless:
        return 0, 0, None
    if os.getuid() == 0:
        ids = lease_host_ids()
        return ids.uid, ids.gid, ids
    return os.getuid(), os.getgid(), None


def _proc_start(pid: int) -> str:
    """When process ``pid`` started (clock ticks since boot), so a reused pid is not mistaken."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        return stat.rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return ""


def _boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return ""


_ENGINE_FACTS: dict[int, tuple[int, bool]] = {}


def _engine_facts(client) -> tuple[int, bool]:
    """(CPUs the engine has, whether it is rootless), asked once per client.

    The engine refuses a ``nano_cpus`` above its CPU count.
    """
    key = id(client)
    if key not in _ENGINE_FACTS:
        try:
            info = client.info()
            cpus = int(info.get("NCPU") or os.cpu_count() or 1)
            rootless = any("rootless" in str(o) for o in info.get("SecurityOptions") or [])
        except Exception:
            cpus, rootless = os.cpu_count() or 1, False
        _ENGINE_FACTS[key] = (cpus, rootless)
    return _ENGINE_FACTS[key]


def _owner_alive(labels: Mapping[str, str]) -> bool:
    try:
        pid = int(labels.get(LABEL_PID, ""))
    except ValueError:
        return False
    if labels.get(LABEL_BOOT, "") != _boot_id():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    started = labels.get(LABEL_PID_START, "")
    return not started or started == _proc_start(pid)


def remove_stale(client=None) -> list[str]:
    """Remove labelled containers whose owning process (on this host) is gone; their names."""
    import docker

    client = client or engine_client()
    removed = []
    host = socket.gethostname()
    for c in client.containers.list(all=True, sparse=True, filters={"label": LABEL}):
        labels = c.attrs.get("Labels") or {}
        if labels.get(LABEL_HOST) != host or _owner_alive(labels):
            continue
        try:
            c.remove(force=True)
            removed.append(labels.get(LABEL_RUN, c.id[:12]))
        except docker.errors.NotFound:
            pass
        except docker.errors.APIError as err:
            if err.status_code != 409:  # 409: removal already in progress
                log.warning("could not remove stale sandbox container %s: %s", c.id[:12], err)
    if removed:
        log.info("removed %d stale sandbox container(s): %s", len(removed), ", ".join(removed))
    return removed


def _remove_container(client, cid: str) -> None:
    """Remove a container, quietly when it is already gone (``auto_remove`` may be first)."""
    import docker

    try:
        client.api.remove_container(cid, force=True)
    except docker.errors.NotFound:
        pass
    except docker.errors.APIError as err:
        if err.status_code != 409:
            log.warning("could not remove sandbox container %s: %s", cid[:12], err)
    except Exception as err:  # the engine went away; the stale sweep will get it
        log.warning("could not remove sandbox container %s: %s", cid[:12], err)


def _finalize(client, cid: str, held: list) -> None:
    for thing in held:  # the supervisor's socket, the NAT
        try:
            thing.close()
        except OSError:
            pass
    _remove_container(client, cid)


class _OomWatch:
    """Follows the engine's ``oom`` and ``die`` events for one container on a daemon thread:
    OOM kills, and how the container ended (its init's exit code), which tells a supervisor
    that ended the container itself (0) from one killed from outside (a signal's code)."""

    def __init__(self, client, cid: str) -> None:
        self.times: list[float] = []
        self.exits: list[int] = []
        self.ended = False  # the event stream closed: nothing more will come
        self.cond = threading.Condition()
        self._stream = client.api.events(
            filters={"container": cid, "event": ["oom", "die"], "type": "container"}, decode=True)
        self._thread = threading.Thread(target=self._follow, daemon=True)
        self._thread.start()

    def _follow(self) -> None:
        try:
            for event in self._stream:
                with self.cond:
                    if (event.get("Action") or event.get("status")) == "die":
                        code = (event.get("Actor") or {}).get("Attributes", {}).get("exitCode")
                        self.exits.append(int(code) if str(code).isdigit() else -1)
                    else:
                        self.times.append(time.monotonic())
                    self.cond.notify_all()
        except Exception:  # closed by close(), or the engine went away
            pass
        finally:
            with self.cond:
                self.ended = True
                self.cond.notify_all()

    def exit_code(self, timeout: float) -> int | None:
        """The container's exit code once the engine said it died (None: not said in time)."""
        with self.cond:
            self.cond.wait_for(lambda: self.exits or self.ended, timeout)
            return self.exits[0] if self.exits else None

    def count(self) -> int:
        with self.cond:
            return len(self.times)

    def wait_beyond(self, count: int, timeout: float) -> bool:
        with self.cond:
            return self.cond.wait_for(lambda: len(self.times) > count, timeout)

    def close(self) -> None:
        try:
            self._stream.close()
        except Exception:
            pass


class DockerSandbox(Sandbox):
    """Runs commands through the supervisor that is PID 1 of one locked-down container."""

    backend = "docker"

    def __init__(
        self,
        workspace: str | Path,
        limits: SandboxLimits | None = None,
        mounts: Sequence[Mount] = (),
        *,
        image: str | None = None,
    ) -> None:
        super().__init__(workspace, limits, mounts)
        self.image = image or IMAGE
        self.run_id = uuid.uuid4().hex[:12]
        self.uid, self.gid = os.getuid(), os.getgid()  # until the engine is asked: see below
        self._ids: HostIds | None = None
        self._close_lock = threading.Lock()
        self._closed = False
        self._cid: str | None = None
        self._link: SupervisorLink | None = None
        self._oom: _OomWatch | None = None
        self._finalizer = None
        self._quotas: list[quota.WorkspaceQuota] = []
        try:
            self._client = engine_client()
            self.engine_cpus, self.rootless = _engine_facts(self._client)
        except ImageError as err:
            raise SandboxError(str(err)) from err
        except Exception as err:
            raise SandboxError(f"docker engine error: {err}") from err
        self._python = self._realise_python()
        self.uid, self.gid, self._ids = _sandbox_user(self.rootless)
        try:
            remove_stale(self._client)
        except Exception as err:  # never a reason not to start; the next start tries again
            log.warning("could not sweep stale sandbox containers: %s", err)
        # the workspace's disk and file-count quota: the container binds the image
        self._quotas = quota.open_for_sandbox(self._writable_roots(), self.limits.disk_mb,
                                              self.limits.max_files, self._ids)
        try:
            self._start()
        except BaseException:
            quota.release_all(self._quotas)
            raise
        if self._quotas and not self._sees_quota():
            self.close()  # no command ran: the image holds all there is
            raise SandboxError(
                "the Docker engine does not see the workspace's quota mount (it runs in another "
                "mount namespace), so what a command wrote would be lost at close")
        if self.limits.python_env.python and not self.limits.python_env.requirements:
            self._check_python()

    def _realise_python(self) -> str:
        """The commands' interpreter: the image's, a path inside it (``--python``), or the
        venv of a derived image built for the task's requirements (:mod:`sandbox.pyenv`)."""
        wanted = self.limits.python_env
        pyenv.check_device(wanted.device)
        if wanted.python and not wanted.python.startswith("/"):
            raise SandboxError(f"--python {wanted.python}: with docker, give the absolute "
                               f"path of an interpreter inside the image {self.image}")
        base = wanted.python or SANDBOX_PYTHON
        if not wanted.requirements:
            return base
        import docker

        try:
            image_id = self._client.images.get(self.image).id
        except docker.errors.ImageNotFound as err:
            raise SandboxError(f"sandbox image {self.image} is missing: run `labcoat sandbox "
                               "build --offline` (or `labcoat sandbox build`)") from err
        built = pyenv.ensure(
            wanted, backend="docker", python=base, identity=f"{image_id}:{base}",
            open_builder=lambda ws, lim, mounts: DockerSandbox(ws, lim, mounts, image=self.image),
            finish=lambda folder, key: pyenv.derived_image(self._client, self.image, folder, key),
            still_there=lambda have: pyenv.image_present(self._client, have.image))
        self.image = built.image
        return f"{pyenv.ENV_TARGET}/bin/python"

    def _check_python(self) -> None:
        """``--python`` names an interpreter inside the image, or the sandbox refuses."""
        probe = self.exec([self._python, "-c", "pass"], timeout=60)
        if not probe.ok:
            self.close()
            raise SandboxError(f"--python {self._python}: not an interpreter inside the image "
                               f"{self.image} (with docker the path is the image's, not the host's)")

    def _sees_quota(self) -> bool:
        """Whether the container's ``/workspace`` is the quota image mounted over the workspace
        (the engine resolved the bind in this process's mount namespace), asked of the host's
        ``/proc/<container init>/root``."""
        pid = self._init_pid(self._cid) if self._cid else 0
        try:
            inside = os.stat(f"/proc/{pid}/root{WORKDIR}") if pid else None
        except OSError:
            inside = None
        return inside is not None and inside.st_dev == os.stat(self.workspace).st_dev

    # ------------------------------------------------------------- the container

    @property
    def python(self) -> str:
        return self._python

    @property
    def container_id(self) -> str | None:
        return self._cid

    def _labels(self) -> dict[str, str]:
        pid = os.getpid()
        return {LABEL: "1", LABEL_RUN: self.run_id, LABEL_PID: str(pid),
                LABEL_PID_START: _proc_start(pid), LABEL_HOST: socket.gethostname(),
                LABEL_BOOT: _boot_id(), "labcoat.workspace": str(self.workspace)}

    def _docker_mounts(self, listener: Listener) -> list:
        from docker.types import Mount as DMount

        out = [DMount(target=WORKDIR, source=str(self.workspace), type="bind", read_only=False),
               DMount(target=TARGET, source=str(listener.path), type="bind", read_only=True)]
        if self.limits.network:  # the NAT's DNS forwarder
            out.append(DMount(target="/etc/resolv.conf", source=str(netns.resolv_conf()),
                              type="bind", read_only=True))
        for m in self.mounts:
            src = Path(m.source).resolve()
            if not src.exists():
                raise SandboxError(f"mount source {src} does not exist")
            out.append(DMount(target=m.target, source=str(src), type="bind",
                              read_only=m.read_only))
        return out

    def _start(self) -> float:
        """Create and start the container and take its supervisor's connection; returns the
        seconds it took."""
        t0 = time.perf_counter()
        self._hand_over()
        listener = Listener(self.uid, self.gid)
        try:
            cid = self._create(listener)
            held: list = []
            self._cid = cid
            self._finalizer = weakref.finalize(self, _finalize, self._client, cid, held)
            try:
                self._oom = _OomWatch(self._client, cid)
                self._client.api.start(cid)
                conn = listener.accept(lambda: self._init_pid(cid), CONNECT_SECONDS)
            except BaseException as err:
                self._finalizer()
                if isinstance(err, Exception) and not isinstance(err, SandboxError):
                    raise SandboxError(f"cannot start the sandbox container: {err}") from err
                raise
        finally:
            listener.close()  # one connection only: the name is gone before any command runs
        held.append(conn)
        self._link = SupervisorLink(conn)
        if self.limits.network:  # before the first command: outbound only (module doc)
            try:
                held.append(netns.Nat(self._init_pid(cid)))
            except BaseException:
                self._finalizer()
                raise
        return time.perf_counter() - t0

    def _create(self, listener: Listener) -> str:
        import docker
        from docker.types import LogConfig, Ulimit

        lim = self.limits
        mem = f"{lim.memory_mb}m"
        try:
            return self._client.api.create_container(
                self.image,
                command=[SANDBOX_PYTHON, "-I", "-S", "-c", SUPERVISOR_SOURCE, TARGET],
                user=f"{self.uid}:{self.gid}",
                working_dir=WORKDIR,
                hostname="sandbox",
                labels=self._labels(),
                network_disabled=not lim.network,
                environment={"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8",
                             FILE_LIMIT_ENV: str(lim.file_mb << 20)},
                host_config=self._client.api.create_host_config(
                    network_mode=NETWORK_MODE,
                    read_only=True,
                    cap_drop=["ALL"],
                    security_opt=["no-new-privileges"],
                    pids_limit=lim.pids,
                    mem_limit=mem,
                    memswap_limit=mem,
                    nano_cpus=int(min(lim.cpus, self.engine_cpus) * 1e9),
                    tmpfs={"/tmp": f"rw,nosuid,nodev,size={caps.scratch_mb(lim)}m,mode=1777"},
                    mounts=self._docker_mounts(listener),
                    auto_remove=True,
                    ulimits=[Ulimit(name="core", soft=0, hard=0)],
                    log_config=LogConfig(type="none"),
                    ipc_mode="private",
                    device_requests=_gpus(lim.python_env.device),
                ),
            )["Id"]
        except docker.errors.ImageNotFound as err:
            raise SandboxError(
                f"sandbox image {self.image} is missing: run `labcoat sandbox build --offline` "
                "(or `labcoat sandbox build` where a registry is reachable)") from err
        except docker.errors.DockerException as err:
            raise SandboxError(f"cannot create the sandbox container: {err}") from err

    def _init_pid(self, cid: str) -> int:
        """The container's PID 1 as this host numbers it; 0 once it is not running."""
        try:
            state = self._client.api.inspect_container(cid)["State"]
        except Exception:  # gone (auto_remove) or the engine went away
            return 0
        return int(state.get("Pid") or 0) if state.get("Running") else 0

    def _restart(self, why: str | None = "its supervisor is gone") -> None:
        """Replace the container (its supervisor died, or stopped answering: ``why``, logged;
        None for :meth:`renew`'s planned replacement)."""
        if self._closed:
            raise SandboxError("sandbox is closed")
        old, oom = self._cid, self._oom
        if self._finalizer:
            self._finalizer()
        if oom:
            oom.close()
        if why:
            log.warning("sandbox container %s replaced: %s", (old or "")[:12], why)
        try:
            self._start()
        except SandboxError as err:  # the engine (or the image) is gone under the run
            raise SandboxLost(self.backend, f"its container died and could not be replaced: "
                              f"{err}") from err

    def renew(self) -> None:
        """A new container over the same workspace bind (and quota image, and leased ids):
        its ``/tmp`` tmpfs, private ``/dev/shm``, IPC, pid and network namespaces new, nothing
        of the old one's left running. ``docker restart`` would give fresh tmpfs mounts too
        (measured: a 0555 folder's files are gone after it), but the supervisor's socket is
        bound once and unlinked at the first connection (module doc), so a restarted
        container could not reach the host: the container is replaced (a few hundred ms)."""
        with self._lock:
            old = self._cid
            self._restart(why=None)
            if self._cid == old:
                raise SandboxError("the sandbox container was not replaced")

    def close(self) -> None:
        """Remove the container; a command still running in it (another thread) is killed."""
        with self._close_lock:
            if self._closed:
                return
            self._closed = True
        if self._oom:
            self._oom.close()
        if self._link:  # EOF: the supervisor kills everything and exits, the container stops
            try:
                self._link.sock.shutdown(socket.SHUT_RDWR)  # (a running command ends too)
            except OSError:
                pass
        if self._cid:
            _remove_container(self._client, self._cid)
        with self._lock:  # ...and returns before the link's socket closes under it
            if self._finalizer:  # also removes a container a restart made meanwhile
                self._finalizer()
            self._hand_back()
            if self._ids:  # the container is gone: nothing runs as them any more
                self._ids.release()
            quota.release_all(self._quotas)  # copies the content back, unmounts

    # ------------------------------------------------------------- commands

    def _code_path(self) -> str:
        """``/opt/labcoat`` when code is mounted there (so ``import methods`` works)."""
        return code_pythonpath(self.mounts)

    def _writable_roots(self) -> list[Path]:
        return [self.workspace] + [Path(m.source) for m in self.mounts if not m.read_only]

    def _hand_over(self) -> None:
        """When the host user is root, give the writable folders to the sandbox's user."""
        if os.getuid() == 0 and self.uid != 0:
            hand_over(self._writable_roots(), self.uid, self.gid)

    def _hand_back(self) -> None:
        """After the run, what the sandbox's user owns in the workspace is root's again."""
        if os.getuid() == 0 and self.uid != 0:
            hand_back(self._writable_roots(), self.uid)

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
        if not argv:
            raise ValueError("exec needs a command")
        timeout = timeout or self.limits.timeout
        full_env = clean_env(pyenv.with_device({**_IDENTITY, **(env or {})},
                                               self.limits.python_env.device, docker=True),
                             self.limits.cpus, self._code_path(), self.limits.pass_env,
                             python=self.python)
        streams = Streams(self.limits.output_bytes, stdin, tee)
        start = time.perf_counter()
        try:
            with self._lock:
                if self._closed:
                    raise SandboxError("sandbox is closed")
                self._hand_over()
                status, timed_out, oom = self._run(list(argv), full_env, cwd or WORKDIR,
                                                   streams, timeout)
        finally:
            streams.close()
        code = 128 + signal.SIGKILL if status is None else os.waitstatus_to_exitcode(status)
        return ExecResult(
            exit_code=code if code >= 0 else 128 - code,
            stdout=streams.out.text(),
            stderr=streams.err.text() + quota.full_note(self._quotas),
            seconds=time.perf_counter() - start,
            timed_out=timed_out,
            oom_killed=oom,
            truncated=streams.out.truncated or streams.err.truncated,
        )

    def _run(self, argv: list[str], env: dict[str, str], cwd: str, streams: Streams,
             timeout: float) -> tuple[int | None, bool, bool]:
        """(wait status or None if the supervisor died, timed out, OOM) of one command."""
        if self._link is None or not self._link.alive:  # died while idle: start afresh
            self._restart()
        oom_before = self._oom.count() if self._oom else 0
        try:
            self._link.submit(argv, env, cwd, streams.child_fds)
        except NamespaceGone:  # went between the check and the request: once more, afresh
            self._restart()
            oom_before = self._oom.count() if self._oom else 0
            self._link.submit(argv, env, cwd, streams.child_fds)
        streams.started()
        cid = self._cid
        status, timed_out = self._link.result(timeout)
        if status is None and not self._closed:  # killed, OOM, or deaf to the kill
            self._link.close()
        streams.wait()
        oom = False
        if self._oom:
            # The engine's event can trail the exit by a few milliseconds.
            killed = status is None or (os.WIFSIGNALED(status)
                                        and os.WTERMSIG(status) == signal.SIGKILL)
            wait = 0.5 if killed else 0.05 if status else 0.0
            oom = self._oom.count() > oom_before or (
                wait > 0 and self._oom.wait_beyond(oom_before, wait))
        if status is None and not (self._closed or timed_out or oom):
            lost = self._lost(cid)
            if lost is not None:
                raise SandboxLost(self.backend, lost)
        return status, timed_out, oom

    def _lost(self, cid: str) -> str | None:
        """Why the container ended under a command, when nothing in it could have ended it;
        None when its supervisor ended it itself (exit 0: what a command left would not die).

        A command cannot signal the supervisor (PID 1: the kernel drops what it has no
        handler for) nor reach the engine, and an OOM kill was ruled out before this is
        asked; so the engine's word decides, not the command's exit code: a container that
        died of a signal, no longer exists, or an engine that does not answer."""
        import docker

        code = self._oom.exit_code(DIE_WAIT) if self._oom else None
        if code == 0:
            return None
        if code is not None:
            return (f"the sandbox container {cid[:12]} was killed from outside while a command "
                    f"ran (exit code {code})")
        try:
            state = self._client.api.inspect_container(cid)["State"]
        except docker.errors.NotFound:
            return f"the sandbox container {cid[:12]} was removed while a command ran"
        except Exception as err:  # the engine went away
            return f"the Docker engine does not answer: {err}"
        if state.get("Running"):
            return f"the supervisor of the sandbox container {cid[:12]} stopped answering"
        if state.get("OOMKilled") or state.get("ExitCode") == 0:
            return None
        return (f"the sandbox container {cid[:12]} was stopped from outside while a command ran "
                f"(exit code {state.get('ExitCode')})")

    # ------------------------------------------------------------- reporting

    @classmethod
    def isolation(cls) -> Isolation:
        try:
            engine = engine_info()
            image = image_info(IMAGE)
        except ImageError as err:
            return Isolation(backend="docker", available=False, detail=str(err))
        if image is None:
            return Isolation(
                backend="docker", available=False,
                detail=(f"engine {engine['version']} answers, but image {IMAGE} is missing: "
                        "run `labcoat sandbox build --offline` (or `labcoat sandbox build`)"),
            )
        return Isolation(
            backend="docker",
            available=True,
            detail=(f"container per run, its PID 1 labcoat's supervisor forking each command "
                    f"(engine {engine['version']}, image {IMAGE}, {image['kind']}); "
                    f"disk quota {quota.status()}"),
            filesystem=True,
            network=True,
            memory=True,
            cpu=True,
            pids=True,
            process_tree_kill=True,
            unprivileged_user=True,
            disk_quota=quota.status(),
            warnings=_quota_warnings(quota.status()),
        )

    def describe(self) -> Isolation:
        report = type(self).isolation()
        disk = quota.describe(self._quotas)
        return self.with_network(
            report.model_copy(update={"disk_quota": disk, "warnings": _quota_warnings(disk)}))


def _gpus(device: str | None) -> list | None:
    """``--gpus all`` for ``cuda``, ``--gpus device=N`` for ``cuda:N``; none otherwise."""
    if device is None or device == "cpu":
        return None
    from docker.types import DeviceRequest

    index = device.partition(":")[2]
    return [DeviceRequest(device_ids=[index], capabilities=[["gpu"]]) if index
            else DeviceRequest(count=-1, capabilities=[["gpu"]])]


def _quota_warnings(disk: str) -> list[str]:
    return [] if disk == quota.ENFORCED else [
        f"disk quota {disk}: a command can write past disk_mb and max_files (only each file "
        "is capped)"]
