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
* **Folders carry notes too, and are checked as files are**: a sandboxed uid owns S's
  folders, so it can set their times (``utime``), their mode (sticky, setgid bits) and their
  size (an ext4 folder never shrinks: names made and removed leave it larger), which no key
  of a file shows and a sync that keys files alone carried from one command to the next (a
  folder's mtime is 8 bytes of the previous command's choosing). Each folder's
  :class:`FolderKey` is recorded as the host left it: a folder whose inode, size, owner or
  mode differ is removed and laid again (the workspace's root, a mount point, gets its mode
  back instead and keeps its size), and every folder's atime and mtime are put back last,
  after the host's own changes; a kept file's atime, which reading sets without a new ctime
  where the workspace is not mounted ``noatime``, is put back too. Links, FIFOs, sockets and
  devices are never kept (above); a hard link shows as a changed ctime.
* **What is left**: which entries the previous command touched shows in their ctime (or a
  new inode), and the command chooses that set: up to a bit per planned entry crosses, and
  the root folder's size (the names it made there, in blocks) a few more. Timed tasks give
  each repeat inputs it has not seen (``scripts/produce.py``), so no bit answers for the work
  measured; a two-phase step under ``score --all-steps`` could pass its successor those bits
  (data-only steps run no submitted code). Closing it needs the workspace on an overlay whose
  upper layer is thrown away per command.
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


class FolderKey(NamedTuple):
    """What a folder's ``lstat`` shows that its owner can change without a file of it
    changing: kept as the host left it (module doc)."""

    ino: int
    size: int
    mode: int
    uid: int
    gid: int
    atime_ns: int
    mtime_ns: int

    @classmethod
    def of(cls, st: os.stat_result) -> FolderKey:
        return cls(st.st_ino, st.st_size, st.st_mode, st.st_uid, st.st_gid, st.st_atime_ns,
                   st.st_mtime_ns)

    def same_folder(self, st: os.stat_result) -> bool:
        """The folder the host left (inode, size, owner, mode), its times aside."""
        return self[:5] == FolderKey.of(st)[:5]


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
    """S, and what the host laid there: target -> (its key in S, the source it was laid from);
    each file's atime and each folder's key as the host left them (``""``: S itself)."""

    folder: Path
    laid: dict[str, tuple[Key, Source]] = field(default_factory=dict)
    latest_ctime: int = 0  # the newest ctime recorded: no command may run before the clock passes it
    atimes: dict[str, int] = field(default_factory=dict)
    folders: dict[str, FolderKey] = field(default_factory=dict)

    @property
    def fs(self) -> WorkspaceFS:
        return WorkspaceFS(self.folder)

    def sync(self, want: Plan, sources: dict[str, WorkspaceFS]) -> int:
        """Make S hold ``want``: walk it against the record, remove what no one laid, every
        folder's notes (extended attributes) and every folder changed, lay what was touched or
        whose source changed, then put folders' and read files' times back. Returns how many
        files were laid."""
        fs, seen, walked, read = self.fs, set(), set(), []
        stack = [""]
        while stack:
            at = stack.pop()
            fs.clear_xattrs(at or ".")
            for name, st in fs.stats(at or "."):
                rel = f"{at}/{name}" if at else name
                kind = kind_of(st.st_mode)
                if kind == "dir" and rel in want.folders and self._kept_folder(rel, st):
                    stack.append(rel)
                    walked.add(rel)
                    continue
                if kind == "file" and rel in want.files:
                    if self.laid.get(rel) == (Key.of(st), want.files[rel]):
                        seen.add(rel)
                        if st.st_atime_ns != self.atimes.get(rel):
                            read.append(rel)
                    continue  # laid again below (written over by a temp file and a rename)
                self._forget(rel)
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
        for rel in read:  # a new ctime now, which the record takes
            key, src = self.laid[rel]
            fs.restore(rel, (self.atimes[rel], key.mtime_ns), folder=False)
            self.remember(rel, src)
        self._put_folders_back(want.folders)
        return laid

    def _kept_folder(self, rel: str, st: os.stat_result) -> bool:
        """A wanted folder is kept when it is the one the host left (or made since)."""
        known = self.folders.get(rel)
        return st.st_mode & 0o7777 == FOLDER_MODE and (known is None or known.same_folder(st))

    def _forget(self, rel: str) -> None:
        """``rel`` is about to be removed: nothing at or beneath it is the host's any more."""
        below = rel + "/"
        for record in (self.laid, self.atimes, self.folders):
            for r in [r for r in record if r == rel or r.startswith(below)]:
                del record[r]

    def _put_folders_back(self, wanted: set[str]) -> None:
        """Last, after the host's own changes (which set folders' times): each folder's atime
        and mtime as first recorded, S's own mode too; a folder made now is recorded as it
        is. The record then takes what the host's changes did to inode and size."""
        fs = self.fs
        for rel in [r for r in self.folders if r and r not in wanted]:
            del self.folders[rel]
        for rel in ["", *sorted(wanted)]:
            st = fs.lstat(rel or ".")
            if st is None:
                continue
            known = self.folders.get(rel)
            if known is None:
                self.folders[rel] = FolderKey.of(st)
                continue
            times = (known.atime_ns, known.mtime_ns)
            mode = known.mode & 0o7777 if st.st_mode != known.mode else None
            if (st.st_atime_ns, st.st_mtime_ns) != times or mode is not None:
                fs.restore(rel or ".", times, mode=mode)
                st = fs.lstat(rel or ".")
            self.folders[rel] = FolderKey.of(st)._replace(atime_ns=known.atime_ns,
                                                          mtime_ns=known.mtime_ns)

    def remember(self, rel: str, src: Source) -> None:
        st = self.fs.lstat(rel)
        if st is not None:
            self.laid[rel] = (Key.of(st), src)
            self.atimes[rel] = st.st_atime_ns
            self.latest_ctime = max(self.latest_ctime, st.st_ctime_ns)

    def refresh(self) -> None:
        """Take S's keys as they are now: only after trusted work changed them (the quota
        copy into its image, the hand-over's chown), before any evaluation ran over S."""
        for rel, (_, src) in list(self.laid.items()):
            self.laid.pop(rel)
            self.remember(rel, src)
        for rel in list(self.folders):
            st = self.fs.lstat(rel or ".")
            if st is None:
                del self.folders[rel]
            else:
                self.folders[rel] = FolderKey.of(st)

    def settle(self) -> None:
        """Wait until the kernel's clock is past every recorded ctime (a tick, a few ms), so
        that anything a later command changes is stamped with a newer one. A ctime on a whole
        second may come from a filesystem that keeps only seconds: then past that second."""
        until = self.latest_ctime + (SECOND - 1 if self.latest_ctime % SECOND == 0 else 0)
        while kernel_clock_ns() <= until:
            time.sleep(0.001)
