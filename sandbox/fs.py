"""Workspace file I/O by descriptor, so a process left in the sandbox cannot race it.

The host (often root) acts on a folder that sandboxed code writes at the same time. Resolving a
path and then opening it by name is a race: between the two, the sandbox can swap a name for a
symlink to a host file (``renameat2(RENAME_EXCHANGE)``), and the host reads or writes that file.
So every workspace operation here walks the path one component at a time from a descriptor of
the workspace folder (``O_NOFOLLOW | O_DIRECTORY``), opens the leaf with ``O_NOFOLLOW |
O_NONBLOCK`` and checks it with ``fstat``: a symlink anywhere, a FIFO, a socket or a device is
refused, never followed, read or waited on. Writes never go through an existing inode: they go
to a temp file in the same folder (by descriptor) and are renamed over the name, so a hard link
to a read-only file is broken, not written through. One code path on every kernel (no
``openat2``, which seccomp profiles often hide), and each step is by descriptor, so once the
walk holds a folder, renaming names around it cannot move the host outside the workspace.

Whole trees go the same way: :func:`copy_tree` (a workspace into a scratch copy, outputs out
of a workspace, a task's files into a new one), :meth:`WorkspaceFS.clear` and
:meth:`WorkspaceFS.remove_tree`, :meth:`WorkspaceFS.rename`, and :func:`temporary_folder` (a
scratch folder removed by descriptor). Nothing else in the host reads, writes, lists, moves,
chmods or removes beneath a workspace (``tests/environments/test_seam.py`` enforces it with an
audit hook).

Every copy keeps holes: a sandboxed command can make a file of 1,000 MB that holds one byte,
which costs its quota nothing, so a copy that wrote it whole would let it fill the host's disk
(a run folder, a scratch copy, an import, a task folder's prepared copy: :func:`copy_file`).
A file's content passes as :class:`FileBytes`, written by its data extents only
(``SEEK_DATA``/``SEEK_HOLE``, looked for only in a file with fewer blocks than its size,
:func:`is_sparse`), and a byte cap on a copy counts the apparent size, what a reader would see.

Errors are :class:`WorkspaceError` with messages naming only workspace-relative paths.
"""

from __future__ import annotations

import errno
import functools
import os
import secrets
import shutil
import stat
import tempfile
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO, TypeVar

F = TypeVar("F")

DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY
TEMP_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
CHUNK = 1 << 20
MAX_DEPTH = 100  # folders deeper than this are not walked (snapshots note what they skipped)
TEMP_PREFIX = ".labcoat-tmp-"
OWNER_XATTRS = ("user.", "system.posix_acl_")  # extended attributes a file's owner may set


class WorkspaceError(ValueError):
    """A workspace file operation that cannot be done; the message is shown to the actor as is."""


def display_name(name: str) -> str:
    """A name as text that always encodes: bytes that are not UTF-8 shown as ``\\xNN``."""
    try:
        raw = os.fsencode(name)
    except UnicodeEncodeError:  # a lone surrogate that is no escaped byte
        return name.encode("utf-8", "backslashreplace").decode("utf-8")
    return raw.decode("utf-8", "backslashreplace")


def is_utf8(name: str) -> bool:
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def kind_of(mode: int) -> str:
    """``file``, ``dir``, ``symlink``, ``fifo``, ``socket`` or ``device``."""
    if stat.S_ISREG(mode):
        return "file"
    if stat.S_ISDIR(mode):
        return "dir"
    if stat.S_ISLNK(mode):
        return "symlink"
    if stat.S_ISFIFO(mode):
        return "fifo"
    if stat.S_ISSOCK(mode):
        return "socket"
    return "device"


_KIND_WORDS = {"file": "a regular file", "dir": "a folder", "symlink": "a symlink (file actions never follow symlinks)",
               "fifo": "a FIFO (named pipe)", "socket": "a socket", "device": "a device file"}


def refuse_kind(rel: str, kind: str, want: str = "a regular file") -> WorkspaceError:
    """The refusal of ``rel`` for being a ``kind`` (see :func:`kind_of`) instead of ``want``."""
    return WorkspaceError(f"{rel!r} is {_KIND_WORDS.get(kind, kind)}, not {want}")


def _os_error(rel: str, err: OSError) -> WorkspaceError:
    """An OSError as a message naming only ``rel`` (the host path stays out of observations)."""
    reason = {errno.ENAMETOOLONG: "the file name is too long",
              errno.ENOSPC: "the disk is full", errno.EDQUOT: "the disk quota is exceeded",
              errno.EMLINK: "too many links", errno.ENOTEMPTY: "the folder is not empty"}
    return WorkspaceError(f"{rel!r}: {reason.get(err.errno) or os.strerror(err.errno or 0).lower()}")


