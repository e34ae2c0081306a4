"""Driving a run from an interactive front end: a person's steps, or an agent under control.

No Textual here: the TUI's screens call these, and tests can too. Both sessions act only
through ``Environment.step`` and the headless runner, so a TUI run is recorded and scored
exactly like a headless one.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from agent.actor import Actor, Proposal
from agent.config import ActorConfig
from agent.runner import RunHooks, create_run, drive
from environments.actions import ActionSpec
from environments.environment import Environment, environment_for_run
from environments.observation import Observation
from environments.runs import RunDir, Step
from environments.task import TaskSpec


class HumanActor:
    """Stands for the person at the keyboard in the run's metadata; proposes nothing itself."""

    kind = "human"

    def extra_actions(self) -> Sequence[ActionSpec]:
        return ()

    def start(self, env: Environment, history: Sequence[Step]) -> None:
        pass

    def propose(self, env: Environment) -> Proposal | None:
        return None

    def observe(self, proposal: Proposal, observation: Observation) -> None:
        pass


class HumanSession:
    """A person acting on a recorded run, one action at a time."""

    def __init__(self, run: RunDir, task: TaskSpec) -> None:
        self.run = run
        self.task = task
        self.env = environment_for_run(run, task)
        self._lock = threading.Lock()
        # a person's run counts wall time like an agent's: from opening it to closing it
        self._prior_seconds = run.meta.totals.seconds
        self._opened = time.perf_counter()
        run.meta.status = "running"
        run.save_meta()

    @classmethod
    def start(cls, task_ref: str | Path, runs_dir: Path, sandbox: str = "auto") -> HumanSession:
        run, task = create_run(task_ref, HumanActor(), runs_dir, sandbox=sandbox, agent="human")
        return cls(run, task)

    @property
    def actions(self) -> dict[str, ActionSpec]:
        return self.env.actions

    def step(self, action: str, args: dict | str) -> Observation:
        """One action through the Environment, recorded with actor ``human``."""
        with self._lock:
            obs = self.env.step(action, args, actor="human")
            self._count_time()
        if obs.done:
            self.close("finished", "final answer")
        return obs

    def close(self, status: str = "interrupted", reason: str = "closed by the user") -> None:
        if self.run.meta.status == "running":
            self._count_time()
            self.run.finish(status, reason)  # type: ignore[arg-type]
        self.env.sandbox.close()

    def _count_time(self) -> None:
        self.run.meta.totals.seconds = round(self._prior_seconds + time.perf_counter() - self._opened, 3)
        self.run.save_meta()

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
        """The task's solve script when the workspace has it, else its first Python file."""
        workspace = self.run.workspace
        for rel in self.task.solve:
            if (workspace / rel).is_file():
                return rel
        first = sorted(p.relative_to(workspace).as_posix() for p in workspace.rglob("*.py"))
        return first[0] if first else None

    def line_count(self, rel: str) -> int:
        try:
            return len((self.run.workspace / rel).read_text(errors="replace").splitlines())
        except OSError:
            return 0


class StoppedWhileWaiting(KeyboardInterrupt):
    """The person stopped the run while a proposal waited for them.

    ``drive`` checks for a stop only before asking the actor, and takes an actor that
    proposes nothing for one that finished; raised from ``propose``, this ends the run
    ``interrupted`` like Ctrl-C does (``AgentSession.on_end`` then says why).
    """


@dataclass
class Decision:
    """A person's verdict on a proposed action in confirm mode."""

    accept: bool
    args: dict | str | None = None
    reason: str = ""


@dataclass
class _Pending:
    proposal: Proposal
    done: threading.Event = field(default_factory=threading.Event)
    decision: Decision | None = None


class ConfirmingActor:
    """Wraps an actor so each proposed action waits for a person to accept, edit or reject it.

    A rejection is shown to the wrapped actor as an error observation (it proposes again) and
    noted in the ``meta`` of the next step actually taken, so the trace keeps it.
    """

    def __init__(self, inner: Actor, ask: Callable[[Proposal], Decision | None]) -> None:
        self.inner = inner
        self.kind = inner.kind
        self.ask = ask

    def extra_actions(self) -> Sequence[ActionSpec]:
        return self.inner.extra_actions()

    def start(self, env: Environment, history: Sequence[Step]) -> None:
        self.env = env  # the TUI builds the edit form from this run's own actions
        self.inner.start(env, history)

    def propose(self, env: Environment) -> Proposal | None:
        rejected: list[dict] = []
        while (proposal := self.inner.propose(env)) is not None:
            decision = self.ask(proposal)
            if decision is None:  # the session was stopped while waiting
                raise StoppedWhileWaiting
            if decision.accept:
                if decision.args is not None:
                    proposal = proposal.model_copy(update={"args": decision.args, "meta": {
                        **proposal.meta, "edited_by_human": True, "proposed_args": proposal.args}})
                if rejected:
                    proposal.meta["rejected"] = rejected
                return proposal
            rejected.append({"action": proposal.action, "args": proposal.args, "reason": decision.reason})
            note = f" Reason: {decision.reason}" if decision.reason else ""
            self.inner.observe(proposal, Observation(
                text=f"The human reviewer rejected this action; it was not run.{note} "
                     f"Propose a different action.", error=True))
        return None

    def observe(self, proposal: Proposal, observation: Observation) -> None:
        self.inner.observe(proposal, observation)


class AgentSession(RunHooks):
    """An actor driven in a background thread, with pause, single step, stop and confirm mode.

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
        confirm: bool = False,
    ) -> None:
        self.run = run
        self.task = task
        self.on_step = on_step
        self.on_end_cb = on_end
        self.on_proposal = on_proposal or (lambda p: None)
        self.confirm = confirm
        self._running = threading.Event()
        self._running.set()
        self._single = False
        self._pending: _Pending | None = None
        #: seconds spent paused between steps, which ``drive`` leaves out of the run's time
        self.paused_seconds = 0.0
        self.actor: Actor = ConfirmingActor(actor, self._ask) if confirm else actor

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
        if self._pending is not None:
            self._pending.done.set()

    def decide(self, decision: Decision) -> None:
        """Answer the proposal waiting in confirm mode."""
        pending = self._pending
        if pending is not None:
            pending.decision = decision
            pending.done.set()

    @property
    def pending(self) -> Proposal | None:
        return self._pending.proposal if self._pending else None

    # --- the worker thread ---------------------------------------------------------------
    def run_to_end(self) -> RunDir:
        """Blocking: drive the run until it ends. Call from a worker thread."""
        drive(self.run, self.task, self.actor, hooks=self)
        return self.run

    def _ask(self, proposal: Proposal) -> Decision | None:
        self._pending = _Pending(proposal)
        if self.stop_requested:  # stopped before the proposal was up: ``stop`` saw no pending
            self._pending = None
            return None
        self.on_proposal(proposal)
        self._pending.done.wait()
        decision = self._pending.decision
        self._pending = None
        return None if self.stop_requested else decision

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
        self.on_end_cb(run)


def build_actor(config: ActorConfig | str) -> Actor:
    """The actor for a configuration (or just a model string), by the factory ``labcoat run`` uses."""
    from agent.factory import make_actor

    return make_actor(config if isinstance(config, ActorConfig) else ActorConfig(model=config))
