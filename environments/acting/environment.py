"""The Environment: the only way anything acts on a task (action -> observation).

Agents, the replay actor and a person in the TUI all call :meth:`Environment.step`, so every
run has the same trace format and is scored the same way. ``step`` never raises for an
actor's mistake: unknown actions, bad arguments, refused paths and failed scripts all come
back as error observations, and the step is still recorded.

The Environment is the :class:`~environments.acting.actions.ActionContext` its handlers get: it sits
above every action module (low-level, tool, validation) and above evaluation, and none of them
imports it.
"""

from __future__ import annotations

import difflib
import logging
import tempfile
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from environments.acting.actions import ActionFailed, ActionInputError, ActionSpec
from environments.acting.help_request import (
    REQUEST_HELP,
    HelpDesk,
    Unattended,
    help_action,
)
from environments.acting.low_level import LOW_LEVEL_ACTIONS
from environments.acting.observation import (
    DEFAULT_OBSERVATION_CAP,
    Observation,
    add_note,
    make_observation,
)
from environments.acting.paths import PathGuard
from environments.acting.repl import PYTHON_REPL, repl_action
from environments.acting.tool_actions import tool_action
from environments.acting.validation import VALIDATE, validation_actions
from environments.record.backups import Backups
from environments.record.runs import RunDir, Step
from environments.record.snapshots import SnapshotError
from environments.task.sandboxing import code_mounts, sandbox_limits
from environments.task.spec import TaskSpec
from sandbox import Sandbox, SandboxError
from sandbox.base import SandboxLost
from sandbox.fs import WorkspaceError

__all__ = ["OPTIONAL_ACTIONS", "Environment", "code_mounts", "environment_for_run",
           "optional_actions", "optional_names", "sandbox_limits"]

log = logging.getLogger(__name__)

#: MLAgentBench's actions that are off by default (as in MLAgentBench): a run offers them only
#: when its configuration names them (``ActorConfig.enable_actions``, kept in ``run.json``)
OPTIONAL_ACTIONS = (PYTHON_REPL, REQUEST_HELP)


def optional_names(names: str | Iterable[str] | None) -> tuple[str, ...]:
    """The optional actions named (comma-separated text or a list; case, spaces, ``-`` and
    ``_`` aside: ``python-repl``), spelled as the registry spells them, in its order;
    ``ValueError`` naming any other name, so a typo is refused before a run starts."""
    if names is None:
        return ()
    given = names.split(",") if isinstance(names, str) else list(names)
    key = {_loose(n): n for n in OPTIONAL_ACTIONS}
    unknown = [n.strip() for n in given if n.strip() and _loose(n) not in key]
    if unknown:
        raise ValueError(f"no optional action {', '.join(map(repr, unknown))} (there are: "
                         f"{', '.join(OPTIONAL_ACTIONS)})")
    chosen = {key[_loose(n)] for n in given if n.strip()}
    return tuple(n for n in OPTIONAL_ACTIONS if n in chosen)


def _loose(name: str) -> str:
    return "".join(name.lower().replace("-", " ").replace("_", " ").split())


def optional_actions(names: Iterable[str], help_desk: HelpDesk | None = None) -> list[ActionSpec]:
    """The specs of the optional actions ``names`` enables (each with state of its own: build
    them once per Environment); Request Help is answered by ``help_desk`` (default: nobody)."""
    chosen = optional_names(names)
    specs = [repl_action()] if PYTHON_REPL in chosen else []
    if REQUEST_HELP in chosen:
        specs.append(help_action(help_desk or Unattended()))
    return specs


