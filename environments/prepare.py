"""Preparing a task once: a private copy of its folder in which ``prepare.py`` has run.

``prepare.py`` writes into the task folder (data into ``env/``, held-out answers beside
itself), which must not happen in the installed package, and must happen only once however
many runs share the task. So labcoat copies the folder into a cache keyed by the folder's
content, runs ``prepare.py`` there under a lock, and every run uses that copy.

A task folder comes from anywhere (MLAgentBench's, a colleague's), so its ``prepare.py`` is
untrusted code: it runs in the sandbox (the backend the run uses), with its copy as the
workspace and ``scripts/`` as its working directory, as the sandbox's unprivileged user, with
the host's Python read-only (the suite's prepare scripts import numpy, torch and ``methods``),
and with the network and the person's environment variables only as ``task.toml``'s
``[prepare]`` declares them. When labcoat's stdin and stderr are a terminal, what the person
types is relayed to it (never the terminal's own descriptor: a sandboxed process holding it
could change the terminal's modes or write around the display); its output is shown as it
comes, as text, and the person is told in which sandbox it runs.
"""

from __future__ import annotations

import codecs
import fcntl
import hashlib
import os
import select
import shutil
import stat
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Literal

from environments.task import TaskError, TaskSpec, load_task
from environments.untrusted import visible

Show = Callable[[str], None]


def labcoat_home() -> Path:
    return Path(os.environ.get("LABCOAT_HOME", Path.home() / ".cache" / "labcoat"))


def fingerprint(root: Path) -> str:
    """Hash of the task folder's files (names, sizes, contents of small files)."""
    h = hashlib.sha256()
    for p in sorted(root.rglob("*")):
        if not p.is_file() or "__pycache__" in p.parts:
            continue
        rel = p.relative_to(root).as_posix()
        st = p.stat()
        h.update(f"{rel}:{st.st_size}\n".encode())
        if st.st_size < (1 << 20):
            h.update(p.read_bytes())
    return h.hexdigest()[:16]


