"""The one path guard every file action goes through.

An actor names files by workspace-relative paths. Absolute paths and ``..`` are refused here,
and read-only files can be read but never written, copied over, or deleted. The I/O itself is
:class:`~sandbox.fs.WorkspaceFS` (``guard.fs``): by descriptor, never following a
symlink, so nothing resolved here can be swapped before it is opened.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path, PurePosixPath

from sandbox.fs import WorkspaceError, WorkspaceFS, display_name, is_utf8


class PathRefused(WorkspaceError):
    """A path an actor may not use; the message is shown to the actor as is."""


class PathGuard:
    def __init__(self, root: Path, is_read_only: Callable[[str], bool]) -> None:
        self.root = Path(root)
        self.fs = WorkspaceFS(self.root)
        self._is_read_only = is_read_only

    def relative(self, name: str) -> str:
        """Normalise an actor's path to a clean workspace-relative POSIX path."""
        if not isinstance(name, str) or not name.strip():
            raise PathRefused("a path is required")
        raw = name.strip()
        if "\x00" in raw or not is_utf8(raw):
            raise PathRefused(f"{display_name(name)!r}: invalid character in path")
        p = PurePosixPath(raw)
        if p.is_absolute() or raw.startswith("~"):
            raise PathRefused(f"{name!r}: absolute paths are not allowed; use a path relative to the workspace")
        if ".." in p.parts:
            raise PathRefused(f"{name!r}: '..' is not allowed; paths must stay inside the workspace")
        rel = str(p)
        return "." if rel in ("", ".") else rel

    def writable(self, name: str) -> str:
        """The clean path for ``name`` if it may be written; refuses read-only files and the root.

        Links are never followed by the I/O, so the name itself is all that is checked: a link
        or hard link to a read-only file is replaced when written, never written through.
        """
        rel = self.relative(name)
        if rel == ".":
            raise PathRefused(f"{name!r}: cannot write the workspace folder itself")
        if self._is_read_only(rel):
            raise PathRefused(f"{name!r} is read-only for this task")
        return rel
