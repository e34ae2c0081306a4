"""Approval: any actor's proposals pass a policy that approves, edits or rejects each one.

Confirm mode is one such policy (``PersonReview``: a person answers from another thread);
a rule, a second model or a test's script can be another, and the wrapped actor cannot tell.
What a person's review asks about is its :class:`ReviewSettings` (mode ``confirm``, ``yolo``
or ``human``, as mini-swe-agent's, the actions that never ask, whether the Final Answer
asks): changed at any time from the person's thread, and kept in the run folder
(``approval.json``) so that a resumed run asks as it did. In ``human`` mode the wrapped actor
is not asked at all: the person acts (``PersonReview.hands``, the ``HumanActor`` of a run by
hand) until they switch back, and those steps are recorded with actor ``human``.
What the policy said is kept in the trace: an edited step records the arguments first
proposed, and the rejections before a step are listed in that step's ``meta["rejected"]``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal, Protocol

from pydantic import BaseModel, Field, ValidationError

from agent.actor import REJECTED, Actor, Proposal, StoppedWhileWaiting
from agent.human import HumanActor
from environments.acting.actions import ActionSpec
from environments.acting.environment import Environment
from environments.acting.observation import Observation
from environments.record.runs import FINAL_ANSWER, RunDir, Step

__all__ = ["FINAL_ANSWER", "MODES", "REJECTED", "SETTINGS_FILE", "TOOK_OVER", "ApprovalPolicy",
           "ApprovingActor", "Decision", "PersonReview", "ReviewSettings", "taking_over"]

#: the action that ends a run: it asks even when its kind of action is allowed
#: the review's modes: ``confirm`` asks before each action, ``yolo`` runs them unasked,
#: ``human``: the person acts instead of the actor (which is not asked)
MODES = ("confirm", "yolo", "human")
#: the reason a proposal is not run when the person took over meanwhile (human mode)
TOOK_OVER = "the person took over (human mode)"
#: where a run keeps its review settings (read back by a resume)
SETTINGS_FILE = "approval.json"


class ReviewSettings(BaseModel):
    """What a person's review asks about. ``allowed``: actions that never ask in confirm mode
    (the Final Answer is not one of them while ``ask_final``); ``ask_final``: the Final Answer
    waits for the person even when allowed, as the last chance to keep the run going. Yolo mode
    clears it: a person who switched to yolo and walked away finds the run ended, not waiting."""

    mode: Literal["confirm", "yolo", "human"] = "confirm"
    allowed: list[str] = Field(default_factory=list)
    ask_final: bool = True

    def asks(self, action: str) -> bool:
        if action == FINAL_ANSWER and self.ask_final:
            return True
        return self.mode == "confirm" and action not in self.allowed

    def save(self, run_path: Path) -> None:
        (Path(run_path) / SETTINGS_FILE).write_text(self.model_dump_json(indent=2))

    @classmethod
    def load(cls, run_path: Path) -> ReviewSettings | None:
        """The settings a run kept; None for a run that never had a person reviewing (or an
        unreadable file: the run then resumes unreviewed, as it was started)."""
        path = Path(run_path) / SETTINGS_FILE
        try:
            return cls.model_validate_json(path.read_text())
        except (OSError, ValidationError):
            return None


class Decision(BaseModel):
    """A verdict on one proposal: approve it (as is, or with edited ``args``) or reject it."""

    accept: bool
    args: dict[str, Any] | str | None = None
    reason: str = ""

    @classmethod
    def approve(cls) -> Decision:
        return cls(accept=True)

    @classmethod
    def edit(cls, args: dict[str, Any] | str) -> Decision:
        return cls(accept=True, args=args)

    @classmethod
    def reject(cls, reason: str = "") -> Decision:
        return cls(accept=False, reason=reason)


class ApprovalPolicy(Protocol):
    def review(self, proposal: Proposal) -> Decision | None:
        """The verdict on ``proposal``; None when the run was stopped meanwhile."""
        ...


def taking_over(policy: ApprovalPolicy) -> Actor | None:
    """Who acts instead of the wrapped actor now (a person in human mode), if anyone: a
    policy may define ``takes_over() -> Actor | None``; most never do."""
    takes_over = getattr(policy, "takes_over", None)
    return takes_over() if callable(takes_over) else None


class ApprovingActor:
    """Wraps an actor so that each proposal is run only as its policy decides.

    A rejection is shown to the wrapped actor as an error observation (so it proposes again,
    inside the same ``propose``: no step is recorded for it) and listed in the ``meta`` of the
    next step actually taken. A policy that answers None ends the run ``interrupted``.

    While the policy hands the run to someone else (``takes_over``: a person in human mode),
    the wrapped actor is not asked; that one's proposals are run unreviewed and recorded as its
    own (``kind``, which ``drive`` reads for each step). The wrapped actor sees those steps only
    if it defines ``witness(proposal, observation)``: its ``observe`` is for its own proposals.
    """

    def __init__(self, inner: Actor, policy: ApprovalPolicy) -> None:
        self.inner = inner
        self.policy = policy
        self.env: Environment | None = None
        self._by: Actor | None = None  # who proposed the step being taken, when not ``inner``
        self._last_by: Actor | None = None  # who proposed the step just taken, when not ``inner``

    @property
    def kind(self) -> str:
        """The kind of whoever proposed the step ``drive`` is taking (recorded as its actor)."""
        return self._by.kind if self._by is not None else self.inner.kind

    def extra_actions(self) -> Sequence[ActionSpec]:
        return self.inner.extra_actions()

    @property
    def config_kind(self) -> str | None:
        return self.inner.config_kind

    def closing(self, env: Environment) -> Proposal | None:
        return self.inner.closing(env)

    def on_created(self, run: RunDir) -> None:
        self.inner.on_created(run)

    def __getattr__(self, name: str) -> Any:
        """Anything else of the wrapped actor's (its model, its tree) stays its own."""
        inner = self.__dict__.get("inner")
        if inner is None:
            raise AttributeError(name)
        return getattr(inner, name)

    def start(self, env: Environment, history: Sequence[Step]) -> None:
        self.env = env  # a reviewer builds its edit form from this run's own actions
        self.inner.start(env, history)

    def propose(self, env: Environment) -> Proposal | None:
        last, self._last_by = self._last_by, None
        if last is not None and callable(ready := getattr(last, "mark_ready", None)):
            ready()  # its step is recorded whoever acts next (a person's ``act`` returns)
        rejected: list[dict[str, Any]] = []
        while True:
            if (other := taking_over(self.policy)) is not None:
                if (proposal := other.propose(env)) is None:
                    continue  # handed back: ask the policy again who acts
                self._by = other
                return _approved(proposal, Decision.approve(), rejected)
            if (proposal := self.inner.propose(env)) is None:
                return None
            # a person who took over while the actor thought: its proposal is not run
            decision = (Decision.reject(TOOK_OVER) if taking_over(self.policy) is not None
                        else self.policy.review(proposal))
            if decision is None:
                raise StoppedWhileWaiting
            if decision.accept:
                return _approved(proposal, decision, rejected)
            rejected.append({"action": proposal.action, "args": proposal.args, "reason": decision.reason})
            note = f" Reason: {decision.reason}" if decision.reason else ""
            self.inner.observe(proposal, Observation(
                text=f"{REJECTED}{note} Propose a different action.", error=True))

    def observe(self, proposal: Proposal, observation: Observation) -> None:
        by, self._by = self._by, None
        self._last_by = by
        if by is None:
            self.inner.observe(proposal, observation)
            return
        by.observe(proposal, observation)
        witness = getattr(self.inner, "witness", None)
        if callable(witness):
            witness(proposal, observation)


