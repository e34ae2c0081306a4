"""A real size and file-count cap on a workspace while a sandbox lives: an ext4 image over it.

RLIMIT_FSIZE caps one file, and snapshots count the total only after a command; neither stops
one command from filling the host's disk with many files under the cap, or its inode table
with empty ones. So, when labcoat runs as root and loop devices work, a sandbox's workspace is
a sparse ext4 image (no journal, no reserved blocks, inode tables initialised lazily: ~10 ms
to make, ~10 ms to mount) loop-mounted over the workspace path for the sandbox's lifetime. Its
size is what the workspace held when the sandbox opened plus ``disk_mb``, its inode count
what it held plus ``max_files``; past either the kernel refuses the write (ENOSPC) inside the
command. Both backends bind the workspace path, so bubblewrap and the container see the image;
the host's own reads between commands (snapshots, scoring) see it through the mount too.

* **In and out.** A descriptor of the workspace directory is opened before the mount; it keeps
  reaching the underlying directory. The current content is copied into the image, and at
  close the image's content is copied back over the underlying directory through that
  descriptor (a file whose size, mtime and bytes match is not written again), then
  the image is unmounted and deleted. Copies
  never follow a link (descriptor-relative, ``O_NOFOLLOW``), keep holes (a sparse file stays
  sparse) and hard links (a file linked many times is copied once), so nothing a command left
  can redirect a copy or make it larger than the image.
* **A killed owner.** Images are named ``labcoat-quota-<pid>-<start time>-<random>.img`` (the
  way :mod:`sandbox.cgroups` names groups); every labcoat start (any command:
  :func:`recover_at_start`, which only reads ``/proc/self/mountinfo`` unless a dead owner's
  image is mounted) and the next quota opened in any labcoat process find the mounts whose
  owner is gone, copy them back, unmount and delete them (an image still being copied into,
  ``.part``, or already copied back, ``.done``, is only dropped). So a run killed with SIGKILL
  (the OOM killer, a closed terminal) leaves its run folder removable after the next command.
* **Elsewhere** (not root, no loop devices, e.g. inside a container) there is no quota: the
  backends say so in ``isolation()``/``describe()`` and once in the log.
"""

from __future__ import annotations

import atexit
import ctypes
import errno
import fcntl
import logging
import os
import re
import shutil
import stat
import subprocess
import tempfile
import threading
import uuid
from functools import lru_cache
from pathlib import Path

from sandbox.cgroups import owner_start_time
from sandbox.fs import MAX_DEPTH, descend, remove_at

log = logging.getLogger(__name__)

IMAGE_DIR = Path(os.environ.get("LABCOAT_QUOTA_DIR") or "/var/lib/labcoat/quota")
"""Root's own (no world-writable folder above it, where another user could plant it first).
An image takes as much of its filesystem as the workspace holds: ``$LABCOAT_QUOTA_DIR`` moves
them to the runs' disk where ``/var/lib`` is small."""
# ``.part`` while the content is copied in, ``.done`` once it is copied back: a crash then
# leaves the directory underneath whole, and the recovery copies only a plain ``.img`` back.
IMAGE_NAME = re.compile(r"labcoat-quota-(\d+)-(\d+)-[0-9a-f]+\.img(\.part|\.done)?")
ENFORCED = "enforced (ext4 image)"
INODE_BYTES = 256  # mkfs.ext4's inode size: the image holds the inode table on top of the data
# An entry's share of the image besides its blocks (directory entries, extent blocks).
_DIR_BLOCK = 4096
_O_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_MKFS = ("-q", "-F", "-b", "4096", "-m", "0", "-O", "^has_journal,^resize_inode",
         "-E", "lazy_itable_init=1,nodiscard")
_MOUNT_OPTS = "loop,nosuid,nodev,noatime"
_MNT_DETACH = 2
_libc = ctypes.CDLL(None, use_errno=True)

_lock = threading.Lock()
_live: dict[str, WorkspaceQuota] = {}
_warned = False


