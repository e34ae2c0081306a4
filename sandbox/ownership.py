"""Who a sandbox started by root runs as on the host, and who owns its workspace meanwhile.

A sandbox started by root runs its commands as an unprivileged host uid, never as root and never
as a user-namespace uid mapped onto root. Each live sandbox *leases* a uid (and the gid of the
same number) of its own from a range labcoat reserves (:func:`lease_host_ids`), so that no two
share the per-user limits the kernel keeps (inotify instances, processes, pending signals, user
namespaces...), nor those of any host account: the range is ``0x6C630000`` + 65536 by default
(``$LABCOAT_SANDBOX_IDS`` = ``BASE[:COUNT]`` changes it), and an id that an account, a group or a
subordinate range names is skipped. A lease is an exclusive ``flock`` on the id's lock file in
a root-only folder (``/run/labcoat/ids``, or ``$LABCOAT_ID_LOCKS``): it excludes every other
labcoat process too, and the kernel drops it when its holder dies, however it dies.

Those commands must be able to write the workspace, so before each command what is in it is
handed to the leased uid, and when the sandbox closes it is handed back to root. The walk holds
directory descriptors and never follows a link, so a link a command left behind cannot redirect
a chown outside the workspace; it is iterative, so a deep tree cannot exhaust the host's stack.

A hand-over costs what changed since the last one, not what the workspace holds. A file can
come to belong to someone else than the sandbox's uid only by a new name in a folder (the host
writes by a temp file renamed over the name; the sandbox's uid cannot give a file away), and a
new, removed or renamed name sets its folder's ctime, which no one can set back. So each
hand-over remembers, per folder, its inode, ctime and subfolders; the next one looks at the
entries of a folder only when that key changed, and otherwise only opens its subfolders. A
folder whose ctime is not older than the clock when the walk began is not remembered (a change
in the same clock tick would keep the same ctime: git's "racy" entries), so it is looked at
again next time. Skipping can only leave a file that the host wrote root's (the command could
not write it): it never gives the sandbox anything more. :func:`hand_back` forgets it all.

(Started by anyone else, a sandbox leases nothing: it runs as that user, whom a user namespace
maps it onto.)
"""

from __future__ import annotations

import errno
import fcntl
import grp
import os
import pwd
import stat
import threading
import weakref
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import NamedTuple

from sandbox.base import SandboxError
from sandbox.clock import kernel_clock_ns, settled
from sandbox.fs import descend

IDS_ENV = "LABCOAT_SANDBOX_IDS"
LOCKS_ENV = "LABCOAT_ID_LOCKS"
DEFAULT_BASE, DEFAULT_COUNT = 0x6C630000, 0x10000  # "lc" in the high half: far above any account
DEFAULT_LOCKS = "/run/labcoat/ids"  # a tmpfs: emptied at boot, when no lease can be live
_O_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class HostIds:
    """A leased host uid and gid, held until :meth:`release` (or until this object goes)."""

    def __init__(self, uid: int, gid: int, fd: int) -> None:
        self.uid, self.gid = uid, gid
        self._release = weakref.finalize(self, os.close, fd)  # closing the lock file frees it

    def release(self) -> None:
        """Free the ids for the next sandbox (idempotent); call once nothing runs as them."""
        self._release()

    def __enter__(self) -> HostIds:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    def __repr__(self) -> str:
        return f"HostIds(uid={self.uid}, gid={self.gid})"


def id_range() -> range:
    """The host ids sandboxes started by root may lease (``$LABCOAT_SANDBOX_IDS``, else the
    default block)."""
    text = os.environ.get(IDS_ENV, "").strip()
    if not text:
        return range(DEFAULT_BASE, DEFAULT_BASE + DEFAULT_COUNT)
    base, _, count = text.partition(":")
    try:
        first, n = int(base, 0), int(count, 0) if count else DEFAULT_COUNT
    except ValueError:
        first, n = 0, 0
    if first < 1 or n < 1 or first + n > 0xFFFFFFFF:  # (uid_t)-1 means "no change" to chown
        raise SandboxError(f"${IDS_ENV}={text!r}: want BASE[:COUNT], ids from 1 to 2^32-2")
    return range(first, first + n)


def _subordinate(path: str) -> list[range]:
    """The subordinate id ranges ``/etc/subuid`` or ``/etc/subgid`` hands out."""
    ranges = []
    try:
        lines = Path(path).read_text().splitlines()
    except OSError:
        return ranges
    for line in lines:
        parts = line.strip().split(":")
        if len(parts) == 3 and parts[1].isdigit() and parts[2].isdigit():
            ranges.append(range(int(parts[1]), int(parts[1]) + int(parts[2])))
    return ranges


def _named(i: int, subordinate: list[range]) -> bool:
    """Whether an account or group (through NSS, so /etc/passwd, /etc/group and any directory)
    or a subordinate range already names ``i`` as a uid or gid."""
    for lookup in (pwd.getpwuid, grp.getgrgid):
        try:
            lookup(i)
            return True
        except KeyError:
            pass
    return any(i in r for r in subordinate)


