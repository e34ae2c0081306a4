"""The scoring contract: the submission's code and the metric never share a process.

A score may only depend on what the submission was asked to produce. So a task whose scoring
runs submitted code splits it in two, each its own sandbox exec:

(a) the **submission phase**: ``scripts/produce.py`` defines ``produce(workspace, inputs, out)``.
    It runs as ``python -I`` over a scratch copy of the workspace, with ``produce.py`` and the
    task's ``scripts/inputs/`` (what the task chooses to show, never its answers) mounted at
    ``/task/produce`` (``inputs/`` is importable: code both phases share lives there), and
    writes the outputs it is asked for (arrays, predictions) under
    ``out``. It gets no result channel, no nonce and nothing else of ``scripts/``; whatever it
    prints is the submission's own output. A per-scoring random ``challenge.txt`` sits next to
    ``produce.py`` so inputs can be fresh every scoring (answers cannot be precomputed).
(b) the **trusted phase**: ``scripts/eval.py`` defines ``score(outputs_folder)`` (and
    ``validation_score`` where the task offers validation). It runs in another sandbox whose
    only workspace is a copy of those outputs (plus the host's ``challenge.txt``), through the
    nonce'd runner of ``environments/scoring/evaluate.py``; the workspace's code is not there to import.

An **interactive** task (``[oracle]`` in task.toml: an adaptive sampler that calls a secret
denoiser) runs phase (a) alongside the task's oracle (``eval.py: make_oracle``) in a second
sandbox; ``produce`` gets ``oracle(op, **arrays)``, and every question goes over a socket to the
host, which checks it (``environments/in_sandbox/channel.py``: format, size, request count, deadline) and
relays it. See :func:`run_interactive`. What runs inside the sandboxes is
:mod:`environments.in_sandbox.produce_runner` and :mod:`environments.in_sandbox.oracle_runner`.

A task without ``produce.py`` scores data files only (MLAgentBench's ``submission.csv``): its
trusted phase sees the workspace with every code file removed, so an ``eval.py`` that imports
workspace code fails loudly instead of trusting it. Runtimes (``timed`` tasks) are the host's
wall time of the submission-phase exec (``environments/scoring/timing.py``), never a number the
submission's process could touch.
"""

from __future__ import annotations

import select
import socket
import threading
import time
from pathlib import Path

from pydantic import BaseModel

from environments.in_sandbox import channel, oracle_runner, produce_runner, source
from environments.in_sandbox.channel import ChannelError
from environments.task.splits import SPLIT_FILE
from sandbox import Mount, SandboxError, SandboxLimits, open_sandbox
from sandbox.fs import WorkspaceError, WorkspaceFS, copy_tree

PRODUCE = "produce.py"
INPUTS = "inputs"
CHALLENGE = "challenge.txt"
PRODUCE_TARGET = "/task/produce"
OUTPUTS = ".labcoat-outputs"  # inside the submission's workspace
WIRE = "labcoat_channel.py"  # environments/in_sandbox/channel.py, as the sandboxes import it
ORACLE_TARGET = "/task/oracle"
MAX_OUTPUT_BYTES = 512 << 20
CODE_SUFFIXES = (".py", ".pyc", ".pyo", ".so", ".pth", ".pyx", ".pyd")
NO_SUBMISSION_EXIT = produce_runner.NO_SUBMISSION_EXIT

PRODUCE_RUNNER = source(produce_runner)  # phase (a), run as ``python -I -c``
ORACLE_RUNNER = source(oracle_runner)  # an interactive task's oracle, likewise


def has_produce(scripts_dir: Path) -> bool:
    """Whether the task's scoring runs submitted code (the two-phase contract)."""
    return (Path(scripts_dir) / PRODUCE).is_file()


class Produced(BaseModel):
    """What the submission phase left: the outputs folder on the host, and how it went."""

    ok: bool
    no_submission: bool = False
    timed_out: bool = False
    oom: bool = False
    seconds: float = 0.0
    tail: str = ""


def _readable(mode: int) -> int:
    return 0o644


