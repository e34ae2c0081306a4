"""Content-addressed workspace snapshots: a step stores only what changed.

Each snapshot is a manifest (path -> sha256, size, mode) plus objects named by their hash, so
a file that never changes is stored once however many steps there are. Files still identical
to the task's pristine ``env/`` are not copied at all: the manifest marks them ``base`` and a
restore copies them from the task folder (checking the hash), which keeps a run directory
about the size of its workspace even when the task ships a large data file.

The workspace is read and rebuilt only through :class:`~environments.safefs.WorkspaceFS`: by
descriptor, iteratively (a 1,200-deep tree costs no recursion), never following a link out and
never opening a FIFO, socket or device. What a snapshot leaves out (such files, names that are
not UTF-8, folders past the depth cap) it says in ``Manifest.notes``; past the task's disk cap
(apparent sizes, so a sparse file counts whole) it stores nothing and says so.
"""

from __future__ import annotations

import hashlib
import os
import secrets
import shutil
from collections.abc import Iterable
from pathlib import Path

from pydantic import BaseModel, Field

from environments.safefs import CHUNK, WorkspaceError, WorkspaceFS

MAX_NOTED = 10  # skipped paths named in a snapshot's note; the rest are counted


class FileEntry(BaseModel):
    sha: str
    size: int
    mode: int
    base: bool = False
    mtime_ns: int = 0
    ino: int = 0


class Manifest(BaseModel):
    label: str
    files: dict[str, FileEntry]
    stored: bool = Field(True, description="False: over the disk cap; files are the previous step's")
    notes: list[str] = Field(default_factory=list, description="what was left out, for the step's observation")

    def changed_since(self, other: Manifest | None) -> list[str]:
        """Paths added, removed or modified relative to ``other``."""
        if other is None:
            return sorted(self.files)
        paths = set(self.files) | set(other.files)
        return sorted(
            p for p in paths
            if (p in self.files) != (p in other.files)
            or (p in self.files and self.files[p].sha != other.files[p].sha)
        )


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


