"""The prepared-copy cache is keyed by every file's content (issue 37, class 8).

The key was once the folder's names and sizes, with contents only for files under 1 MiB: a
hostile folder of a genuine task's name, with a big file of the same size, got the genuine
folder's cache entry, so whichever was prepared first was what the other's runs used. Here two
such folders are prepared into one cache: each must get its own copy, made by its own
prepare.py from its own bytes.
"""

from __future__ import annotations

import json
import os
import time

from environments.task import content_key
from environments.task.prepare import fingerprint, prepare_task, prepared_dir
from environments.task.spec import load_task
from tests.conftest import write_task

BIG = 3 << 20  # past the old 1 MiB cut-off
PREPARE = ("from pathlib import Path\n"
           "Path('../env/first.bin').write_bytes(Path('../env/big.bin').read_bytes()[:16])\n")


def folder(root, fill: bytes):
    write_task(root, files={"scripts/prepare.py": PREPARE})
    (root / "env" / "big.bin").write_bytes(fill * BIG)
    return load_task(root)


def test_same_name_and_sizes_different_content_get_different_copies(tmp_path):
    genuine = folder(tmp_path / "a" / "house-price", b"g")
    hostile = folder(tmp_path / "b" / "house-price", b"h")
    assert genuine.name == hostile.name
    assert fingerprint(genuine.root) != fingerprint(hostile.root)
    cache = tmp_path / "cache"
    first = prepare_task(hostile, cache=cache, sandbox="local", stdin=None, show=lambda _: None)
    second = prepare_task(genuine, cache=cache, sandbox="local", stdin=None, show=lambda _: None)
    assert first.root != second.root == prepared_dir(genuine, cache)
    assert (second.env_dir / "first.bin").read_bytes() == b"g" * 16
    assert (first.env_dir / "first.bin").read_bytes() == b"h" * 16


def test_one_byte_anywhere_in_a_big_file_changes_the_key(tmp_path):
    task = folder(tmp_path / "t", b"x")
    before = fingerprint(task.root)
    big = task.env_dir / "big.bin"
    stat = big.stat()
    with open(big, "r+b") as f:
        f.seek(BIG // 2)
        f.write(b"y")
    os.utime(big, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # same size, same mtime
    assert fingerprint(task.root) != before


def test_names_and_contents_cannot_be_shifted_into_one_another(tmp_path):
    """The key frames each name and content by length, and folders count: moving bytes between
    a file's content and its neighbour's name, or an empty folder added, is another key (a
    prepare.py may test for a folder)."""
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir(), b.mkdir()
    (a / "x").write_bytes(b"1\ny:0\n")
    (b / "x").write_bytes(b"1")
    (b / "y").write_bytes(b"")
    assert fingerprint(a) != fingerprint(b)
    c, d = tmp_path / "c", tmp_path / "d"
    (c / "e").mkdir(parents=True)
    d.mkdir()
    assert fingerprint(c) != fingerprint(d)
    (d / "e").write_bytes(b"")
    assert fingerprint(c) != fingerprint(d)


# ---- the digest cache: cheap, and sound -------------------------------------------------------

def test_a_big_files_digest_is_remembered_only_once_settled(tmp_path, monkeypatch):
    """A file changed within the clock's tick before it was read may change again unseen by
    its ctime: it is hashed every time. A settled one is remembered by (dev, inode, size,
    mtime, ctime), and a later write, its mtime put back, is another key (ctime moved)."""
    monkeypatch.setenv("LABCOAT_HOME", str(tmp_path / "home"))
    task = folder(tmp_path / "t", b"x")
    remembered = tmp_path / "home" / "content-hashes.json"
    before = fingerprint(task.root)
    assert not remembered.exists()  # just written: not settled
    monkeypatch.setattr(content_key, "SETTLED_NS", 0)
    assert fingerprint(task.root) == before
    assert len(json.loads(remembered.read_text())) == 1
    read: list[bytes] = []
    real_read = os.read
    monkeypatch.setattr(content_key.os, "read", lambda fd, n: read.append(real_read(fd, n)) or read[-1])
    assert fingerprint(task.root) == before
    assert sum(map(len, read)) < BIG  # the small files only: the big one's digest is remembered
    time.sleep(0.05)  # past the coarse clock's tick
    big = task.env_dir / "big.bin"
    st = big.stat()
    with open(big, "r+b") as f:
        f.write(b"y")
    os.utime(big, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert fingerprint(task.root) != before


def test_a_broken_digest_cache_is_ignored(tmp_path, monkeypatch):
    monkeypatch.setenv("LABCOAT_HOME", str(tmp_path / "home"))
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / "content-hashes.json").write_text('{"1:2:3:4:5": "zz", "x": [1]')
    task = folder(tmp_path / "t", b"x")
    assert fingerprint(task.root) == fingerprint(task.root)
