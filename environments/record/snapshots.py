"""Content-addressed workspace snapshots: a step costs what it changed.

A snapshot is a tree of directory objects, as git's are: each folder is one object listing
its files (sha256, size, mode, and the ``lstat`` key below) and its subfolders (their
objects' names), named by the sha256 of that listing; file contents are objects named by
their own sha256. A step's manifest names only the root folder's object. A folder in which
nothing changed keeps its object's name, so it is written once however many steps there are,
and the next step finds it unchanged without reading a file: a file whose size, mtime, ctime
and inode (git's index check) all match the previous step's entry is taken as it was. ctime is
set by the kernel on every write, chmod or rename and cannot be set back from the sandbox, and
the sandbox runs nothing between commands, when snapshots are taken, so the check cannot be
raced; a ctime of the clock tick the snapshot began in is not kept (a write right after it
could be stamped the same: git's "racy" entries), so that file is read again next step. That
check is one ``lstat`` per file, the cost left per unchanged file (no journal of what the
sandbox wrote exists to skip it): each is compared as the folder's listing comes, and a folder
found unchanged is kept as stored, never rebuilt entry by entry. A large workspace's walk is
split between processes, by subfolder and a large folder's listing by inode
(:mod:`environments.record.split_scan`). A changed file is read once,
through one descriptor of its folder: hashed as it is copied into the store (a copy dropped
when its object exists or it is the task's own). Each folder's entry also carries a hash of
its content alone (names, file hashes, modes: no ``lstat`` key), the count of files beneath
it and their bytes not in the task's folder, so comparing two steps, scoring's "same
workspace" key, the disk cap and restoring one step over another (scoring's curve) need no
walk of what did not change.

Files still identical to the task's pristine ``env/`` are not copied at all: the tree marks
them ``base`` and a restore copies them from the task folder (checking the hash), which keeps
a run directory about the size of its workspace even when the task ships a large data file.

The workspace is read and rebuilt only through :class:`~sandbox.fs.WorkspaceFS`: by
descriptor, one folder at a time (the memory a step takes is its changed folders' listings,
not a list of every path), never following a link out and never opening a FIFO, socket or
device. What a snapshot leaves out (such files, names that are not UTF-8, folders past the
depth cap) it says in ``Manifest.notes``; past the task's disk cap (apparent sizes, so a
sparse file counts whole) it stores nothing and says so.

Runs recorded before trees existed have manifests listing every file (``files``); they still
load, restore, compare and fork, and their next step is recorded as a tree.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from stat import S_IFREG, S_ISDIR, S_ISLNK, S_ISREG
from typing import Any, NamedTuple

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

from environments.record import split_scan
from sandbox.clock import kernel_clock_ns, settled
from sandbox.fs import (
    _KIND_WORDS,
    CHUNK,
    MAX_DEPTH,
    FileBytes,
    WorkspaceError,
    WorkspaceFS,
    data_pieces,
    display_name,
    file_bytes,
    is_sparse,
    is_utf8,
    kind_of,
    write_pieces,
    zeros,
)

MAX_NOTED = 10  # skipped paths named in a snapshot's note; the rest are counted
READ_LIMIT = 16 << 20  # the most one read of a stored file (a viewer's, a diff's) returns
TREE_CACHE = 256  # parsed folder objects kept for lookups by path (reads, base checks)


class FileEntry(BaseModel):
    sha: str
    size: int
    mode: int
    base: bool = False
    mtime_ns: int = 0
    ino: int = 0
    ctime_ns: int = 0


class Leaf(NamedTuple):
    """A file in a folder object (stored as a JSON list, in this order)."""

    sha: str
    size: int
    mode: int
    base: bool
    mtime_ns: int
    ctime_ns: int
    ino: int

    def same_stat(self, st: os.stat_result) -> bool:
        """Unchanged since recorded, by git's index check (never true for an old run's entry,
        which has no ctime)."""
        return bool(self.ctime_ns) and (self.size, self.mtime_ns, self.ctime_ns, self.ino) == (
            st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)

    def entry(self) -> FileEntry:
        return FileEntry(sha=self.sha, size=self.size, mode=self.mode, base=self.base,
                         mtime_ns=self.mtime_ns, ino=self.ino, ctime_ns=self.ctime_ns)


class Sub(NamedTuple):
    """A folder's entry in its parent (and the root's, in a manifest): its object's name, the
    hash of its content alone, the files beneath it and their bytes not in the task's folder."""

    tree: str
    content: str
    count: int
    nonbase: int


EMPTY_CONTENT = hashlib.sha256(b'{"d":{},"f":{}}').hexdigest()