class QuotaError(OSError):
    """The quota could not be set up or torn down (the workspace is left as it was)."""


def _tool(name: str) -> str | None:
    """Where a system tool is: the sbin folders count even when ``PATH`` leaves them out."""
    for folder in ("/usr/sbin", "/sbin", "/usr/bin", "/bin"):
        if os.access(f"{folder}/{name}", os.X_OK):
            return f"{folder}/{name}"
    return shutil.which(name)


@lru_cache(maxsize=1)
def unavailable() -> str | None:
    """Why no workspace quota can be made here (None when it can): tried once, for real."""
    if os.geteuid() != 0:
        return "labcoat is not running as root (loop mounts need root)"
    if not os.path.exists("/dev/loop-control"):
        return "no loop devices here (/dev/loop-control is missing; inside a container?)"
    missing = [t for t in ("mkfs.ext4", "mount", "umount") if not _tool(t)]
    if missing:
        return f"{', '.join(missing)} not installed"
    try:
        with tempfile.TemporaryDirectory(prefix="labcoat-quota-probe-") as tmp:
            image = Path(tmp) / "probe.img"
            _make_image(image, 1 << 20, 64)
            target = Path(tmp) / "mnt"
            target.mkdir()
            _mount(image, target)
            root = os.open(target, _O_DIR)
            try:
                _unmount(root)
            finally:
                os.close(root)
    except (OSError, subprocess.SubprocessError) as err:
        return f"cannot loop-mount an ext4 image here: {str(err).strip()[:200]}"
    return None


def status() -> str:
    """``enforced (ext4 image)`` or ``not enforced: <why>``, for reports."""
    why = unavailable()
    return ENFORCED if why is None else f"not enforced: {why}"


def open_quota(workspace: Path, disk_mb: int, max_files: int) -> WorkspaceQuota | None:
    """The quota over ``workspace`` (one per path per process: sandboxes over the same path
    share it), or None where quotas cannot be made here (said once in the log)."""
    global _warned
    why = unavailable()
    if why is not None:
        if not _warned:
            _warned = True
            log.warning("workspace disk quota not enforced: %s; a command can fill the host's "
                        "disk up to each file's cap (snapshots still refuse a workspace over "
                        "disk_mb)", why)
        return None
    key = str(workspace)
    with _lock:
        recover_stale()
        quota = _live.get(key)
        if quota is None:
            other = _quota_image_at(key)
            if other is not None:  # another live labcoat process's sandbox: see _drop_mount
                raise QuotaError(f"{workspace} is in use by the sandbox of another labcoat "
                                 f"process (pid {other.name.split('-')[2]}); close that first")
            quota = _live[key] = WorkspaceQuota(workspace, disk_mb, max_files)
        quota.users += 1
        return quota


@atexit.register
def _release_at_exit() -> None:
    """A sandbox never closed still gets its content copied back when the process exits
    normally (after SIGKILL, the next quota opened anywhere recovers it)."""
    for quota in list(_live.values()):
        quota.users = 1
        try:
            quota.release()
        except Exception as err:  # at exit: say so, and let the next start recover it
            log.error("could not release the quota over %s: %s", quota.workspace, err)


def open_quotas(roots: list[Path], disk_mb: int, max_files: int) -> list[WorkspaceQuota]:
    """A quota over each writable root (none where quotas cannot be made here); a failure
    releases those already made and raises :class:`QuotaError`."""
    quotas: list[WorkspaceQuota] = []
    try:
        for root in roots:
            quota = open_quota(Path(root), disk_mb, max_files)
            if quota is not None:
                quotas.append(quota)
    except BaseException:
        release_all(quotas)
        raise
    return quotas


def open_for_sandbox(roots: list[Path], disk_mb: int, max_files: int, ids) -> list[WorkspaceQuota]:
    """:func:`open_quotas` as a backend opens a sandbox: a failure is the sandbox's
    (``SandboxError``), and the host ids it leased (``ids``, if any) go back at once."""
    from sandbox.base import SandboxError

    try:
        return open_quotas(roots, disk_mb, max_files)
    except QuotaError as err:
        if ids is not None:
            ids.release()
        raise SandboxError(str(err)) from err