def _fsync_write(path: Path, data: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("w") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    tmp.replace(path)


def walk_files(root: Path) -> list[tuple[str, Path]]:
    """Regular files under ``root`` (symlinks and special files are not followed or stored)."""
    return [(rel, Path(root) / rel) for rel, _ in WorkspaceFS(root).walk().files]


def skip_note(skipped: list[tuple[str, str]]) -> list[str]:
    if not skipped:
        return []
    named = "; ".join(f"'{rel}' ({why})" for rel, why in skipped[:MAX_NOTED])
    more = f"; and {len(skipped) - MAX_NOTED} more" if len(skipped) > MAX_NOTED else ""
    return [f"Not in this step's snapshot (so not scored, and removed on resume): {named}{more}."]


def over_cap_note(added: int, cap_bytes: int) -> str:
    return (f"The workspace holds {added / 2**20:,.0f} MB of files beyond the task's own, over this "
            f"task's limit of {cap_bytes / 2**20:,.0f} MB ([limits] disk_mb; a sparse file counts at its "
            f"full size). This step's snapshot was not stored: the run keeps the previous one, and "
            f"scoring and resume use it. Delete or shrink files to go on.")


class SnapshotStore:
    def __init__(self, root: Path, base_dir: Path | None = None) -> None:
        self.root = root
        self.objects = root / "objects"
        self.manifests = root / "manifests"
        self.objects.mkdir(parents=True, exist_ok=True)
        self.manifests.mkdir(parents=True, exist_ok=True)
        self.base_dir = base_dir
        self._last: Manifest | None = None
        self._base: dict[str, str] = {}

    def _object(self, sha: str) -> Path:
        return self.objects / sha[:2] / sha

    def labels(self) -> list[str]:
        return sorted(p.stem for p in self.manifests.glob("*.json"))

    def load(self, label: str) -> Manifest:
        path = self.manifests / f"{label}.json"
        if not path.exists():
            raise SnapshotError(f"no snapshot {label!r} in {self.manifests}")
        return Manifest.model_validate_json(path.read_text())

    def _remember_base(self, manifest: Manifest) -> None:
        self._base = {p: e.sha for p, e in manifest.files.items() if e.base}

    def _same_as_base(self, rel: str, size: int, sha: str) -> bool:
        base = self.base_dir / rel if self.base_dir else None
        return bool(base and base.is_file() and base.stat().st_size == size and _sha256(base) == sha)

    def _store(self, fs: WorkspaceFS, rel: str) -> str:
        """Copy ``rel`` into the object store by descriptor; its sha256 as copied."""
        tmp = self.objects / f"tmp-{secrets.token_hex(8)}"
        h = hashlib.sha256()
        try:
            with tmp.open("wb") as out:
                for chunk in fs.chunks(rel):
                    h.update(chunk)
                    out.write(chunk)
            dest = self._object(h.hexdigest())
            dest.parent.mkdir(exist_ok=True)
            tmp.replace(dest)
        finally:
            tmp.unlink(missing_ok=True)
        return h.hexdigest()

    def _last_manifest(self, initial: bool) -> dict[str, FileEntry]:
        if self._last is None and not initial:
            labels = self.labels()
            if labels:
                self._last = self.load(labels[-1])
                self._remember_base(self.load(labels[0]))
        return self._last.files if self._last else {}

    def take(self, workspace: Path, label: str, *, initial: bool = False,
             cap_bytes: int | None = None) -> Manifest:
        """Record the workspace as snapshot ``label``. ``initial`` marks files as the base.

        Past ``cap_bytes`` of files that are not the task's own unchanged ones, nothing is
        hashed or copied: the manifest repeats the previous files with ``stored=False``.
        """
        previous = self._last_manifest(initial)
        fs = WorkspaceFS(workspace)
        walk = fs.walk()
        notes = skip_note(walk.skipped)

        def unchanged(rel: str, st: os.stat_result) -> FileEntry | None:
            old = previous.get(rel)
            same = old and (old.size, old.mtime_ns, old.ino) == (st.st_size, st.st_mtime_ns, st.st_ino)
            return old if same else None

        added = sum(st.st_size for rel, st in walk.files if not (e := unchanged(rel, st)) or not e.base)
        if cap_bytes is not None and not initial and added > cap_bytes:
            manifest = Manifest(label=label, files=dict(previous), stored=False,
                                notes=[over_cap_note(added, cap_bytes), *notes])
            return self._save(manifest)
        files: dict[str, FileEntry] = {}
        for rel, st in walk.files:
            try:
                entry = self._entry(fs, rel, st, unchanged(rel, st), initial)
            except WorkspaceError as err:  # changed into a link or folder since the walk
                notes.append(f"Not in this step's snapshot: {err}.")
                continue
            files[rel] = entry
        manifest = self._save(Manifest(label=label, files=files, notes=notes))
        if initial:
            self._remember_base(manifest)
        self._last = manifest
        return manifest

    def _save(self, manifest: Manifest) -> Manifest:
        _fsync_write(self.manifests / f"{manifest.label}.json", manifest.model_dump_json())
        return manifest

    def _entry(self, fs: WorkspaceFS, rel: str, st: os.stat_result, old: FileEntry | None,
               initial: bool) -> FileEntry:
        sha = old.sha if old else _digest(fs.chunks(rel))
        is_base = self._base.get(rel) == sha or (initial and self._same_as_base(rel, st.st_size, sha))
        if not is_base and not self._object(sha).exists():
            sha = self._store(fs, rel)  # hashed again as copied: what is stored is what is named
        return FileEntry(sha=sha, size=st.st_size, mode=st.st_mode & 0o777, base=is_base,
                         mtime_ns=st.st_mtime_ns, ino=st.st_ino)

    def adopt(self, other: SnapshotStore, labels: list[str]) -> None:
        """Take over ``other``'s snapshots ``labels`` (a fork's prefix): each manifest and the
        objects it names, hard-linked where the filesystem allows (objects are immutable and
        named by content, so sharing them is safe), else copied. A label or object missing in
        ``other`` is a :class:`SnapshotError` before anything is written."""
        manifests = [other.load(label) for label in labels]
        for manifest in manifests:
            for rel, entry in manifest.files.items():
                if not entry.base and not other._object(entry.sha).is_file():
                    raise SnapshotError(f"snapshot {manifest.label} of {other.root.parent}: the "
                                        f"stored copy of {rel} is missing")
        for manifest in manifests:
            for entry in manifest.files.values():
                if not entry.base:
                    self._link_object(other._object(entry.sha))
            self._save(manifest)
        self._last = None

    def _link_object(self, source: Path) -> None:
        dest = self.objects / source.parent.name / source.name
        if dest.exists():
            return
        dest.parent.mkdir(exist_ok=True)
        try:
            os.link(source, dest)
        except OSError:  # another filesystem, or links not allowed: a copy, renamed into place
            tmp = self.objects / f"tmp-{secrets.token_hex(8)}"
            try:
                shutil.copyfile(source, tmp)
                tmp.replace(dest)
            finally:
                tmp.unlink(missing_ok=True)

    def restore(self, label: str, dest: Path) -> Manifest:
        """Make ``dest`` hold exactly snapshot ``label``: other files, links, special files,
        unreadable names and too-deep folders are removed; nothing is followed out."""
        manifest = self.load(label)
        dest.mkdir(parents=True, exist_ok=True)
        fs = WorkspaceFS(dest)
        walk = fs.walk()
        try:
            for rel in walk.strays:
                fs.remove_tree(rel)
            present = {}
            for rel, st in walk.files:
                if rel in manifest.files:
                    present[rel] = st
                else:
                    fs.remove(rel)
            for rel, entry in manifest.files.items():
                st = present.get(rel)
                if st is not None and st.st_size == entry.size and _digest(fs.chunks(rel)) == entry.sha:
                    continue
                with self._source(rel, entry).open("rb") as f:
                    fs.write(rel, iter(lambda: f.read(CHUNK), b""), mode=entry.mode)
        except (WorkspaceError, OSError) as err:
            raise SnapshotError(f"cannot restore snapshot {label}: {err}") from err
        self._last = None
        return manifest

    def _source(self, rel: str, entry: FileEntry) -> Path:
        if not entry.base:
            return self._object(entry.sha)
        if self.base_dir is None:
            raise SnapshotError(f"{rel} is stored in the task folder, which is not known")
        source = self.base_dir / rel
        if not source.is_file() or _sha256(source) != entry.sha:
            raise SnapshotError(f"{rel}: the task's env/ copy has changed since the run")
        return source

    def read(self, label: str, rel: str) -> bytes:
        """One file's content at snapshot ``label`` (for diffs and viewers)."""
        entry = self.load(label).files[rel]
        src = self.base_dir / rel if entry.base and self.base_dir else self._object(entry.sha)
        return src.read_bytes()