def _named_errors(method: F) -> F:
    """Any OSError left in ``method`` becomes a :class:`WorkspaceError` naming only ``rel``."""
    @functools.wraps(method)
    def wrapper(self: WorkspaceFS, rel: str, *args: object, **kw: object) -> object:
        try:
            return method(self, rel, *args, **kw)
        except WorkspaceError:
            raise
        except OSError as err:
            raise _os_error(rel, err) from None
    return wrapper  # type: ignore[return-value]


def split(rel: str) -> list[str]:
    """The components of a clean workspace-relative path ("." is the workspace itself)."""
    parts = [p for p in rel.split("/") if p not in ("", ".")]
    if ".." in parts or rel.startswith("/"):
        raise WorkspaceError(f"{rel!r}: paths must stay inside the workspace")
    return parts


@dataclass
class Entry:
    """One name in a folder, as ``lstat`` sees it (never through a symlink)."""

    name: str
    kind: str
    st: os.stat_result


@dataclass
class Walk:
    """What :meth:`WorkspaceFS.walk` found: regular files, and what it left out and why."""

    files: list[tuple[str, os.stat_result]] = field(default_factory=list)
    folders: list[str] = field(default_factory=list)  # rel of every folder walked into
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (display rel, reason)
    strays: list[str] = field(default_factory=list)  # rel of non-files and too-deep folders


