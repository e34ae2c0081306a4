"""Scoring on a private split, recorded: every read of ``search``, ``select`` or ``test`` goes
through :func:`score_split`, which evaluates and appends what it revealed to the run's ledger.

The ledger line carries the hashes that let a third party check later that the split it names
is the split the task has now (:func:`task_hashes`): the scorer (``eval.py``, ``produce.py`` and
the ``inputs/`` the submission phase sees), each split's private data (its declared files under
the prepared ``scripts/``, or, for a split that declares none, every file of ``scripts/`` but
the scorer's) and the sandbox image the scoring ran in.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import stat
from pathlib import Path

from pydantic import BaseModel

from environments.record import ledger
from environments.record.ledger import Actor, Purpose, Revealed
from environments.scoring.evaluate import EvalResult, evaluate
from environments.task.content_key import file_digest, fingerprint
from environments.task.spec import TaskError, TaskSpec
from environments.task.splits import SplitName
from sandbox import SandboxError, resolve_kind

SCORER_FILES = ("eval.py", "produce.py")
SCORER_FOLDERS = ("inputs",)
MESSAGE_CHARS = 300  # of a failure's public text kept in the ledger


class TaskHashes(BaseModel):
    """What a ledger line pins: the scorer, each split's data, the sandbox image."""

    scorer: str
    data: dict[str, str]
    image: str


def _frame(h, *parts: bytes) -> None:
    for part in parts:
        h.update(b"%d:" % len(part))
        h.update(part)


def _hash_files(root: Path, names: list[str]) -> str:
    """sha256 over the named entries under ``root`` (name, then a file's digest, a folder's
    content key or a link's target, never followed; a missing one hashed as missing). Big
    files' digests come from the content-key cache (:mod:`environments.task.content_key`)."""
    h = hashlib.sha256(b"labcoat split data v1\0")
    for name in sorted(names):
        path = root / name
        _frame(h, name.encode())
        try:
            st = os.lstat(path)
            if stat.S_ISREG(st.st_mode):
                _frame(h, b"file", file_digest(path, st))
            elif stat.S_ISDIR(st.st_mode):
                _frame(h, b"dir", fingerprint(path).encode())
            elif stat.S_ISLNK(st.st_mode):
                _frame(h, b"link", os.fsencode(os.readlink(path)))
            else:
                _frame(h, b"special")
        except (OSError, TaskError):
            _frame(h, b"missing")
    return h.hexdigest()


def scorer_hash(task: TaskSpec) -> str:
    scripts = task.scripts_dir
    h = hashlib.sha256(b"labcoat scorer v1\0")
    _frame(h, _hash_files(scripts, list(SCORER_FILES)).encode())
    for folder in SCORER_FOLDERS:
        if (scripts / folder).is_dir() and not (scripts / folder).is_symlink():
            _frame(h, folder.encode(), fingerprint(scripts / folder).encode())
    return h.hexdigest()


def split_data_hash(task: TaskSpec, split: SplitName) -> str:
    declared = task.splits.get(split)
    if declared is not None and declared.data:
        return _hash_files(task.scripts_dir, list(declared.data))
    scripts = task.scripts_dir
    rest = [p.name for p in sorted(scripts.iterdir()) if p.name not in SCORER_FILES
            and p.name not in SCORER_FOLDERS and p.name != "__pycache__"] if scripts.is_dir() else []
    return _hash_files(scripts, rest)


def image_identity(sandbox: str) -> str:
    """The backend and, for Docker, the image's id; for the local backend the host's Python
    (its code runs on the host's interpreter)."""
    try:
        kind = resolve_kind(sandbox)
    except (SandboxError, ValueError) as err:
        return f"unknown ({err})"[:200]
    if kind == "docker":
        from sandbox.image import IMAGE, ImageError, image_info

        try:
            info = image_info(IMAGE)
        except ImageError as err:
            return f"docker:unknown ({err})"[:200]
        return f"docker:{IMAGE}@{info['id'] if info else 'not built'}"
    return f"{kind}:python-{platform.python_version()}"


def task_hashes(task: TaskSpec, sandbox: str) -> TaskHashes:
    return TaskHashes(scorer=scorer_hash(task),
                      data={s: split_data_hash(task, s) for s in task.split_names},
                      image=image_identity(sandbox))


def _trace_lines(run_path: Path) -> list[bytes]:
    """The run's trace lines, read without following a link or blocking on a FIFO (a run
    folder may be an untrusted import)."""
    try:
        fd = os.open(Path(run_path) / "trace.jsonl", os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK
                     | os.O_CLOEXEC)
    except OSError:
        return []
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return []
        return [line for line in f if line.strip()]


