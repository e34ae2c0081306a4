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
    nonce'd runner of ``environments/scoring.py``; the workspace's code is not there to import.

A task without ``produce.py`` scores data files only (MLAgentBench's ``submission.csv``): its
trusted phase sees the workspace with every code file removed, so an ``eval.py`` that imports
workspace code fails loudly instead of trusting it. Runtimes (``timed`` tasks) are the host's
wall time of the submission-phase exec (``environments/timing.py``), never a number the
submission's process could touch.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from pydantic import BaseModel

from sandbox import Mount, SandboxError, SandboxLimits, open_sandbox

PRODUCE = "produce.py"
INPUTS = "inputs"
CHALLENGE = "challenge.txt"
PRODUCE_TARGET = "/task/produce"
OUTPUTS = ".labcoat-outputs"  # inside the submission's workspace
MAX_OUTPUT_BYTES = 512 << 20
CODE_SUFFIXES = (".py", ".pyc", ".pyo", ".so", ".pth", ".pyx", ".pyd")
NO_SUBMISSION_EXIT = 3

# Phase (a), run as ``python -I``: imports produce.py by path and calls it. Exit 3 when the
# submission's file is missing (FileNotFoundError), 1 on any other error (traceback on stderr).
_PRODUCE_RUNNER = r"""
import importlib.util, os, sys, traceback
from pathlib import Path
here, workspace, out = sys.argv[1:4]
sys.path[:0] = [here, os.path.join(here, "inputs")] + [
    p for p in os.environ.get("PYTHONPATH", "").split(":") if p]
os.makedirs(out, exist_ok=True)
os.chdir(workspace)
try:
    spec = importlib.util.spec_from_file_location("labcoat_task_produce", os.path.join(here, "produce.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    mod.produce(Path(workspace), Path(here), Path(out))
except FileNotFoundError:
    traceback.print_exc()
    sys.exit(3)
except BaseException:
    traceback.print_exc()
    sys.exit(1)
"""


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


def produce_dir(scripts_dir: Path, dest: Path, challenge: str) -> Path:
    """The folder phase (a) may read: ``produce.py``, ``inputs/`` and the challenge, nothing else."""
    dest.mkdir(parents=True)
    shutil.copyfile(Path(scripts_dir) / PRODUCE, dest / PRODUCE)
    inputs = Path(scripts_dir) / INPUTS
    if inputs.is_dir():
        shutil.copytree(inputs, dest / INPUTS, symlinks=False)
    (dest / CHALLENGE).write_text(challenge)
    for path in [dest, *dest.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    return dest


def open_produce(kind: str, workspace: Path, here: Path, limits: SandboxLimits,
                 mounts: list[Mount]):
    """A sandbox for phase (a) over ``workspace`` with ``here`` mounted read-only."""
    return open_sandbox(kind, workspace, limits, [*mounts, Mount(source=here, target=PRODUCE_TARGET)])


def run_produce(kind: str, workspace: Path, here: Path, limits: SandboxLimits,
                mounts: list[Mount], sb=None) -> Produced:
    """Phase (a) over ``workspace`` (a scratch copy), in ``sb`` when given (a timed task reuses
    one); its outputs end up in ``workspace/OUTPUTS``."""
    shutil.rmtree(workspace / OUTPUTS, ignore_errors=True)
    try:
        if sb is not None:
            r = _exec_produce(sb)
        else:
            with open_produce(kind, workspace, here, limits, mounts) as opened:
                r = _exec_produce(opened)
    except (SandboxError, OSError, ValueError) as err:
        raise SandboxError(f"the submission phase could not run: {err}") from err
    return _produced(r)


def _exec_produce(sb):
    return sb.exec([sb.python, "-I", "-c", _PRODUCE_RUNNER, sb.path_for(PRODUCE_TARGET),
                    sb.workdir, f"{sb.workdir}/{OUTPUTS}"], stdin="")


def _produced(r) -> Produced:
    tail = ((r.stdout or "")[-1500:] + "\n" + (r.stderr or "")[-2500:]).strip()
    return Produced(ok=r.exit_code == 0 and not r.timed_out, timed_out=r.timed_out,
                    oom=r.oom_killed, no_submission=r.exit_code == NO_SUBMISSION_EXIT,
                    seconds=r.seconds, tail=tail)


def collect_outputs(workspace: Path, dest: Path, challenge: str) -> None:
    """Copy phase (a)'s outputs to ``dest`` as plain files (no links, size-capped), then the
    host's own ``challenge.txt`` over whatever the submission wrote under that name."""
    src = workspace / OUTPUTS
    dest.mkdir(parents=True, exist_ok=True)
    total = 0
    if src.is_dir() and not src.is_symlink():
        for dirpath, dirnames, filenames in os.walk(src):
            for name in filenames:
                path = Path(dirpath) / name
                if path.is_symlink() or not path.is_file():
                    continue
                total += path.stat().st_size
                if total > MAX_OUTPUT_BYTES:
                    raise ValueError(f"the outputs exceed {MAX_OUTPUT_BYTES >> 20} MB")
                target = dest / path.relative_to(src)
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(path, target)
    (dest / CHALLENGE).write_text(challenge)


SOURCE_ASIDE = ".labcoat-source"


def strip_code(folder: Path, keep=lambda rel: False) -> None:
    """Move every importable file out of import's way: a data-only task's eval must not run
    workspace code. The files go, as text, under ``SOURCE_ASIDE/`` (same relative paths), so a
    gate that reads the submission's source (``rglob("*.py")``) still sees it, while an import
    from the scored folder finds nothing.

    ``keep(rel)`` spares the task's own read-only files, laid over from the pristine env/
    (a task library such as ln-net-capacity's ``lnlib.py`` is the task's code, not the actor's).
    """
    aside = folder / SOURCE_ASIDE
    moves = []
    for dirpath, dirnames, filenames in os.walk(folder):
        for name in list(dirnames):
            if name == "__pycache__":
                shutil.rmtree(Path(dirpath) / name)
                dirnames.remove(name)
        for name in filenames:
            path = Path(dirpath) / name
            rel = path.relative_to(folder).as_posix()
            if name.endswith(CODE_SUFFIXES) and not keep(rel):
                moves.append((path, aside / rel))
    for path, dest in moves:
        dest.parent.mkdir(parents=True, exist_ok=True)
        os.replace(path, dest)
    for path in aside.rglob("__init__.py"):  # no package to import from either
        path.rename(path.with_name("__init__.py.txt"))
