"""The Docker backend: one locked-down container per sandbox, each command run with ``exec``.

The container (``network_mode=none``, read-only root, ``cap_drop=ALL``, ``no-new-privileges``,
an unprivileged user, pids/memory/CPU caps, a tmpfs ``/tmp``, the workspace bind-mounted at
``/workspace`` and the sandbox's mounts read-only) is started once, when the sandbox opens: a
fresh container per command costs 200-500 ms, an ``exec`` about 60 ms.

* **Process tree.** Every command runs under a tiny ``sh`` wrapper that, when the command
  ends, kills every process the sandbox user still has in the container (``kill -9 -1`` spares
  only the caller and the container's init), so daemons never outlive their command. On a
  timeout a second ``exec`` does the same to the command itself; when even that cannot start
  (a fork bomb holds every pid) the container is replaced by a fresh one. Commands on one
  sandbox run one at a time.
* **Init.** PID 1 is a few lines of Python that reap orphans (a fork bomb's zombies would
  otherwise hold the pids cap) and exit when their stdin closes. The host keeps that stdin
  attached, so when the host process dies, even by SIGKILL, the engine closes it, the container
  stops and ``auto_remove`` deletes it. Containers carry labels (owner pid, its start time, the
  host, the boot): any that a dead process left behind anyway are removed when the next
  :class:`DockerSandbox` starts.
* **OOM.** The engine's ``oom`` events for the container are followed on a thread; a command
  during which one arrived is reported ``oom_killed``.
* **Ownership.** Files in ``/workspace`` belong to the host user: the container runs as the host
  uid:gid; when the host user is root, as ``nobody``, with the workspace handed to it before each
  command (root on the host can still read, change and delete everything) and handed back to
  root when the sandbox closes. A rootless engine runs commands as the container's root, which
  is the host user outside.
"""

from __future__ import annotations

import logging
import os
import socket
import struct
import threading
import time
import uuid
import weakref
from collections.abc import Mapping, Sequence
from pathlib import Path

from sandbox.base import (
    WORKDIR,
    ExecResult,
    Isolation,
    Mount,
    Sandbox,
    SandboxError,
    SandboxLimits,
    clean_env,
    code_pythonpath,
)
from sandbox.capture import CappedBuffer
from sandbox.image import (
    IMAGE,
    SANDBOX_PYTHON,
    ImageError,
    engine_client,
    engine_info,
    image_info,
)

log = logging.getLogger(__name__)

LABEL = "labcoat.sandbox"
LABEL_RUN = "labcoat.run"
LABEL_PID = "labcoat.pid"
LABEL_PID_START = "labcoat.pid_start"
LABEL_HOST = "labcoat.host"
LABEL_BOOT = "labcoat.boot"
NOBODY = 65534

# PID 1: reap every orphan; exit (taking the container with it) when the host's stdin closes.
_INIT = """
import os, signal, threading
signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGCHLD, signal.SIGTERM, signal.SIGINT})
def watch():
    try:
        while os.read(0, 65536):
            pass
    except OSError:
        pass
    os._exit(0)
threading.Thread(target=watch, daemon=True).start()
while True:
    while True:
        try:
            if os.waitpid(-1, os.WNOHANG)[0] == 0:
                break
        except ChildProcessError:
            break
    info = signal.sigtimedwait({signal.SIGCHLD, signal.SIGTERM, signal.SIGINT}, 5)
    if info is not None and info.si_signo != signal.SIGCHLD:
        os._exit(0)
"""
# Runs the command, then kills whatever it left running (init is spared by the kernel) and
# waits, briefly, until it is gone. $$ is this shell; kill -1 never signals its caller.
_WRAPPER = (
    '"$@"; rc=$?; kill -9 -1 2>/dev/null; i=0; '
    'while [ $i -lt 200 ] && kill -0 -1 2>/dev/null; do i=$((i+1)); sleep 0.01; done; '
    "exit $rc"
)
_KILL_ALL = (
    "kill -9 -1 2>/dev/null; i=0; "
    "while [ $i -lt 300 ] && kill -0 -1 2>/dev/null; do i=$((i+1)); sleep 0.01; done; "
    "kill -0 -1 2>/dev/null && exit 1; exit 0"
)
# getpass.getuser() and friends look here first; the uid may have no passwd entry.
_IDENTITY = {"USER": "sandbox", "LOGNAME": "sandbox"}


