"""Driving a run from an interactive front end: a person's steps, or an agent under control.

No Textual here: the TUI's screens call these, and tests can too. Both sessions act only
through ``Environment.step`` and the headless runner, so a TUI run is recorded and scored
exactly like a headless one.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from agent.actor import Actor, Proposal
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
        if obs.done:
            self.close("finished", "final answer")
        return obs

    def close(self, status: str = "interrupted", reason: str = "closed by the user") -> None:
        if self.run.meta.status == "running":
            self.run.finish(status, reason)  # type: ignore[arg-type]
        self.env.sandbox.close()


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
                return None
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
        self.on_proposal(proposal)
        self._pending.done.wait()
        decision = self._pending.decision
        self._pending = None
        return None if self.stop_requested else decision

    def before_step(self, run: RunDir) -> None:
        self._running.wait()

    def after_step(self, run: RunDir, step: Step | None) -> None:
        if self._single:
            self._single = False
            self._running.clear()
        if step is not None:
            self.on_step(step)

    def on_end(self, run: RunDir) -> None:
        self.on_end_cb(run)


def build_actor(model: str) -> Actor:
    """The actor for a model string (the same factory ``labcoat run --model`` uses)."""
    from agent.factory import make_actor

    return make_actor(None, model=model)