def release_all(quotas: list[WorkspaceQuota]) -> None:
    """Release every quota (each copies back when its last user goes); empties the list."""
    while quotas:
        quotas.pop().release()


def full_note(quotas: list[WorkspaceQuota]) -> str:
    """What to add to a command's stderr when it filled a quota ('' almost always)."""
    return "".join(q.full_note() for q in quotas)


def describe(quotas: list[WorkspaceQuota]) -> str:
    """An open sandbox's quota, for ``describe()``."""
    return ENFORCED if quotas else status()


class WorkspaceQuota:
    """An ext4 image mounted over one workspace until :meth:`release` by its last user."""

    def __init__(self, workspace: Path, disk_mb: int, max_files: int) -> None:
        self.workspace = workspace
        self.disk_mb, self.max_files = disk_mb, max_files
        self.users = 0
        _image_dir()
        pid = os.getpid()
        name = f"labcoat-quota-{pid}-{owner_start_time(pid)}-{uuid.uuid4().hex[:8]}.img"
        self.image = IMAGE_DIR / f"{name}.part"
        self.under = os.open(workspace, _O_DIR)  # keeps reaching the directory under the mount
        self.top: int | None = None
        try:
            blocks, entries = _usage(self.under)
            _make_image(self.image, blocks + (disk_mb << 20), entries + max_files)
            _mount(self.image, workspace)
            try:
                top = os.open(workspace, _O_DIR)
                if os.fstat(top).st_dev == os.fstat(self.under).st_dev:
                    os.close(top)
                    raise OSError(errno.EIO, f"the image did not mount over {workspace}")
                self.top = top
                os.rmdir("lost+found", dir_fd=self.top)
                copy_tree(self.under, self.top)
                self.image = self.image.rename(IMAGE_DIR / name)  # now it holds the workspace
            except BaseException:
                self._drop_mount()
                raise
        except BaseException as err:
            os.close(self.under)
            self.image.unlink(missing_ok=True)
            if isinstance(err, (OSError, subprocess.SubprocessError)):
                raise QuotaError(f"cannot put a quota on {workspace}: {err}") from err
            raise

    def full_note(self) -> str:
        """A line for the command's stderr when the workspace is (nearly) full, else ''."""
        if self.top is None:
            return ""
        try:
            st = os.fstatvfs(self.top)
        except OSError:
            return ""
        if st.f_bavail * st.f_frsize >= 1 << 20 and st.f_favail > 0:
            return ""
        return (f"\nlabcoat: the workspace is full: it may grow by {self.disk_mb} MB / "
                f"{self.max_files} files beyond what it held when the sandbox opened ([limits] "
                "disk_mb / max_files), and writes past that fail with 'No space left on device'. "
                "Delete files to go on.\n")

    def release(self) -> None:
        """One user fewer; the last copies the content back, unmounts and deletes the image."""
        with _lock:
            self.users -= 1
            if self.users > 0 or self.top is None:
                return
            _live.pop(str(self.workspace), None)
            try:
                copy_tree(self.top, self.under, prune=True)
            except OSError as err:  # keep the image: the next start recovers it
                log.error("could not copy the workspace %s back from its quota image %s (%s); "
                          "it stays mounted and a later labcoat start recovers it",
                          self.workspace, self.image, err)
                return
            self.image = self.image.rename(self.image.with_name(self.image.name + ".done"))
            try:
                _drop_data(self.top)
                self._drop_mount()
            except OSError as err:  # copied back already: a mount left over is only untidy
                log.error("could not unmount the quota image over %s: %s", self.workspace, err)
            os.close(self.under)
            self.image.unlink(missing_ok=True)

    def _drop_mount(self) -> None:
        """Unmount this image. Only while it is the top mount at the path: a mount over it
        would go with it, and one cannot be taken from under another. (So a second labcoat
        process never mounts a quota over a live one's: :func:`open_quota` refuses.)"""
        if self.top is None:
            return
        try:
            if os.stat(self.workspace).st_dev != os.fstat(self.top).st_dev:
                raise OSError(errno.EBUSY, f"something else is mounted over {self.workspace}")
            _unmount(self.top)
        finally:
            os.close(self.top)
            self.top = None


