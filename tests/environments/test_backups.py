"""The Undo stacks (environments/record/backups.py): the step each push and pop records, older runs'
``index.json``, a torn log, and Undo that fails without losing the version it could not restore."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from environments.record import backups as b
from environments.record.backups import BackupEvent, Backups, stacks_at
from sandbox.fs import CHUNK, WorkspaceError, WorkspaceFS


@pytest.fixture
def ws(tmp_path) -> WorkspaceFS:
    (tmp_path / "ws").mkdir()
    return WorkspaceFS(tmp_path / "ws")


def _run_dir(tmp_path: Path, trace: bytes) -> Path:
    run = tmp_path / "run"
    run.mkdir()
    (run / "trace.jsonl").write_bytes(trace)
    return run / "backups"


def test_each_push_and_pop_records_the_step_being_taken(tmp_path, ws):
    long_line = b'{"index": 2, "observation": "' + b"x" * (3 * CHUNK) + b'"}\n'
    root = _run_dir(tmp_path, b'{"index": 1}\n' + long_line + b'{"index": 3, "torn')
    backups = Backups(root)
    ws.write("a.py", b"one")
    backups.save("a.py", ws)  # during step 3 (two whole lines; the torn one is step 3 being written)
    with (root.parent / "trace.jsonl").open("ab") as f:
        f.write(b'"}\n{"index": 4}\n')
    assert backups.restore("a.py", ws)
    events = [BackupEvent.model_validate_json(line) for line in (root / "log.jsonl").read_text().splitlines()]
    assert [(e.op, e.step) for e in events] == [("push", 3), ("pop", 5)]


def test_a_trimmed_trace_is_counted_again(tmp_path, ws):
    root = _run_dir(tmp_path, b"{}\n{}\n{}\n")
    backups = Backups(root)
    backups.save("a.py", ws)
    (root.parent / "trace.jsonl").write_bytes(b"{}\n")
    backups.save("a.py", ws)
    assert [e.step for e in backups.stacks["a.py"]] == [4, 2]


def test_an_unrecorded_session_records_no_step(tmp_path, ws):
    backups = Backups(tmp_path / "labcoat-backups-x")
    backups.save("new.py", ws)
    assert backups.stacks["new.py"][0].step is None and backups.stacks["new.py"][0].entry is None


def test_a_popped_version_is_kept_for_forks_and_the_stacks_replay_from_the_log(tmp_path, ws):
    root = _run_dir(tmp_path, b"")
    backups = Backups(root)
    ws.write("a.py", b"one")
    backups.save("a.py", ws)
    ws.write("a.py", b"two")
    (root.parent / "trace.jsonl").write_text("{}\n")  # step 1 recorded; the Undo is step 2
    kept = root / backups.stacks["a.py"][-1].entry
    assert backups.restore("a.py", ws) and ws.read("a.py", 10)[0] == b"one"
    assert kept.read_bytes() == b"one"  # still there: a fork at step 1 needs it
    assert Backups(root).stacks == {}
    events = [BackupEvent.model_validate_json(x) for x in (root / "log.jsonl").read_text().splitlines()]
    assert stacks_at(events, 0) == {} and [e.entry for e in stacks_at(events, 1)["a.py"]] == [kept.name]


def test_an_older_runs_index_loads_undoes_and_becomes_the_log(tmp_path, ws):
    root = tmp_path / "backups"
    root.mkdir()
    (root / "1-0-abcd1234").write_bytes(b"old")
    (root / "index.json").write_text(json.dumps({"a.py": ["1-0-abcd1234"], "gone.py": [None]}))
    ws.write("a.py", b"new")
    ws.write("gone.py", b"x")
    backups = Backups(root)
    assert backups.restore("a.py", ws) and ws.read("a.py", 10)[0] == b"old"
    assert not (root / "index.json").exists()
    events = [BackupEvent.model_validate_json(x) for x in (root / "log.jsonl").read_text().splitlines()]
    assert [(e.op, e.path, e.step) for e in events] == [("push", "a.py", None), ("push", "gone.py", None),
                                                          ("pop", "a.py", None)]
    again = Backups(root)
    assert again.restore("gone.py", ws) and ws.kind("gone.py") is None
    assert not again.restore("a.py", ws)


def test_a_torn_log_line_is_dropped_and_the_next_event_starts_a_line(tmp_path, ws):
    root = tmp_path / "backups"
    root.mkdir()
    good = BackupEvent(op="push", path="a.py", entry=None, step=1).model_dump_json()
    (root / "log.jsonl").write_text(good + '\n{"op": "pu')
    backups = Backups(root)
    backups.save("b.py", ws)
    assert [json.loads(x)["path"] for x in (root / "log.jsonl").read_text().splitlines()] == ["a.py", "b.py"]


@pytest.mark.parametrize("damage", ["missing", "escape"])
def test_an_undo_that_cannot_read_its_version_fails_clearly_and_loses_nothing(tmp_path, ws, damage):
    root = tmp_path / "backups"
    backups = Backups(root)
    ws.write("a.py", b"one")
    backups.save("a.py", ws)
    ws.write("a.py", b"two")
    entry = backups.stacks["a.py"][-1]
    if damage == "missing":
        (root / entry.entry).unlink()
    else:
        (tmp_path / "outside").write_bytes(b"HOST")
        entry.entry = "../outside"
    with pytest.raises(WorkspaceError, match="the kept version of 'a.py' before its last edit cannot be read"):
        backups.restore("a.py", ws)
    assert ws.read("a.py", 10)[0] == b"two" and len(backups.stacks["a.py"]) == 1
    assert "pop" not in (root / "log.jsonl").read_text()


def test_a_kept_version_is_never_written_through_a_name_already_there(tmp_path, ws, monkeypatch):
    root = tmp_path / "backups"
    backups = Backups(root)
    host = tmp_path / "host.txt"
    host.write_text("host")
    monkeypatch.setattr(b.secrets, "token_hex", lambda n: "f" * (2 * n))
    (root / f"0-{'f' * 16}").symlink_to(host)
    ws.write("a.py", b"one")
    with pytest.raises(FileExistsError):
        backups.save("a.py", ws)
    assert host.read_text() == "host" and "a.py" not in backups.stacks
