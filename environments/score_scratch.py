"""Scoring a run's steps in turn: one scratch folder and one sandbox, synced step to step.

:func:`environments.evaluate.evaluate` builds a new scratch copy of the workspace for each
call (every file copied, the task's read-only files laid, code moved aside) and a new sandbox
over it (as root: an ext4 quota image filled and emptied, the tree handed to the sandbox's uid
and back). For ``labcoat score --all-steps`` that is steps x files. :class:`StepScorer` keeps
both for the whole call instead, for a data-only task (no ``scripts/produce.py``, not timed):

* **The scratch S is a function of the restored step R**: :func:`plan` says which file of S
  comes from which file of R (or, for a read-only file, of the task's ``env/``) and which
  folders S has, by the rules of ``evaluate``'s copy, ``lay_read_only`` and ``strip_code``. A
  workspace where those rules would collide (a file where a read-only file needs a folder, R's
  own ``.labcoat-source/``) is not planned: that step is evaluated the old way.
* **What the host laid is remembered by its lstat key** (inode, ctime, size, mtime, mode), and
  with it the key of the source it came from. Before each step S is walked by descriptor
  (``lstat``, nothing followed) against that record: an entry whose key differs was touched
  by the sandbox and is laid again; a name the host did not lay, a link, a FIFO, a device or a
  folder not wanted is removed; a file whose source changed (R's restore rewrote it) is laid
  again. So read-only data is laid once and only laid again when the evaluation touched it,
  and a step costs one ``lstat`` per file plus what changed. ctime is the key nothing sandboxed
  can set back (``utime`` restores mtime, not ctime); before the next command runs, the host
  waits until the kernel's clock (:mod:`sandbox.clock`) is past every ctime it recorded, so a
  change cannot be stamped with a recorded ctime.
* **One trusted sandbox over S** runs each step's ``eval.py``. Before each evaluation, a
  command empties its ``/tmp`` and ``/dev/shm`` (:mod:`environments.in_sandbox.empty_tmp`) and
  checks they are empty and that no System V IPC object is left; the supervisor kills whatever
  a command leaves running. If that check fails, the sandbox is lost, or a host write into S
  fails (the quota image, sized when the sandbox opened, is full), the sandbox is closed and
  that step is evaluated the old way (a fresh scratch and sandbox); the next step opens a new
  scratch and sandbox.

Everything else (a task with ``produce.py``, a timed task, one workspace evaluated alone:
Validate Submission, baselines, ``score_run``, ``check-task``) goes through ``evaluate`` as is.
"""

from __future__ import annotations

import os
import textwrap
import time
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple, Self

from environments.evaluate import (
    EMPTY_TMP_SOURCE,
    EvalResult,
    evaluate,
    open_trusted,
    run_trusted,
)
from environments.safefs import (
    WorkspaceError,
    WorkspaceFS,
    kind_of,
    scratch_mode,
    temporary_folder,
)
from environments.submission import CODE_SUFFIXES, SOURCE_ASIDE, has_produce
from environments.task import TaskSpec
from sandbox import SandboxError
from sandbox.clock import kernel_clock_ns

SECOND = 1_000_000_000
FOLDER_MODE = 0o755  # what safefs gives a folder it makes (``copy_tree``'s scratch too)
PYCACHE = "__pycache__"
#: run after ``empty_tmp``'s own code, in the same command: exit 3 when anything is left that
#: the next step's evaluation could read (a file kept in /tmp, a System V IPC object)
CHECK_EMPTY = textwrap.dedent("""
    import os as _os, sys as _sys
    _left = left(TOPS)
    for _name in ("shm", "msg", "sem"):
        try:
            with open("/proc/sysvipc/" + _name) as _f:
                if len(_f.read().strip().splitlines()) > 1:
                    _left.append(_name)
        except OSError:
            pass
    _sys.exit(3 if _left else 0)
""")
CLEAN_SOURCE = EMPTY_TMP_SOURCE + CHECK_EMPTY


class Key(NamedTuple):
    """An entry's ``lstat`` key: any change to it (content, mode, links, a rename over it)
    changes the ctime, which nothing sandboxed can set back."""

    ino: int
    ctime_ns: int
    size: int
    mtime_ns: int
    mode: int

    @classmethod
    def of(cls, st: os.stat_result) -> Key:
        return cls(st.st_ino, st.st_ctime_ns, st.st_size, st.st_mtime_ns, st.st_mode)


class Source(NamedTuple):
    """Where a file of S comes from: ``env`` (the task's pristine read-only file) or ``run``
    (the restored step), the path there, its key there, and the mode S gets."""

    side: str
    rel: str
    key: Key
    mode: int