def produce_dir(scripts_dir: Path, dest: Path, challenge: str, split: str = "test") -> Path:
    """The folder phase (a) may read: ``produce.py``, ``inputs/``, the challenge and the split
    it produces for (``split.txt``: ``methods._submission.split_of``), nothing else.

    Mounted read-only into the submission's sandbox, it is written by descriptor like a
    workspace (files 0644 and folders 0755 set on their descriptors, whatever the umask)."""
    dest.mkdir(parents=True)
    out, scripts = WorkspaceFS(dest), WorkspaceFS(Path(scripts_dir))
    out.make_root(0o755)
    out.write(PRODUCE, scripts.chunks(PRODUCE), mode=0o644)
    if scripts.kind(INPUTS) == "dir":
        copy_tree(scripts, WorkspaceFS(dest / INPUTS), under=INPUTS, mode=_readable)
    out.write(CHALLENGE, challenge.encode(), mode=0o644)
    out.write(SPLIT_FILE, split.encode(), mode=0o644)
    out.write(WIRE, Path(channel.__file__).read_bytes(), mode=0o644)
    return dest


def open_produce(kind: str, workspace: Path, here: Path, limits: SandboxLimits,
                 mounts: list[Mount]):
    """A sandbox for phase (a) over ``workspace`` with ``here`` mounted read-only."""
    return open_sandbox(kind, workspace, limits, [*mounts, Mount(source=here, target=PRODUCE_TARGET)])


def run_produce(kind: str, workspace: Path, here: Path, limits: SandboxLimits,
                mounts: list[Mount], sb=None) -> Produced:
    """Phase (a) over ``workspace`` (a scratch copy), in ``sb`` when given (a timed task reuses
    one); its outputs end up in ``workspace/OUTPUTS``."""
    _clear_outputs(workspace)
    try:
        if sb is not None:
            r = _exec_produce(sb)
        else:
            with open_produce(kind, workspace, here, limits, mounts) as opened:
                r = _exec_produce(opened)
    except (SandboxError, OSError, ValueError) as err:
        raise SandboxError(f"the submission phase could not run: {err}") from err
    return _produced(r)


def _clear_outputs(workspace: Path) -> None:
    """Remove ``workspace/OUTPUTS`` by descriptor (never through a link left there)."""
    try:
        WorkspaceFS(workspace).remove_tree(OUTPUTS)
    except WorkspaceError:
        pass


def _exec_produce(sb, chan: tuple[int, int, float] | None = None):
    """``chan`` = (socket descriptor, max message bytes, reply timeout) of an interactive task."""
    argv = [sb.python, "-I", "-c", PRODUCE_RUNNER, sb.path_for(PRODUCE_TARGET),
            sb.workdir, f"{sb.workdir}/{OUTPUTS}"]
    if chan is None:
        return sb.exec(argv, stdin="")
    return sb.exec([*argv, str(chan[1]), str(chan[2])], stdin=chan[0])


def _produced(r) -> Produced:
    tail = ((r.stdout or "")[-1500:] + "\n" + (r.stderr or "")[-2500:]).strip()
    return Produced(ok=r.exit_code == 0 and not r.timed_out, timed_out=r.timed_out,
                    oom=r.oom_killed, no_submission=r.exit_code == NO_SUBMISSION_EXIT,
                    seconds=r.seconds, tail=tail)


def collect_outputs(workspace: Path, dest: Path, challenge: str) -> None:
    """Copy phase (a)'s outputs to ``dest`` as plain files (no links, size-capped), then the
    host's own ``challenge.txt`` over whatever the submission wrote under that name.

    Read by descriptor from the workspace's root down (:func:`sandbox.fs.copy_tree`),
    after the command has ended: a link anywhere in ``OUTPUTS`` is dropped, never followed."""
    try:
        copy_tree(WorkspaceFS(workspace), WorkspaceFS(dest), under=OUTPUTS,
                  max_bytes=MAX_OUTPUT_BYTES)
    except WorkspaceError as err:
        raise ValueError(f"the outputs cannot be copied: {err}") from None
    WorkspaceFS(dest).write(CHALLENGE, challenge.encode(), mode=0o644)