# ------------------------------------------------------------------ images and mounts

def _image_dir() -> Path:
    """``IMAGE_DIR``, made if missing; refused unless it is root's alone."""
    IMAGE_DIR.mkdir(mode=0o700, parents=True, exist_ok=True)
    st = os.lstat(IMAGE_DIR)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != 0 or st.st_mode & 0o077:
        raise QuotaError(f"{IMAGE_DIR} must be a folder that only root can use")
    return IMAGE_DIR


def _make_image(image: Path, data_bytes: int, inodes: int) -> None:
    """A sparse ext4 image with room for ``data_bytes`` of blocks and ``inodes`` entries."""
    inodes += 16  # ext4's reserved inodes and the root
    size = data_bytes + inodes * INODE_BYTES + (2 << 20) + data_bytes // 256  # + group metadata
    size = -(-size // 4096) * 4096
    with open(image, "xb") as f:
        os.fchmod(f.fileno(), 0o600)
        f.truncate(size)
    _run([_tool("mkfs.ext4") or "mkfs.ext4", *_MKFS, "-N", str(inodes), str(image)])


def _mount(image: Path, target: Path) -> None:
    _run([_tool("mount") or "mount", "-t", "ext4", "-o", _MOUNT_OPTS, str(image), str(target)])


def _unmount(root: int, lazy: bool = False) -> None:
    """Unmount the filesystem whose root ``root`` is a descriptor of (lazily when asked, or
    when still busy: a container winding down), by ``/proc/self/fd/N``: no path string is
    parsed again. The walk still ends on the top mount there, so callers check that it is
    theirs first."""
    path = f"/proc/self/fd/{root}".encode()
    for flags in ((_MNT_DETACH,) if lazy else (0, _MNT_DETACH)):
        if _libc.umount2(path, flags) == 0:
            return
        err = ctypes.get_errno()
        if err != errno.EBUSY:
            break
    raise OSError(err, f"cannot unmount: {os.strerror(err)}")


def _run(argv: list[str]) -> None:
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    if done.returncode != 0:
        raise OSError(errno.EIO, f"{Path(argv[0]).name} failed: {done.stderr.strip()[:300]}")


def _usage(top: int) -> tuple[int, int]:
    """(bytes of blocks, entries) under a directory descriptor."""
    blocks, entries = 0, 0
    for found in descend(top):
        st = found.st
        entries += 1  # a file another filesystem keeps inline takes a block in ext4
        blocks += max(st.st_blocks * 512, 4096 if st.st_size else 0)
        blocks += _DIR_BLOCK if stat.S_ISDIR(st.st_mode) else 0
    return blocks, entries


def _drop_data(top: int) -> None:
    """Empty the image's large files once they are copied back: their pages then need not be
    written to the image (which is deleted) when it is unmounted: ~10x faster for big files."""
    for found in descend(top):
        if stat.S_ISREG(found.st.st_mode) and found.st.st_blocks * 512 >= 1 << 20:
            try:
                fd = os.open(found.name, os.O_WRONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=found.dfd)
            except OSError:
                continue
            try:
                os.ftruncate(fd, 0)
            finally:
                os.close(fd)


# ------------------------------------------------------------------ copying, by descriptor

def copy_tree(src: int, dst: int, *, prune: bool = False) -> None:
    """Make the directory ``dst`` hold what ``src`` holds (both descriptors), walked by
    :func:`sandbox.fs.descend`.

    Regular files (holes kept), directories, symlinks (as links) and FIFOs are copied with
    their mode, owner and times; hard links stay links; sockets and devices are left out; a
    folder ``MAX_DEPTH`` deep (where every walk of a workspace stops) is made but left empty,
    so what reads the copy finds the tree too deep rather than silently cut short.
    With ``prune``, what ``dst`` holds that ``src`` does not is removed, and a regular file
    whose size, mtime and bytes already match is not copied again. Nothing but this copy may
    write ``dst`` meanwhile (a hard link is made by its path under ``dst``).
    """
    _copy_meta(os.fstat(src), dst, None)
    linked: dict[tuple[int, int], str] = {}  # (dev, ino) -> its first copy's path under dst
    # per folder entered (relative path): its destination's descriptor, and with ``prune``
    # the names the destination held that the source has not shown yet
    dsts: dict[str, int] = {}
    present: dict[str, set[str]] = {}

    def names(sfd: int, rel: str) -> list[str]:
        if rel:
            parent, _, leaf = rel.rpartition("/")
            dsts[rel] = os.open(leaf, _O_DIR, dir_fd=dsts[parent])
            _copy_meta(os.fstat(sfd), dsts[rel], None)
        else:
            dsts[rel] = os.dup(dst)
        present[rel] = set(os.listdir(dsts[rel])) if prune else set()
        return os.listdir(sfd)

    def left(rel: str) -> None:
        dfd, gone = dsts.pop(rel, None), present.pop(rel, set())
        if dfd is None:  # its destination could not be opened: nothing was copied into it
            return
        try:
            for name in gone:  # this folder is done: drop what the source lacks
                remove_at(dfd, name)
        finally:
            os.close(dfd)

    try:
        for found in descend(src, names=names, left=left):
            parent = found.rel.rpartition("/")[0]
            if stat.S_ISDIR(found.st.st_mode) and not found.enter:  # made, empty: every walk of
                log.warning("copied empty: %s is more than %d folders deep", found.rel, MAX_DEPTH)
            present[parent].discard(found.name)  # the copy then sees it too deep, and says so
            _copy_entry(found.dfd, dsts[parent], found.name, found.rel, found.st, prune, linked, dst)
    finally:
        for dfd in dsts.values():
            os.close(dfd)


def _copy_entry(sfd: int, dfd: int, name: str, rel: str, st: os.stat_result, prune: bool,
                linked: dict[tuple[int, int], str], root: int) -> None:
    """Copy one entry (a directory: made, or kept; its meta and entries when the walk enters it)."""
    mode = st.st_mode
    try:
        old = os.stat(name, dir_fd=dfd, follow_symlinks=False)
    except FileNotFoundError:
        old = None
    if stat.S_ISDIR(mode):
        if old is not None and not stat.S_ISDIR(old.st_mode):
            remove_at(dfd, name)
            old = None
        if old is None:
            os.mkdir(name, 0o700, dir_fd=dfd)
        return
    if stat.S_ISREG(mode):
        key = (st.st_dev, st.st_ino)
        if st.st_nlink > 1 and key in linked:
            if old is not None:
                remove_at(dfd, name)
            os.link(linked[key], name, src_dir_fd=root, dst_dir_fd=dfd, follow_symlinks=False)
            return
        if st.st_nlink > 1:
            linked[key] = rel
        elif (prune and old is not None and stat.S_ISREG(old.st_mode) and old.st_nlink == 1
              and old.st_size == st.st_size and old.st_mtime_ns == st.st_mtime_ns
              and _same_bytes(sfd, dfd, name)):
            _copy_meta(st, None, (dfd, name))
            return
        if old is not None:
            remove_at(dfd, name)
        _copy_file(sfd, dfd, name, st)
        return
    if old is not None:
        remove_at(dfd, name)
    if stat.S_ISLNK(mode):
        os.symlink(os.readlink(name, dir_fd=sfd), name, dir_fd=dfd)
    elif stat.S_ISFIFO(mode):
        os.mkfifo(name, 0o600, dir_fd=dfd)
    else:  # sockets, devices: nothing a workspace needs, nothing to copy
        return
    _copy_meta(st, None, (dfd, name))


def _copy_file(sfd: int, dfd: int, name: str, st: os.stat_result) -> None:
    src = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=sfd)
    try:
        dst = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                      0o600, dir_fd=dfd)
        try:
            _copy_data(src, dst, os.fstat(src).st_size)
            _copy_meta(st, dst, None)
        finally:
            os.close(dst)
    finally:
        os.close(src)


