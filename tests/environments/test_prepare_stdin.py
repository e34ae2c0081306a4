"""Piped answers reach prepare.py (issue 41): ``yes '' | labcoat prepare FOLDER``, or a CI job
answering Kaggle's consent prompt, relays labcoat's stdin as a terminal's is; /dev/null is
still no one to ask."""

from __future__ import annotations

import os
from contextlib import contextmanager

import pytest

from environments.task.prepare import prepare_task
from environments.task.spec import TaskError, load_task
from tests.conftest import write_task

ASKS = ("answer = input('Do you accept the competition rules? [y/N] ')\n"
        "open('../env/answer.txt', 'w').write(answer)\n")


@contextmanager
def stdin_from(path_or_bytes: bytes | str):
    """labcoat's fd 0 made a pipe holding ``bytes`` (then closed), or the file at a path."""
    saved = os.dup(0)
    if isinstance(path_or_bytes, bytes):
        read_fd, write_fd = os.pipe()
        os.write(write_fd, path_or_bytes)
        os.close(write_fd)
    else:
        read_fd = os.open(path_or_bytes, os.O_RDONLY)
    os.dup2(read_fd, 0)
    os.close(read_fd)
    try:
        yield
    finally:
        os.dup2(saved, 0)
        os.close(saved)


def prepare(tmp_path):
    root = write_task(tmp_path / "kaggle", files={"scripts/prepare.py": ASKS})
    return prepare_task(load_task(root), cache=tmp_path / "cache", sandbox="local",
                        show=lambda _: None, timeout=60)  # stdin: the default, labcoat's own


def test_a_piped_answer_reaches_prepare_py(tmp_path):
    with stdin_from(b"y\n"):
        spec = prepare(tmp_path)
    assert (spec.env_dir / "answer.txt").read_text() == "y"


def test_dev_null_is_no_one_to_ask(tmp_path):
    with stdin_from(os.devnull), pytest.raises(TaskError, match="no terminal to ask you in"):
        prepare(tmp_path)