class WorkspaceFS:
    """File operations beneath ``root``, every one by descriptor (see the module docstring)."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    def make_root(self, mode: int | None = None) -> None:
        """Create the root folder (and its parents) when missing; ``mode`` is set on its
        descriptor. The root is the host's own choice of path (a scratch folder it made), so
        this one step is by path; a link there is refused like anywhere else."""
        self.root.mkdir(parents=True, exist_ok=True)
        with self.folder(".") as fd:
            if mode is not None:
                os.fchmod(fd, mode)

    # --- descriptors ----------------------------------------------------------------------------

    @contextmanager
    def folder(self, rel: str, *, create: bool = False) -> Iterator[int]:
        """A descriptor of folder ``rel``, walked one component at a time without following links."""
        try:
            fd = os.open(self.root, DIR_FLAGS)
        except OSError as err:
            raise WorkspaceError(f"the workspace folder is not available ({os.strerror(err.errno or 0)})") from None
        done: list[str] = []
        try:
            for part in split(rel):
                parent, fd = fd, -1  # _step closes the parent, even when it fails
                fd = self._step(parent, part, "/".join([*done, part]), create)
                done.append(part)
            yield fd
        finally:
            if fd >= 0:
                os.close(fd)

    def _step(self, fd: int, part: str, shown: str, create: bool) -> int:
        """Open ``part`` beneath ``fd`` (closing ``fd``); create it when missing and asked to."""
        try:
            try:
                nxt = os.open(part, DIR_FLAGS, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    raise WorkspaceError(f"{shown!r}: no such folder in the workspace") from None
                try:
                    os.mkdir(part, 0o700, dir_fd=fd)
                    made = True
                except FileExistsError:
                    made = False
                nxt = os.open(part, DIR_FLAGS, dir_fd=fd)
                if made:  # set by descriptor: 0755 whatever the umask, owned like its parent
                    _own_like_parent(fd, nxt)
            except OSError as err:
                if err.errno in (errno.ELOOP, errno.ENOTDIR):
                    st = _lstat_at(fd, part)
                    if st is None:
                        raise WorkspaceError(f"{shown!r}: no such folder in the workspace") from None
                    raise refuse_kind(shown, kind_of(st.st_mode), "a folder") from None
                raise _os_error(shown, err) from None
        finally:
            os.close(fd)
        return nxt

    @contextmanager
    def parent(self, rel: str, *, create: bool = False) -> Iterator[tuple[int, str]]:
        """(descriptor of the folder holding ``rel``, the leaf name)."""
        parts = split(rel)
        if not parts:
            raise WorkspaceError("this needs a file name, not the workspace folder itself")
        with self.folder("/".join(parts[:-1]), create=create) as fd:
            yield fd, parts[-1]

    @_named_errors
    def lstat(self, rel: str) -> os.stat_result | None:
        """``lstat`` of ``rel`` (None when missing); the folders on the way are walked safely."""
        if not split(rel):
            with self.folder(".") as fd:
                return os.fstat(fd)
        try:
            with self.parent(rel) as (fd, leaf):
                return _lstat_at(fd, leaf)
        except WorkspaceError:
            return None

    def kind(self, rel: str) -> str | None:
        st = self.lstat(rel)
        return kind_of(st.st_mode) if st else None

    # --- reading --------------------------------------------------------------------------------

    @contextmanager
    def open_read(self, rel: str) -> Iterator[BinaryIO]:
        """The regular file ``rel`` opened for reading; anything else is refused without blocking."""
        with self.parent(rel) as (dfd, leaf):
            fd = _open_regular_at(dfd, leaf, rel)
        with os.fdopen(fd, "rb") as f:
            yield f

    @_named_errors
    def read(self, rel: str, limit: int) -> tuple[bytes, int]:
        """(at most ``limit`` bytes from the start of ``rel``, its size); never reads more."""
        with self.open_read(rel) as f:
            size = os.fstat(f.fileno()).st_size
            return f.read(limit), size

    def chunks(self, rel: str, check: Callable[[int], None] | None = None) -> FileBytes:
        """The regular file ``rel``'s content, opened when it is read (:class:`FileBytes`):
        iterated, its bytes; given to :meth:`write`, its data only (holes stay holes)."""
        def open_fd() -> int:
            with self.parent(rel) as (dfd, leaf):
                return _open_regular_at(dfd, leaf, rel)
        return FileBytes(open_fd, check)

    @_named_errors
    def listdir(self, rel: str) -> list[Entry]:
        """The folder's entries by ``lstat`` (a symlink is listed as a symlink, never followed)."""
        with self.folder(rel) as fd:
            return sorted(_entries(fd), key=lambda e: e.name)

    @_named_errors
    def stats(self, rel: str) -> list[tuple[str, os.stat_result]]:
        """(name, ``lstat``) of each entry of folder ``rel``, unsorted: :meth:`listdir` at
        the least cost per name (a list: the caller may change the folder as it goes)."""
        with self.folder(rel) as fd, os.scandir(fd) as it:
            found = []
            for e in it:
                try:
                    found.append((e.name, e.stat(follow_symlinks=False)))
                except FileNotFoundError:
                    continue
            return found

    def iter_share(self, rel: str, share: tuple[int, int] = (0, 1)) -> Iterator[tuple[int, str, os.stat_result]]:
        """(place in the listing, name, ``lstat``) of the entries of folder ``rel`` whose inode
        is ``k`` modulo ``n`` (``share`` = ``(k, n)``; the kernel's listing gives the inode, so
        the others cost no ``lstat``), as the listing goes, holding one descriptor of the
        folder until exhausted or closed: no list is built, so a snapshot compares each of a
        large workspace's files as it comes (the cost left per unchanged file is its
        ``lstat``), and processes sharing a folder out stat each entry once between them.
        Change nothing in the folder and open no other folder while it runs."""
        k, n = share
        try:
            with self.folder(rel) as fd, os.scandir(fd) as it:
                for at, e in enumerate(it):
                    if n > 1 and e.inode() % n != k:
                        continue
                    try:
                        st = e.stat(follow_symlinks=False)
                    except FileNotFoundError:
                        continue
                    yield at, e.name, st
        except OSError as err:  # WorkspaceError is a ValueError: it passes as it is
            raise _os_error(rel, err) from None

    @_named_errors
    def clear_xattrs(self, rel: str) -> int:
        """Remove from folder ``rel`` the extended attributes its owner can set (``user.*``,
        POSIX ACLs): a note a sandboxed command could leave on a folder it owns for the next
        one to read, which no ``lstat`` key shows. Returns how many were removed."""
        with self.folder(rel) as fd:
            try:
                names = os.listxattr(fd)
            except OSError as err:
                if err.errno in (errno.ENOTSUP, errno.EOPNOTSUPP):
                    return 0  # a filesystem without them: nothing can be left there
                raise _os_error(rel, err) from None
            removed = 0
            for name in names:
                if name.startswith(OWNER_XATTRS):
                    try:
                        os.removexattr(fd, name)
                        removed += 1
                    except OSError as err:
                        if err.errno != errno.ENODATA:
                            raise _os_error(rel, err) from None
            return removed

    @_named_errors
    def restore(self, rel: str, times: tuple[int, int], *, mode: int | None = None,
                folder: bool = True) -> None:
        """Put back the (atime, mtime) in ns, and ``mode``, of folder ``rel`` (``folder=False``:
        of the regular file ``rel``), set on a descriptor walked as everywhere here: what a
        sandboxed command set on an entry the host keeps from one command to the next
        (scoring's scratch, ``environments/scoring/scratch_sync.py``)."""
        if folder:
            with self.folder(rel) as fd:
                _restore_fd(fd, times, mode)
            return
        with self.parent(rel) as (dfd, leaf):
            fd = _open_regular_at(dfd, leaf, rel)
        try:
            _restore_fd(fd, times, mode)
        finally:
            os.close(fd)

    @contextmanager
    def opener(self, rel: str) -> Iterator[Callable[[str], int]]:
        """A function opening the regular files of folder ``rel`` by name, each through one
        descriptor of the folder (walked once, not once per file): it returns a descriptor
        open for reading, which the caller closes. As :meth:`open_read`, a link, FIFO, socket
        or device is refused without blocking, and a name must be one component."""
        base = "/".join(split(rel))
        with self.folder(rel) as dfd:
            def open_file(name: str) -> int:
                shown = f"{base}/{name}" if base else name
                if not name or "/" in name or name in (".", ".."):
                    raise WorkspaceError(f"{shown!r}: not a name in this folder")
                try:
                    return _open_regular_at(dfd, name, shown)
                except WorkspaceError:
                    raise
                except OSError as err:
                    raise _os_error(shown, err) from None
            yield open_file

    # --- writing --------------------------------------------------------------------------------

    @_named_errors
    def write(self, rel: str, data: bytes | Iterable[bytes] | FileBytes, *, append: bool = False,
              mode: int | None = None) -> None:
        """Make ``rel`` hold ``data`` (after its old content when ``append``), atomically.

        The new content goes to a temp file in the same folder that is renamed over the name,
        so whatever stood there (a symlink swapped in a moment ago, a hard link to a read-only
        file) is replaced, never written through. An existing file keeps its mode and owner.
        A file's content given as :class:`FileBytes` (:meth:`chunks`), and the old content
        appended to, are written by their data only: a sparse file stays sparse.
        """
        with self.parent(rel, create=True) as (dfd, leaf):
            old = _lstat_at(dfd, leaf)
            if old is not None and not stat.S_ISREG(old.st_mode):
                raise refuse_kind(rel, kind_of(old.st_mode))
            tmp = f"{TEMP_PREFIX}{secrets.token_hex(6)}"
            try:
                fd = os.open(tmp, TEMP_FLAGS, 0o600, dir_fd=dfd)
            except OSError as err:
                raise _os_error(rel, err) from None
            try:
                try:
                    end = 0
                    if append and old is not None:
                        end = FileBytes(lambda: _open_regular_at(dfd, leaf, rel)).write_to(fd)
                    if isinstance(data, FileBytes):
                        data.write_to(fd, end)
                    else:
                        for chunk in [data] if isinstance(data, bytes) else data:
                            _pwrite_all(fd, chunk, end)
                            end += len(chunk)
                    _set_owner_and_mode(fd, dfd, old, mode)
                finally:
                    os.close(fd)
                os.replace(tmp, leaf, src_dir_fd=dfd, dst_dir_fd=dfd)
            except OSError as err:
                _unlink_quietly(dfd, tmp)
                if err.errno in (errno.EISDIR, errno.ENOTEMPTY, errno.EEXIST):
                    raise refuse_kind(rel, "dir") from None
                raise _os_error(rel, err) from None
            except BaseException:
                _unlink_quietly(dfd, tmp)
                raise

    @_named_errors
    def symlink(self, rel: str, target: str) -> None:
        """Make ``rel`` a symlink holding ``target`` (the link is made, nothing is followed)."""
        with self.parent(rel, create=True) as (dfd, leaf):
            os.symlink(target, leaf, dir_fd=dfd)

    @_named_errors
    def readlink(self, rel: str) -> str | None:
        """The text of the symlink ``rel`` (None when ``rel`` is not a symlink)."""
        with self.parent(rel) as (dfd, leaf):
            st = _lstat_at(dfd, leaf)
            if st is None or not stat.S_ISLNK(st.st_mode):
                return None
            return os.readlink(leaf, dir_fd=dfd)

    @_named_errors
    def rename(self, src: str, dst: str) -> None:
        """Move ``src`` to ``dst`` (folders on the way to ``dst`` made), both by descriptor;
        whatever ``dst`` named is replaced, never written through."""
        with self.parent(src) as (sfd, sleaf), self.parent(dst, create=True) as (dfd, dleaf):
            os.replace(sleaf, dleaf, src_dir_fd=sfd, dst_dir_fd=dfd)

    @_named_errors
    def copy(self, src: str, dst: str) -> None:
        """Copy the regular file ``src`` to ``dst`` (opened first: a missing or odd ``src``
        changes nothing), holes kept."""
        with self.open_read(src) as f:
            fd = f.fileno()
            self.write(dst, FileBytes(lambda: os.dup(fd)))

    @_named_errors
    def remove(self, rel: str) -> bool:
        """Remove the non-folder ``rel`` (a link itself, never its target); False when missing."""
        with self.parent(rel) as (dfd, leaf):
            st = _lstat_at(dfd, leaf)
            if st is None:
                return False
            if stat.S_ISDIR(st.st_mode):
                raise refuse_kind(rel, "dir", "a file")
            try:
                os.unlink(leaf, dir_fd=dfd)
            except FileNotFoundError:
                return False
            except OSError as err:
                raise _os_error(rel, err) from None
            return True

    @_named_errors
    def remove_tree(self, rel: str) -> None:
        """Remove ``rel`` and everything beneath it, however deep, without recursion
        (:func:`remove_at`)."""
        with self.parent(rel) as (top, leaf):
            remove_at(top, leaf)

    def clear(self, rel: str = ".") -> None:
        """Remove everything inside folder ``rel``, keeping the folder itself."""
        base = "/".join(split(rel))
        for entry in self.listdir(rel):
            self.remove_tree(f"{base}/{entry.name}" if base else entry.name)

    def remove_root(self) -> None:
        """Remove the root folder and everything in it (what is inside by descriptor)."""
        self.clear()
        try:
            os.rmdir(self.root)
        except OSError as err:
            raise _os_error(".", err) from None

    # --- walking --------------------------------------------------------------------------------

    def walk(self, max_depth: int = MAX_DEPTH, under: str = "") -> Walk:
        """Every regular file beneath the root (or its folder ``under``: a missing one is
        empty), iteratively and by descriptor; paths are relative to the root.

        Symlinks, FIFOs, sockets and devices are never followed or opened (listed in
        ``strays``); names that are not UTF-8 are skipped with a note, because a run record
        is JSON text and an escaped name could collide with a real one; folders deeper than
        ``max_depth`` are not entered (noted, and listed in ``strays``).
        """
        found = Walk()
        stack = ["/".join(split(under))]
        while stack:
            rel = stack.pop()
            depth = len(split(rel))
            try:
                with self.folder(rel or ".") as fd:
                    entries = list(_entries(fd))
            except WorkspaceError:
                continue  # the folder changed under the walk; what is there now is walked next time
            for e in entries:
                child = f"{rel}/{e.name}" if rel else e.name
                if not is_utf8(e.name):
                    found.skipped.append((display_name(child), "its name is not UTF-8"))
                    found.strays.append(child)
                elif e.kind == "dir":
                    if depth + 1 >= max_depth:
                        found.skipped.append((child, f"it is more than {max_depth} folders deep"))
                        found.strays.append(child)
                    else:
                        stack.append(child)
                        found.folders.append(child)
                elif e.kind == "file":
                    found.files.append((child, e.st))
                else:
                    found.strays.append(child)
                    if e.kind not in ("file", "symlink"):
                        found.skipped.append((child, f"it is {_KIND_WORDS[e.kind]}"))
        found.files.sort(key=lambda item: item[0])
        found.folders.sort()
        return found