def _same_bytes(sfd: int, dfd: int, name: str) -> bool:
    """Whether ``name`` holds the same bytes on both sides. Size and mtime alone (rsync's quick
    check) prove nothing here: a command can rewrite a file in place and set its mtime back,
    and the ctime that would tell is the image's own, bumped anyway by the hand-over's chown.
    So a copy back reads what it skips (no write: cheaper than copying, and the host's inode,
    links and blocks stay as they were)."""
    a = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=sfd)
    try:
        b = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dfd)
        try:
            while True:
                chunk = os.read(a, 1 << 20)
                if chunk != os.read(b, len(chunk) or 1):
                    return False
                if not chunk:
                    return True
        finally:
            os.close(b)
    finally:
        os.close(a)


def _copy_data(src: int, dst: int, size: int) -> None:
    """Copy the data extents only: a hole stays a hole (a sparse file stays small)."""
    pos = 0
    while pos < size:
        try:
            start = os.lseek(src, pos, os.SEEK_DATA)
            end = os.lseek(src, start, os.SEEK_HOLE)
        except OSError as err:
            if err.errno == errno.ENXIO:  # only a hole is left
                break
            start, end = pos, size  # no SEEK_DATA here: copy the rest whole
        os.lseek(dst, start, os.SEEK_SET)
        offset = start
        while offset < end:
            sent = os.sendfile(dst, src, offset, min(end - offset, 1 << 30))
            if sent == 0:
                break
            offset += sent
        pos = end
    os.ftruncate(dst, size)


