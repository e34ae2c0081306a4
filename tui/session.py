"""Driving a run from an interactive front end: a person's steps, or an agent under control.

The actors and their lifecycle live in ``agent/`` (``agent.human``: a person as an actor,
driven by ``drive`` like any other; ``agent.approval``: confirm mode as an approval policy).
What is left here is what a front end adds: form prefills for a person, and for an agent the
pause / single step / stop controls and the callbacks a UI forwards to its own thread. No
Textual here: the TUI's screens call these, and tests can too.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from agent.actor import Actor, Proposal, StoppedWhileWaiting
from agent.approval import ApprovingActor, Decision, PersonReview, ReviewSettings
from agent.config import ActorConfig
from agent.human import CLOSE_GRACE, HumanActor, HumanRun, RunOver
from agent.runner import RunHooks, drive
from environments.acting.actions import ActionSpec
from environments.acting.help_request import PersonDesk
from environments.acting.observation import Observation
from environments.record.runs import RunDir, Step
from environments.task.spec import TaskSpec
from sandbox.fs import WorkspaceError, WorkspaceFS

__all__ = ["AgentSession", "Decision", "HumanActor", "HumanSession", "RunOver",
           "StoppedWhileWaiting", "build_actor"]


class FormPrefills:
    """Forms that start filled, for a person acting by hand: in a run by hand
    (``HumanSession``) and in an agent run's human mode (``AgentSession``). Needs ``actions``,
    ``run`` and ``task``."""

    def suggested(self, action: str) -> dict[str, object]:
        """Values a form for ``action`` starts with, so a person edits rather than types:
        ``.`` for a folder, the task's solve script (else the first script) for a file, and
        that file's whole line range for Inspect Script Lines."""
        spec = self.actions.get(action)
        if spec is None:
            return {}
        fields = spec.args_model.model_fields
        script = self.main_script()
        out: dict[str, object] = {}
        if "dir_path" in fields:
            out["dir_path"] = "."
        for name in ("script_name", "file_name", "source"):
            if name in fields and script:
                out[name] = script
        if "start_line_number" in fields:
            out["start_line_number"] = 1
        if "end_line_number" in fields and script:
            out["end_line_number"] = max(1, self.line_count(script))
        return out

    def main_script(self) -> str | None:
        """The task's solve script when the workspace has it, else its first Python file.

        Read through ``WorkspaceFS`` like every host look at a workspace: a process left in
        the sandbox may have swapped the script for a link or a FIFO, and a form must neither
        follow the one nor hang the UI on the other."""
        fs = WorkspaceFS(self.run.workspace)
        for rel in self.task.solve:
            if fs.kind(rel) == "file":
                return rel
        first = [rel for rel, _ in fs.walk().files if rel.endswith(".py")]
        return first[0] if first else None

    def line_count(self, rel: str) -> int:
        """Lines in the workspace file ``rel`` (0 when it is not a regular file there)."""
        lines, last = 0, b"\n"
        try:
            for chunk in WorkspaceFS(self.run.workspace).chunks(rel):
                lines, last = lines + chunk.count(b"\n"), chunk[-1:]
        except (WorkspaceError, OSError):
            return 0
        return lines + (last != b"\n")


class HumanSession(FormPrefills, HumanRun):
    """A person acting on a recorded run, one action at a time, with forms that start filled
    (``HumanRun.start`` opens a new one)."""