@dataclass
class Found:
    """One entry :func:`descend` met: the descriptor of its folder (valid until the walk moves
    on), its name, its path relative to the top, its ``lstat``, how many folders lie between
    the top and it, and whether the walk will enter it next (a folder not too deep; a consumer
    may set it False to leave that folder out)."""

    dfd: int
    name: str
    rel: str
    st: os.stat_result
    depth: int
    enter: bool = False


def descend(top: int, *, max_depth: int = MAX_DEPTH,
            names: Callable[[int, str], Iterable[str]] | None = None,
            left: Callable[[str], None] | None = None) -> Iterator[Found]:
    """Everything beneath the open folder ``top``, depth first: the host's one tree walk over
    folders a sandbox writes (quota copies and usage, ownership hand-overs).

    Iterative, holding one descriptor per level (a deep tree exhausts neither the Python stack
    nor the descriptor table); each entry is ``lstat``-ed at its folder's descriptor and a
    folder entered by opening its name there with ``O_NOFOLLOW | O_DIRECTORY``, so a link is
    never followed and a name swapped for a link between the two is not entered. A folder
    ``max_depth`` levels down is met but not entered (``enter`` False). ``names(fd, rel)`` lists
    an entered folder (default: every name in it; ``rel`` is "" for the top); ``left(rel)`` is
    called when an entered folder's entries are done, deepest first, before its descriptor
    closes. An entry that vanished or cannot be read is passed over."""
    listing = names or (lambda fd, rel: os.listdir(fd))

    def opened(fd: int, rel: str) -> tuple[int, str, Iterator[str]]:
        try:
            return fd, rel, iter(list(listing(fd, rel)))
        except OSError:
            return fd, rel, iter(())
        except BaseException:
            os.close(fd)
            raise

    frames = [opened(os.dup(top), "")]
    try:
        while frames:
            dfd, rel, pending = frames[-1]
            name = next(pending, None)
            if name is None:
                frames.pop()
                try:
                    if left is not None:
                        left(rel)
                finally:
                    os.close(dfd)
                continue
            try:
                st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
            except OSError:
                continue
            child = f"{rel}/{name}" if rel else name
            found = Found(dfd, name, child, st, len(frames) - 1,
                          stat.S_ISDIR(st.st_mode) and len(frames) < max_depth)
            yield found
            if found.enter:
                try:
                    sub = os.open(name, DIR_FLAGS, dir_fd=dfd)
                except OSError:
                    continue
                frames.append(opened(sub, child))
    finally:
        for dfd, _, _ in frames:
            os.close(dfd)