SOURCE_ASIDE = ".labcoat-source"


def strip_code(folder: Path, keep=lambda rel: False) -> None:
    """Move every importable file out of import's way: a data-only task's eval must not run
    workspace code. The files go, as text, under ``SOURCE_ASIDE/`` (same relative paths), so a
    gate that reads the submission's source (``rglob("*.py")``) still sees it, while an import
    from the scored folder finds nothing.

    ``keep(rel)`` spares the task's own read-only files, laid over from the pristine env/
    (a task library such as ln-net-capacity's ``lnlib.py`` is the task's code, not the actor's).
    """
    fs = WorkspaceFS(folder)
    for rel in fs.walk().folders:
        if rel.rsplit("/", 1)[-1] == "__pycache__":
            fs.remove_tree(rel)  # quietly nothing when an outer one already went
    moves = [rel for rel, _ in fs.walk().files
             if rel.endswith(CODE_SUFFIXES) and not keep(rel)]
    for rel in moves:
        fs.rename(rel, f"{SOURCE_ASIDE}/{rel}")
    for rel, _ in fs.walk(under=SOURCE_ASIDE).files:  # no package to import from either
        if rel.rsplit("/", 1)[-1] == "__init__.py":
            fs.rename(rel, f"{rel}.txt")


# --- interactive submissions: an oracle the submission may question ------------------------
#
# An adaptive submission (a sampler that calls a secret denoiser) needs answers while it runs.
# Its questions travel over one socket (``environments/in_sandbox/channel.py`` frames) to the host, which
# checks each frame (format, size, count) and relays it to the task's oracle: ``eval.py:
# make_oracle(challenge)`` running in a *second* sandbox that holds the task's ``scripts/``.
# The two sandboxes share nothing but that relay, so the submission reaches the oracle's
# secrets only through the answers the oracle chooses to give, and the score is then computed
# by the ordinary trusted phase from the outputs the submission wrote.


class Interaction(BaseModel):
    """What the relay saw: requests answered, and why it stopped early (``refused``)."""

    requests: int = 0
    refused: str = ""
    oracle_failed: str = ""


def _relay(sub: socket.socket, orc: socket.socket, max_requests: int, max_bytes: int,
           deadline: float, done: threading.Event) -> Interaction:
    """Pass checked requests from ``sub`` to ``orc`` and the answers back, until the submission
    ends, breaks the format or a bound, or the deadline; never reads after ``done``."""
    seen = Interaction()
    while not done.is_set() and time.monotonic() < deadline:
        if not select.select([sub], [], [], 0.1)[0]:
            continue
        try:
            header, payload = channel.recv_frame(sub, max_bytes, deadline)
            if header["kind"] != "request":
                raise ChannelError(f"the submission may only send requests, not {header['kind']!r}")
        except EOFError:
            break
        except (ChannelError, TimeoutError, OSError) as err:
            seen.refused = f"the oracle channel refused a message: {err}"
            break
        if seen.requests >= max_requests:
            seen.refused = f"more than {max_requests} oracle requests"
            _tell(sub, seen.refused, deadline)
            break
        seen.requests += 1
        try:
            channel.send_frame(orc, {"kind": "request", "op": header.get("op", ""),  # known keys only
                                     "arrays": header.get("arrays", [])}, payload, deadline)
            answer, data = channel.recv_frame(orc, max_bytes, deadline)
            if answer["kind"] not in ("reply", "error"):
                raise ChannelError(f"the oracle answered with a {answer['kind']!r} frame")
        except (ChannelError, TimeoutError, EOFError, OSError) as err:
            seen.oracle_failed = f"the oracle gave no answer to request {seen.requests}: {err}"
            break
        try:
            channel.send_frame(sub, answer, data, deadline)
        except OSError:
            break
        if answer["kind"] == "error":
            seen.refused = f"the oracle refused request {seen.requests}: {answer.get('message', '')}"
            break
    return seen


def _tell(sub: socket.socket, message: str, deadline: float) -> None:
    try:
        channel.send_frame(sub, {"kind": "error", "message": message}, b"", deadline)
    except OSError:
        pass


