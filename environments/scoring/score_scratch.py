"""Scoring a run's steps in turn: one scratch folder and one sandbox, synced step to step.

:func:`environments.scoring.evaluate.evaluate` builds a new scratch copy of the workspace for each
call (every file copied, the task's read-only files laid, code moved aside) and a new sandbox
over it (as root: an ext4 quota image filled and emptied, the tree handed to the sandbox's uid
and back). For ``labcoat score --all-steps`` that is steps x files. :class:`StepScorer` keeps
both for the whole call instead, for a task that is neither timed nor interactive:

* **The scratch S is kept by lstat key** (:mod:`environments.scoring.scratch_sync`): planned from
  each restored step R as ``evaluate`` would copy it (read-only files laid; for a data-only
  task code moved aside), walked before each step, and only what the sandbox touched or R's
  restore changed laid again: read-only data is laid once, and a step costs one ``lstat`` per
  file plus what changed. A step whose plan collides is evaluated the old way.
* **One sandbox over S**: for a data-only task the trusted one that runs each step's
  ``eval.py``; for a two-phase task (``scripts/produce.py``) the submission's, where each
  step's ``produce`` runs with a new challenge, its outputs then scored in a trusted sandbox
  of their own, as ``evaluate`` does. Before each step the sandbox is renewed
  (``Sandbox.renew``: new ``/tmp`` and ``/dev/shm`` mounts and IPC, pid and network
  namespaces, nothing left running; an emptied ``/tmp`` would keep what a folder made
  unwritable holds), and S's folders get their mode, times and notes back. If the sandbox
  cannot be renewed or is lost, or a host write into S fails (the quota image, sized when
  the sandbox opened, is full), the sandbox is closed and that step is evaluated the old way
  (a fresh scratch and sandbox); the next step opens a new scratch and sandbox.

Everything else (a timed or interactive task, one workspace evaluated alone: Validate
Submission, baselines, ``score_run``, ``check-task``) goes through ``evaluate`` as is (a timed
task's repeats keep their submission's scratch by the same sync).
"""

from __future__ import annotations

import secrets
from contextlib import ExitStack
from pathlib import Path
from typing import Self

from environments.scoring.evaluate import (
    EvalResult,
    evaluate,
    open_submission,
    open_trusted,
    produce_failure,
    run_trusted,
    score_outputs,
)
from environments.scoring.scratch_sync import (
    Plan,
    Scratch,
    Source,
    plan,
    read_only_files,
)
from environments.scoring.submission import (
    CHALLENGE,
    has_produce,
    produce_dir,
    run_produce,
)
from environments.task.spec import TaskSpec
from sandbox import SandboxError
from sandbox.fs import WorkspaceError, WorkspaceFS, temporary_folder


class StepScorer:
    """Evaluates workspaces in turn (a run's restored steps), incrementally where it can (see
    the module doc), else by :func:`environments.scoring.evaluate.evaluate`. Use as a context manager."""

    def __init__(self, task: TaskSpec, sandbox: str = "auto") -> None:
        self.task, self.sandbox = task, sandbox
        self.produce = has_produce(task.scripts_dir)  # S is then the submission's, code and all
        self.incremental = task.has_eval and not task.timed and task.oracle is None
        self._pristine: dict[str, Source] | None = None
        self._stack: ExitStack | None = None
        self._scratch: Scratch | None = None
        self._here: Path | None = None  # produce.py, inputs/ and this step's challenge
        self._sb = None
        self.stats = {"incremental": 0, "fresh": 0, "laid": 0, "opened": 0}

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the sandbox (its quota image copied back) and remove S."""
        stack, self._stack, self._scratch, self._sb, self._here = self._stack, None, None, None, None
        if stack is not None:
            try:
                stack.close()
            except (SandboxError, OSError, WorkspaceError):
                pass  # S is gone with its folder either way; the next step opens anew

    def evaluate(self, restored: Path) -> EvalResult:
        """The evaluation of the workspace in ``restored`` (a host-only folder), equal to
        ``evaluate(task, restored, sandbox)``."""
        if self.incremental:
            try:
                want = plan(self.task, restored, self.pristine(), strip=not self.produce)
            except (OSError, WorkspaceError):
                want = None
            if want is not None:
                try:
                    result = self._incremental(restored, want)
                    self.stats["incremental"] += 1
                    return result
                except (SandboxError, OSError, ValueError):  # WorkspaceError is a ValueError
                    self.close()  # correct first: this step again, the old way
        self.stats["fresh"] += 1
        return evaluate(self.task, restored, self.sandbox)

    def pristine(self) -> dict[str, Source]:
        if self._pristine is None:
            self._pristine = read_only_files(self.task)
        return self._pristine

    def _incremental(self, restored: Path, want: Plan) -> EvalResult:
        sources = {"run": WorkspaceFS(restored), "env": WorkspaceFS(self.task.env_dir)}
        if self._sb is None:
            self._open(want, sources)
        else:
            self.stats["laid"] += self._scratch.sync(want, sources)
            self._clean()
        self._scratch.settle()
        if not self.produce:
            return run_trusted(self._sb, "get_score", self.task.limits.eval_timeout)
        return self._submission()

    def _submission(self) -> EvalResult:
        """A two-phase task's step: ``produce.py`` over S in the kept sandbox, with a new
        challenge, then its outputs scored in a sandbox of their own, as ``evaluate`` does."""
        timeout = self.task.limits.eval_timeout
        challenge = secrets.token_hex(16)
        WorkspaceFS(self._here).write(CHALLENGE, challenge.encode(), mode=0o644)
        produced = run_produce(self.sandbox, self._scratch.folder, self._here, self._sb.limits, [],
                               sb=self._sb)
        if not produced.ok:
            return produce_failure(produced, timeout)
        with temporary_folder("labcoat-outputs-") as out:
            return score_outputs(self.task, produced, self._scratch.folder, out / "outputs", challenge,
                                 self.sandbox, "get_score", timeout)

    def _open(self, want: Plan, sources: dict[str, WorkspaceFS]) -> None:
        """S laid in full, then the sandbox opened over it (the quota image sized for it);
        the keys are taken once the first (trusted) command has handed S over. Only a
        sandbox that isolates the filesystem is kept (it is renewed between steps)."""
        self._stack = stack = ExitStack()
        tmp = stack.enter_context(temporary_folder("labcoat-steps-"))
        self._scratch = Scratch(tmp / "workspace")
        self._scratch.fs.make_root()
        self.stats["laid"] += self._scratch.sync(want, sources)
        try:
            if self.produce:
                self._here = produce_dir(self.task.scripts_dir, tmp / "produce", secrets.token_hex(16))
                opened = open_submission(self.task, self._scratch.folder, self._here, self.sandbox)
            else:
                opened = open_trusted(self.task, self._scratch.folder, self.sandbox)
            self._sb = stack.enter_context(opened)
        except (SandboxError, OSError, ValueError):
            self.incremental = False  # no sandbox opens here: each step says why, the old way
            raise
        self.stats["opened"] += 1
        if not self._sb.describe().filesystem:  # /tmp would be the host's own: never emptied
            self.incremental = False
            raise SandboxError("the sandbox does not isolate the filesystem")
        self._sb.exec(["true"])  # hands S over: its keys are taken after
        self._scratch.refresh()

    def _clean(self) -> None:
        """The sandbox renewed before the next step (new ``/tmp``, ``/dev/shm``, namespaces);
        one that cannot be raises, so the step is evaluated afresh."""
        self._sb.renew()
