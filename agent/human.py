"""A person as an actor: their actions arrive from another thread and go through ``drive``.

A person's run is an ordinary run: the same ``drive`` loop creates the Environment, restores
the workspace on resume, checks the budgets, records the trace and says how it ended. The
only difference is where proposals come from. ``drive`` blocks in ``propose`` until the
person (a TUI form, a script, a test) hands one over with ``HumanActor.act``, which returns
the observation once the step is recorded. ``HumanRun`` runs that ``drive`` in a thread, so
any front end (or none) can act by hand without knowing about threads.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Sequence
from typing import Any

from agent.actor import Actor, BaseActor, Proposal, StoppedWhileWaiting
from agent.runner import RunHooks, drive
from environments.acting.actions import ActionSpec
from environments.acting.environment import Environment
from environments.acting.observation import Observation
from environments.record.runs import RunDir, RunStatus, Step
from environments.task.spec import TaskSpec

__all__ = ["HumanActor", "HumanRun", "RunOver"]

#: how long ``HumanRun.close`` lets a running step finish before it closes the sandbox under it
CLOSE_GRACE = 2.0
#: what ``release`` queues: a waiting ``propose`` returns None (the person handed the run back)
_HANDED_BACK = Proposal(action="")


class RunOver(RuntimeError):
    """The run has ended (a budget, an error, a close): the person's action was not taken."""


class HumanActor(BaseActor):
    """The person at the keyboard, as an ``Actor`` whose proposals come through a queue.

    Two threads meet here: the one running ``drive`` (the Actor side: ``propose`` blocks until
    a proposal arrives) and the person's (``act``: hand over one proposal, wait for its
    observation). ``stop`` makes a waiting ``propose`` raise ``StoppedWhileWaiting``; ``end``
    (called when ``drive`` is over) makes a waiting ``act`` raise ``RunOver``, so neither side
    can be left waiting for the other.

    The same actor is the person's hands in an agent run's human mode (``agent.approval``):
    there ``release`` hands the run back to the agent (a waiting ``propose`` returns None) and
    ``on_wait`` tells the person's side that the run waits for them.
    """

    kind = "human"

    def __init__(self, on_wait: Callable[[], None] = lambda: None) -> None:
        self.on_wait = on_wait
        self._proposals: queue.Queue[Proposal | None] = queue.Queue()
        self._observations: queue.Queue[Observation | None] = queue.Queue()
        # set while ``propose`` waits for the next proposal, and once the run is over: the
        # moment after a step when the run's records are complete
        self._ready = threading.Event()
        self._started = threading.Event()
        self._act_lock = threading.Lock()
        self.env: Environment | None = None
        self.ended = False
        self.end_reason = ""

    # --- the Actor protocol, called by drive's thread -------------------------------------
    def extra_actions(self) -> Sequence[ActionSpec]:
        return ()

    def start(self, env: Environment, history: Sequence[Step]) -> None:
        self.env = env
        self._started.set()

    def propose(self, env: Environment) -> Proposal | None:
        self.mark_ready()
        self.on_wait()
        proposal = self._proposals.get()
        self._ready.clear()
        if proposal is None:
            raise StoppedWhileWaiting
        return None if proposal is _HANDED_BACK else proposal

    def mark_ready(self) -> None:
        """The run's records are complete up to now (``drive`` asks for its next action, from
        this actor or, in an agent run's human mode, from the agent): a waiting ``act`` returns."""
        self._ready.set()

    def observe(self, proposal: Proposal, observation: Observation) -> None:
        self._observations.put(observation)

    # --- the person's side, from any other thread -----------------------------------------
    def wait_started(self, timeout: float | None = None) -> bool:
        """Until ``drive`` has made the Environment (``env``), or ended without one (False)."""
        self._started.wait(timeout)  # ``end`` sets it too
        return self.env is not None

    def act(self, action: str, args: dict[str, Any] | str,
            meta: dict[str, Any] | None = None) -> Observation:
        """Take one action and return its observation once the step is recorded (and the run
        has either asked for the next action or ended). ``RunOver`` if it ended before."""
        with self._act_lock:
            if self.ended:
                raise RunOver(self.ended_message())
            self._proposals.put(Proposal(action=action, args=args, meta=meta or {}))
            observation = self._observations.get()
            if observation is None:
                raise RunOver(self.ended_message())
            self._ready.wait()
            return observation

    def stop(self) -> None:
        """End a ``propose`` that waits (now, or the next one): the run ends interrupted."""
        self._proposals.put(None)

    def release(self) -> None:
        """A ``propose`` that waits (now, or the next one) returns None without a step: in an
        agent run's human mode, the person handed the run back to the agent."""
        self._proposals.put(_HANDED_BACK)

    def end(self, reason: str = "") -> None:
        """``drive`` is over: release whoever waits on this actor, now and later."""
        self.ended = True
        self.end_reason = self.end_reason or reason
        self._observations.put(None)
        self._started.set()
        self._ready.set()

    def ended_message(self) -> str:
        return f"the run has ended ({self.end_reason})" if self.end_reason else "the run has ended"