class AgentSession(FormPrefills, RunHooks):
    """An actor driven in a background thread, with pause, single step, stop and confirm mode
    (confirm, yolo, or human: the person acts by hand, ``step``, until they switch back).

    ``on_step``/``on_end``/``on_proposal`` are called from the worker thread; a UI forwards
    them to its own thread (Textual: ``call_from_thread`` or posted messages).
    """

    def __init__(
        self,
        run: RunDir,
        task: TaskSpec,
        actor: Actor,
        *,
        on_step: Callable[[Step], None] = lambda s: None,
        on_end: Callable[[RunDir], None] = lambda r: None,
        on_proposal: Callable[[Proposal], None] | None = None,
        confirm: bool | ReviewSettings = False,
    ) -> None:
        self.run = run
        self.task = task
        self.on_step = on_step
        self.on_end_cb = on_end
        self.on_proposal = on_proposal or (lambda p: None)
        self._running = threading.Event()
        self._running.set()
        self._single = False
        #: seconds spent paused between steps, which ``drive`` leaves out of the run's time
        self.paused_seconds = 0.0
        # every run is reviewed, so confirm mode can be switched on at any time; a run started
        # without it runs in yolo mode with nothing asked (not even the Final Answer)
        if isinstance(confirm, ReviewSettings):
            settings = confirm
        else:
            settings = ReviewSettings(mode="confirm") if confirm else ReviewSettings(mode="yolo", ask_final=False)
        # the UI may set ``on_proposal`` after construction, so the review calls it late
        self.review = PersonReview(notify=lambda proposal: self.on_proposal(proposal), settings=settings,
                                   on_turn=lambda: self.on_turn())
        #: called (worker thread) when the run waits for the person's action in human mode
        self.on_turn: Callable[[], None] = lambda: None
        #: Request Help (when the run enables it) asks the person: the UI sets ``on_help``
        self.on_help: Callable[[str], None] = lambda request: None
        self.help_desk = PersonDesk(notify=lambda request: self.on_help(request))
        self.actor: Actor = ApprovingActor(actor, self.review)
        #: set once ``run_to_end`` has returned (the run ended and its sandbox closed)
        self.finished = threading.Event()
        if confirm:
            self._keep_settings()

    # --- review settings, from the UI thread ----------------------------------------------
    @property
    def settings(self) -> ReviewSettings:
        return self.review.settings

    @property
    def confirm(self) -> bool:
        return self.settings.mode == "confirm"

    def set_mode(self, mode: str) -> None:
        """Switch between ``confirm``, ``yolo`` and ``human`` (``PersonReview.set_mode``)."""
        self.review.set_mode(mode)
        self._keep_settings()

    # --- human mode: the person's hands, from the UI's worker threads ---------------------
    @property
    def actions(self) -> dict[str, ActionSpec]:
        """What the person may do by hand: the run's actions but the model's (in human mode
        no model is called); empty until the run has its Environment."""
        from agent.llm_actions import MODEL_ACTIONS

        env = getattr(self.actor, "env", None)
        return {} if env is None else {n: a for n, a in env.actions.items() if n not in MODEL_ACTIONS}

    def step(self, action: str, args: dict | str) -> Observation:
        """One action by hand (human mode), recorded with actor ``human``; returns its
        observation once recorded. ``RunOver`` once the run has ended."""
        return self.review.hands.act(action, args)

    def allow(self, action: str) -> None:
        """``action`` never asks again in this run (the Final Answer still does)."""
        if action not in self.settings.allowed:
            allowed = [*self.settings.allowed, action]
            self.review.settings = self.settings.model_copy(update={"allowed": allowed})
            self._keep_settings()

    def _keep_settings(self) -> None:
        """In the run folder, so that resuming the run (``u`` on Runs) reviews it the same way."""
        try:
            self.settings.save(self.run.path)
        except OSError:
            pass  # a run folder gone read-only: the session still reviews as asked

    # --- control, from the UI thread -------------------------------------------------------
    @property
    def paused(self) -> bool:
        return not self._running.is_set()

    def pause(self) -> None:
        self._running.clear()

    def resume(self) -> None:
        self._single = False
        self._running.set()

    def step_once(self) -> None:
        """Let exactly one more step happen, then pause again."""
        self._single = True
        self._running.set()

    def stop(self) -> None:
        self.stop_requested = True
        self._running.set()
        self.review.stop()  # a proposal waiting in confirm mode is not run
        self.help_desk.stop()  # nor does a help request wait for an answer

    def decide(self, decision: Decision) -> None:
        """Answer the proposal waiting in confirm mode."""
        self.review.decide(decision)

    @property
    def pending(self) -> Proposal | None:
        return self.review.pending

    # --- the worker thread ---------------------------------------------------------------
    def run_to_end(self) -> RunDir:
        """Blocking: drive the run until it ends. Call from a worker thread."""
        try:
            drive(self.run, self.task, self.actor, hooks=self)
        finally:
            self.finished.set()
        return self.run

    def close(self, grace: float = CLOSE_GRACE) -> None:
        """Stop the run and wait for ``drive`` to end (from any thread but the UI's): a step
        still running gets ``grace`` seconds, then its sandbox is closed under it, as
        ``HumanRun.close`` does for a person's run (quitting must not wait for a long script)."""
        self.stop()
        if self.finished.wait(grace):
            return
        env = getattr(self.actor, "env", None)
        if env is not None:
            env.sandbox.close()
        self.finished.wait(grace)

    def before_step(self, run: RunDir) -> None:
        if not self._running.is_set():
            began = time.perf_counter()
            self._running.wait()
            self.paused_seconds += time.perf_counter() - began

    def after_step(self, run: RunDir, step: Step | None) -> None:
        if self._single:
            self._single = False
            self._running.clear()
        if step is not None:
            self.on_step(step)

    def on_end(self, run: RunDir) -> None:
        if self.stop_requested and run.meta.status == "interrupted":
            run.meta.status_reason = "stopped by the user"  # not Ctrl-C (StoppedWhileWaiting)
            run.save_meta()
        self.review.hands.end(run.meta.status)  # an action by hand that waits: RunOver
        self.on_end_cb(run)


def build_actor(config: ActorConfig | str) -> Actor:
    """The actor for a configuration (or just a model string), by the factory ``labcoat run`` uses."""
    from agent.factory import make_actor

    return make_actor(config if isinstance(config, ActorConfig) else ActorConfig(model=config))