def remove_at(dfd: int, name: str) -> None:
    """Remove ``name`` in the folder ``dfd``, a folder with all it holds, never following a link
    and without recursion: each subfolder found is renamed up beside the one being removed, so
    the loop holds two descriptors whatever the depth (a 1,200-deep tree would otherwise
    exhaust both the Python stack and the descriptor limit)."""
    try:
        os.unlink(name, dir_fd=dfd)
        return
    except IsADirectoryError:
        pass
    except FileNotFoundError:
        return
    pending = [name]
    while pending:
        fd = os.open(pending[-1], DIR_FLAGS, dir_fd=dfd)
        moved = False
        try:
            for entry in _entries(fd):
                if entry.kind == "dir":
                    new = f"{TEMP_PREFIX}rm-{secrets.token_hex(6)}"
                    os.rename(entry.name, new, src_dir_fd=fd, dst_dir_fd=dfd)
                    pending.append(new)
                    moved = True
                else:
                    _unlink_quietly(fd, entry.name)
        finally:
            os.close(fd)
        if not moved:
            os.rmdir(pending.pop(), dir_fd=dfd)


# --- content, holes kept --------------------------------------------------------------------------

def is_sparse(st: os.stat_result) -> bool:
    """Whether a file has fewer blocks on disk than its size needs: only such a file is searched
    for holes, so a dense file's copy costs what it always did (a read per chunk)."""
    return st.st_blocks * 512 < st.st_size


