"""Preparing a task once: a private copy of its folder in which ``prepare.py`` has run.

``prepare.py`` writes into the task folder (data into ``env/``, held-out answers beside
itself), which must not happen in the installed package, and must happen only once however
many runs share the task. So labcoat copies the folder into a cache keyed by the folder's
content (every file's bytes: :mod:`environments.task.content_key`), runs ``prepare.py``
there under a lock, and every run uses that copy.

A task folder comes from anywhere (MLAgentBench's, a colleague's), so its ``prepare.py`` is
untrusted code: it runs in the sandbox (the backend the run uses), with its copy as the
workspace and ``scripts/`` as its working directory, as the sandbox's unprivileged user, with
the host's Python read-only (the suite's prepare scripts import numpy, torch and ``methods``),
with the network only as ``task.toml``'s ``[prepare]`` declares it, and with a host variable
only when ``[prepare] env`` asks for it AND the person allows it (``--pass-env NAME``, or
``$LABCOAT_PASS_ENV``): the folder's request alone is no grant, and a run that withholds one
says so, with how to allow it. When labcoat's stdin and stderr are a terminal, or its stdin
is a pipe or a file (not /dev/null), what the person types or pipes is relayed to it (never the terminal's own descriptor: a sandboxed process holding it
could change the terminal's modes or write around the display); its output is shown as it
comes, as text, and the person is told in which sandbox it runs.

MLAgentBench's own habits are kept: a folder whose ``scripts/prepared`` exists was prepared by
MLAgentBench (its ``prepare_task.py`` writes that file once ``prepare.py`` succeeded), so it is
used as it is and ``prepare.py`` never runs again over data it already split. And since its
download scripts ignore their tools' failures (babylm's ``wget``, identify-contrails'
``kaggle``) and exit 0 with nothing fetched, a ``prepare.py`` that added or changed no file in
its copy counts as failed: nothing is cached, and the next run prepares again.
"""

from __future__ import annotations

import codecs
import fcntl
import os
import re
import select
import shlex
import shutil
import stat
import sys
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Literal

from environments.task.content_key import fingerprint
from environments.task.home import labcoat_home
from environments.task.spec import (
    TaskError,
    TaskSpec,
    check_folder,
    folder_entries,
    load_task,
)
from environments.untrusted.text import visible
from sandbox.base import SECRET_NAME, ExecResult
from sandbox.fs import WorkspaceError, WorkspaceFS, copy_file

Show = Callable[[str], None]
Files = dict[str, tuple[int, int]]

MLAB_MARKER = "prepared"
"""``scripts/prepared``: MLAgentBench's own "prepare.py has run here" (its prepare_task.py)."""
_said_prepared: set[Path] = set()  # MLAgentBench-prepared folders already announced

PASS_ENV = "LABCOAT_PASS_ENV"
"""The person's standing allowance: host variables (``NAME,NAME`` or space-separated) a task's
prepare.py may get when its ``[prepare] env`` asks for them; ``--pass-env NAME`` adds to it."""
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def allowed_env(named: Iterable[str] = ()) -> frozenset[str]:
    """The host variables the person allows a task's prepare.py: ``named`` (their
    ``--pass-env``) and ``$LABCOAT_PASS_ENV``. A task folder's own ``[prepare] env`` is only
    its request: a folder from anywhere (or one shipped inside an imported log) could name
    ``OPENAI_API_KEY``. A name that cannot be a variable's is a :class:`TaskError`."""
    names = set(named)
    for given in re.split(r"[\s,]+", os.environ.get(PASS_ENV, "")):
        if given and not _NAME.fullmatch(given):
            raise TaskError(f"${PASS_ENV}: {given!r} is not an environment variable's name "
                            "(give NAME,NAME)")
        names.add(given)
    names.discard("")
    return frozenset(names)


def env_grant(task: TaskSpec, pass_env: Iterable[str] = ()) -> tuple[list[str], list[str]]:
    """Of the variables ``task``'s ``[prepare] env`` asks for: those the person allows
    (:func:`allowed_env`), and those withheld."""
    allowed = allowed_env(pass_env)
    asked = task.prepare.env
    return [n for n in asked if n in allowed], [n for n in asked if n not in allowed]


def withheld_note(task: TaskSpec, withheld: list[str]) -> str:
    """One line: what ``task``'s ``[prepare]`` asked for and was not given, and how to allow it."""
    flags = " ".join(f"--pass-env {name}" for name in withheld)
    return (f"labcoat: {task.name}'s [prepare] asks for {', '.join(withheld)} from your "
            f"environment, not passed (a task folder gets a host variable only when you name "
            f"it): to allow, add {flags} or set {PASS_ENV}={','.join(withheld)}\n")


def prepared_by_mlagentbench(task: TaskSpec) -> bool:
    """Whether MLAgentBench's own preparation already ran in ``task``'s folder."""
    return os.path.lexists(task.scripts_dir / MLAB_MARKER)