def open_ledger(run_path: Path, task: TaskSpec, sandbox: str) -> None:
    """The ledger's first line (what the task was when it began, and how many steps the trace
    held then: a run from before the ledger gains one when it is next scored), unless it has
    one."""
    if ledger.read_lines(run_path):
        return
    hashes = task_hashes(task, sandbox)
    ledger.append(run_path, event="open", scorer=hashes.scorer, data=hashes.data,
                  image=hashes.image, detail={"task": task.name, "splits": list(task.split_names),
                                              "steps": len(_trace_lines(run_path))})


def note_session(run_path: Path, task: TaskSpec, sandbox: str, steps: int) -> None:
    """A session of the run begins: the ledger's ``open`` line for a new run, a ``resume`` line
    (how many steps the trace holds) when it goes on."""
    if not ledger.read_lines(run_path):
        open_ledger(run_path, task, sandbox)
        if not steps:
            return
    if steps:
        ledger.append(run_path, event="resume", detail={"steps": steps})


def fork_ledger(parent_path: Path, child_path: Path, task: TaskSpec, sandbox: str,
                at: int, parent_id: str) -> None:
    """A fork's ledger: its ``open`` line, a ``fork`` line naming the parent and the parent's
    head hash, then the parent's calls made during its run for the steps the fork keeps (each
    re-chained, marked as the parent's): what reached the agent before the fork point did
    reach the fork's agent. Each carried call is marked shown to the agent: the steps the fork
    keeps (their observations) are the fork's actor's history, whatever the parent showed. The
    parent's scorings after its run are not carried: the fork's own scoring reads test for it."""
    open_ledger(child_path, task, sandbox)
    lines = ledger.read_lines(parent_path)
    ledger.append(child_path, event="fork", detail={"parent": parent_id, "parent_head": ledger.head(lines),
                                                    "steps": at})
    nodes = _pool_nodes(child_path)
    for entry in ledger.read(parent_path):
        if entry.event == "call" and entry.purpose not in ("final", "post hoc") and (
                entry.step is not None and entry.step <= at
                or entry.step is None and entry.node is not None and entry.node in nodes):
            carried = entry.model_dump(exclude={"seq", "at", "prev", "hash", "detail",
                                                "shown_to_agent"})
            ledger.append(child_path, **carried, shown_to_agent=True,
                          detail={**entry.detail, "from_parent": parent_id})


def _pool_nodes(run_path: Path) -> set[int]:
    """The research pool's nodes a (forked) trace records: their search scorings ran on a
    worker, so their ledger lines name the node, not a step (``Record Node``,
    :mod:`environments.acting.pool_node`)."""
    found: set[int] = set()
    for line in _trace_lines(run_path):
        if b'"Record Node"' not in line:
            continue
        try:
            step = json.loads(line)
        except ValueError:
            continue
        node = (step.get("data") or {}).get("node") if step.get("action") == "Record Node" else None
        if isinstance(node, int):
            found.add(node)
    return found


def revealed(result: EvalResult) -> Revealed:
    """What a call gives away: the number, or the failure and its public words."""
    return Revealed(value=result.value, failure=result.failure,
                    message=(result.public_detail or "")[-MESSAGE_CHARS:] if result.failure else "")


def record_call(run_path: Path, task: TaskSpec, sandbox: str, split: SplitName,
                result: EvalResult, *, actor: Actor, purpose: Purpose, shown_to_agent: bool,
                step: int | None = None, node: int | None = None) -> ledger.Entry:
    """One ``call`` line for a scoring that already happened (the hashes taken now: the
    scorer, this split's data and the image)."""
    open_ledger(run_path, task, sandbox)
    return ledger.append(run_path, event="call", actor=actor, split=split, step=step, node=node,
                         purpose=purpose, shown_to_agent=shown_to_agent,
                         revealed=revealed(result), scorer=scorer_hash(task),
                         data={split: split_data_hash(task, split)},
                         image=image_identity(sandbox))


def score_split(task: TaskSpec, workspace: Path, sandbox: str, split: SplitName, *,
                run_path: Path | None, actor: Actor, purpose: Purpose, shown_to_agent: bool,
                step: int | None = None, node: int | None = None,
                timeout: float | None = None) -> EvalResult:
    """Evaluate ``workspace`` on ``split`` and, for a run, ledger what it revealed."""
    result = evaluate(task, workspace, sandbox, timeout=timeout, split=split)
    if run_path is not None:
        record_call(run_path, task, sandbox, split, result, actor=actor, purpose=purpose,
                    shown_to_agent=shown_to_agent, step=step, node=node)
    return result
