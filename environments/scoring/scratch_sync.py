"""A scratch folder S kept equal to what a copy of a source folder would be, by ``lstat`` key.

Scoring copies a workspace into a scratch folder before a sandbox reads it (``evaluate``'s
copy, the task's read-only files laid over it, and for a data-only task its code moved
aside). Where one scratch serves many evaluations (``score --all-steps``' steps, a timed
task's repeats), copying again each time costs every file and every byte of read-only data.
Instead:

* **S is a function of the source R**: :func:`plan` says which file of S comes from which file
  of R (or, for a read-only file, of the task's ``env/``) and which folders S has, by the
  rules of ``evaluate``'s copy, ``lay_read_only`` and (``strip``) ``strip_code``. A source
  where those rules would collide (a file where a read-only file needs a folder, R's own
  ``.labcoat-source/``) is not planned: the caller copies the old way.
* **What the host laid is remembered by its lstat key** (inode, ctime, size, mtime, mode), and
  with it the key of the source it came from. :meth:`Scratch.sync` walks S by descriptor
  (``lstat``, nothing followed) against that record: an entry whose key differs was touched
  by the sandbox and is laid again; a name the host did not lay, a link, a FIFO, a device or a
  folder not wanted is removed; a file whose source changed is laid again; every folder's
  extended attributes (``user.*``, ACLs: a note a sandboxed command could leave on a folder it
  owns, which no key shows) are removed. So read-only data is laid once and only laid again
  when the sandbox touched it, and a sync costs one ``lstat`` per file plus what changed.
  ctime is the key nothing sandboxed can set back (``utime`` restores mtime, not ctime);
  before the next command runs, :meth:`Scratch.settle` waits until the kernel's clock
  (:mod:`sandbox.clock`) is past every ctime recorded, so a change cannot be stamped with a
  recorded ctime.

A sync only runs between two commands, while the sandbox over S holds no process.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from environments.scoring.submission import CODE_SUFFIXES, SOURCE_ASIDE
from environments.task.spec import TaskSpec
from sandbox.clock import kernel_clock_ns
from sandbox.fs import WorkspaceFS, kind_of, scratch_mode

SECOND = 1_000_000_000
FOLDER_MODE = 0o755  # what sandbox.fs gives a folder it makes (``copy_tree``'s scratch too)
PYCACHE = "__pycache__"


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


def plan(task: TaskSpec, restored: Path, pristine: dict[str, Source], *, strip: bool = True) -> Plan | None:
    """S for the workspace in ``restored``, as ``evaluate`` would build it (copy, read-only
    files laid and, with ``strip``, code moved aside and ``__pycache__`` dropped); None where
    those rules collide (a read-only file's name is a folder of the workspace, or one of its
    folders a file there; with ``strip``, the workspace has its own ``.labcoat-source/``):
    the caller then copies the old way."""
    files, folders = _tree(WorkspaceFS(restored))
    out, every_folder = Plan(), set(folders)
    if any(rel in every_folder for rel in pristine) or strip and (SOURCE_ASIDE in every_folder or any(
            rel.split("/", 1)[0] == SOURCE_ASIDE for rel in pristine)):
        return None
    out.folders = {rel for rel in folders if not strip or PYCACHE not in rel.split("/")}
    ro_folders = {a for rel in pristine for a in _ancestors(rel)}
    for rel, st in files:
        if rel in ro_folders or strip and rel == SOURCE_ASIDE:
            return None
        if rel in pristine or strip and _in_pycache(rel):
            continue
        if strip and rel.endswith(CODE_SUFFIXES) and not task.is_read_only(rel):
            target = _aside(rel)
            out.folders.update(_ancestors(target))
        else:
            target = rel  # its folders are the workspace's own
        out.files[target] = Source("run", rel, Key.of(st), scratch_mode(st.st_mode))
    for rel, src in pristine.items():  # laid, then dropped with a __pycache__ by strip_code
        if not (strip and _in_pycache(rel)):
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
        """Make S hold ``want``: walk it against the record, remove what no one laid and every
        folder's notes (extended attributes), lay what was touched or whose source changed.
        Returns how many files were laid."""
        fs, seen, walked = self.fs, set(), set()
        stack = [""]
        while stack:
            at = stack.pop()
            fs.clear_xattrs(at or ".")
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