def prepare_task(task: TaskSpec, cache: Path | None = None, timeout: float = 900, *,
                 sandbox: str = "auto", stdin: int | Literal["terminal"] | None = "terminal",
                 show: Show | None = None) -> TaskSpec:
    """The prepared task (the task itself when it has no ``prepare.py``).

    ``sandbox`` is the backend prepare.py runs in (the run's). ``stdin``: ``"terminal"``
    relays labcoat's own stdin when it is a person's terminal (else prepare.py reads
    /dev/null), a descriptor relays that one, None gives /dev/null. ``show`` gets the
    announcement and prepare.py's output as text as it comes (default: stderr)."""
    if not task.prepare_path.exists():
        return task
    cache = cache or labcoat_home() / "tasks"
    cache.mkdir(parents=True, exist_ok=True)
    dest = cache / f"{task.name}-{fingerprint(task.root)}"
    marker = dest / ".prepared"
    if marker.exists():
        return load_task(dest, task.name)
    with open(cache / f".{dest.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if marker.exists():
            return load_task(dest, task.name)
        tmp = cache / f".{dest.name}.tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        check_within(task.root)  # a link out of the folder would copy a host file in
        shutil.copytree(task.root, tmp, ignore=shutil.ignore_patterns("__pycache__"))
        try:
            run_prepare(task, tmp, sandbox=sandbox, timeout=timeout, stdin=stdin, show=show)
            check_within(tmp)  # what prepare.py left is read by the host from now on
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        shutil.rmtree(dest, ignore_errors=True)
        tmp.rename(dest)
        marker.write_text("ok\n")
    return load_task(dest, task.name)


def run_prepare(task: TaskSpec, copy: Path, *, sandbox: str = "auto", timeout: float = 900,
                stdin: int | Literal["terminal"] | None = "terminal",
                show: Show | None = None) -> None:
    """Run ``scripts/prepare.py`` of ``copy`` (a copy of ``task``'s folder) in a sandbox over
    ``copy``; :class:`TaskError` with its output's tail when it fails."""
    from environments.sandboxing import code_mounts, sandbox_limits
    from sandbox import SandboxError, open_sandbox

    show = show or _to_stderr
    declared = task.prepare
    limits = sandbox_limits(task).model_copy(update={
        "timeout": timeout, "network": declared.network, "pass_env": tuple(declared.env)})
    env = {name: os.environ[name] for name in declared.env if name in os.environ}
    env["PYTHONHASHSEED"] = "0"
    relay = _Relay(_terminal() if stdin == "terminal" else stdin)
    try:
        with open_sandbox(sandbox, copy, limits, code_mounts()) as sb:
            reach = ("the host's network" if declared.network else "no network") + (
                f", environment {', '.join(declared.env)}" if declared.env else "")
            show(f"labcoat: running {task.name}'s scripts/prepare.py in the {sb.backend} "
                 f"sandbox ({reach}; only its own copy of the task is writable)\n")
            result = sb.exec([sb.python, "prepare.py"], env=env, cwd=f"{sb.workdir}/scripts",
                             stdin=relay.fd, tee=_Text(show))
    except SandboxError as err:
        raise TaskError(f"{task.prepare_path}: prepare.py cannot run sandboxed: {err}") from err
    finally:
        relay.close()
    if not result.ok:
        why = (f"timed out after {timeout:g} s" if result.timed_out else "ran out of memory"
               if result.oom_killed else f"exit {result.exit_code}")
        tail = (result.stderr.strip() or result.stdout.strip())[-3000:]
        raise TaskError(f"{task.prepare_path}: prepare.py failed ({why}):\n{tail}")


def check_within(root: Path) -> None:
    """TaskError unless everything under ``root`` is a folder, a plain file, or a link that
    stays inside ``root``: the host reads a task folder (and copies it) following links, and a
    fifo or device would hang or feed those reads."""
    top = root.resolve()
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            path = Path(folder) / name
            st = path.lstat()
            if stat.S_ISLNK(st.st_mode):
                target = (path.parent / os.readlink(path)).resolve()
                if target != top and top not in target.parents:
                    raise TaskError(f"{path}: a link out of the task folder (to {target})")
            elif not (stat.S_ISDIR(st.st_mode) or stat.S_ISREG(st.st_mode)):
                raise TaskError(f"{path}: not a plain file or folder")


def _terminal() -> int | None:
    """labcoat's stdin, when it and stderr are a person's terminal (not the TUI's capture)."""
    try:
        return 0 if os.isatty(0) and os.isatty(sys.stderr.fileno()) else None
    except (AttributeError, OSError, ValueError):
        return None


def _to_stderr(text: str) -> None:
    sys.stderr.write(visible(text))  # the task's code wrote it: shown, never obeyed
    sys.stderr.flush()


class _Text:
    """A sandbox ``tee``: each stream's bytes decoded as they come (a character split between
    chunks waits for its rest) and handed to ``show`` as text."""

    def __init__(self, show: Show) -> None:
        self._show = show
        self._decoders = {s: codecs.getincrementaldecoder("utf-8")("replace") for s in (1, 2)}

    def __call__(self, stream: int, chunk: bytes) -> None:
        text = self._decoders[stream].decode(chunk)
        if text:
            self._show(text)


class _Relay:
    """What the person types at ``src``, copied into a pipe whose read end (``fd``) is
    prepare.py's stdin, until :meth:`close`; None: no relay (``fd`` None, so /dev/null)."""

    def __init__(self, src: int | None) -> None:
        self.fd: int | None = None
        if src is None:
            return
        self.fd, self._write = os.pipe()
        os.set_blocking(self._write, False)  # a prepare.py that never reads cannot stall us
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(src,), daemon=True)
        self._thread.start()

    def _run(self, src: int) -> None:
        try:
            while not self._done.is_set():
                if not select.select([src], [], [], 0.1)[0]:
                    continue
                data = os.read(src, 4096)
                if not data:  # end of input (^D): prepare.py sees it too
                    break
                try:
                    os.write(self._write, data)
                except BlockingIOError:
                    pass
        except OSError:
            pass
        finally:
            os.close(self._write)

    def close(self) -> None:
        if self.fd is None:
            return
        self._done.set()
        self._thread.join(timeout=2)
        os.close(self.fd)
        self.fd = None