def _then_close(sock: socket.socket, fn, done: threading.Event | None = None):
    """Run ``fn`` (an exec holding ``sock``'s child end), then drop the host's copy of that end:
    once the command is gone nothing holds it, so the relay reads EOF at once, even in the
    middle of a frame, instead of waiting for its deadline. ``done`` is set too: whatever
    still holds the end after the command (a daemon a backend failed to kill) is not heard."""
    try:
        return fn()
    finally:
        if done is not None:
            done.set()
        sock.close()


def _in_thread(fn, *args) -> tuple[threading.Thread, dict]:
    box: dict = {}

    def run() -> None:
        try:
            box["result"] = fn(*args)
        except BaseException as err:  # noqa: BLE001 - re-raised by the caller
            box["error"] = err

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, box


def run_interactive(kind: str, workspace: Path, here: Path, limits: SandboxLimits,
                    mounts: list[Mount], scripts_dir: Path, oracle_home: Path, challenge: str,
                    max_requests: int, max_bytes: int, split: str = "test") -> tuple[Produced, Interaction]:
    """Phase (a) of an interactive task: the submission and the task's oracle, each in its own
    sandbox, joined only by the host's checked relay. ``oracle_home`` is an empty scratch
    folder (the oracle's workspace); the submission's outputs end up in ``workspace/OUTPUTS``."""
    _clear_outputs(workspace)
    wire = oracle_home / "wire"
    WorkspaceFS(wire).make_root(0o755)
    WorkspaceFS(wire).write(WIRE, Path(channel.__file__).read_bytes(), mode=0o644)
    scratch = oracle_home / "workspace"
    scratch.mkdir()
    oracle_mounts = [*mounts, Mount(source=scripts_dir, target="/task/scripts"),
                     Mount(source=wire, target=ORACLE_TARGET)]
    timeout = limits.timeout
    sub_host, sub_child = socket.socketpair()
    orc_host, orc_child = socket.socketpair()
    done = threading.Event()
    try:
        with (open_produce(kind, workspace, here, limits, mounts) as sb,
              open_sandbox(kind, scratch, limits.model_copy(update={"timeout": timeout + 5}),
                           oracle_mounts) as ob):
            argv = [ob.python, "-I", "-c", ORACLE_RUNNER, ob.path_for("/task/scripts"),
                    ob.path_for(ORACLE_TARGET), challenge, str(max_bytes), str(timeout), split]
            oracle_thread, oracle_box = _in_thread(_then_close, orc_child, lambda: ob.exec(
                argv, timeout + 5, stdin=orc_child.fileno()))  # a hung oracle ends here
            sub_thread, sub_box = _in_thread(_then_close, sub_child, lambda: _exec_produce(
                sb, (sub_child.fileno(), max_bytes, timeout)), done)
            seen = _relay(sub_host, orc_host, max_requests, max_bytes,
                          time.monotonic() + timeout + 2, done)
            if seen.refused or seen.oracle_failed:
                _hang_up(sub_host)  # the submission sees EOF and fails now
            sub_thread.join(timeout + 10)
            done.set()
            _tell_oracle_end(orc_host)
            oracle_thread.join(timeout + 10)
    except (SandboxError, OSError, ValueError) as err:
        raise SandboxError(f"the submission phase could not run: {err}") from err
    finally:
        done.set()
        for s in (sub_host, sub_child, orc_host, orc_child):
            s.close()
    for box in (sub_box, oracle_box):
        if "error" in box:
            raise SandboxError(f"the submission phase could not run: {box['error']}")
    if "result" not in sub_box:
        raise SandboxError("the submission phase did not end")
    oracle = oracle_box.get("result")
    if oracle is not None and not oracle.ok and not seen.oracle_failed:
        seen.oracle_failed = f"the oracle failed (exit {oracle.exit_code}): {oracle.stderr[-1500:]}"
    return _produced(sub_box["result"]), seen


def _hang_up(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass


def _tell_oracle_end(orc: socket.socket) -> None:
    try:
        channel.send_frame(orc, {"kind": "end"}, b"", time.monotonic() + 5)
    except OSError:
        pass