def data_pieces(fd: int, size: int, sparse: bool) -> Iterator[tuple[int, bytes]]:
    """(offset, bytes) of the open file ``fd``'s data below ``size``, in order, at most
    :data:`CHUNK` each. With ``sparse`` its holes are skipped, found with ``SEEK_DATA`` /
    ``SEEK_HOLE`` (where the filesystem has neither, the rest is read whole): whoever writes
    the pieces at their offsets and sets the size last (:func:`write_pieces`) makes a file with
    the same bytes whose holes stay holes. Never reads at or past ``size`` (a file grown since
    ``size`` was taken gives no more), and stops where the file ends sooner."""
    pos = 0
    while pos < size:
        start, end = pos, size
        if sparse:
            try:
                start = os.lseek(fd, pos, os.SEEK_DATA)
                end = min(os.lseek(fd, start, os.SEEK_HOLE), size)
            except OSError as err:
                if err.errno == errno.ENXIO:  # nothing but a hole is left
                    return
                sparse, start, end = False, pos, size  # no hole search here: read the rest whole
        while start < end:
            piece = os.pread(fd, min(CHUNK, end - start), start)
            if not piece:  # the file ends sooner than ``size``
                return
            yield start, piece
            start += len(piece)
        pos = end


def write_pieces(dst: int, pieces: Iterable[tuple[int, bytes]], size: int, at: int = 0) -> int:
    """Write :func:`data_pieces` into ``dst`` (a new file, or one no longer than ``at``) from
    its offset ``at`` and make it end at ``at`` + ``size`` (the holes left unwritten); returns
    that end. A file whose data reach its end (any dense one) needs no ``ftruncate``."""
    end = at
    for offset, piece in pieces:
        _pwrite_all(dst, piece, at + offset)
        end = at + offset + len(piece)
    if end != at + size:
        os.ftruncate(dst, at + size)
    return at + size


