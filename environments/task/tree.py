"""The host's walk of a task folder, which is untrusted input (a folder someone handed over,
or what its ``prepare.py`` left in a prepared copy).

The host reads task files by path (``task.toml``, ``research_problem.txt``, ``eval.py``, the
read-only list, the content hash), so before anything is read the folder must hold only folders,
regular files and links that stay inside it: a FIFO would block the first read forever (labcoat,
or the TUI's task list, hung at load), a device or a link to ``/proc/kmsg`` would block or feed
it, and a link out would copy or hash a host file. The walk itself is iterative and never
follows a link, so a tree of any depth cannot exhaust the host's stack.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from sandbox.fs import (
    MAX_DEPTH,  # one depth for every walk of a folder a task or a sandbox wrote
)


class FolderError(ValueError):
    """What is wrong with the folder (``environments.task.spec`` makes it a ``TaskError``)."""


def tree(root: Path) -> list[tuple[str, os.stat_result]]:
    """Every entry under ``root``: its path relative to ``root`` and its ``lstat``. Iterative
    (a tree of any depth, which prepare.py may leave, cannot exhaust the host's stack), links
    never followed; :class:`FolderError` past ``MAX_DEPTH`` folders or for a folder that cannot
    be listed (a path past the system's length limit)."""
    found: list[tuple[str, os.stat_result]] = []
    stack = [("", 0)]
    while stack:
        rel, depth = stack.pop()
        try:
            with os.scandir(root / rel if rel else root) as it:
                entries = [(e.name, e.stat(follow_symlinks=False)) for e in it]
        except OSError as err:
            raise FolderError(f"{root / rel}: cannot be listed: {err.strerror or err}") from err
        for name, st in entries:
            child = f"{rel}/{name}" if rel else name
            found.append((child, st))
            if stat.S_ISDIR(st.st_mode):
                if depth + 1 >= MAX_DEPTH:
                    raise FolderError(f"{root / child}: more than {MAX_DEPTH} folders deep")
                stack.append((child, depth + 1))
    return found


def check_within(root: Path) -> None:
    """FolderError unless everything under ``root`` is a folder, a plain file, or a link that
    stays inside ``root`` (and no more than ``MAX_DEPTH`` folders deep)."""
    top = root.resolve()
    for rel, st in tree(root):
        path = root / rel
        if stat.S_ISLNK(st.st_mode):
            try:
                target = (path.parent / os.readlink(path)).resolve()
            except (OSError, RuntimeError) as err:  # a loop of links
                raise FolderError(f"{path}: a link that cannot be resolved ({err})") from err
            if target != top and top not in target.parents:
                raise FolderError(f"{path}: a link out of the task folder (to {target})")
        elif not (stat.S_ISDIR(st.st_mode) or stat.S_ISREG(st.st_mode)):
            raise FolderError(f"{path}: not a plain file or folder")