def _copy_meta(st: os.stat_result, fd: int | None, at: tuple[int, str] | None) -> None:
    """Owner, permissions (no set-id bits) and times of ``st`` onto a descriptor or a name."""
    mode = stat.S_IMODE(st.st_mode) & ~(stat.S_ISUID | stat.S_ISGID)
    if fd is not None:
        os.fchown(fd, st.st_uid, st.st_gid)
        os.fchmod(fd, mode)
        os.utime(fd, ns=(st.st_atime_ns, st.st_mtime_ns))
        return
    dfd, name = at
    os.chown(name, st.st_uid, st.st_gid, dir_fd=dfd, follow_symlinks=False)
    if not stat.S_ISLNK(st.st_mode):
        os.chmod(name, mode, dir_fd=dfd)
    os.utime(name, ns=(st.st_atime_ns, st.st_mtime_ns), dir_fd=dfd, follow_symlinks=False)


# ------------------------------------------------------------------ owners killed with SIGKILL

def _mounts() -> list[tuple[str, str, str]]:
    """(mount point, device major:minor, source) of every mount, bottom first."""
    out = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        fields = line.split()
        sep = fields.index("-")
        point = re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), fields[4])
        out.append((point, fields[2], fields[sep + 2]))
    return out


def _backing_file(source: str) -> str:
    try:
        return Path(f"/sys/block/{Path(source).name}/loop/backing_file").read_text().strip()
    except OSError:
        return ""


def _quota_image_at(point: str) -> Path | None:
    """The quota image mounted on top at ``point``, if the top mount there is one."""
    for where, _, source in reversed(_mounts()):
        if where == point:
            image = Path(_backing_file(source).removesuffix(" (deleted)"))
            return image if source.startswith("/dev/loop") and image.parent == IMAGE_DIR else None
    return None


def _on_top(point: str, device: str) -> bool:
    try:
        st = os.stat(point, follow_symlinks=False)
    except OSError:
        return False
    return f"{os.major(st.st_dev)}:{os.minor(st.st_dev)}" == device


def _owner_gone(name: str) -> bool:
    m = IMAGE_NAME.fullmatch(name)
    return bool(m) and owner_start_time(int(m.group(1))) != m.group(2)


