"""Live progress of a headless run: a rich panel on a terminal, plain lines otherwise."""

from __future__ import annotations

import sys
import time

from rich.console import Console
from rich.live import Live
from rich.table import Table
from rich.text import Text

from agent.runner import RunHooks
from environments.runs import RunDir, Step


def _head(text: str, width: int = 100) -> str:
    first = next((line for line in text.splitlines() if line.strip()), "")
    return first[:width]


def clock(seconds: float) -> str:
    """``H:MM:SS``, e.g. a budget's time left (the status line and the headless progress)."""
    secs = int(max(0.0, seconds))
    return f"{secs // 3600}:{secs % 3600 // 60:02d}:{secs % 60:02d}"


def isolation_mark(sandbox: str) -> str:
    """Said on every status line of a run whose code ran unisolated (``--sandbox none``)."""
    return "UNISOLATED (--sandbox none)" if sandbox == "none" else ""


def _left(run: RunDir) -> str:
    """What remains of the run's time and step budgets, e.g. ``, 41 steps, 3:52:10 left``."""
    t, lim = run.meta.totals, run.meta.limits
    parts = []
    if lim.get("max_steps"):
        parts.append(f"{max(0, lim['max_steps'] - t.steps)} steps")
    if lim.get("max_time"):
        parts.append(clock(lim["max_time"] - t.seconds))
    return f", {' '.join(parts)} left" if parts else ""


class PlainHooks(RunHooks):
    """One line per step, for logs and pipes."""

    def __init__(self, stream=None) -> None:
        self.stream = stream or sys.stderr

    def after_step(self, run: RunDir, step: Step | None) -> None:
        if step is None:
            return
        t = run.meta.totals
        flag = " ERROR" if step.error else ""
        mark = isolation_mark(run.meta.sandbox)
        flag += f" {mark}" if mark else ""
        print(f"[{run.meta.run_id}] step {step.index} {step.action}{flag}: {_head(step.observation)} "
              f"(tokens {t.tokens_in}/{t.tokens_out}, ${t.cost:.4f}, {t.seconds:.0f}s{_left(run)})",
              file=self.stream, flush=True)

    def on_end(self, run: RunDir) -> None:
        print(f"[{run.meta.run_id}] {run.meta.status}: {run.meta.status_reason}", file=self.stream)


class LiveHooks(RunHooks):
    """A live table of the last steps with step, tokens, cost and time left."""

    def __init__(self, console: Console, keep: int = 12) -> None:
        self.console = console
        self.keep = keep
        self.rows: list[Step] = []
        self.started = time.monotonic()
        self.live = Live(console=console, refresh_per_second=4, transient=False)
        self.run: RunDir | None = None

    def _render(self) -> Table:
        meta = self.run.meta
        t = meta.totals
        limits = meta.limits
        left = _left(self.run)
        cost_cap = f"/${limits['max_cost']:g}" if limits.get("max_cost") else ""
        token_cap = f" of {limits['max_tokens']}" if limits.get("max_tokens") else ""
        title = (f"{meta.task} · {meta.agent}{' · ' + meta.model if meta.model else ''} · step "
                 f"{t.steps}/{limits.get('max_steps') or '∞'} · tokens {t.tokens_in}/{t.tokens_out}{token_cap} "
                 f"(cached {t.tokens_cached}) · ${t.cost:.4f}{cost_cap} · {t.llm_calls} calls{left}")
        if mark := isolation_mark(meta.sandbox):
            title += f" · {mark}"
        table = Table(title=title, expand=True)
        table.add_column("#", width=4)
        table.add_column("action", width=22)
        table.add_column("observation")
        table.add_column("s", width=6)
        for s in self.rows[-self.keep:]:
            style = "red" if s.error else ""
            table.add_row(str(s.index), s.action, Text(_head(s.observation, 200), style=style),
                          f"{s.seconds:.1f}")
        return table

    def before_step(self, run: RunDir) -> None:
        if self.run is None:
            self.run = run
            self.rows = run.steps()
            self.live.start()
            self.live.update(self._render())

    def after_step(self, run: RunDir, step: Step | None) -> None:
        if step is not None:
            self.rows.append(step)
        self.live.update(self._render())

    def on_end(self, run: RunDir) -> None:
        if self.run is not None:
            self.live.update(self._render())
            self.live.stop()
        self.console.print(f"[bold]{run.meta.status}[/]: {run.meta.status_reason}")


def hooks_for(console: Console, quiet: bool) -> RunHooks:
    if quiet:
        return RunHooks()
    return LiveHooks(console) if console.is_terminal else PlainHooks()
