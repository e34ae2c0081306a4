"""Pass 1 of a large snapshot on every core the host gives labcoat.

An unchanged file costs one ``lstat``, and on a virtual machine that system call alone is
most of the 4-5 µs a file costs (a 100k-file workspace: ~0.4 s of ``lstat`` on one core).
Python threads do not help: each ``lstat`` gives up and takes back the GIL, and two threads
walking were slower than one. Processes do: the walk is split by the previous step's tree
into groups holding about as many files each (:func:`partition`), of whole subfolders and,
for a folder holding many files itself (a dataset's images side by side), of shares of its
listing by inode (every process reads the names, each stats its share). Each group but the
first is walked by a forked copy of this process, which sends back what it found (unchanged
folders as their old entry, changed ones and shares as their listing) through a pipe; the
first group is walked here meanwhile. The walk reads only (the store writes nothing in pass 1), so a child touches
nothing the parent relies on, and it runs while the sandbox runs nothing (as every snapshot).

A child that fails, dies or outlasts its deadline is killed and its folders are walked here
afterwards, as if it had never been started: a result comes from a child or from this
process, never from neither. Below :data:`MIN_FILES` files, or with one core, nothing is
forked (a fork of a large process costs a few milliseconds).
"""

from __future__ import annotations

import logging
import os
import pickle
import select
import signal
import time
import warnings
from collections.abc import Callable
from typing import Any, NamedTuple, TypeVar

MIN_FILES = 20_000  # a workspace smaller than this is walked by one process
MAX_PROCESSES = 4  # this one and three children
MAX_SPLITS = 64  # folders opened up to find groups (each is one tree object read)
GRACE_S = 10.0  # a child's deadline: this, plus 4x the time this process took for its own group

S = TypeVar("S")
log = logging.getLogger(__name__)


class Unit(NamedTuple):
    """What one process walks: subfolder ``rel`` whole (its entry in the previous step's tree,
    a ``Sub``, whose ``count`` is its files, and its depth below the workspace), or with
    ``share`` = ``(k, n)`` only folder ``rel``'s own entries whose inode is ``k`` modulo ``n``
    (a folder holding many files itself). ``files``: about how many files it stats."""

    rel: str
    sub: Any
    depth: int
    share: tuple[int, int] | None = None
    files: int = 0


def cores() -> int:
    """Cores this process may run on (its affinity, not the machine's count)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def partition(root: Any, subfolders: Callable[[Any], dict[str, Any]], parts: int) -> list[list[Unit]]:
    """Up to ``parts`` groups of :class:`Unit` with about equal file counts, from ``root`` (a
    ``Sub``) down.

    A subfolder holding more than a group's share is opened up: its subfolders become units,
    and its own files, when they alone are more than a share, ``parts`` shares of its listing
    (the root's own files likewise); at most :data:`MAX_SPLITS` folders are opened. The
    groups are then filled largest first into the lightest (LPT). What no unit covers (the
    own files of an opened folder, when few) is walked by the caller."""
    share = root.count / max(parts, 1)
    units: list[Unit] = []

    def open_up(rel: str, sub: Any, depth: int) -> None:
        inner = subfolders(sub)
        units.extend(Unit(f"{rel}/{name}" if rel else name, s, depth + 1, None, s.count)
                     for name, s in inner.items())
        own = sub.count - sum(s.count for s in inner.values())
        if parts > 1 and own > share:
            units.extend(Unit(rel, sub, depth, (k, parts), own // parts) for k in range(parts))

    open_up("", root, 0)
    for _ in range(MAX_SPLITS):
        whole = [u for u in units if u.share is None]
        big = max(whole, key=lambda u: u.files, default=None)
        if big is None or big.files <= share:
            break
        units.remove(big)
        open_up(big.rel, big.sub, big.depth)
    groups: list[list[Unit]] = [[] for _ in range(max(parts, 1))]
    loads = [0] * len(groups)
    for unit in sorted(units, key=lambda u: -u.files):
        lightest = loads.index(min(loads))
        groups[lightest].append(unit)
        loads[lightest] += unit.files + 1  # an empty folder still costs its listing
    return [g for g in groups if g]


def run_split(groups: list[list[Unit]], work: Callable[[list[Unit]], dict[Any, S]]) -> dict[Any, S]:
    """``work`` of every group, keyed as ``work`` keys them: the first group here, each other
    in a forked child. What a failed child should have given is missing from the result (the
    caller walks those folders itself)."""
    if len(groups) < 2:
        return work(groups[0]) if groups else {}
    children = []
    for group in groups[1:]:
        try:
            children.append(_start(group, work))
        except OSError:  # no fork here (a process limit): the caller walks the group itself
            continue
    started = time.monotonic()
    try:
        found = work(groups[0])
    except BaseException:
        for pid, fd in children:
            _end(pid, fd, kill=True)
        raise
    deadline = time.monotonic() + GRACE_S + 4 * (time.monotonic() - started)
    for pid, fd in children:
        data = _read_all(fd, deadline)
        try:
            if not _end(pid, fd, kill=data is None) or not data:
                raise ValueError("it failed or outlasted its deadline" if data else "it sent nothing")
            found.update(pickle.loads(data))
        except Exception as err:  # noqa: BLE001 - any: its folders are walked by the caller
            log.warning("a split walk's process %d gave no result (%s): its folders are walked here", pid, err)
    return found


def _start(group: list[Unit], work: Callable[[list[Unit]], dict[Any, S]]) -> tuple[int, int]:
    """Fork a child walking ``group``; its result comes pickled through the pipe it returns."""
    r, w = os.pipe()
    try:
        with warnings.catch_warnings():  # 3.12+ warns of fork with threads: the child takes no lock
            warnings.simplefilter("ignore", DeprecationWarning)
            pid = os.fork()
    except OSError:
        os.close(r)
        os.close(w)
        raise
    if pid == 0:  # the child: walk, send, and leave without running the parent's exit handlers
        try:
            # only its pipe: a descriptor of the parent's (another run's sandbox socket, a
            # command's output pipe) held here would keep its reader from seeing EOF
            os.closerange(3, w)
            os.closerange(w + 1, 1 << 30)
            data = memoryview(pickle.dumps(work(group), protocol=pickle.HIGHEST_PROTOCOL))
            while data:
                data = data[os.write(w, data):]
            code = 0
        except BaseException:  # noqa: BLE001 - any failure means "walk it in the parent"
            code = 1
        finally:
            os._exit(code)
    os.close(w)
    return pid, r


def _read_all(fd: int, deadline: float) -> bytes | None:
    """Everything the child writes until it closes the pipe, or ``None`` past ``deadline``."""
    chunks: list[bytes] = []
    while True:
        left = max(deadline - time.monotonic(), 0.0)  # past it: what is ready is still read
        if not select.select([fd], [], [], left)[0]:
            return None
        chunk = os.read(fd, 1 << 20)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


def _end(pid: int, fd: int, *, kill: bool) -> bool:
    """Close the pipe and reap the child (killed first when ``kill``); True when it exited 0."""
    os.close(fd)
    if kill:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    try:
        _, status = os.waitpid(pid, 0)
    except ChildProcessError:  # reaped by someone else's handler: the whole pipe is the proof
        return not kill
    return not kill and os.waitstatus_to_exitcode(status) == 0