#: what :func:`recover_at_start` recovered in this process (``labcoat sandbox check`` says it)
recovered_at_start: list[str] = []


def stale_mounts() -> list[str]:
    """The mount points of quota images whose owner is gone: cheap (one read of
    ``/proc/self/mountinfo``; a loop device's backing file only where one is mounted)."""
    try:
        mounts = _mounts()
    except (OSError, ValueError, IndexError):
        return []
    found = []
    for point, _, source in mounts:
        if not source.startswith("/dev/loop"):
            continue
        image = Path(_backing_file(source).removesuffix(" (deleted)"))
        if image.parent == IMAGE_DIR and _owner_gone(image.name):
            found.append(point)
    return found


def recover_at_start() -> list[str]:
    """At every labcoat start: recover the workspaces a killed labcoat process left mounted
    (:func:`recover_stale`), so a run folder never stays busy until the next sandbox opens.
    Nothing but a read of the mount table when none is left (or when not root, which cannot
    unmount); never raises (a start must not fail on it: the next quota opened tries again)."""
    if os.geteuid() != 0 or not stale_mounts():
        return []
    try:
        with _lock:
            found = recover_stale(say=False)
    except OSError as err:
        log.error("could not recover the workspaces left mounted by a killed labcoat: %s", err)
        return []
    recovered_at_start.extend(found)
    return found


def recovery_line() -> str:
    """What ``labcoat sandbox check`` says of the mounts killed runs leave behind."""
    if os.geteuid() != 0:
        return "quota mounts left by killed runs: none possible (no quotas without root)"
    done = (f"this start recovered {len(recovered_at_start)}, named above"
            if recovered_at_start else "none found at this start")
    left = stale_mounts()
    still = f"; {len(left)} NOT recovered: {', '.join(left)}" if left else ""
    return ("quota mounts left by killed runs: unmounted and copied back at every labcoat "
            f"start ({done}{still})")


def recover_stale(say: bool = True) -> list[str]:
    """Copy back, unmount and delete the quota images of labcoat processes that are gone (a
    host killed with SIGKILL runs no ``close``); the workspaces recovered (``say``: logged
    too; the CLI's start says it in its own words)."""
    recovered: list[str] = []
    try:
        _image_dir()
    except OSError:  # never trust images in a folder someone else could write
        return recovered
    with open(IMAGE_DIR / ".lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        mounted: set[Path] = set()
        for point, device, source in reversed(_mounts()):
            backing = _backing_file(source) if source.startswith("/dev/loop") else ""
            image = Path(backing.removesuffix(" (deleted)"))
            if image.parent != IMAGE_DIR or not _owner_gone(image.name):
                continue
            mounted.add(image)
            if not _on_top(point, device):  # something else is mounted over it: leave both
                log.error("stale quota image %s is under another mount at %s", image, point)
                continue
            try:
                _recover(Path(point), image)
                recovered.append(point)
            except OSError as err:
                log.error("could not recover the quota'd workspace %s (%s): %s", point, image, err)
        for image in IMAGE_DIR.glob("labcoat-quota-*"):
            if image not in mounted and _owner_gone(image.name):  # unmounted since (a reboot)
                log.warning("deleting %s: its owner is gone and it is mounted nowhere (the "
                            "run's snapshots hold what its commands wrote)", image)
                image.unlink(missing_ok=True)
    if recovered and say:
        log.warning("recovered %d workspace(s) left mounted by a labcoat process that died: %s",
                    len(recovered), ", ".join(recovered))
    return recovered


def _recover(point: Path, image: Path) -> None:
    """Detach the image at ``point`` and copy it back over what is underneath, unless it died
    while its content was copied in or after it was copied back (underneath is whole then)."""
    top = os.open(point, _O_DIR)  # the image's root: stays reachable once detached
    try:
        _unmount(top, lazy=True)
        if image.suffix == ".img":
            under = os.open(point, _O_DIR)
            try:
                copy_tree(top, under, prune=True)
            finally:
                os.close(under)
    finally:
        os.close(top)
    image.unlink(missing_ok=True)
