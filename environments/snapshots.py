"""Content-addressed workspace snapshots: a step stores only what changed.

Each snapshot is a manifest (path -> sha256, size, mode) plus objects named by their hash, so
a file that never changes is stored once however many steps there are. Files still identical
to the task's pristine ``env/`` are not copied at all: the manifest marks them ``base`` and a
restore copies them from the task folder (checking the hash), which keeps a run directory
about the size of its workspace even when the task ships a large data file.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

from pydantic import BaseModel


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
    h = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


def _fsync_write(path: Path, data: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("w") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    tmp.replace(path)


def walk_files(root: Path) -> list[tuple[str, Path]]:
    """Regular files under ``root`` (symlinks are not followed or stored)."""
    found = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if not os.path.islink(os.path.join(dirpath, d))]
        for name in filenames:
            p = Path(dirpath) / name
            if p.is_symlink() or not p.is_file():
                continue
            found.append((p.relative_to(root).as_posix(), p))
    return sorted(found)


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

    def take(self, workspace: Path, label: str, *, initial: bool = False) -> Manifest:
        """Record the workspace as snapshot ``label``. ``initial`` marks files as the base."""
        if self._last is None and not initial:
            labels = self.labels()
            if labels:
                self._last = self.load(labels[-1])
                self._remember_base(self.load(labels[0]))
        previous = self._last.files if self._last else {}
        files: dict[str, FileEntry] = {}
        for rel, path in walk_files(workspace):
            st = path.stat()
            old = previous.get(rel)
            if old and (old.size, old.mtime_ns, old.ino) == (st.st_size, st.st_mtime_ns, st.st_ino):
                sha = old.sha
            else:
                sha = _sha256(path)
            is_base = self._base.get(rel) == sha or (initial and self._same_as_base(rel, st.st_size, sha))
            if not is_base and not self._object(sha).exists():
                dest = self._object(sha)
                dest.parent.mkdir(exist_ok=True)
                tmp = dest.with_name(dest.name + ".tmp")
                shutil.copyfile(path, tmp)
                tmp.replace(dest)
            files[rel] = FileEntry(sha=sha, size=st.st_size, mode=st.st_mode & 0o777,
                                   base=is_base, mtime_ns=st.st_mtime_ns, ino=st.st_ino)
        manifest = Manifest(label=label, files=files)
        _fsync_write(self.manifests / f"{label}.json", manifest.model_dump_json())
        if initial:
            self._remember_base(manifest)
        self._last = manifest
        return manifest

    def restore(self, label: str, dest: Path) -> Manifest:
        """Make ``dest`` hold exactly snapshot ``label`` (extra files are removed)."""
        manifest = self.load(label)
        dest.mkdir(parents=True, exist_ok=True)
        for rel, path in walk_files(dest):
            if rel not in manifest.files:
                path.unlink()
        for rel, entry in manifest.files.items():
            target = dest / rel
            if target.is_file() and target.stat().st_size == entry.size and _sha256(target) == entry.sha:
                continue
            source = self._object(entry.sha)
            if entry.base:
                if self.base_dir is None:
                    raise SnapshotError(f"{rel} is stored in the task folder, which is not known")
                source = self.base_dir / rel
                if not source.is_file() or _sha256(source) != entry.sha:
                    raise SnapshotError(f"{rel}: the task's env/ copy has changed since the run")
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, target)
            os.chmod(target, entry.mode)
        self._last = None
        return manifest

    def read(self, label: str, rel: str) -> bytes:
        """One file's content at snapshot ``label`` (for diffs and viewers)."""
        entry = self.load(label).files[rel]
        src = self.base_dir / rel if entry.base and self.base_dir else self._object(entry.sha)
        return src.read_bytes()
