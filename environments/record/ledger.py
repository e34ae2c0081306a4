"""The test-exposure ledger: every read of a private split, in the run folder, hash-chained.

``exposure.jsonl`` holds one JSON line per event, appended as it happens: the run's ``open``
(the task's scorer, split-data and sandbox hashes when the run began), each ``call`` into a
private split (who made it: the ``agent`` through an action, or the ``harness``; which split;
for which step or node; what it revealed; whether the agent was shown it), a fork's ``fork``
(the parent's head hash) and a ``resume`` (the steps the trace held then: a call written just
before a crash, for a step the trace never got, is told apart from one a trace lost). Each line carries the hash of the line before it and its
own hash over its content and that link, so dropping, reordering or editing a line breaks the
chain at that line. What the chain cannot show is a forger who rewrites every line after the
one he changes: ``labcoat verify`` prints the head hash, which anyone may publish or compare,
and re-derives the calls from the trace and the records, which a rewrite would also have to
match (:mod:`environments.reports.verify`).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from environments.record.runs import now

LEDGER = "exposure.jsonl"
GENESIS = "0" * 64
Actor = Literal["agent", "harness"]
Purpose = Literal["validate", "search", "select", "final", "post hoc", ""]


class Revealed(BaseModel):
    """What one call gave back: the number, or the failure and its message."""

    model_config = ConfigDict(extra="forbid")

    value: float | None = None
    failure: str | None = None
    message: str = ""


class Entry(BaseModel):
    """One line of the ledger; ``hash`` covers every other field (``prev`` included)."""

    model_config = ConfigDict(extra="forbid")

    seq: int = Field(ge=0)
    at: str
    event: Literal["open", "call", "fork", "resume"]
    actor: Actor | None = None
    split: str | None = None
    step: int | None = None
    node: int | None = None
    purpose: Purpose = ""
    shown_to_agent: bool = False
    revealed: Revealed | None = None
    scorer: str = ""
    data: dict[str, str] = Field(default_factory=dict, description="split -> hash of its data")
    image: str = ""
    detail: dict[str, Any] = Field(default_factory=dict)
    prev: str = GENESIS
    hash: str = ""


def digest(entry: Entry) -> str:
    """The line's hash: sha256 over its canonical JSON without ``hash`` (``prev`` is in it)."""
    body = entry.model_dump(mode="json", exclude={"hash"})
    return hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":"))
                          .encode()).hexdigest()


def ledger_path(run_path: Path) -> Path:
    return Path(run_path) / LEDGER


def read_lines(run_path: Path) -> list[str]:
    """The ledger's raw lines ([] when there is none)."""
    path = ledger_path(run_path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        return []
    with os.fdopen(fd, "rb") as f:
        return [line.decode("utf-8", "replace") for line in f.read().splitlines() if line.strip()]


def read(run_path: Path) -> list[Entry]:
    """The ledger's entries, as written (unchecked: :func:`check_chain` says if they hold)."""
    return [Entry.model_validate_json(line) for line in read_lines(run_path)]


def append(run_path: Path, **fields: Any) -> Entry:
    """Add one entry after the last, under an exclusive lock (the agent's actions and the
    harness's scoring may write at once), and return it."""
    path = ledger_path(run_path)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    with os.fdopen(fd, "r+b") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        f.seek(0)
        lines = [line for line in f.read().splitlines() if line.strip()]
        prev, seq = GENESIS, 0
        if lines:
            last = json.loads(lines[-1])
            prev, seq = str(last.get("hash", "")), int(last.get("seq", -1)) + 1
        entry = Entry(seq=seq, at=now(), prev=prev, **fields)
        entry = entry.model_copy(update={"hash": digest(entry)})
        f.write(entry.model_dump_json().encode() + b"\n")
        f.flush()
        os.fsync(f.fileno())
    return entry


def check_chain(lines: list[str]) -> list[str]:
    """What is wrong with the chain, line by line ([] when every line is well-formed, numbered
    in order, hashes to what it says and links to the line before)."""
    problems, prev, seq = [], GENESIS, -1
    for i, line in enumerate(lines):
        try:
            entry = Entry.model_validate_json(line)
        except ValueError as err:
            problems.append(f"ledger line {i + 1} is not a ledger entry: {str(err).splitlines()[0]}")
            prev, seq = "", seq + 1
            continue
        if entry.seq != seq + 1:  # said once where the numbering jumps, not on every line after
            problems.append(f"ledger line {i + 1} says it is entry {entry.seq} after entry {seq}: "
                            "a line was dropped, added or moved")
        seq = entry.seq
        if entry.prev != prev and prev != "":
            problems.append(f"ledger line {i + 1} does not link to the line before it: a line "
                            "was dropped, added or moved")
        if digest(entry) != entry.hash:
            problems.append(f"ledger line {i + 1} was edited: its content does not hash to "
                            "the hash it carries")
        prev = entry.hash
    return problems


def head(lines: list[str]) -> str:
    """The hash of the last line (what to publish to pin the whole ledger)."""
    if not lines:
        return GENESIS
    try:
        return str(json.loads(lines[-1]).get("hash", ""))
    except ValueError:
        return ""