def _approved(proposal: Proposal, decision: Decision, rejected: list[dict[str, Any]]) -> Proposal:
    """The proposal to run: edited arguments replace the proposed ones, which stay in ``meta``
    (arguments "edited" to what was proposed are no edit: nothing is marked)."""
    meta = dict(proposal.meta)
    if decision.args is not None and decision.args == proposal.args:
        decision = Decision.approve()
    if decision.args is not None:
        meta.update(edited_by_human=True, proposed_args=proposal.args)
    if rejected:
        meta["rejected"] = rejected
    args = proposal.args if decision.args is None else decision.args
    return proposal.model_copy(update={"args": args, "meta": meta})


class _Pending:
    def __init__(self, proposal: Proposal) -> None:
        self.proposal = proposal
        self.done = threading.Event()
        self.decision: Decision | None = None


class PersonReview:
    """Confirm mode's policy: each proposal waits until a person ``decide``s, from any thread.

    ``notify`` tells the person's side a proposal is up (a UI posts it to its own thread);
    ``stop`` answers a waiting proposal, and every later one, with None. A proposal that
    ``settings`` do not ask about (yolo mode, an allowed action) is approved at once. In human
    mode the person acts through ``hands`` (``HumanActor.act``; ``on_turn`` says when the run
    waits for them) and the wrapped actor is not asked.
    """

    def __init__(self, notify: Callable[[Proposal], None] = lambda p: None,
                 settings: ReviewSettings | None = None,
                 on_turn: Callable[[], None] = lambda: None) -> None:
        self.notify = notify
        self.settings = settings or ReviewSettings()
        self.stopped = False
        self._pending: _Pending | None = None
        self.hands = HumanActor(on_wait=lambda: on_turn())

    def takes_over(self) -> Actor | None:
        return self.hands if self.settings.mode == "human" and not self.stopped else None

    def set_mode(self, mode: str) -> None:
        """Switch modes from the person's thread (the next proposal follows). In yolo mode
        nothing asks, the Final Answer included; confirm and human mode ask it. Taking over
        answers a waiting proposal: it is rejected (not run) and the person acts instead;
        handing back wakes a ``hands.propose`` that waits, so the actor is asked again."""
        if mode not in MODES:
            raise ValueError(f"unknown mode {mode!r} (one of {', '.join(MODES)})")
        was = self.settings.mode
        self.settings = self.settings.model_copy(update={"mode": mode, "ask_final": mode != "yolo"})
        if mode == "human" and was != "human":
            self.decide(Decision.reject(TOOK_OVER))
        elif was == "human" and mode != "human":
            self.hands.release()

    @property
    def pending(self) -> Proposal | None:
        pending = self._pending
        return pending.proposal if pending else None

    def review(self, proposal: Proposal) -> Decision | None:
        if not self.stopped and not self.settings.asks(proposal.action):
            return Decision.approve()
        pending = self._pending = _Pending(proposal)
        if self.stopped:  # stopped before the proposal was up: ``stop`` saw nothing pending
            self._pending = None
            return None
        if self.settings.mode == "human":  # took over before the proposal was up: not run
            self._pending = None
            return Decision.reject(TOOK_OVER)
        self.notify(proposal)
        pending.done.wait()
        self._pending = None
        return None if self.stopped else pending.decision

    def decide(self, decision: Decision) -> None:
        """Answer the proposal that waits (if none does, the answer is dropped)."""
        pending = self._pending
        if pending is not None:
            pending.decision = decision
            pending.done.set()

    def stop(self) -> None:
        self.stopped = True
        self.hands.stop()  # a person's turn that waits ends the run interrupted
        pending = self._pending
        if pending is not None:
            pending.done.set()
