"""Who owns a workspace while a sandbox started by root runs commands in it.

A sandbox started by root runs its commands as an unprivileged host uid (``nobody``), never as
root and never as a user-namespace uid mapped onto root. Those commands must be able to write
the workspace, so before each command what is in it is handed to that uid, and when the
sandbox closes it is handed back to root. The walk holds directory descriptors and never
follows a link, so a link a command left behind cannot redirect a chown outside the
workspace; it is iterative, so a deep tree cannot exhaust the host's stack.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterable
from pathlib import Path

SANDBOX_UID = SANDBOX_GID = 65534  # nobody / nogroup

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
    stack = [os.dup(top)]
    try:
        while stack:
            dfd = stack.pop()
            try:
                names = os.listdir(dfd)
            except OSError:
                os.close(dfd)
                continue
            for name in names:
                try:
                    st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
                    if needs(st):
                        os.chown(name, uid, gid, dir_fd=dfd, follow_symlinks=False)
                    if stat.S_ISDIR(st.st_mode):
                        stack.append(os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
                                             | os.O_CLOEXEC, dir_fd=dfd))
                except OSError:
                    continue
            os.close(dfd)
    finally:
        for dfd in stack:
            os.close(dfd)


def hand_over(roots: Iterable[Path], uid: int = SANDBOX_UID, gid: int = SANDBOX_GID) -> None:
    """Give the writable folders to the sandbox's user (root keeps every right over them)."""
    chown_tree(roots, lambda st: (st.st_uid, st.st_gid) != (uid, gid), uid, gid)


def hand_back(roots: Iterable[Path], uid: int = SANDBOX_UID) -> None:
    """After the sandbox, what its user owns there is root's again."""
    chown_tree(roots, lambda st: st.st_uid == uid, 0, 0)
