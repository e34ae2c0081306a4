"""A task folder's content key: what names its prepared copy and its stored baseline.

Two folders share a prepared copy exactly when they share this key, so it must cover
everything the copy carries (``shutil.copytree``: every file's bytes, every folder, even empty,
every link's target, the permission bits) and nothing else. It once hashed names and sizes only
for files of 1 MiB and more, so a hostile folder named like a genuine task, with a big file of
the same size, got the genuine folder's copy (or handed it its own). Every record here is
length-framed, so bytes cannot shift between a name and a content.

Hashing every byte of a folder with gigabytes of data on every ``labcoat run`` would be slow,
so a big file's digest is remembered in ``$LABCOAT_HOME/content-hashes.json``, keyed by its
``(dev, inode, size, mtime_ns, ctime_ns)``. That is sound where the digest is stored only for a
file whose ctime had settled (``SETTLED_NS`` before the read began) and did not change during
the read: any later write or ``utime`` sets a ctime at or after the read began, which no
process can set back, so a changed file never matches a stored key.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import time
from pathlib import Path

from environments.task.home import labcoat_home
from environments.task.spec import TaskError, folder_entries

SKIPPED = "__pycache__"
"""Not copied into a prepared copy (``prepare.py``'s ``copytree``), so not keyed."""
CACHED_FROM = 1 << 20
"""Files this size and bigger have their digest remembered; smaller ones are just read."""
SETTLED_NS = 2_000_000_000
"""A file changed less than this before the read may change again in the same clock tick."""
MAX_REMEMBERED = 100_000
CHUNK = 1 << 20

_remembered: _Remembered | None = None


def fingerprint(root: Path) -> str:
    """The key of the folder at ``root``: 16 hex digits of a sha256 over every entry (its
    relative path, kind and permission bits; a file's size and sha256, a link's target,
    never followed: a task folder is untrusted, and a link to ``/proc/kmsg`` would block the
    read), ``__pycache__`` aside."""
    h = hashlib.sha256(b"labcoat task content v2\0")
    entries = sorted(folder_entries(root), key=lambda item: item[0].split("/"))
    try:
        for rel, st in entries:
            if SKIPPED in rel.split("/"):
                continue
            kind = stat.S_IFMT(st.st_mode)
            _frame(h, rel.encode(), f"{kind:o}:{stat.S_IMODE(st.st_mode):o}".encode())
            if stat.S_ISLNK(st.st_mode):
                _frame(h, os.fsencode(os.readlink(root / rel)))
            elif stat.S_ISREG(st.st_mode):
                _frame(h, str(st.st_size).encode(), file_digest(root / rel, st))
    except OSError as err:  # a file gone or swapped since the walk, or unreadable
        raise TaskError(f"{root}: cannot be read whole: {err}") from err
    finally:
        _cache().save()
    return h.hexdigest()[:16]


def _frame(h: hashlib._Hash, *fields: bytes) -> None:
    for field in fields:
        h.update(b"%d:" % len(field))
        h.update(field)


def file_digest(path: Path, seen: os.stat_result) -> bytes:
    """sha256 of the plain file at ``path`` (``seen``: its lstat from the walk), read by
    descriptor without following a link or blocking on a FIFO swapped in since the walk."""
    began = time.time_ns()
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or (st.st_dev, st.st_ino) != (seen.st_dev, seen.st_ino):
            raise OSError(f"{path}: changed while the task folder was read")
        key = _key(st) if st.st_size >= CACHED_FROM else None
        known = _cache().digests.get(key) if key else None
        if known is not None:
            return bytes.fromhex(known)
        h = hashlib.sha256()
        while chunk := os.read(fd, CHUNK):
            h.update(chunk)
        digest = h.digest()
        if key and st.st_ctime_ns < began - SETTLED_NS and _key(os.fstat(fd)) == key:
            _cache().add(key, digest.hex())
        return digest
    finally:
        os.close(fd)


def _key(st: os.stat_result) -> str:
    return f"{st.st_dev}:{st.st_ino}:{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}"


class _Remembered:
    """The digests in one ``content-hashes.json`` (read once; none when it is missing or
    unreadable: it is only a cache), written back whole and atomically (another process's
    write at the same moment may win: an entry lost is only hashed again)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.dirty = False
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            data = {}
        self.digests: dict[str, str] = {k: v for k, v in data.items() if _is_digest(v)} \
            if isinstance(data, dict) else {}

    def add(self, key: str, digest: str) -> None:
        self.digests.pop(key, None)
        self.digests[key] = digest  # newest last: the oldest are dropped past MAX_REMEMBERED
        while len(self.digests) > MAX_REMEMBERED:
            del self.digests[next(iter(self.digests))]
        self.dirty = True

    def save(self) -> None:
        if not self.dirty:
            return
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp.write_text(json.dumps(self.digests))
            os.replace(tmp, self.path)
            self.dirty = False
        except OSError:
            tmp.unlink(missing_ok=True)


def _is_digest(value: object) -> bool:
    return isinstance(value, str) and len(value) == 64 and all(c in HEX for c in value)


HEX = frozenset("0123456789abcdef")


def _cache() -> _Remembered:
    """This process's remembered digests for the current ``$LABCOAT_HOME``."""
    global _remembered
    path = labcoat_home() / "content-hashes.json"
    if _remembered is None or _remembered.path != path:
        _remembered = _Remembered(path)
    return _remembered