def _sandbox_user(rootless: bool = False) -> tuple[int, int]:
    """Who commands run as: the host user's ids, nobody's when the host user is root.

    A rootless engine maps the container's root to the host user (and every other uid to a
    subordinate id that could not write the workspace), so there the container's root, which
    holds no capabilities and is the host user outside, is the right one.
    """
    if rootless:
        return 0, 0
    uid = os.getuid() if hasattr(os, "getuid") else NOBODY
    if uid == 0:
        return NOBODY, NOBODY
    return uid, os.getgid()


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
    for sock in held:
        try:
            sock.close()
        except OSError:
            pass
    _remove_container(client, cid)


class _OomWatch:
    """Follows the engine's ``oom`` events for one container on a daemon thread."""

    def __init__(self, client, cid: str) -> None:
        self.times: list[float] = []
        self.cond = threading.Condition()
        self._stream = client.api.events(
            filters={"container": cid, "event": "oom", "type": "container"}, decode=True)
        self._thread = threading.Thread(target=self._follow, daemon=True)
        self._thread.start()

    def _follow(self) -> None:
        try:
            for _ in self._stream:
                with self.cond:
                    self.times.append(time.monotonic())
                    self.cond.notify_all()
        except Exception:  # closed by close(), or the engine went away
            pass

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
    """Runs commands with ``docker exec`` in one locked-down container kept for the sandbox."""

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
        self.uid, self.gid = NOBODY, NOBODY
        self._lock = threading.RLock()  # one command at a time (kill -1 spares none)
        self._close_lock = threading.Lock()
        self._closed = False
        self._cid: str | None = None
        self._attach = None
        self._oom: _OomWatch | None = None
        self._finalizer = None
        try:
            self._client = engine_client()
            self.engine_cpus, self.rootless = _engine_facts(self._client)
            self.uid, self.gid = _sandbox_user(self.rootless)
        except ImageError as err:
            raise SandboxError(str(err)) from err
        except Exception as err:
            raise SandboxError(f"docker engine error: {err}") from err
        try:
            remove_stale(self._client)
        except Exception as err:  # never a reason not to start; the next start tries again
            log.warning("could not sweep stale sandbox containers: %s", err)
        self.startup_seconds = self._start()

    # ------------------------------------------------------------- the container

    @property
    def python(self) -> str:
        return SANDBOX_PYTHON

    @property
    def container_id(self) -> str | None:
        return self._cid

    def _labels(self) -> dict[str, str]:
        pid = os.getpid()
        return {LABEL: "1", LABEL_RUN: self.run_id, LABEL_PID: str(pid),
                LABEL_PID_START: _proc_start(pid), LABEL_HOST: socket.gethostname(),
                LABEL_BOOT: _boot_id(), "labcoat.workspace": str(self.workspace)}

    def _docker_mounts(self) -> list:
        from docker.types import Mount as DMount

        out = [DMount(target=WORKDIR, source=str(self.workspace), type="bind", read_only=False)]
        for m in self.mounts:
            src = Path(m.source).resolve()
            if not src.exists():
                raise SandboxError(f"mount source {src} does not exist")
            out.append(DMount(target=m.target, source=str(src), type="bind",
                              read_only=m.read_only))
        return out

    def _start(self) -> float:
        """Create, attach to and start the container; returns the seconds it took."""
        import docker
        from docker.types import LogConfig, Ulimit

        t0 = time.perf_counter()
        lim = self.limits
        mem = f"{lim.memory_mb}m"
        self._hand_over()
        try:
            container = self._client.api.create_container(
                self.image,
                command=[SANDBOX_PYTHON, "-I", "-S", "-c", _INIT],
                user=f"{self.uid}:{self.gid}",
                working_dir=WORKDIR,
                hostname="sandbox",
                labels=self._labels(),
                stdin_open=True,  # with detach=False the SDK also sets StdinOnce
                network_disabled=True,
                environment={"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8"},
                host_config=self._client.api.create_host_config(
                    network_mode="none",
                    read_only=True,
                    cap_drop=["ALL"],
                    security_opt=["no-new-privileges"],
                    pids_limit=lim.pids,
                    mem_limit=mem,
                    memswap_limit=mem,
                    nano_cpus=int(min(lim.cpus, self.engine_cpus) * 1e9),
                    tmpfs={"/tmp": f"rw,nosuid,nodev,size={lim.memory_mb}m,mode=1777"},
                    mounts=self._docker_mounts(),
                    auto_remove=True,
                    ulimits=[Ulimit(name="core", soft=0, hard=0)],
                    log_config=LogConfig(type="none"),
                    ipc_mode="private",
                ),
            )
        except docker.errors.ImageNotFound as err:
            raise SandboxError(
                f"sandbox image {self.image} is missing: run `labcoat sandbox build --offline` "
                "(or `labcoat sandbox build` where a registry is reachable)") from err
        except docker.errors.DockerException as err:
            raise SandboxError(f"cannot create the sandbox container: {err}") from err
        cid = container["Id"]
        self._cid = cid
        held: list = []
        self._finalizer = weakref.finalize(self, _finalize, self._client, cid, held)
        try:
            # Attached before start: if this process dies from here on, stdin closes, init
            # exits and the engine removes the container.
            sock = self._client.api.attach_socket(cid, params={"stdin": 1, "stream": 1})
            self._attach = getattr(sock, "_sock", sock)
            held += [sock, self._attach]
            self._oom = _OomWatch(self._client, cid)
            self._client.api.start(cid)
        except docker.errors.DockerException as err:
            self._finalizer()
            raise SandboxError(f"cannot start the sandbox container: {err}") from err
        return time.perf_counter() - t0

    def _restart(self) -> None:
        """Replace the container (used when a runaway one cannot even run ``kill``)."""
        if self._closed:
            raise SandboxError("sandbox is closed")
        old, oom = self._cid, self._oom
        if self._finalizer:
            self._finalizer()
        if oom:
            oom.close()
        log.warning("sandbox container %s replaced after a runaway command", (old or "")[:12])
        self._start()

    def close(self) -> None:
        """Remove the container; a command still running in it (another thread) is killed."""
        with self._close_lock:
            if self._closed:
                return
            self._closed = True
        if self._oom:
            self._oom.close()
        if self._finalizer:
            self._finalizer()
        self._hand_back()

    # ------------------------------------------------------------- commands

    def _code_path(self) -> str:
        """``/opt/labcoat`` when code is mounted there (so ``import methods`` works)."""
        return code_pythonpath(self.mounts)

    def _hand_over(self) -> None:
        """When the host user is root, give the writable folders to the sandbox's user."""
        if os.getuid() == 0 and self.uid != 0:
            self._chown_tree(lambda st: (st.st_uid, st.st_gid) != (self.uid, self.gid),
                             self.uid, self.gid)

    def _hand_back(self) -> None:
        """After the run, what the sandbox's user owns in the workspace is root's again."""
        if os.getuid() == 0 and self.uid != 0:
            self._chown_tree(lambda st: st.st_uid == self.uid, 0, 0)

    def _chown_tree(self, needs, uid: int, gid: int) -> None:
        roots = [self.workspace] + [Path(m.source) for m in self.mounts if not m.read_only]
        for root in roots:
            try:
                if needs(os.lstat(root)):
                    os.chown(root, uid, gid, follow_symlinks=False)
            except OSError:
                continue
            # fwalk holds directory fds and never follows links, so a link the command left
            # behind cannot redirect a chown outside the workspace.
            for _, dirs, files, dfd in os.fwalk(root, follow_symlinks=False):
                for name in dirs + files:
                    try:
                        if needs(os.stat(name, dir_fd=dfd, follow_symlinks=False)):
                            os.chown(name, uid, gid, dir_fd=dfd, follow_symlinks=False)
                    except OSError:
                        pass

    def exec(
        self,
        argv: Sequence[str],
        timeout: float | None = None,
        *,
        env: Mapping[str, str] | None = None,
        stdin: str | bytes | None = None,
        cwd: str | None = None,
    ) -> ExecResult:
        import docker

        if not argv:
            raise ValueError("exec needs a command")
        timeout = timeout or self.limits.timeout
        with self._lock:
            if self._closed:
                raise SandboxError("sandbox is closed")
            self._hand_over()
            full_env = clean_env({**_IDENTITY, **(env or {})}, self.limits.cpus, self._code_path())
            out = CappedBuffer(self.limits.output_bytes)
            err = CappedBuffer(self.limits.output_bytes)
            oom_before = self._oom.count() if self._oom else 0
            start = time.perf_counter()
            api = self._client.api
            for attempt in (1, 2):
                try:
                    exec_id = api.exec_create(
                        self._cid, ["/bin/sh", "-c", _WRAPPER, "sandbox", *argv],
                        stdout=True, stderr=True, stdin=stdin is not None, tty=False,
                        environment=full_env, workdir=cwd or WORKDIR,
                        user=f"{self.uid}:{self.gid}",
                    )["Id"]
                    sock = api.exec_start(exec_id, socket=True)
                    break
                except docker.errors.APIError as e:
                    # The container is gone or stopped (its init was killed): the command
                    # never started, so start a fresh container and run it there.
                    if attempt == 2 or e.status_code not in (404, 409):
                        raise SandboxError(f"docker exec failed: {e}") from e
                    self._restart()
                except docker.errors.DockerException as e:
                    raise SandboxError(f"docker exec failed: {e}") from e
            raw = getattr(sock, "_sock", sock)
            raw.settimeout(None)
            reader = threading.Thread(target=_demux, args=(raw, out, err), daemon=True)
            reader.start()
            if stdin is not None:
                threading.Thread(target=_feed, args=(raw, stdin), daemon=True).start()
            reader.join(timeout)
            timed_out = reader.is_alive()
            if timed_out:
                try:
                    self._kill_all()
                except SandboxError:  # closed meanwhile: the container is gone anyway
                    pass
                reader.join(5)
            _close(sock)
            code = self._exit_code(exec_id)
            seconds = time.perf_counter() - start
            oom = False
            if self._oom:
                # The engine's event can trail the exit by a few milliseconds.
                wait = 0.5 if code in (137, -9) or code is None else 0.05 if code else 0.0
                oom = self._oom.count() > oom_before or (
                    wait > 0 and self._oom.wait_beyond(oom_before, wait))
        if code is None:
            code = 137 if timed_out else 125
        return ExecResult(
            exit_code=code,
            stdout=out.text(),
            stderr=err.text(),
            seconds=seconds,
            timed_out=timed_out,
            oom_killed=oom,
            truncated=out.truncated or err.truncated,
        )

    def _exit_code(self, exec_id: str) -> int | None:
        import docker

        for _ in range(50):
            try:
                info = self._client.api.exec_inspect(exec_id)
            except docker.errors.DockerException:
                return None
            if not info.get("Running"):
                return info.get("ExitCode")
            time.sleep(0.01)
        return None

    def _kill_all(self) -> None:
        """Kill every process of the sandbox user in the container, else replace it."""
        import docker

        api = self._client.api
        try:
            exec_id = api.exec_create(self._cid, ["/bin/sh", "-c", _KILL_ALL],
                                      user=f"{self.uid}:{self.gid}")["Id"]
            api.exec_start(exec_id)
            if self._exit_code(exec_id) == 0:
                return
        except docker.errors.DockerException as e:
            log.info("in-container kill failed (%s); replacing the container", e)
        self._restart()

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
            detail=(f"container per run, exec per command (engine {engine['version']}, "
                    f"image {IMAGE}, {image['kind']})"),
            filesystem=True,
            network=True,
            memory=True,
            cpu=True,
            pids=True,
            process_tree_kill=True,
            unprivileged_user=True,
        )


def _demux(sock: socket.socket, out: CappedBuffer, err: CappedBuffer) -> None:
    """Split Docker's multiplexed stream (8-byte frame headers) into the two buffers."""
    buf = bytearray()
    need, target = 8, None
    try:
        while chunk := sock.recv(1 << 16):
            buf += chunk
            while len(buf) >= need:
                if target is None:
                    kind, size = struct.unpack(">BxxxL", buf[:8])
                    del buf[:8]
                    target = err if kind == 2 else out
                    need = size
                    if size == 0:
                        target, need = None, 8
                    continue
                target.write(bytes(buf[:need]))
                del buf[:need]
                target, need = None, 8
    except OSError:
        pass


def _feed(sock: socket.socket, data: str | bytes) -> None:
    try:
        sock.sendall(data.encode() if isinstance(data, str) else data)
        sock.shutdown(socket.SHUT_WR)
    except OSError:
        pass


def _close(sock) -> None:
    try:
        sock.close()
    except OSError:
        pass
    raw = getattr(sock, "_sock", None)
    if raw is not None:
        try:
            raw.close()
        except OSError:
            pass