@dataclass
class Plan:
    """What S must hold for one restored step: each file's source, and every folder."""

    files: dict[str, Source] = field(default_factory=dict)
    folders: set[str] = field(default_factory=set)


def _ancestors(rel: str) -> Iterator[str]:
    parts = rel.split("/")
    for i in range(1, len(parts)):
        yield "/".join(parts[:i])


def _aside(rel: str) -> str:
    """Where ``strip_code`` moves a code file (a package's ``__init__.py`` as text)."""
    moved = f"{SOURCE_ASIDE}/{rel}"
    return moved + ".txt" if rel.rsplit("/", 1)[-1] == "__init__.py" else moved


def _tree(fs: WorkspaceFS) -> tuple[list[tuple[str, os.stat_result]], list[str]]:
    found = fs.walk()
    return found.files, found.folders


def read_only_files(task: TaskSpec) -> dict[str, Source]:
    """The task's read-only files in its pristine ``env/`` (laid over every scratch)."""
    files, _ = _tree(WorkspaceFS(task.env_dir))
    return {rel: Source("env", rel, Key.of(st), scratch_mode(st.st_mode))
            for rel, st in files if task.is_read_only(rel)}


def plan(task: TaskSpec, restored: Path, pristine: dict[str, Source]) -> Plan | None:
    """S for the step restored in ``restored``, as ``evaluate`` would build it (copy, read-only
    files laid, code moved aside, ``__pycache__`` dropped); None where those rules collide
    (a read-only file's name is a folder of the step, or one of its folders a file there; the
    step has its own ``.labcoat-source/``): the step is then evaluated the old way."""
    files, folders = _tree(WorkspaceFS(restored))
    out, every_folder = Plan(), set(folders)
    if SOURCE_ASIDE in every_folder or any(
            rel in every_folder or rel.split("/", 1)[0] == SOURCE_ASIDE for rel in pristine):
        return None
    out.folders = {rel for rel in folders if PYCACHE not in rel.split("/")}
    ro_folders = {a for rel in pristine for a in _ancestors(rel)}
    for rel, st in files:
        if rel in ro_folders or rel == SOURCE_ASIDE:
            return None
        if rel in pristine or _in_pycache(rel):
            continue
        if rel.endswith(CODE_SUFFIXES) and not task.is_read_only(rel):
            target = _aside(rel)
            out.folders.update(_ancestors(target))
        else:
            target = rel  # its folders are the step's own
        out.files[target] = Source("run", rel, Key.of(st), scratch_mode(st.st_mode))
    for rel, src in pristine.items():  # laid, then dropped with a __pycache__ by strip_code
        if not _in_pycache(rel):
            out.files[rel] = src
            out.folders.update(_ancestors(rel))
    return out


def _in_pycache(rel: str) -> bool:
    return PYCACHE in rel and PYCACHE in rel.split("/")[:-1]


@dataclass
class Scratch:
    """S, and what the host laid there: target -> (its key in S, the source it was laid from)."""

    folder: Path
    laid: dict[str, tuple[Key, Source]] = field(default_factory=dict)
    latest_ctime: int = 0  # the newest ctime recorded: no command may run before the clock passes it

    @property
    def fs(self) -> WorkspaceFS:
        return WorkspaceFS(self.folder)

    def sync(self, want: Plan, sources: dict[str, WorkspaceFS]) -> int:
        """Make S hold ``want``: walk it against the record, remove what no one laid, lay what
        was touched or whose source changed. Returns how many files were laid."""
        fs, seen, walked = self.fs, set(), set()
        stack = [""]
        while stack:
            at = stack.pop()
            for name, st in fs.stats(at or "."):
                rel = f"{at}/{name}" if at else name
                kind = kind_of(st.st_mode)
                if kind == "dir" and rel in want.folders and st.st_mode & 0o7777 == FOLDER_MODE:
                    stack.append(rel)
                    walked.add(rel)
                    continue
                if kind == "file" and rel in want.files:
                    if self.laid.get(rel) == (Key.of(st), want.files[rel]):
                        seen.add(rel)
                    continue  # laid again below (written over by a temp file and a rename)
                self.laid.pop(rel, None)
                fs.remove_tree(rel)  # a link, a FIFO, a name nobody laid, a folder not wanted
        laid = 0
        for rel in sorted(want.folders - walked):  # parents first
            with fs.folder(rel, create=True):
                pass
        for rel, src in want.files.items():
            if rel in seen:
                continue
            self.laid.pop(rel, None)
            fs.write(rel, sources[src.side].chunks(src.rel), mode=src.mode)
            self.remember(rel, src)
            laid += 1
        for rel in [r for r in self.laid if r not in want.files]:
            del self.laid[rel]
        return laid

    def remember(self, rel: str, src: Source) -> None:
        st = self.fs.lstat(rel)
        if st is not None:
            self.laid[rel] = (Key.of(st), src)
            self.latest_ctime = max(self.latest_ctime, st.st_ctime_ns)

    def refresh(self) -> None:
        """Take S's keys as they are now: only after trusted work changed them (the quota
        copy into its image, the hand-over's chown), before any evaluation ran over S."""
        for rel, (_, src) in list(self.laid.items()):
            self.laid.pop(rel)
            self.remember(rel, src)

    def settle(self) -> None:
        """Wait until the kernel's clock is past every recorded ctime (a tick, a few ms), so
        that anything a later command changes is stamped with a newer one. A ctime on a whole
        second may come from a filesystem that keeps only seconds: then past that second."""
        until = self.latest_ctime + (SECOND - 1 if self.latest_ctime % SECOND == 0 else 0)
        while kernel_clock_ns() <= until:
            time.sleep(0.001)