def _lock_folder() -> int:
    """The root-only folder of lock files, made if missing and checked (a descriptor)."""
    path = Path(os.environ.get(LOCKS_ENV) or DEFAULT_LOCKS)
    try:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as err:
        raise SandboxError(f"cannot use {path} for sandbox id leases (${LOCKS_ENV} names "
                           f"another folder): {err}") from err
    st = os.fstat(fd)
    if st.st_uid != os.geteuid() or st.st_mode & 0o077:
        os.close(fd)
        raise SandboxError(f"{path} must be a folder only its owner ({os.geteuid()}) can use "
                           "(mode 0700): anyone else could hold or steal sandbox id leases")
    return fd


def lease_host_ids() -> HostIds:
    """The first free id of the range that nothing names, leased until released."""
    folder = _lock_folder()
    subordinate = _subordinate("/etc/subuid") + _subordinate("/etc/subgid")
    try:
        for i in id_range():
            if _named(i, subordinate):
                continue
            fd = os.open(str(i), os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600,
                         dir_fd=folder)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as err:
                os.close(fd)
                if err.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
                    continue  # another live sandbox's
                raise
            return HostIds(i, i, fd)
    finally:
        os.close(folder)
    raise SandboxError(f"no free sandbox host id in {id_range()} (every one is leased or named; "
                       f"${IDS_ENV} sets the range)")


Needs = Callable[[os.stat_result], bool]


def chown_tree(roots: Iterable[Path], needs: Needs, uid: int, gid: int) -> None:
    """``lchown`` every entry under each root for which ``needs(lstat)`` holds."""
    for root in roots:
        try:
            fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError:
            continue
        try:
            if needs(os.fstat(fd)):
                os.fchown(fd, uid, gid)
            _walk(fd, needs, uid, gid)
        finally:
            os.close(fd)


def _walk(top: int, needs: Needs, uid: int, gid: int) -> None:
    for found in descend(top):
        try:
            if needs(found.st):
                os.chown(found.name, uid, gid, dir_fd=found.dfd, follow_symlinks=False)
        except OSError:
            continue


class _Folder(NamedTuple):
    """What a hand-over saw of a folder whose entries all belonged to the sandbox's ids."""

    ino: int
    ctime_ns: int
    subfolders: tuple[str, ...]


# (root, its dev and inode, uid, gid) -> folder (relative path) -> what the last hand-over saw
_handed: dict[tuple[str, int, int, int, int], dict[str, _Folder]] = {}
_handed_lock = threading.Lock()


def hand_over(roots: Iterable[Path], uid: int, gid: int) -> None:
    """Give the writable folders to the sandbox's leased ids (root keeps every right over
    them): every entry whose owner is not those ids, looking only at the folders whose
    entries changed since the last hand-over (module doc)."""
    def needs(st: os.stat_result) -> bool:
        return (st.st_uid, st.st_gid) != (uid, gid)

    for root in roots:
        try:
            fd = os.open(root, _O_DIR)
        except OSError:
            continue
        try:
            st = os.fstat(fd)
            key = (str(root), st.st_dev, st.st_ino, uid, gid)
            with _handed_lock:
                seen = _handed.pop(key, {})
            now = _hand_over_walk(fd, needs, uid, gid, seen)
            with _handed_lock:
                _handed[key] = now
        finally:
            os.close(fd)


def _hand_over_walk(top: int, needs: Needs, uid: int, gid: int,
                    seen: dict[str, _Folder]) -> dict[str, _Folder]:
    """:func:`_walk` from ``top`` (itself included), skipping the entries of every folder
    ``seen`` unchanged (only its subfolders are looked at); what it saw of each folder, for the
    next time."""
    since = kernel_clock_ns()  # read before any folder is: later changes stamp later ctimes
    now: dict[str, _Folder] = {}
    keys: dict[str, tuple[int, int]] = {}  # folder -> (inode, ctime) as this walk found it
    subfolders: dict[str, list[str]] = {}

    def names(dfd: int, rel: str) -> list[str]:
        st = os.fstat(dfd)
        if needs(st):  # the folder itself, on the descriptor the walk holds
            os.fchown(dfd, uid, gid)
            st = os.fstat(dfd)
        before = seen.get(rel)
        if before is not None and (before.ino, before.ctime_ns) == (st.st_ino, st.st_ctime_ns):
            now[rel] = before  # nothing new, removed or renamed here since: its subfolders only
            return list(before.subfolders)
        keys[rel], subfolders[rel] = (st.st_ino, st.st_ctime_ns), []
        return os.listdir(dfd)

    def left(rel: str) -> None:
        key = keys.pop(rel, None)
        found = tuple(subfolders.pop(rel, ()))
        if key is not None and settled(key[1], since):  # else a change in this tick could keep this ctime
            now[rel] = _Folder(key[0], key[1], found)

    for found in descend(top, names=names, left=left):
        parent = found.rel.rpartition("/")[0]
        if stat.S_ISDIR(found.st.st_mode):  # handed over as itself when the walk opens it
            if parent in subfolders:
                subfolders[parent].append(found.name)
            continue
        if parent in subfolders and needs(found.st):  # a folder seen unchanged lists dirs only
            try:
                os.chown(found.name, uid, gid, dir_fd=found.dfd, follow_symlinks=False)
            except OSError:
                continue
    return now


def hand_back(roots: Iterable[Path], uid: int) -> None:
    """After the sandbox, what its uid owns there is root's again (before the lease ends:
    the next sandbox to lease that uid must find nothing of this one's)."""
    with _handed_lock:
        for key in [k for k in _handed if k[3] == uid]:
            del _handed[key]
    chown_tree(roots, lambda st: st.st_uid == uid, 0, 0)