class FileBytes:
    """A regular file's content as a source (see :meth:`WorkspaceFS.chunks`), opened by
    ``open_fd`` (a descriptor this closes) each time it is read.

    Iterated, it gives the file's bytes, holes as zeros (to hash or compare it); written
    (:meth:`write_to`, which :meth:`WorkspaceFS.write` uses), its data only, so a copy of a
    sparse file costs the blocks it holds, not its size. Either way it reads no further than
    the size the file had when opened, and ``check(size)`` is called with that apparent size
    before anything is read: a byte cap raises there, counting what a reader would see."""

    def __init__(self, open_fd: Callable[[], int], check: Callable[[int], None] | None = None) -> None:
        self._open_fd, self._check = open_fd, check

    @classmethod
    def at(cls, path: str | os.PathLike[str]) -> FileBytes:
        """The host's own regular file ``path`` (a run's stored copy), a link never followed."""
        def open_fd() -> int:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                os.close(fd)
                raise WorkspaceError(f"{os.fspath(path)!r} is not a regular file")
            return fd
        return cls(open_fd)

    @contextmanager
    def opened(self) -> Iterator[tuple[int, os.stat_result]]:
        fd = self._open_fd()
        try:
            st = os.fstat(fd)
            if self._check is not None:
                self._check(st.st_size)
            yield fd, st
        finally:
            os.close(fd)

    def __iter__(self) -> Iterator[bytes]:
        with self.opened() as (fd, st):
            yield from file_bytes(fd, st)

    def write_to(self, dst: int, at: int = 0) -> int:
        """Write the file into ``dst`` from its offset ``at``, data only; returns where it ends."""
        with self.opened() as (fd, st):
            return write_pieces(dst, data_pieces(fd, st.st_size, is_sparse(st)), st.st_size, at)


