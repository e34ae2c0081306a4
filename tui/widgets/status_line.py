"""The run's status line: model, step k/N, tokens, cost, time left, retries."""

from __future__ import annotations

from textual.widgets import Static

from environments.runs import RunMeta
from tui.display import clock, isolation_mark


def status_text(meta: RunMeta, paused: bool = False) -> str:
    t = meta.totals
    limits = meta.limits or {}
    max_steps = limits.get("max_steps") or "∞"
    parts = [
        f"[b]{meta.task}[/b]",
        meta.model or meta.agent or meta.actor,
        f"step {t.steps}/{max_steps}",
        f"tokens {t.tokens_in}/{t.tokens_out} (cached {t.tokens_cached})",
        f"${t.cost:.4f}",
    ]
    if limits.get("max_time"):
        parts.append(f"{clock(limits['max_time'] - t.seconds)} left")
    if t.retries:
        parts.append(f"retries {t.retries}")
    if mark := isolation_mark(meta.sandbox):
        parts.append(f"[b red]{mark}[/b red]")
    state = "paused" if paused and meta.status == "running" else meta.status
    parts.append(f"[b]{state}[/b]")
    return " · ".join(parts)


class StatusLine(Static):
    def show(self, meta: RunMeta, paused: bool = False) -> None:
        self.update(status_text(meta, paused))