def prepared_dir(task: TaskSpec, cache: Path | None = None) -> Path:
    """Where ``task``'s prepared copy lives (whether or not it is there yet)."""
    return (cache or labcoat_home() / "tasks") / f"{task.name}-{fingerprint(task.root)}"


def is_prepared(task: TaskSpec, cache: Path | None = None) -> bool:
    """Whether a finished prepared copy of ``task`` is cached."""
    return (prepared_dir(task, cache) / ".prepared").exists()


def prepare_task(task: TaskSpec, cache: Path | None = None, timeout: float = 900, *,
                 sandbox: str = "auto", stdin: int | Literal["terminal"] | None = "terminal",
                 show: Show | None = None, again: bool = False,
                 pass_env: Iterable[str] = ()) -> TaskSpec:
    """The prepared task (the task itself when it has no ``prepare.py``, or when MLAgentBench
    prepared the folder: ``scripts/prepared``).

    ``sandbox`` is the backend prepare.py runs in (the run's). ``stdin``: ``"terminal"``
    relays labcoat's own stdin when it is a person's terminal (else prepare.py reads
    /dev/null), a descriptor relays that one, None gives /dev/null. ``show`` gets the
    announcement and prepare.py's output as text as it comes (default: stderr). ``again``
    discards the cached copy first, so prepare.py runs anew. ``pass_env`` names host variables
    the person allows it (with ``$LABCOAT_PASS_ENV``): of those ``[prepare] env`` asks for,
    only these are passed."""
    pass_env = tuple(pass_env)
    if not task.prepare_path.exists():
        return task
    if prepared_by_mlagentbench(task):
        if again:
            raise TaskError(
                f"{task.scripts_dir / MLAB_MARKER}: MLAgentBench already prepared this folder, and "
                "prepare.py run again would work on the data it already prepared; to prepare "
                "anew, start from a fresh copy of the task folder (without scripts/prepared)")
        if task.root not in _said_prepared:
            _said_prepared.add(task.root)
            (show or _to_stderr)(f"labcoat: {task.name} was prepared by MLAgentBench "
                                 f"(scripts/prepared): its folder is used as it is, prepare.py "
                                 "is not run again\n")
        return task
    dest = prepared_dir(task, cache)
    cache = dest.parent
    cache.mkdir(parents=True, exist_ok=True)
    marker = dest / ".prepared"
    if marker.exists() and not again:
        return load_task(dest, task.name)
    with open(cache / f".{dest.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if again:
            marker.unlink(missing_ok=True)
            _discard(dest)
        if marker.exists():
            return load_task(dest, task.name)
        tmp = cache / f".{dest.name}.tmp"
        _discard(tmp)  # a killed prepare's
        check_folder(task.root)  # a link out of the folder would copy a host file in
        shutil.copytree(task.root, tmp, ignore=shutil.ignore_patterns("__pycache__"),
                        copy_function=copy_file)  # holes kept
        try:
            before = files_of(tmp)
            result = run_prepare(task, tmp, sandbox=sandbox, timeout=timeout, stdin=stdin,
                                 show=show, pass_env=pass_env)
            check_folder(tmp)  # what prepare.py left is read by the host from now on
            if not produced(before, files_of(tmp)):
                raise TaskError(
                    f"{task.prepare_path}: prepare.py exited 0 but added or changed no file in "
                    "its copy of the task (did a download fail?); nothing is kept, so the next "
                    f"run prepares again{_tail(result.stderr + result.stdout, task)}"
                    f"{_held(task, pass_env)}")
        except BaseException:
            _discard(tmp)
            raise
        _discard(dest)
        tmp.rename(dest)
        marker.write_text("ok\n")
    return load_task(dest, task.name)


def _discard(path: Path) -> None:
    """Remove a copy prepare.py wrote into, if there: by descriptor and without recursion
    (``shutil.rmtree`` recurses, and prepare.py may leave a tree of any depth)."""
    try:
        WorkspaceFS(path).remove_root()
    except WorkspaceError:
        pass


def files_of(root: Path) -> Files:
    """Every plain file under ``root`` (links not followed, ``__pycache__`` skipped): its
    path relative to ``root`` -> (size, mtime in ns)."""
    return {rel: (st.st_size, st.st_mtime_ns) for rel, st in folder_entries(root)
            if stat.S_ISREG(st.st_mode) and "__pycache__" not in rel.split("/")}


def produced(before: Files, after: Files) -> bool:
    """Whether prepare.py produced anything: a plain file anywhere in its copy (``env/``,
    ``scripts/`` or elsewhere; ``__pycache__`` aside) that is new, or whose size or mtime
    changed. Deleting files alone is not preparing (babylm's prepare.py, its download failed,
    only removes what it never got)."""
    return any(before.get(rel) != meta for rel, meta in after.items())


def run_prepare(task: TaskSpec, copy: Path, *, sandbox: str = "auto", timeout: float = 900,
                stdin: int | Literal["terminal"] | None = "terminal",
                show: Show | None = None, pass_env: Iterable[str] = ()) -> ExecResult:
    """Run ``scripts/prepare.py`` of ``copy`` (a copy of ``task``'s folder) in a sandbox over
    ``copy``; :class:`TaskError` with its output's tail when it fails. It gets the variables
    its ``[prepare] env`` asks for that the person allows (:func:`allowed_env`), and the
    person is told, in one line, of those it asked for and did not get."""
    from environments.task.sandboxing import code_mounts, sandbox_limits
    from sandbox import SandboxError, open_sandbox

    declared = task.prepare
    pass_env = tuple(pass_env)
    granted, withheld = env_grant(task, pass_env)
    limits = sandbox_limits(task).model_copy(update={
        "timeout": timeout, "network": declared.network, "pass_env": tuple(granted)})
    passed = [name for name in granted if name in os.environ]
    unset = [name for name in granted if name not in os.environ]
    env = {name: os.environ[name] for name in passed}
    secrets = _secrets(task)
    show = _hiding(show or _to_stderr, secrets)
    if withheld:
        show(withheld_note(task, withheld))
    env["PYTHONHASHSEED"] = "0"
    env["PYTHONUNBUFFERED"] = "1"  # a prompt with no newline (Kaggle's consent) shows at once
    relay = _Relay(_terminal() if stdin == "terminal" else stdin)
    asks = relay.fd is not None
    try:
        with open_sandbox(sandbox, copy, limits, code_mounts()) as sb:
            reach = ("outbound network only (user-mode NAT)" if declared.network else "no network") + (
                f", environment {', '.join(passed)}" if passed else "") + (
                f", declared but not set here: {', '.join(unset)}" if unset else "")
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
        ask = "" if "EOFError" not in result.stderr else (
            f"\nprepare.py asked for more input than labcoat's stdin gave it (it ended): run "
            f"`labcoat prepare {shlex.quote(str(task.root))}` in a terminal, or pipe it the "
            "answers, to answer it; runs then use the prepared copy") if asks else (
            f"\nprepare.py asked for input, and labcoat had no terminal to ask you in (its "
            f"stdin read nothing): run `labcoat prepare {shlex.quote(str(task.root))}` in a "
            "terminal (or pipe it the answers) to answer it; runs then use the prepared copy")
        tail = (result.stderr.strip() or result.stdout.strip())[-3000:]
        raise TaskError(f"{task.prepare_path}: prepare.py failed ({why}):\n"
                        f"{_hide(tail, secrets)}{ask}{_held(task, pass_env)}")
    return result


def _held(task: TaskSpec, pass_env: Iterable[str]) -> str:
    """For a failure: what the folder asked for and did not get (perhaps why it failed)."""
    withheld = env_grant(task, pass_env)[1]
    return f"\n{withheld_note(task, withheld).strip()}" if withheld else ""


def _tail(output: str, task: TaskSpec) -> str:
    """The end of what prepare.py printed, to quote in an error (credentials hidden)."""
    text = _hide(output.strip()[-1500:], _secrets(task))
    return f"; its output ended:\n{text}" if text else "; it printed nothing"


def _secrets(task: TaskSpec) -> list[str]:
    """The values of the variables ``[prepare]`` passes whose names look like credentials
    (``KAGGLE_KEY``, ``HF_TOKEN``; not ``KAGGLE_USERNAME``): never shown by labcoat."""
    return [os.environ[n] for n in task.prepare.env
            if SECRET_NAME.search(n) and len(os.environ.get(n, "")) >= 4]


def _hide(text: str, secrets: list[str]) -> str:
    """``text`` with each declared credential's value replaced (prepare.py may echo it)."""
    for value in secrets:
        text = text.replace(value, "[hidden]")
    return text


def _hiding(show: Show, secrets: list[str]) -> Show:
    """``show`` with the declared credentials' values hidden from what it is given (per chunk
    of output: a value split between two chunks is not caught)."""
    return (lambda text: show(_hide(text, secrets))) if secrets else show


def _terminal() -> int | None:
    """labcoat's stdin, to relay to prepare.py: a person's terminal (when stderr is one too,
    so the prompts show; not the TUI's capture), or any pipe or file it was given (``yes '' |
    labcoat prepare FOLDER``, a CI job answering Kaggle's consent). None for ``/dev/null`` or
    no stdin at all, so prepare.py reads an empty stdin at once."""
    try:
        if os.isatty(0):
            return 0 if os.isatty(sys.stderr.fileno()) else None
        st = os.fstat(0)
        null = os.stat(os.devnull)
    except (AttributeError, OSError, ValueError):
        return None
    if stat.S_ISCHR(st.st_mode) and st.st_rdev == null.st_rdev:
        return None
    return 0


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
