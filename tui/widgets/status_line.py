"""The run's status line: model, step k/N, tokens, cost, time left, retries."""

from __future__ import annotations

from textual.content import Content
from textual.widgets import Static

from environments.runs import RunMeta
from tui.cli.display import clock, count, isolation_mark


def status_text(meta: RunMeta, paused: bool = False) -> Content:
    """The line as ``Content`` (the model string and task name are shown as typed, never read
    as markup). What matters most comes first, as a narrow terminal cuts the end: the task,
    the state, an unisolated run's warning, then the model, steps, tokens, cost, time left
    (the run's wall clock less its pauses, as the ``max_time`` budget counts it)."""
    t = meta.totals
    limits = meta.limits or {}
    max_steps = limits.get("max_steps") or "∞"
    state = "paused" if paused and meta.status == "running" else meta.status
    parts: list[Content | str] = [Content.styled(meta.task, "bold"), Content.styled(state, "bold")]
    if mark := isolation_mark(meta.sandbox):
        parts.append(Content.styled(mark, "bold red"))
    cached = f" (cached {count(t.tokens_cached)})" if t.tokens_cached else ""
    parts += [meta.model or meta.agent or meta.actor, f"step {t.steps}/{max_steps}",
              f"tokens {count(t.tokens_in)}/{count(t.tokens_out)}{cached}", f"${t.cost:.4f}"]
    if limits.get("max_time"):
        parts.append(f"{clock(limits['max_time'] - t.seconds)} left")
    if t.retries:
        parts.append(f"retries {t.retries}")
    return Content(" · ").join(parts)


class StatusLine(Static):
    def show(self, meta: RunMeta, paused: bool = False) -> None:
        self.update(status_text(meta, paused))