class Manifest(BaseModel):
    """One step's snapshot: the root folder's object (``tree``), or, in a run recorded before
    trees, every file (``files`` in the JSON; ``flat`` here)."""

    model_config = ConfigDict(populate_by_name=True)

    label: str
    tree: str | None = None
    content: str | None = Field(None, description="hash of the workspace's content alone")
    file_count: int = 0
    nonbase: int = Field(0, description="bytes of files that are not the task's own")
    flat: dict[str, FileEntry] | None = Field(None, alias="files")
    stored: bool = Field(True, description="False: over the disk cap; files are the previous step's")
    notes: list[str] = Field(default_factory=list, description="what was left out, for the step's observation")
    _store: SnapshotStore | None = PrivateAttr(None)
    _files: dict[str, FileEntry] | None = PrivateAttr(None)

    @property
    def root(self) -> Sub | None:
        if self.tree is None:
            return None
        return Sub(self.tree, self.content or "", self.file_count, self.nonbase)

    @property
    def count(self) -> int:
        """Files in the snapshot."""
        return len(self.flat) if self.flat is not None else self.file_count

    @property
    def files(self) -> dict[str, FileEntry]:
        """Every file (path -> entry), built on first use: O(files), for viewers and diffs;
        the step loop and scoring use :meth:`changed_since` and :meth:`key` instead."""
        if self.flat is not None:
            return self.flat
        if self._files is None:
            self._files = ({} if self.tree is None else
                           {rel: leaf.entry() for rel, leaf in self._need_store().iter_tree(self.tree)})
        return self._files

    def key(self) -> str:
        """Equal for two snapshots exactly when their files' paths, contents and modes are."""
        if self.flat is None:
            return self.content or EMPTY_CONTENT
        return json.dumps({k: v.sha for k, v in sorted(self.flat.items())})

    def changed_since(self, other: Manifest | None) -> list[str]:
        """Paths added, removed or modified relative to ``other``: two trees are compared
        folder by folder, skipping every folder whose content hash is the same."""
        if other is None:
            return sorted(self.files)
        if self.flat is None and other.flat is None and self._store and other._store:
            out: list[str] = []
            self._store.diff_trees(other.root, self.root, "", out, other._store)
            return sorted(out)
        mine, theirs = self.files, other.files
        paths = set(mine) | set(theirs)
        return sorted(p for p in paths if (p in mine) != (p in theirs)
                      or (p in mine and mine[p].sha != theirs[p].sha))

    def _need_store(self) -> SnapshotStore:
        if self._store is None:
            raise SnapshotError(f"snapshot {self.label} was not loaded from a store")
        return self._store


class SnapshotError(RuntimeError):
    pass


def _sha256(path: Path) -> str:
    return _digest(_file_chunks(path))


def _digest(chunks: Iterable[bytes]) -> str:
    h = hashlib.sha256()
    for chunk in chunks:
        h.update(chunk)
    return h.hexdigest()


def _file_chunks(path: Path) -> Iterable[bytes]:
    with path.open("rb") as f:
        while chunk := f.read(CHUNK):
            yield chunk