class Environment:
    def __init__(
        self,
        task: TaskSpec,
        workspace: Path,
        sandbox: Sandbox,
        *,
        run: RunDir | None = None,
        observation_cap: int = DEFAULT_OBSERVATION_CAP,
        extra_actions: Iterable[ActionSpec] = (),
    ) -> None:
        self.task = task
        self.workspace = Path(workspace)
        self.sandbox = sandbox
        self.run = run
        self.observation_cap = observation_cap
        self.guard = PathGuard(self.workspace, task.is_read_only)
        backups_dir = run.backups_dir if run else Path(tempfile.mkdtemp(prefix="labcoat-backups-"))
        self.backups = Backups(backups_dir, trace=run.trace_path if run else None)  # edits' steps
        self.actions: dict[str, ActionSpec] = {}
        offered = validation_actions(task)  # the task's declared feedback channel only
        for spec in [*LOW_LEVEL_ACTIONS, *(tool_action(t) for t in task.tools), *offered]:
            self.register(spec)
        for spec in extra_actions:
            if "".join(spec.name.lower().split()) == "".join(VALIDATE.lower().split()):
                raise ValueError(f"{VALIDATE!r} comes only from the task's [feedback] declaration")
            self.register(spec)
        steps = run.steps() if run else []
        self._session: list[Step] = []  # an unrecorded session's steps (a run keeps its trace)
        self.step_count = len(steps)
        self.last_step: Step | None = steps[-1] if steps else None
        self.done = bool(steps and steps[-1].is_final_answer)

    # --- the ActionContext handlers get (task, workspace, guard, backups, sandbox: attributes) --

    @property
    def sandbox_kind(self) -> str:
        """The backend the run was opened with (a fresh scoring sandbox must match it)."""
        return self.run.meta.sandbox if self.run is not None else self.sandbox.backend

    @property
    def run_folder(self) -> Path | None:
        return self.run.path if self.run is not None else None

    def steps(self) -> Sequence[BaseModel]:
        """The run's trace, read back (so it counts what earlier sessions did), else this
        unrecorded session's own steps."""
        return self.run.steps() if self.run is not None else list(self._session)

    def restorable(self, index: int) -> bool:
        """Whether step ``index``'s workspace can be restored: a recorded step whose snapshot
        was stored (one over the disk cap repeats the step before's files)."""
        if self.run is None or not 0 <= index <= self.step_count:
            return False
        try:
            return self.run.snapshots.load(f"{index:05d}").stored
        except (SnapshotError, OSError, ValueError):
            return False

    def restore_step(self, index: int, dest: Path | None = None) -> int:
        if self.run is None:
            raise ActionFailed("this session records no snapshots to restore")
        if not 0 <= index <= self.step_count:
            raise ActionFailed(f"there is no step {index}: the run has {self.step_count}")
        if not self.restorable(index):
            raise ActionFailed(f"step {index}'s snapshot was not stored (the workspace was over its "
                               "disk cap), so it cannot be restored")
        try:
            return self.run.restore(index, dest).count
        except SnapshotError as err:
            raise ActionFailed(str(err)) from err

    @property
    def step_index(self) -> int:
        return self.step_count + 1

    # --- what an actor may read of the workspace between its steps ------------------------------
    # An actor that plans from the files (the baseline agent) reads them here, never through
    # ``guard.fs``: its paths pass the same guard as an action's, and the reads wait for any
    # command of the sandbox to end, so a script still renaming files cannot race them.

    def read_text(self, name: str, limit: int) -> str:
        """The first ``limit`` bytes of the regular file ``name`` as text (bad UTF-8 replaced);
        :class:`~sandbox.fs.WorkspaceError` for a refused path, a missing file or anything but
        a regular file (a symlink is never followed)."""
        rel = self.guard.relative(name)
        with self.sandbox.files() as fs:
            return fs.read(rel, limit)[0].decode("utf-8", "replace")

    def file_kind(self, name: str) -> str | None:
        """What ``name`` is (``file``, ``dir``, ``symlink``, ...: :func:`sandbox.fs.kind_of`),
        by ``lstat``; None when missing; :class:`~environments.acting.paths.PathRefused` for a
        path the guard refuses."""
        rel = self.guard.relative(name)
        with self.sandbox.files() as fs:
            return fs.kind(rel)

    def list_folder(self, name: str = ".") -> list[tuple[str, str]]:
        """(entry name, its kind as :meth:`file_kind` says) for folder ``name``, sorted by name."""
        rel = self.guard.relative(name)
        with self.sandbox.files() as fs:
            return [(e.name, e.kind) for e in fs.listdir(rel)]

    def register(self, spec: ActionSpec) -> None:
        """Add an action (the agent adds its LLM-backed ones); the name must be new."""
        if spec.name in self.actions:
            raise ValueError(f"action {spec.name!r} is already registered")
        self.actions[spec.name] = spec

    def observe(self, text: str, **kw: Any) -> Observation:
        """An observation capped by this environment's setting (handlers build them here)."""
        return make_observation(text, self.observation_cap, **kw)

    def lookup(self, name: str) -> ActionSpec | None:
        """Exact name, else a case/space-insensitive match (models write 'list files')."""
        if name in self.actions:
            return self.actions[name]
        key = "".join(name.lower().split())
        for spec in self.actions.values():
            if "".join(spec.name.lower().split()) == key:
                return spec
        return None

    def _error(self, text: str) -> Observation:
        return self.observe(text, error=True)

    def _unknown_action(self, name: str) -> Observation:
        close = difflib.get_close_matches(name, list(self.actions), n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        names = ", ".join(self.actions)
        return self._error(f"Invalid action {name!r}.{hint} Valid actions are: {names}.")

    def execute(self, name: str, args: Any) -> Observation:
        """Run one action without recording it: the pure action -> observation part."""
        return self._execute(name, args)[0]

    def _execute(self, name: str, args: Any) -> tuple[Observation, BaseModel | None]:
        """The observation and the validated arguments (None when they never validated)."""
        if self.done:
            return self._error("The run has ended with a Final Answer; no further actions are taken."), None
        spec = self.lookup(name)
        if spec is None:
            return self._unknown_action(name), None
        try:
            parsed = spec.validate(args)
        except ActionInputError as err:
            return self._error(spec.invalid_input(err)), None
        start = time.perf_counter()
        try:
            with self.sandbox.files():  # the host's file actions never overlap a command
                obs = spec.handler(self, parsed)
        except (WorkspaceError, ActionFailed) as err:
            obs = self._error(f"{spec.name} failed: {err}")
        except SandboxLost:  # no observation: the run ends as an infrastructure failure (drive)
            raise
        except SandboxError as err:
            obs = self._error(f"{spec.name} failed in the sandbox (infrastructure error): {err}")
        except Exception as err:  # an action bug must not end the run
            # The actor sees no traceback or host path (they are the host's, not the task's);
            # the host's log keeps them.
            log.exception("action %s failed unexpectedly", spec.name)
            obs = self._error(f"{spec.name} failed unexpectedly ({type(err).__name__}); this is an "
                              f"error of labcoat's, not of the action input.")
        if not obs.seconds:
            obs.seconds = time.perf_counter() - start
        if obs.done:
            self.done = True
        return obs, parsed

    def step(
        self,
        action: str,
        args: Any = None,
        *,
        actor: str = "agent",
        meta: dict[str, Any] | None = None,
    ) -> Observation:
        """Act, then record the step: a run snapshots the workspace and appends it to the
        trace; an unrecorded session keeps it in memory (what :meth:`steps` returns)."""
        obs, parsed = self._execute(action, args)
        self.step_count += 1
        spec = self.lookup(action)
        snapshot, changed = None, []
        if self.run is not None:
            manifest = self.run.snapshot(self.step_count, cap_bytes=self.task.limits.disk_mb << 20)
            previous = self.run.snapshots.load(f"{self.step_count - 1:05d}")
            # What a snapshot left out is said once, when it changes; a refused snapshot, always.
            if manifest.notes and (not manifest.stored or manifest.notes != previous.notes):
                obs = add_note(obs, "\n".join(manifest.notes))
            snapshot, changed = manifest.label, manifest.changed_since(previous)
        self.last_step = Step(
            index=self.step_count,
            actor=actor,
            action=spec.name if spec else action,
            args=args if isinstance(args, (dict, str)) else {},
            observation=obs.text,
            observation_full=obs.full_text,
            truncated=obs.truncated,
            error=obs.error,
            exit_code=obs.exit_code,
            seconds=round(obs.seconds, 4),
            snapshot=snapshot,
            changed=changed,
            meta=meta or {},
            data=obs.data,
        )
        if self.run is None:
            self._session.append(self.last_step)
            return obs
        self.run.append(self.last_step)
        if obs.done and self.run.meta.final_answer is None:
            # from the validated arguments: the input may have been a JSON string
            self.run.meta.final_answer = str(getattr(parsed, "final_answer", ""))
            self.run.save_meta()
        return obs

def environment_for_run(
    run: RunDir,
    task: TaskSpec,
    *,
    sandbox_kind: str | None = None,
    extra_actions: Iterable[ActionSpec] = (),
    observation_cap: int | None = None,
    help_desk: HelpDesk | None = None,
) -> Environment:
    """An Environment over a run's workspace with the run's sandbox; close ``env.sandbox`` after.

    The one place a run's sandbox and environment are put together, for the headless runner
    and the TUI's human mode alike. The optional actions the run's configuration enables
    (``enable_actions``) are offered too, Request Help answered by ``help_desk``.
    """
    from sandbox import open_sandbox

    optional = optional_actions(optional_names(getattr(run.meta.config, "enable_actions", None)),
                                help_desk)
    sandbox = open_sandbox(sandbox_kind or run.meta.sandbox, run.workspace, sandbox_limits(task),
                           code_mounts())
    try:
        return Environment(task, run.workspace, sandbox, run=run,
                           extra_actions=[*extra_actions, *optional],
                           observation_cap=observation_cap or DEFAULT_OBSERVATION_CAP)
    except Exception:
        sandbox.close()
        raise