class StepScorer:
    """Evaluates workspaces in turn (a run's restored steps), incrementally where it can (see
    the module doc), else by :func:`environments.evaluate.evaluate`. Use as a context manager."""

    def __init__(self, task: TaskSpec, sandbox: str = "auto") -> None:
        self.task, self.sandbox = task, sandbox
        self.incremental = task.has_eval and not task.timed and not has_produce(task.scripts_dir)
        self._pristine: dict[str, Source] | None = None
        self._stack: ExitStack | None = None
        self._scratch: Scratch | None = None
        self._sb = None
        self.stats = {"incremental": 0, "fresh": 0, "laid": 0, "opened": 0}

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the sandbox (its quota image copied back) and remove S."""
        stack, self._stack, self._scratch, self._sb = self._stack, None, None, None
        if stack is not None:
            try:
                stack.close()
            except (SandboxError, OSError, WorkspaceError):
                pass  # S is gone with its folder either way; the next step opens anew

    def evaluate(self, restored: Path) -> EvalResult:
        """The evaluation of the workspace in ``restored`` (a host-only folder), equal to
        ``evaluate(task, restored, sandbox)``."""
        if self.incremental:
            try:
                want = plan(self.task, restored, self.pristine())
            except (OSError, WorkspaceError):
                want = None
            if want is not None:
                try:
                    result = self._incremental(restored, want)
                    self.stats["incremental"] += 1
                    return result
                except (SandboxError, OSError, ValueError):  # WorkspaceError is a ValueError
                    self.close()  # correct first: this step again, the old way
        self.stats["fresh"] += 1
        return evaluate(self.task, restored, self.sandbox)

    def pristine(self) -> dict[str, Source]:
        if self._pristine is None:
            self._pristine = read_only_files(self.task)
        return self._pristine

    def _incremental(self, restored: Path, want: Plan) -> EvalResult:
        sources = {"run": WorkspaceFS(restored), "env": WorkspaceFS(self.task.env_dir)}
        if self._sb is None:
            self._open(want, sources)
        else:
            self.stats["laid"] += self._scratch.sync(want, sources)
            self._clean()
        self._scratch.settle()
        return run_trusted(self._sb, "get_score", self.task.limits.eval_timeout)

    def _open(self, want: Plan, sources: dict[str, WorkspaceFS]) -> None:
        """S laid in full, then the sandbox opened over it (the quota image sized for it);
        the keys are taken once the first (trusted) command has handed S over. Only a
        sandbox that isolates the filesystem is kept (``/tmp`` is emptied between steps)."""
        self._stack = stack = ExitStack()
        tmp = stack.enter_context(temporary_folder("labcoat-steps-"))
        self._scratch = Scratch(tmp / "workspace")
        self._scratch.fs.make_root()
        self.stats["laid"] += self._scratch.sync(want, sources)
        try:
            self._sb = stack.enter_context(open_trusted(self.task, self._scratch.folder, self.sandbox))
        except (SandboxError, OSError, ValueError):
            self.incremental = False  # no sandbox opens here: each step says why, the old way
            raise
        self.stats["opened"] += 1
        if not self._sb.describe().filesystem:  # /tmp would be the host's own: never emptied
            self.incremental = False
            raise SandboxError("the sandbox does not isolate the filesystem")
        self._clean()
        self._scratch.refresh()

    def _clean(self) -> None:
        """Empty the sandbox's ``/tmp`` and ``/dev/shm``; a sandbox where something is left is
        not used again (raises, so the step is evaluated afresh)."""
        r = self._sb.exec([self._sb.python, "-I", "-S", "-c", CLEAN_SOURCE], timeout=60)
        if r.exit_code != 0 or r.timed_out:
            raise SandboxError(f"the scoring sandbox could not be emptied (exit {r.exit_code})")