class HumanRun(RunHooks):
    """A person's run: ``drive`` over a ``HumanActor`` in a background thread.

    Opening it starts (or resumes) the run and returns once the Environment exists; ``step``
    acts and returns the observation; ``close`` ends the run ``interrupted`` (unless it
    already ended). Budgets apply as to any actor, so a step can end the run (``ended``).
    """

    def __init__(self, run: RunDir, task: TaskSpec, actor: Actor | None = None) -> None:
        """``actor``: the one :mod:`agent.session` built when it began, resumed or forked the
        run by hand (``ActorConfig(kind="human")``)."""
        if actor is not None and not isinstance(actor, HumanActor):
            raise TypeError(f"{run.meta.run_id} is not a run by hand (its actor is {actor.kind})")
        self.run = run
        self.task = task
        self.actor = actor or HumanActor()
        self._close_as: tuple[RunStatus, str] | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._drive, daemon=True,
                                        name=f"labcoat-human-{run.meta.run_id}")
        self._thread.start()
        self.actor.wait_started()
        if self.actor.env is None:  # drive ended before it asked anything (a setup error)
            self._thread.join()
            raise self._error or RunOver(self.actor.ended_message())
        self.env: Environment = self.actor.env

    def _drive(self) -> None:
        try:
            drive(self.run, self.task, self.actor, hooks=self)
        except BaseException as err:  # noqa: BLE001 - re-raised to the opener or reported by act
            self._error = err
        finally:
            self.actor.end(self._reason())

    def _reason(self) -> str:
        meta = self.run.meta
        return f"{meta.status}: {meta.status_reason}" if meta.status_reason else meta.status

    # --- RunHooks, from drive's thread ---------------------------------------------------
    def on_end(self, run: RunDir) -> None:
        if self._close_as is not None and run.meta.status == "interrupted":
            run.meta.status, run.meta.status_reason = self._close_as  # not Ctrl-C: a close
            run.save_meta()
        self.actor.end(self._reason())

    # --- the person's side ---------------------------------------------------------------
    @property
    def actions(self) -> dict[str, ActionSpec]:
        return self.env.actions

    @property
    def ended(self) -> bool:
        return self.actor.ended

    def step(self, action: str, args: dict | str) -> Observation:
        """One action through ``drive``, recorded with actor ``human``; ``RunOver`` once the
        run has ended (chained to the host error that ended it, if one did)."""
        try:
            return self.actor.act(action, args)
        except RunOver as over:
            if self._error is not None:
                raise over from self._error
            raise

    def close(self, status: RunStatus = "interrupted", reason: str = "closed by the user") -> None:
        """End the run as ``status`` (if it is still live) and wait for ``drive`` to finish.

        A step still running gets ``CLOSE_GRACE`` seconds; then its sandbox is closed under it
        (its command killed), as closing a window should not wait for a long script.
        """
        if self._thread.is_alive():
            self._close_as = (status, reason)
            self.stop_requested = True  # seen by drive between steps
            self.actor.stop()  # and by a propose that waits for the person
            self._thread.join(CLOSE_GRACE)
            if self._thread.is_alive():
                self.env.sandbox.close()
                self._thread.join(CLOSE_GRACE)
