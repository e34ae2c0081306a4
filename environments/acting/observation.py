"""What an actor sees after each action, and the one place observations are capped."""

from __future__ import annotations

from typing import Any, Literal

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


class ActionFacts(BaseModel):
    """What a built-in action's observation reports, as data (``Observation.data``), so that its
    readers (the agent's one-line history, a view) never parse the observation's wording, which
    may change and is capped. Unset facts are left out of the record."""

    outcome: Literal["ok", "exit", "timeout", "oom"] | None = Field(
        None, description="how a script ended: exit code 0, another code, killed at its time limit, out of memory")
    exit_code: int | None = None
    output_lines: int | None = Field(None, description="lines the script printed (stdout and stderr)")
    output_tail: str | None = Field(None, description="its last non-empty lines, within TAIL_CHARS")
    lines_total: int | None = Field(None, description="lines in the file")
    first_line: int | None = Field(None, description="the first line shown (1-based)")
    last_line: int | None = Field(None, description="the last line shown")
    size_bytes: int | None = Field(None, description="the file's size")
    shown_bytes: int | None = Field(None, description="bytes of it read and shown")
    added: int | None = Field(None, description="an edit's lines added (the whole diff, however it is cut)")
    removed: int | None = Field(None, description="an edit's lines removed")
    truncated: bool = Field(False, description="the observation's text was cut to the cap")

    def record(self) -> dict[str, Any]:
        return self.model_dump(exclude_none=True, exclude_defaults=True)


TAIL_CHARS = 500


def last_lines(text: str, chars: int = TAIL_CHARS, sep: str = "\n") -> str:
    """As many of the last non-empty lines of ``text`` as fit in ``chars``, in order, joined by
    ``sep``; the very last always, whole (a script's final numbers or its error)."""
    kept: list[str] = []
    used = 0
    for line in reversed([x for x in text.splitlines() if x.strip()]):
        if kept and used + len(line) + len(sep) > chars:
            break
        kept.insert(0, line)
        used += len(line) + len(sep)
    return sep.join(kept)


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


def make_observation(text: str, cap: int, facts: ActionFacts | None = None, **kw: Any) -> Observation:
    """``text`` capped; ``facts`` (a built-in action's) become its ``data``, with the cut noted."""
    shown, truncated = cap_text(text, cap)
    if facts is not None:
        kw["data"] = facts.model_copy(update={"truncated": truncated}).record()
    return Observation(text=shown, full_text=text if truncated else None, truncated=truncated, **kw)


def add_note(obs: Observation, note: str) -> Observation:
    """``obs`` with ``note`` after its text (past the cap, so it is never the part cut)."""
    extra = f"\n\n[{note}]"
    full = obs.full_text + extra if obs.full_text is not None else None
    return obs.model_copy(update={"text": obs.text + extra, "full_text": full})
