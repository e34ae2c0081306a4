"""The Request Help action (MLAgentBench's, off by default): the actor asks the person.

Who answers is a :class:`HelpDesk`, chosen by whoever drives the run: in the TUI a
:class:`PersonDesk` (the question shown, the run waiting for the person's answer); headless an
:class:`Unattended` desk (a clear refusal: nobody is there), or :class:`ScriptedAnswers` read
from a file (``--help-answers FILE``: answered in order, for scripted runs and tests).
MLAgentBench offered the action only in its interactive mode; here it is offered when the run
enables it, and a run with nobody attending says so instead of waiting forever.

Each step records who answered (``Observation.data["answered_by"]``), so a resumed run reading
a file goes on with the next answer rather than the first.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Annotated, Protocol

from pydantic import Field

from environments.acting.actions import (
    LONG,
    ActionArgs,
    ActionContext,
    ActionSpec,
    Brief,
)
from environments.acting.observation import Observation
from environments.untrusted.bounded import LimitError, loads_json

REQUEST_HELP = "Request Help"
UNATTENDED = "No person is attending this run; decide yourself."
NO_MORE = "The scripted answers are used up and no person is attending this run; decide yourself."
DECLINED = "The person gave no answer; decide yourself."
ANSWERED = "The person answered:\n"
MAX_FILE = 1 << 20  # bytes of an answers file
MAX_ANSWER = 20_000  # characters of one answer


class HelpError(ValueError):
    """An answers file that cannot be used (missing, too large, not the expected shape)."""


class HelpArgs(ActionArgs):
    request: Annotated[str, Brief("what you need from the person, in detail"), LONG] = Field(
        description="a detailed description on what to do")


class HelpDesk(Protocol):
    """Whoever answers a run's help requests. ``kind`` is recorded with each answer."""

    kind: str

    def ask(self, request: str, answered_before: int) -> str | None:
        """The answer to ``request``, or None for none. ``answered_before``: this run's
        earlier requests this kind of desk answered (the trace's count, resumes included)."""


class Unattended:
    """Headless with no answers file: nobody to ask."""

    kind = "nobody"

    def ask(self, request: str, answered_before: int) -> str | None:
        return None


class ScriptedAnswers:
    """Answers from a file, in order: a JSON list of strings, or JSON Lines, each a string or
    ``{"answer": "..."}``. The n-th request of the run gets the n-th answer."""

    kind = "file"

    def __init__(self, answers: Sequence[str], source: Path | None = None) -> None:
        self.answers, self.source = list(answers), source

    @classmethod
    def from_file(cls, path: str | Path) -> ScriptedAnswers:
        path = Path(path)
        try:
            data = path.read_bytes()[:MAX_FILE + 1]
        except OSError as err:
            raise HelpError(f"{path}: cannot read the help answers ({err.strerror or err})") from None
        if len(data) > MAX_FILE:
            raise HelpError(f"{path}: a help answers file may hold at most {MAX_FILE} bytes")
        text = data.decode("utf-8", "replace")
        try:
            if text.lstrip().startswith("["):
                items = loads_json(text, max_bytes=MAX_FILE, max_depth=3, what=str(path))
            else:
                items = [loads_json(line, max_bytes=MAX_FILE, max_depth=2, what=f"{path}:{n}")
                         for n, line in enumerate(text.splitlines(), 1) if line.strip()]
        except LimitError as err:
            raise HelpError(str(err)) from None
        if not isinstance(items, list):
            raise HelpError(f"{path}: expected a JSON list of answers or JSON Lines")
        return cls([_answer(item, path, n) for n, item in enumerate(items, 1)], path)

    def ask(self, request: str, answered_before: int) -> str | None:
        return self.answers[answered_before] if answered_before < len(self.answers) else None


def _answer(item: object, path: Path, n: int) -> str:
    if isinstance(item, dict) and isinstance(item.get("answer"), str):
        item = item["answer"]
    if not isinstance(item, str):
        raise HelpError(f'{path}: answer {n} must be a string or {{"answer": "..."}}')
    return item[:MAX_ANSWER]


class PersonDesk:
    """A person answers from another thread (a UI's): ``ask`` blocks the run until
    :meth:`answer`, or :meth:`stop` (the run is being stopped: no answer)."""

    kind = "person"

    def __init__(self, notify: Callable[[str], None] = lambda request: None) -> None:
        self.notify = notify
        self.stopped = False
        self._lock = threading.Lock()
        self._waiting: tuple[str, threading.Event, list[str | None]] | None = None

    @property
    def pending(self) -> str | None:
        """The request waiting for an answer, if one is."""
        waiting = self._waiting
        return waiting[0] if waiting else None

    def ask(self, request: str, answered_before: int) -> str | None:
        done, box = threading.Event(), [None]
        with self._lock:
            if self.stopped:
                return None
            self._waiting = (request, done, box)
        self.notify(request)
        done.wait()
        self._waiting = None
        return box[0]

    def answer(self, text: str | None) -> None:
        """Answer the waiting request (None: decline); dropped when none waits."""
        with self._lock:
            waiting = self._waiting
        if waiting is not None:
            waiting[2][0] = None if text is None else text[:MAX_ANSWER]
            waiting[1].set()

    def stop(self) -> None:
        with self._lock:
            self.stopped = True
        self.answer(None)


def _answered_before(ctx: ActionContext, kind: str) -> int:
    return sum(1 for s in ctx.steps() if getattr(s, "action", None) == REQUEST_HELP
               and (getattr(s, "data", None) or {}).get("answered_by") == kind)


def help_action(desk: HelpDesk) -> ActionSpec:
    """The Request Help action, answered by ``desk``."""

    def request_help(ctx: ActionContext, a: HelpArgs) -> Observation:
        answer = desk.ask(a.request, _answered_before(ctx, desk.kind))
        if answer is None:
            refusal = {"nobody": UNATTENDED, "file": NO_MORE}.get(desk.kind, DECLINED)
            return ctx.observe(refusal, data={"answered_by": None})
        return ctx.observe(ANSWERED + answer, data={"answered_by": desk.kind})

    return ActionSpec(
        REQUEST_HELP, "Use this to request help from the person overseeing the run. Use it only "
        "when the provided tools and files are not enough for a necessary step (an API "
        "reference, a library to install); check them first. If nobody attends the run, the "
        "observation says so.", HelpArgs, request_help,
        brief="ask the person (only when the tools and files are not enough)")