def copy_file(src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> str:
    """:func:`shutil.copy2` with holes kept, for ``shutil.copytree(copy_function=copy_file)``
    on host folders (a task folder's prepared copy): the data, then mode and times. A FIFO,
    socket or device is refused (:class:`shutil.SpecialFileError`), never opened blocking."""
    def open_fd() -> int:
        fd = os.open(src, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise shutil.SpecialFileError(f"{os.fspath(src)!r} is not a regular file")
        return fd
    out = os.open(dst, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o666)
    try:
        FileBytes(open_fd).write_to(out)
    finally:
        os.close(out)
    shutil.copystat(src, dst)
    return os.fspath(dst)


def file_bytes(fd: int, st: os.stat_result) -> Iterator[bytes]:
    """The open file ``fd``'s bytes up to ``st``'s size, in chunks; a sparse file's holes
    given as zeros without being read (to hash or compare a file, not to copy it)."""
    pos = 0
    for offset, piece in data_pieces(fd, st.st_size, is_sparse(st)):
        yield from zeros(offset - pos)
        yield piece
        pos = offset + len(piece)
    yield from zeros(st.st_size - pos)


_ZEROS = bytes(CHUNK)


def zeros(n: int) -> Iterator[bytes]:
    """``n`` zero bytes in pieces of at most :data:`CHUNK`: a hole, as a reader sees it."""
    while n > 0:
        yield _ZEROS if n >= CHUNK else bytes(n)
        n -= CHUNK


def _pwrite_all(fd: int, data: bytes, offset: int) -> None:
    view = memoryview(data)
    while view:
        done = os.pwrite(fd, view, offset)
        view, offset = view[done:], offset + done


def scratch_mode(mode: int) -> int:
    """A copied file's mode: readable by all, executable where it was, never set-id."""
    return (mode & 0o755) | 0o644


def copy_tree(src: WorkspaceFS, dst: WorkspaceFS, *, under: str = "", links: bool = False,
              mode: Callable[[int], int] = scratch_mode, max_bytes: int | None = None) -> Walk:
    """Copy the tree beneath ``src`` (its folder ``under``, when given) into ``dst``.

    Every side is walked and written by descriptor: each file is read ``O_NOFOLLOW`` and
    written through :meth:`WorkspaceFS.write` (a temp file renamed over the name, its mode set
    with ``fchmod``), each folder made by descriptor. Symlinks are dropped, or with ``links``
    made again as links holding the same text (never followed); FIFOs, sockets and devices
    are dropped. A sparse file stays sparse (:class:`FileBytes`: data only, so a copy costs
    the blocks the source holds). ``max_bytes`` caps the bytes copied in APPARENT size (a
    sparse file counts whole, as a reader would see it), counted as each file is opened and
    copied no further (a file that grows after the walk cannot pass it). Returns ``src``'s
    walk (what was left out and why).
    """
    found = src.walk(under=under)
    base = "/".join(split(under))

    def dest(rel: str) -> str:
        return rel[len(base) + 1:] if base else rel

    total = sum(st.st_size for _, st in found.files)
    if max_bytes is not None and total > max_bytes:
        raise WorkspaceError(f"the files exceed {max_bytes >> 20} MB")
    dst.make_root()
    for rel in found.folders:
        with dst.folder(dest(rel), create=True):
            pass
    copied = 0

    def count(size: int) -> None:
        nonlocal copied
        copied += size
        if max_bytes is not None and copied > max_bytes:
            raise WorkspaceError(f"the files exceed {max_bytes >> 20} MB")

    for rel, st in found.files:
        dst.write(dest(rel), src.chunks(rel, check=count), mode=mode(st.st_mode))
    if links:
        for rel in found.strays:
            target = src.readlink(rel) if is_utf8(rel) else None
            if target is not None:
                dst.symlink(dest(rel), target)
    return found


@contextmanager
def temporary_folder(prefix: str) -> Iterator[Path]:
    """A new private scratch folder, removed by descriptor afterwards (sandboxes write into
    what it holds, so its removal must not follow a link they left: ``shutil.rmtree``'s own
    safety is not relied on, and the rule stays "workspace trees through this module")."""
    path = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        yield path
    finally:
        try:
            WorkspaceFS(path).remove_root()
        except WorkspaceError:
            pass


def _entries(fd: int) -> Iterator[Entry]:
    with os.scandir(fd) as it:
        for e in it:
            try:
                st = e.stat(follow_symlinks=False)
            except FileNotFoundError:
                continue
            yield Entry(e.name, kind_of(st.st_mode), st)


def _lstat_at(dfd: int, name: str) -> os.stat_result | None:
    try:
        return os.stat(name, dir_fd=dfd, follow_symlinks=False)
    except FileNotFoundError:
        return None


def _open_regular_at(dfd: int, leaf: str, rel: str) -> int:
    try:
        fd = os.open(leaf, READ_FLAGS, dir_fd=dfd)
    except FileNotFoundError:
        raise WorkspaceError(f"{rel!r}: no such file in the workspace") from None
    except OSError as err:
        if err.errno == errno.ELOOP:
            raise refuse_kind(rel, "symlink") from None
        if err.errno in (errno.ENXIO, errno.EOPNOTSUPP):  # a socket
            raise refuse_kind(rel, "socket") from None
        raise _os_error(rel, err) from None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise refuse_kind(rel, kind_of(st.st_mode))
    os.set_blocking(fd, True)
    return fd


def _set_owner_and_mode(fd: int, dfd: int, old: os.stat_result | None, mode: int | None) -> None:
    """An existing file keeps its owner and mode; a new one belongs to its folder's owner.

    The host may be root while the sandbox is not: a file the host writes must stay one the
    sandboxed scripts could write before.
    """
    ref = old or os.fstat(dfd)
    os.fchmod(fd, mode if mode is not None else (old.st_mode & 0o7777 if old else 0o644))
    if os.geteuid() == 0 and (ref.st_uid, ref.st_gid) != (0, 0):
        os.fchown(fd, ref.st_uid, ref.st_gid)


def _restore_fd(fd: int, times: tuple[int, int], mode: int | None) -> None:
    if mode is not None:
        os.fchmod(fd, mode)
    os.utime(fd, ns=times)


def _own_like_parent(dfd: int, fd: int) -> None:
    """A folder the host just made (``fd``): mode 0755 and, when the host is root, its
    parent's owner, both set on the descriptor (the name may be something else by now)."""
    os.fchmod(fd, 0o755)
    if os.geteuid() != 0:
        return
    st = os.fstat(dfd)
    if (st.st_uid, st.st_gid) != (0, 0):
        os.fchown(fd, st.st_uid, st.st_gid)


def _unlink_quietly(dfd: int, name: str) -> None:
    try:
        os.unlink(name, dir_fd=dfd)
    except OSError:
        pass
