"""``WorkspaceFS.iter_share`` and ``WorkspaceFS.opener``: a folder listed and its files opened
through one descriptor of it, never following a link and never leaving the folder."""

from __future__ import annotations

import os
import stat

import pytest

from sandbox.fs import WorkspaceError, WorkspaceFS


def test_iter_share_lists_by_lstat_and_a_missing_folder_is_a_workspace_error(tmp_path):
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "a.txt").write_text("a")
    os.symlink("/etc/passwd", tmp_path / "d" / "link")
    found = {name: st for _, name, st in WorkspaceFS(tmp_path).iter_share("d")}
    assert set(found) == {"a.txt", "link"} and stat.S_ISLNK(found["link"].st_mode)
    with pytest.raises(WorkspaceError, match="no such folder"):
        list(WorkspaceFS(tmp_path).iter_share("nope"))


def test_opener_opens_regular_files_only_and_only_names_of_its_folder(tmp_path):
    ws = tmp_path / "ws"
    (ws / "d").mkdir(parents=True)
    (ws / "d" / "a.txt").write_text("alpha")
    (ws / "top.txt").write_text("top")
    (tmp_path / "outside.txt").write_text("HOST")
    os.symlink(tmp_path / "outside.txt", ws / "d" / "link")
    os.mkfifo(ws / "d" / "fifo")
    with WorkspaceFS(ws).opener("d") as open_file:
        fd = open_file("a.txt")
        try:
            assert os.read(fd, 100) == b"alpha"
        finally:
            os.close(fd)
        for name, why in (("link", "symlink"), ("fifo", "FIFO"), ("missing", "no such file"),
                          ("../top.txt", "not a name"), ("..", "not a name"), ("", "not a name")):
            with pytest.raises(WorkspaceError, match=why):
                open_file(name)
