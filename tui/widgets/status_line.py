"""The run's status line: model, step k/N, tokens, cost, time left, retries."""

from __future__ import annotations

from textual.content import Content
from textual.widgets import Static

from environments.record.runs import Budgets, RunMeta
from tui.cli.display import clock, count, isolation_mark
from tui.terminal_text import visible


def status_text(meta: RunMeta, paused: bool = False, busy: str = "") -> Content:
    """The line as ``Content`` (the model string and task name are shown as typed, never read
    as markup). What matters most comes first, as a narrow terminal cuts the end: the task,
    the state, an unisolated run's warning, then the model, steps, tokens, cost, time left
    (the run's wall clock less its pauses, as the ``max_time`` budget counts it; an ended run
    has none). ``busy`` names the action by hand running now, in place of the state."""
    t = meta.totals
    limits = Budgets.model_validate(meta.budgets or {})  # a meta copied with plain limits too
    max_steps = limits.max_steps or "∞"
    live = meta.status in ("created", "running")
    state = "paused" if paused and meta.status == "running" else meta.status
    if busy and live:
        state = f"running {busy}…"
    parts: list[Content | str] = [Content.styled(visible(meta.task), "bold"), Content.styled(state, "bold")]
    if mark := isolation_mark(meta.sandbox):
        parts.append(Content.styled(mark, "bold red"))
    cached = f" (cached {count(t.tokens_cached)})" if t.tokens_cached else ""
    parts += [meta.model or meta.agent or meta.actor, f"step {t.steps}/{max_steps}",
              f"tokens {count(t.tokens_in)}/{count(t.tokens_out)}{cached}", f"${t.cost:.4f}"]
    if live and (left := limits.left(t).max_time) is not None:
        parts.append(f"{clock(left)} left")
    if t.retries:
        parts.append(f"retries {t.retries}")
    return Content(" · ").join(Content(visible(p)) if isinstance(p, str) else p for p in parts)


class StatusLine(Static):
    def show(self, meta: RunMeta, paused: bool = False, busy: str = "") -> None:
        self.update(status_text(meta, paused, busy))