_OBJECT_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _unlink_quietly(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def _fsync_write(path: Path, data: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("w") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    tmp.replace(path)


def _canonical(obj: Any) -> bytes:
    return json.dumps(obj, sort_keys=True, separators=(",", ":")).encode()


def _join(rel: str, name: str) -> str:
    return f"{rel}/{name}" if rel else name


def skip_note(skipped: list[tuple[str, str]], more: int = 0) -> list[str]:
    if not skipped:
        return []
    named = "; ".join(f"'{rel}' ({why})" for rel, why in skipped[:MAX_NOTED])
    extra = max(len(skipped) - MAX_NOTED, 0) + more
    tail = f"; and {extra} more" if extra else ""
    return [f"Not in this step's snapshot (so not scored, and removed on resume): {named}{tail}."]


def over_cap_note(added: int, cap_bytes: int) -> str:
    return (f"The workspace holds {added / 2**20:,.0f} MB of files beyond the task's own, over this "
            f"task's limit of {cap_bytes / 2**20:,.0f} MB ([limits] disk_mb; a sparse file counts at its "
            f"full size). This step's snapshot was not stored: the run keeps the previous one, and "
            f"scoring and resume use it. Delete or shrink files to go on.")


@dataclass
class _Changed:
    """A folder in which something changed (pass 1 of :meth:`SnapshotStore.take`): files kept
    from the previous step (its stored ``Leaf`` list) or to hash (``os.stat_result``), and
    subfolders, each unchanged (``Sub``) or changed. Only such folders are built entry by
    entry; an unchanged one is its previous ``Sub``."""

    files: dict[str, list | os.stat_result] = field(default_factory=dict)
    dirs: dict[str, Sub | _Changed] = field(default_factory=dict)


@dataclass
class _Here:
    """A changed folder in pass 2 of :meth:`SnapshotStore.take`: its files, opened through one
    descriptor of it (:meth:`WorkspaceFS.opener`), and the task's own files there."""

    open: Callable[[str], int]
    base: Callable[[str], list | None]


_S_IFMT = 0o170000  # the file-type bits of st_mode
_NO_TREE: dict[str, dict] = {"f": {}, "d": {}}  # a folder the previous step did not have (never written to)


@dataclass
class _Scan:
    fs: WorkspaceFS
    since: int = 0  # the kernel's clock before any stat (see _leaf)
    added: int = 0  # bytes not known to be the task's own (the disk cap's count)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    more_skipped: int = 0
    # pass 1 split between processes (split_scan): subfolders walked, keyed by path, and
    # shares of a folder's listing, keyed by (path, share), with the folders so shared
    done: dict[Any, _Part | _Listing] = field(default_factory=dict)
    shared: dict[str, tuple[Sub, int]] = field(default_factory=dict)

    def skip(self, rel: str, why: str) -> None:
        if len(self.skipped) < MAX_NOTED:
            self.skipped.append((rel, why))
        else:
            self.more_skipped += 1

    def take_part(self, rel: str, old: Sub | None) -> Sub | _Changed | None:
        """Subfolder ``rel`` as another process walked it against ``old`` (``old`` itself when
        unchanged), its notes and bytes counted here in the walk's order; ``None`` when it was
        not walked apart (or against another entry)."""
        part = self.done.pop(rel, None)
        if not isinstance(part, _Part) or old is None or part.prev != old:
            return None
        self.added += part.added
        for name, why in part.skipped:
            self.skip(name, why)
        self.more_skipped += part.more_skipped
        return old if part.node is part.prev else part.node

    def take_listing(self, rel: str, old: Sub | None,
                     walk: Callable[[tuple[int, int]], _Listing]) -> _Listing | None:
        """Folder ``rel``'s listing from its shares, when it was shared out against ``old``; a
        share no process gave back is walked here (``walk``). ``None``: not shared out."""
        shared = self.shared.pop(rel, None)
        if shared is None or old is None or shared[0] != old:
            return None
        shares = []
        for k in range(shared[1]):
            share = self.done.pop((rel, k), None)
            shares.append(share if isinstance(share, _Listing) else walk((k, shared[1])))
        return _merge(shares)


class _Part(NamedTuple):
    """A subfolder walked by :func:`split_scan.run_split`: the entry it was compared with,
    what :meth:`SnapshotStore._scan` gave (that same entry when unchanged: pickling keeps the
    identity) and what the walk counted."""

    prev: Sub
    node: Sub | _Changed
    added: int
    skipped: list[tuple[str, str]]
    more_skipped: int


class _Listing(NamedTuple):
    """A folder's entries against its previous list (pass 1 of :meth:`SnapshotStore.take`), or
    one share of them: the files kept as they were, the files to read, the subfolders and
    what is left out, each with its place in the listing (shares merge in the order one walk
    gives)."""

    kept: list[str]
    new: dict[str, os.stat_result]
    folders: list[tuple[int, str]]
    skipped: list[tuple[int, str, str]]  # the first MAX_NOTED: (place, path, why)
    more_skipped: int


def _list(fs: WorkspaceFS, rel: str, pf: dict[str, list], depth: int,
          share: tuple[int, int] = (0, 1)) -> _Listing:
    """Folder ``rel`` against ``pf``, its files in the previous step (the ``(k, n)`` share of
    its entries only: those whose inode is ``k`` modulo ``n``). This loop is the cost of every
    unchanged file, so it compares each ``lstat`` with the stored list as the listing comes
    and only notes the name."""
    kept: list[str] = []  # files as the previous tree has them
    new: dict[str, os.stat_result] = {}
    folders: list[tuple[int, str]] = []
    skipped: list[tuple[int, str, str]] = []
    try:
        for at, name, st in fs.iter_share(rel or ".", share):
            mode = st.st_mode
            if mode & _S_IFMT == S_IFREG:  # S_ISREG, without a call per file
                old = pf.get(name)
                # git's index check: ctime, mtime, size, inode (not old[5]: an old run's entry)
                if (old is not None and old[5] == st.st_ctime_ns and old[4] == st.st_mtime_ns
                        and old[1] == st.st_size and old[6] == st.st_ino and old[5]):
                    kept.append(name)
                elif is_utf8(name):
                    new[name] = st
                else:
                    skipped.append((at, display_name(_join(rel, name)), "its name is not UTF-8"))
            elif not is_utf8(name):  # a run record is JSON text: an escaped name could collide
                skipped.append((at, display_name(_join(rel, name)), "its name is not UTF-8"))
            elif S_ISDIR(mode):
                if depth + 1 >= MAX_DEPTH:
                    skipped.append((at, _join(rel, name), f"it is more than {MAX_DEPTH} folders deep"))
                else:
                    folders.append((at, name))
            elif not S_ISLNK(mode):
                skipped.append((at, _join(rel, name), f"it is {_KIND_WORDS[kind_of(mode)]}"))
    except WorkspaceError:
        pass  # the folder changed under the walk; what is there now is taken next time
    return _Listing(kept, new, folders, skipped[:MAX_NOTED], max(len(skipped) - MAX_NOTED, 0))


def _merge(shares: list[_Listing]) -> _Listing:
    """The shares of one folder's listing as one walk of it gives them."""
    skipped = sorted(x for share in shares for x in share.skipped)
    return _Listing([name for share in shares for name in share.kept],
                    {name: st for share in shares for name, st in share.new.items()},
                    sorted(x for share in shares for x in share.folders),
                    skipped[:MAX_NOTED],
                    max(len(skipped) - MAX_NOTED, 0) + sum(share.more_skipped for share in shares))


class SnapshotStore:
    def __init__(self, root: Path, base_dir: Path | None = None) -> None:
        self.root = root
        self.objects = root / "objects"
        self.trees = root / "trees"
        self.manifests = root / "manifests"
        self.objects.mkdir(parents=True, exist_ok=True)
        self.manifests.mkdir(parents=True, exist_ok=True)
        self.base_dir = base_dir
        self._objects_dir = str(self.objects)
        self._made: set[str] = set()  # object folders known to exist (see _fan_out)
        self._last: Manifest | None = None
        self._initial: Manifest | None = None
        self._cache: dict[str, dict] = {}

    def _object(self, sha: str) -> Path:
        return self.objects / sha[:2] / sha

    def _tree_path(self, sha: str) -> Path:
        return self.trees / sha[:2] / sha

    def labels(self) -> list[str]:
        return sorted(p.stem for p in self.manifests.glob("*.json"))

    def load(self, label: str) -> Manifest:
        path = self.manifests / f"{label}.json"
        if not path.exists():
            raise SnapshotError(f"no snapshot {label!r} in {self.manifests}")
        manifest = Manifest.model_validate_json(path.read_text())
        manifest._store = self
        return manifest

    # --- folder objects ---------------------------------------------------------------------

    def tree(self, sha: str) -> dict:
        """Folder object ``sha``: ``{"d": {name: Sub}, "f": {name: Leaf}}`` (as JSON lists)."""
        cached = self._cache.get(sha)
        if cached is not None:
            return cached
        try:
            obj = json.loads(self._tree_path(sha).read_bytes())
        except (OSError, ValueError) as err:
            raise SnapshotError(f"folder object {sha[:12]} is missing or unreadable: {err}") from err
        if len(self._cache) >= TREE_CACHE:
            self._cache.pop(next(iter(self._cache)))
        self._cache[sha] = obj
        return obj

    def _put_tree(self, obj: dict) -> str:
        data = _canonical(obj)
        sha = hashlib.sha256(data).hexdigest()
        dest = self._tree_path(sha)
        if not dest.exists():
            dest.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.trees / f"tmp-{secrets.token_hex(8)}"
            tmp.write_bytes(data)
            tmp.replace(dest)
        return sha

    def _children(self, sub: Sub | None) -> tuple[dict[str, Leaf], dict[str, Sub]]:
        if sub is None:
            return {}, {}
        obj = self.tree(sub.tree)
        return ({n: Leaf(*v) for n, v in obj["f"].items()}, {n: Sub(*v) for n, v in obj["d"].items()})

    def iter_tree(self, sha: str, rel: str = "") -> Iterator[tuple[str, Leaf]]:
        """Every file beneath folder object ``sha`` (depth-first, one folder in memory at a time)."""
        stack = [(rel, sha)]
        while stack:
            at, tree = stack.pop()
            obj = self.tree(tree)
            for name, v in obj["f"].items():
                yield _join(at, name), Leaf(*v)
            stack.extend((_join(at, name), Sub(*v).tree) for name, v in obj["d"].items())

    def diff_trees(self, a: Sub | None, b: Sub | None, rel: str, out: list[str],
                   a_store: SnapshotStore | None = None) -> None:
        """Append to ``out`` the files that differ between folder ``a`` (of ``a_store``, by
        default this store: another run's when two runs are compared) and this store's ``b``."""
        a_store = a_store or self
        if a is not None and b is not None and a.content == b.content:
            return
        fa, da = a_store._children(a)
        fb, db = self._children(b)
        for name in fa.keys() | fb.keys():
            la, lb = fa.get(name), fb.get(name)
            if la is None or lb is None or la.sha != lb.sha:
                out.append(_join(rel, name))
        for name in da.keys() | db.keys():
            self.diff_trees(da.get(name), db.get(name), _join(rel, name), out, a_store)

    def _lookup(self, manifest: Manifest, rel: str) -> FileEntry | Leaf | None:
        """One file's entry at ``manifest``, by walking its folders (O(depth))."""
        if manifest.flat is not None:
            return manifest.flat.get(rel)
        sub, parts = manifest.root, rel.split("/")
        for part in parts[:-1]:
            if sub is None:
                return None
            sub = Sub(*v) if (v := self.tree(sub.tree)["d"].get(part)) else None
        if sub is None:
            return None
        v = self.tree(sub.tree)["f"].get(parts[-1])
        return Leaf(*v) if v else None

    # --- base files ---------------------------------------------------------------------------

    def _initial_manifest(self) -> Manifest | None:
        if self._initial is None:
            labels = self.labels()
            self._initial = self.load(labels[0]) if labels else None
        return self._initial

    def _base_files(self, rel: str) -> Callable[[str], list | None]:
        """The task's own files in folder ``rel`` (those marked ``base`` in the run's first
        snapshot): name -> that snapshot's entry (sha first, size second), or None. Found once
        per changed folder, not once per file."""
        initial = self._initial_manifest()
        if initial is None:
            return lambda name: None
        if initial.flat is not None:  # an old run's: every file listed by path
            flat = initial.flat

            def listed(name: str) -> list | None:
                e = flat.get(_join(rel, name))
                return [e.sha, e.size] if e is not None and e.base else None
            return listed
        sub = initial.root
        for part in rel.split("/") if rel else ():
            v = self.tree(sub.tree)["d"].get(part) if sub is not None else None
            sub = Sub(*v) if v else None
        files = self.tree(sub.tree)["f"] if sub is not None else {}

        def stored(name: str) -> list | None:
            v = files.get(name)
            return v if v is not None and v[3] else None
        return stored

    def _task_size(self, rel: str) -> int | None:
        """The size of the task's own ``env/`` copy of ``rel`` (None: there is none)."""
        if self.base_dir is None:
            return None
        try:
            st = os.stat(f"{self.base_dir}/{rel}")
        except (OSError, ValueError):
            return None
        return st.st_size if S_ISREG(st.st_mode) else None

    def _same_as_base(self, rel: str, sha: str) -> bool:
        assert self.base_dir is not None
        try:
            return _sha256(self.base_dir / rel) == sha
        except OSError:
            return False

    # --- recording ----------------------------------------------------------------------------

    def _copy_in(self, fd: int, drop: Callable[[str], bool], st: os.stat_result) -> str:
        """Read the open file ``fd`` to its end once, hashing it and keeping the bytes read as
        their object unless it exists already or ``drop(sha)`` (the task's own file): the
        sha256 of what was read, so what is stored is what is named. A file of one chunk is
        held in memory and written only when new; a larger one goes to a temp object as it
        is read, renamed into place or removed. A sparse file (``st``: fewer blocks than its
        size) is :meth:`_copy_in_sparse`: a dense one never pays for the hole search."""
        if is_sparse(st):
            return self._copy_in_sparse(fd, drop, st.st_size)
        h = hashlib.sha256()
        first = os.read(fd, CHUNK)
        h.update(first)
        more = os.read(fd, CHUNK) if first else b""
        if not more:  # written only when new
            sha = h.hexdigest()
            if not drop(sha) and not os.path.exists(self._object_path(sha)):
                self._settle_object(self._temp_object(lambda out: _write_all(out, first)), sha, keep=True)
            return sha

        def fill(out: int) -> None:
            nonlocal more
            _write_all(out, first)
            while more:
                h.update(more)
                _write_all(out, more)
                more = os.read(fd, CHUNK)

        tmp = self._temp_object(fill)
        sha = h.hexdigest()
        self._settle_object(tmp, sha, keep=not drop(sha))
        return sha

    def _copy_in_sparse(self, fd: int, drop: Callable[[str], bool], size: int) -> str:
        """:meth:`_copy_in` for a sparse file of ``size`` bytes (the size the walk saw, which
        the disk cap counted): its data extents written at their offsets into the temp object,
        its holes left holes there and hashed as the zeros a reader sees. So the object costs
        the blocks the file holds, and is named by its content like any other."""
        h = hashlib.sha256()

        def hashed() -> Iterator[tuple[int, bytes]]:
            pos = 0
            for offset, piece in data_pieces(fd, size, True):
                for gap in zeros(offset - pos):
                    h.update(gap)
                h.update(piece)
                pos = offset + len(piece)
                yield offset, piece
            for gap in zeros(size - pos):
                h.update(gap)

        tmp = self._temp_object(lambda out: write_pieces(out, hashed(), size))
        sha = h.hexdigest()
        self._settle_object(tmp, sha, keep=not drop(sha))
        return sha

    def _object_path(self, sha: str) -> str:
        """:meth:`_object` as text (no ``Path`` per file on the hot path)."""
        return f"{self._objects_dir}/{sha[:2]}/{sha}"

    def _fan_out(self, sha: str) -> None:
        """Make the object's two-letter folder once per store, not once per object."""
        if sha[:2] not in self._made:
            os.makedirs(f"{self._objects_dir}/{sha[:2]}", exist_ok=True)
            self._made.add(sha[:2])

    def _temp_object(self, fill: Callable[[int], None]) -> str:
        """A new temp file in the store, written by ``fill`` (removed if that fails)."""
        tmp = f"{self._objects_dir}/tmp-{secrets.token_hex(8)}"
        out = os.open(tmp, _OBJECT_FLAGS, 0o666)
        try:
            fill(out)
        except BaseException:
            os.close(out)
            _unlink_quietly(tmp)
            raise
        os.close(out)
        return tmp

    def _settle_object(self, tmp: str, sha: str, keep: bool) -> None:
        """Rename the temp file ``tmp`` into place as object ``sha``, or remove it when not
        ``keep`` or when the object exists already."""
        try:
            if not keep or os.path.exists(dest := self._object_path(sha)):
                os.unlink(tmp)
            else:
                self._fan_out(sha)
                os.replace(tmp, dest)
        except BaseException:
            _unlink_quietly(tmp)
            raise

    def _previous(self, initial: bool) -> Manifest | None:
        if self._last is None and not initial:
            labels = self.labels()
            if labels:
                self._last = self.load(labels[-1])
        return None if initial else self._last

    def take(self, workspace: Path, label: str, *, initial: bool = False,
             cap_bytes: int | None = None) -> Manifest:
        """Record the workspace as snapshot ``label``. ``initial`` marks files as the base.

        Pass 1 walks the workspace one folder at a time against the previous step's tree,
        reading no file (the ``lstat`` key decides) and keeping only changed folders. Past
        ``cap_bytes`` of files that are not the task's own unchanged ones, nothing is hashed
        or copied: the manifest repeats the previous tree with ``stored=False``. Pass 2 hashes
        and stores the changed files and writes the changed folders' objects.
        """
        previous = self._previous(initial)
        scan = _Scan(WorkspaceFS(workspace), since=kernel_clock_ns())
        prev_root = previous.root if previous is not None else None  # an old run's: no tree
        self._walk_apart(scan, prev_root)
        node = self._scan(scan, "", prev_root, 0)
        notes = skip_note(scan.skipped, scan.more_skipped)
        if cap_bytes is not None and not initial and scan.added > cap_bytes:
            kept = previous.model_dump(exclude={"label", "stored", "notes"}, by_alias=True) if previous else {}
            manifest = Manifest(label=label, **kept, stored=False,
                                notes=[over_cap_note(scan.added, cap_bytes), *notes])
            return self._save(manifest)
        root = self._build(scan, "", node, initial, notes)
        manifest = self._save(Manifest(label=label, tree=root.tree, content=root.content,
                                       file_count=root.count, nonbase=root.nonbase, notes=notes))
        if initial:
            self._initial = manifest
        self._last = manifest
        return manifest

    def _scan(self, scan: _Scan, rel: str, prev: Sub | None, depth: int) -> Sub | _Changed:
        """Folder ``rel`` as it stands against ``prev``: ``prev`` itself when nothing in it
        changed, else what changed (files to hash, subfolders to build). Its listing
        (:func:`_list`) notes only names; the folder's entries are built, and its
        files' bytes summed for the disk cap, only when something in it changed (an unchanged
        folder's bytes are its ``Sub``'s, less its subfolders'). Subfolders are walked after
        the listing is closed: one descriptor held at a time, whatever the depth."""
        obj = self.tree(prev.tree) if prev is not None else _NO_TREE
        pf, pd = obj["f"], obj["d"]
        listing = scan.take_listing(rel, prev, lambda share: _list(scan.fs, rel, pf, depth, share))
        if listing is None:
            listing = _list(scan.fs, rel, pf, depth)
        for _, name, why in listing.skipped:
            scan.skip(name, why)
        scan.more_skipped += listing.more_skipped
        kept, new = listing.kept, listing.new
        folders = [name for _, name in listing.folders]
        same = prev is not None and not new and len(kept) == len(pf) and len(folders) == len(pd)
        dirs: dict[str, Sub | _Changed] = {}
        for name in folders:
            old_sub = Sub(*pd[name]) if name in pd else None
            sub = scan.take_part(_join(rel, name), old_sub) if scan.done else None
            if sub is None:
                sub = self._scan(scan, _join(rel, name), old_sub, depth + 1)
            dirs[name] = sub
            same = same and sub is old_sub
        if same:
            assert prev is not None
            scan.added += prev.nonbase - sum(sub.nonbase for sub in dirs.values())  # type: ignore[union-attr]
            return prev
        files: dict[str, list | os.stat_result] = {name: pf[name] for name in kept}
        scan.added += (sum(leaf[1] for leaf in files.values() if not leaf[3])  # type: ignore[index]
                       + sum(st.st_size for st in new.values()))
        files.update(new)
        return _Changed(files, dirs)

    def _walk_apart(self, scan: _Scan, prev_root: Sub | None) -> None:
        """Pass 1 of a large workspace split between processes (:mod:`environments.record.split_scan`):
        large subfolders each walked as :meth:`_scan` walks it, a folder holding many files
        itself listed in shares by inode; found again by :meth:`_Scan.take_part` and
        :meth:`_Scan.take_listing` as the walk reaches them."""
        processes = min(split_scan.cores(), split_scan.MAX_PROCESSES)
        if prev_root is None or processes < 2 or prev_root.count < split_scan.MIN_FILES:
            return

        def subfolders(sub: Sub) -> dict[str, Sub]:
            return {name: Sub(*v) for name, v in self.tree(sub.tree)["d"].items()}

        def work(group: list[split_scan.Unit]) -> dict[Any, _Part | _Listing]:
            found: dict[Any, _Part | _Listing] = {}
            for unit in group:
                if unit.share is not None:
                    pf = self.tree(unit.sub.tree)["f"]
                    found[unit.rel, unit.share[0]] = _list(scan.fs, unit.rel, pf, unit.depth, unit.share)
                    continue
                own = _Scan(scan.fs, since=scan.since)
                node = self._scan(own, unit.rel, unit.sub, unit.depth)
                found[unit.rel] = _Part(unit.sub, node, own.added, own.skipped, own.more_skipped)
            return found

        groups = split_scan.partition(prev_root, subfolders, processes)
        scan.shared = {u.rel: (u.sub, u.share[1]) for g in groups for u in g if u.share is not None}
        scan.done = split_scan.run_split(groups, work)

    def _build(self, scan: _Scan, rel: str, node: Sub | _Changed, initial: bool,
               notes: list[str]) -> Sub:
        """Hash and store what changed beneath ``rel``; write its folder objects."""
        if isinstance(node, Sub):
            return node
        files: dict[str, Leaf | list] = {}  # a list: kept from the previous tree as stored
        new: list[tuple[str, os.stat_result]] = []
        for name, item in node.files.items():
            if isinstance(item, list):
                files[name] = item
            else:
                new.append((name, item))
        if new:
            self._read_new(scan, rel, new, initial, files, notes)
        dirs = {name: self._build(scan, _join(rel, name), sub, initial, notes)
                for name, sub in node.dirs.items()}
        content = hashlib.sha256(_canonical({
            "d": {n: s.content for n, s in dirs.items()},
            "f": {n: [leaf[0], leaf[2]] for n, leaf in files.items()}})).hexdigest()
        tree = self._put_tree({"d": {n: list(s) for n, s in dirs.items()},
                               "f": {n: list(leaf) for n, leaf in files.items()}})
        return Sub(tree, content,
                   len(files) + sum(s.count for s in dirs.values()),
                   sum(leaf[1] for leaf in files.values() if not leaf[3])
                   + sum(s.nonbase for s in dirs.values()))

    def _read_new(self, scan: _Scan, rel: str, new: list[tuple[str, os.stat_result]], initial: bool,
                  into: dict[str, Leaf | list], notes: list[str]) -> None:
        """The changed files of folder ``rel``, each opened through one descriptor of the
        folder and read once (:meth:`_leaf`), into ``into``; a file (or the folder) that
        turned into a link, FIFO or folder since the walk is left out and noted, never followed."""
        try:
            with scan.fs.opener(rel or ".") as open_file:
                here = _Here(open_file, self._base_files(rel))
                for name, st in new:
                    try:
                        into[name] = self._leaf(scan, _join(rel, name), st, initial, here)
                    except WorkspaceError as err:
                        notes.append(f"Not in this step's snapshot: {err}.")
        except WorkspaceError as err:  # the folder itself is gone or no longer a folder
            notes.append(f"Not in this step's snapshot: {err}.")

    def _leaf(self, scan: _Scan, rel: str, st: os.stat_result, initial: bool, here: _Here) -> Leaf:
        """A changed file, read once: hashed and, unless it is the task's own file or its
        object exists, stored as read. One the size of the task's own copy at its path is
        most likely that copy: it is only hashed, and read again to be stored only when it
        is not. Its ctime is kept for the next step's check only when older than the clock at
        the walk's start: a ctime of the current tick could be stamped again by a write right
        after this snapshot (git's racy entries), so such a file is recorded with ctime 0 and
        read again next step."""
        name = rel.rpartition("/")[2]
        base = here.base(name)
        task_size = self._task_size(rel) if initial else None

        def is_base(sha: str) -> bool:
            return ((base is not None and base[0] == sha)
                    or (task_size == st.st_size and self._same_as_base(rel, sha)))

        fd = here.open(name)
        try:
            if (base is not None and base[1] == st.st_size) or task_size == st.st_size:
                sha = _digest(file_bytes(fd, st))
                based = is_base(sha)
                if not based and not os.path.exists(self._object_path(sha)):
                    os.lseek(fd, 0, os.SEEK_SET)
                    sha = self._copy_in(fd, lambda _: False, st)  # what is stored is what is named
            else:
                sha = self._copy_in(fd, is_base, st)
                based = is_base(sha)
        finally:
            os.close(fd)
        ctime = st.st_ctime_ns if settled(st.st_ctime_ns, scan.since) else 0
        return Leaf(sha, st.st_size, st.st_mode & 0o777, based, st.st_mtime_ns, ctime, st.st_ino)

    def _save(self, manifest: Manifest) -> Manifest:
        _fsync_write(self.manifests / f"{manifest.label}.json",
                     manifest.model_dump_json(exclude_none=True, by_alias=True))
        manifest._store = self
        return manifest

    # --- forks ----------------------------------------------------------------------------------

    def adopt(self, other: SnapshotStore, labels: list[str]) -> None:
        """Take over ``other``'s snapshots ``labels`` (a fork's prefix): each manifest and the
        folder and file objects it reaches, hard-linked where the filesystem allows (objects
        are immutable and named by content, so sharing them is safe), else copied. A folder
        shared by several steps is visited once. A label or object missing in ``other`` is a
        :class:`SnapshotError` before anything is written."""
        manifests = [other.load(label) for label in labels]
        trees: list[str] = []  # every folder object reached, each once
        blobs: set[str] = set()
        seen: set[str] = set()
        for manifest in manifests:
            if manifest.flat is not None:
                blobs.update(e.sha for e in manifest.flat.values() if not e.base)
                for rel, entry in manifest.flat.items():
                    if not entry.base and not other._object(entry.sha).is_file():
                        raise SnapshotError(f"snapshot {manifest.label} of {other.root.parent}: the "
                                            f"stored copy of {rel} is missing")
                continue
            stack = [manifest.tree] if manifest.tree else []
            while stack:
                sha = stack.pop()
                if sha in seen:
                    continue
                seen.add(sha)
                try:
                    obj = other.tree(sha)
                except SnapshotError as err:
                    raise SnapshotError(f"snapshot {manifest.label} of {other.root.parent}: {err}") from err
                trees.append(sha)
                for name, v in obj["f"].items():
                    leaf = Leaf(*v)
                    if not leaf.base and leaf.sha not in blobs:
                        if not other._object(leaf.sha).is_file():
                            raise SnapshotError(f"snapshot {manifest.label} of {other.root.parent}: "
                                                f"the stored copy of {name} is missing")
                        blobs.add(leaf.sha)
                stack.extend(Sub(*v).tree for v in obj["d"].values())
        for sha in blobs:
            self._link(other._object(sha), self.objects)
        for sha in trees:
            self._link(other._tree_path(sha), self.trees)
        for manifest in manifests:
            self._save(manifest)
        self._last = None
        self._initial = None

    def _link(self, source: Path, into: Path) -> None:
        dest = into / source.parent.name / source.name
        if dest.exists():
            return
        dest.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.link(source, dest)
        except OSError:  # another filesystem, or links not allowed: a copy (holes kept), renamed
            tmp = into / f"tmp-{secrets.token_hex(8)}"
            try:
                out = os.open(tmp, _OBJECT_FLAGS, 0o666)
                try:
                    FileBytes.at(source).write_to(out)
                finally:
                    os.close(out)
                tmp.replace(dest)
            finally:
                tmp.unlink(missing_ok=True)

    # --- restoring ------------------------------------------------------------------------------

    def restore(self, label: str, dest: Path, *, over: str | None = None) -> Manifest:
        """Make ``dest`` hold exactly snapshot ``label``: other files and folders, links,
        special files, unreadable names and too-deep folders are removed; nothing is followed
        out. A file whose ``lstat`` key is the snapshot's own is left unread (only what
        differs from ``dest`` is read or written).

        ``over``: the snapshot ``dest`` holds exactly as a restore of this store left it, with
        nothing written there since (scoring's own scratch folder, restored step after step).
        Then a folder whose content hash is the same in both is not even listed: a restore
        costs the folders that differ, not the files ``dest`` holds. (Never for a workspace
        a sandbox or a person can have written since.)"""
        manifest = self.load(label)
        had = self.load(over).root if over is not None else None
        dest.mkdir(parents=True, exist_ok=True)
        fs = WorkspaceFS(dest)
        try:
            if manifest.flat is not None:
                self._restore_flat(fs, manifest.flat)
            else:
                self._restore_dir(fs, "", manifest.root, had)
        except (WorkspaceError, OSError) as err:
            raise SnapshotError(f"cannot restore snapshot {label}: {err}") from err
        self._last = None
        return manifest

    def _restore_dir(self, fs: WorkspaceFS, rel: str, sub: Sub | None, had: Sub | None = None) -> None:
        """Folder ``rel`` as ``sub`` has it; ``had``: what ``dest`` is known to hold there
        (:meth:`restore`'s ``over``), so an equal folder is skipped whole."""
        if had is not None and sub is not None and had.content == sub.content:
            return
        had_files, had_dirs = self._children(had)
        files, dirs = self._children(sub)
        with fs.folder(rel or ".", create=True):
            pass
        present: dict[str, os.stat_result] = {}
        for e in fs.listdir(rel or "."):
            child = _join(rel, e.name)
            if e.kind == "file" and e.name in files:
                present[e.name] = e.st
            elif not (e.kind == "dir" and e.name in dirs):  # also: names that are not UTF-8
                fs.remove_tree(child)
        for name, leaf in files.items():
            kept = had_files.get(name)
            if name in present and kept is not None and (kept.sha, kept.mode) == (leaf.sha, leaf.mode):
                continue  # dest holds ``had``: this file is already the snapshot's
            self._restore_file(fs, _join(rel, name), leaf, present.get(name))
        for name, child_sub in dirs.items():
            self._restore_dir(fs, _join(rel, name), child_sub, had_dirs.get(name))

    def _restore_file(self, fs: WorkspaceFS, rel: str, entry: Leaf | FileEntry,
                      st: os.stat_result | None) -> None:
        if st is not None and st.st_mode & 0o777 != entry.mode:
            st = None  # rewritten with the snapshot's mode
        if st is not None and isinstance(entry, Leaf) and entry.same_stat(st):
            return
        if st is not None and st.st_size == entry.size and _digest(fs.chunks(rel)) == entry.sha:
            return
        fs.write(rel, FileBytes.at(self._source(rel, entry)), mode=entry.mode)  # holes kept

    def _restore_flat(self, fs: WorkspaceFS, files: dict[str, FileEntry]) -> None:
        """An old run's manifest (every file listed): as restores were before trees."""
        walk = fs.walk()
        for rel in walk.strays:
            fs.remove_tree(rel)
        present = {}
        for rel, st in walk.files:
            if rel in files:
                present[rel] = st
            else:
                fs.remove(rel)
        for rel, entry in files.items():
            self._restore_file(fs, rel, entry, present.get(rel))

    def _source(self, rel: str, entry: Leaf | FileEntry) -> Path:
        if not entry.base:
            return self._object(entry.sha)
        if self.base_dir is None:
            raise SnapshotError(f"{rel} is stored in the task folder, which is not known")
        source = self.base_dir / rel
        if not source.is_file() or _sha256(source) != entry.sha:
            raise SnapshotError(f"{rel}: the task's env/ copy has changed since the run")
        return source

    def read(self, label: str, rel: str, limit: int = READ_LIMIT) -> bytes:
        """One file's content at snapshot ``label`` (for diffs and viewers): its first
        ``limit`` bytes, never more (a stored file may be 1,000 MB of holes; its entry's
        ``size`` says how large it is)."""
        entry = self._lookup(self.load(label), rel)
        if entry is None:
            raise KeyError(rel)
        src = self.base_dir / rel if entry.base and self.base_dir else self._object(entry.sha)
        out = bytearray()
        chunks = iter(FileBytes.at(src))
        try:
            while len(out) < limit and (chunk := next(chunks, None)) is not None:
                out += chunk[:limit - len(out)]
        except WorkspaceError as err:  # not a regular file: a damaged store or task folder
            raise SnapshotError(f"{rel}: {err}") from None
        finally:
            chunks.close()  # type: ignore[attr-defined]
        return bytes(out)
