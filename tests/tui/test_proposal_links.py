"""Confirm mode's view of a proposed write, over a workspace a process may have booby-trapped.

The view is read as the host (often root) while a person decides: it must never follow a link
left in the workspace (which would show a host file, and misstate what the write does), never
wait on a FIFO, and never read a huge file whole.
"""

from __future__ import annotations

import os

from agent.actor import Proposal
from tui.widgets.proposal import proposal_body

SECRET = "HOST-SECRET-9a2b"


def write(name: str, content: str, action: str = "Write File") -> Proposal:
    return Proposal(action=action, args={"file_name": name, "content": content})


def test_a_symlink_is_named_as_one_and_its_target_never_shown(tmp_path):
    host = tmp_path / "host.txt"
    host.write_text(SECRET + "\n")
    ws = tmp_path / "ws"
    ws.mkdir()
    os.symlink(host, ws / "notes.txt")
    for action in ("Write File", "Append File"):
        text, _ = proposal_body(write("notes.txt", "new\n", action), ws)
        assert SECRET not in text
        assert "symlink" in text
    (ws / "d").mkdir()
    os.symlink(tmp_path, ws / "up")  # a link on the way is not followed either
    text, _ = proposal_body(write("up/host.txt", "new\n"), ws)
    assert SECRET not in text and "symlink" in text


def test_a_fifo_is_named_and_never_opened(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    os.mkfifo(ws / "pipe")  # opening it for reading would block the UI
    text, _ = proposal_body(write("pipe", "x\n"), ws)
    assert "FIFO" in text


def test_a_huge_file_is_read_only_in_part(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    with open(ws / "big.txt", "wb") as f:
        f.truncate(300 << 20)  # sparse: 300 MB of zeros that must not be read whole
        f.seek(0)
        f.write(b"head\n")
    text, _ = proposal_body(write("big.txt", "head\n"), ws)
    assert "bytes" in text and len(text) < 100_000


def test_an_ordinary_file_is_still_shown_as_a_diff(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.py").write_text("x = 1\n")
    text, language = proposal_body(write("a.py", "x = 2\n"), ws)
    assert language == "diff" and "-x = 1" in text and "+x = 2" in text
    text, language = proposal_body(write("new.py", "y = 1\n"), ws)
    assert language == "diff" and "+y = 1" in text
