"""What an actor sees after each action, and the one place observations are capped."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

DEFAULT_OBSERVATION_CAP = 10_000
CUT_MARK = "cut from the middle of this observation"


class Observation(BaseModel):
    """The result of one action.

    ``text`` is what the actor is shown (capped); ``full_text`` keeps the uncapped text for
    the trace when the cap cut something. ``done`` is set by Final Answer.
    """

    text: str
    full_text: str | None = None
    truncated: bool = False
    error: bool = False
    exit_code: int | None = None
    seconds: float = 0.0
    done: bool = False
    data: dict[str, Any] | None = Field(None, description="structured result (a tool's report)")


def settle_carriage_returns(text: str) -> str:
    """Each line as a terminal leaves it: a progress bar redrawn a hundred times with carriage
    returns (tqdm, pip) becomes its last state, not a hundred copies in the actor's prompt."""
    if "\r" not in text:
        return text
    return "\n".join(next((s for s in reversed(line.split("\r")) if s), "") for line in text.split("\n"))


def cap_text(text: str, cap: int) -> tuple[str, bool]:
    """Keep the head and the tail of ``text`` within ``cap`` characters, saying what was cut.

    The head usually holds the command and the first error; the tail holds the final metric,
    so both survive and the middle goes.
    """
    if cap <= 0 or len(text) <= cap:
        return text, False
    head = cap * 2 // 3
    tail = cap - head
    cut = len(text) - head - tail
    lines_cut = text[head : len(text) - tail].count("\n")
    note = f"\n\n[... {cut} characters ({lines_cut} lines) {CUT_MARK} ...]\n\n"
    return text[:head] + note + text[-tail:], True


def make_observation(text: str, cap: int, **kw: Any) -> Observation:
    shown, truncated = cap_text(text, cap)
    return Observation(text=shown, full_text=text if truncated else None, truncated=truncated, **kw)


def add_note(obs: Observation, note: str) -> Observation:
    """``obs`` with ``note`` after its text (past the cap, so it is never the part cut)."""
    extra = f"\n\n[{note}]"
    full = obs.full_text + extra if obs.full_text is not None else None
    return obs.model_copy(update={"text": obs.text + extra, "full_text": full})
