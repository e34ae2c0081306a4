"""Live progress of a headless run: a rich panel on a terminal, plain lines otherwise.

Everything shown here is the run's: script output, file names and model words, so any of it may
hold escape sequences or lone surrogates. Each line and cell passes through
:func:`tui.terminal_text.visible` (plain lines) or becomes a ``Text`` of it (the panel), and the
panel's console is the CLI's ``SafeConsole`` besides.
"""

from __future__ import annotations

import re
import sys
import time

from rich.console import Console
from rich.live import Live
from rich.table import Table

from agent.runner import RunHooks
from environments.runs import RunDir, Step
from tui.terminal_text import safe_text, visible


def _head(text: str, width: int = 100) -> str:
    first = next((line for line in text.splitlines() if line.strip()), "")
    return first[:width]


METRIC = re.compile(r"\b(acc|accuracy|loss|score|error|f1|auc|rmse|mae|perplexity|ppl|val\w*|test\w*)"
                    r"\b[^\n]{0,20}?[:=]\s*-?\d", re.I)
WRITES = {"Write File": "written", "Append File": "appended"}


def step_summary(step: Step, width: int = 100) -> str:
    """What a step did, in one line for a person watching the run.

    The observation's first line is usually boilerplate ("The script has been executed.
    Here is the output:"); say instead what happened: a script's last metric line (else its
    last output line) and exit code, a write's size, an edit's added and removed lines.
    """
    obs = step.observation or ""
    args = step.args if isinstance(step.args, dict) else {}
    if step.action in WRITES and isinstance(args.get("content"), str) and not step.error:
        content = args["content"]
        lines = len(content.splitlines())
        size = len(content.encode("utf-8", "surrogatepass"))  # a lone surrogate is 3 bytes too
        return _cut(f"{args.get('file_name', '?')}: {lines} line{'s' * (lines != 1)}, "
                    f"{human_bytes(size)} {WRITES[step.action]}", width)
    if step.action == "Execute Script" and "\n" in obs:
        output = [line.strip() for line in obs.split("\n", 1)[1].splitlines() if line.strip()]
        metrics = [line for line in output if METRIC.search(line)]
        shown = (metrics or output or [""])[-1]
        code = f"exit {step.exit_code}: " if step.exit_code else ""
        return _cut(code + shown, width)
    if step.action.startswith("Edit Script"):
        added = sum(1 for line in obs.splitlines() if line.startswith("+") and not line.startswith("+++"))
        removed = sum(1 for line in obs.splitlines() if line.startswith("-") and not line.startswith("---"))
        if added or removed:
            return _cut(f"{args.get('script_name', '')} edited: +{added} −{removed} lines".strip(), width)
    return _head(obs, width)


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def human_bytes(n: float) -> str:
    for unit in ("B", "kB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n:.1f} GB"


def count(n: int) -> str:
    """A token count for people: ``950``, ``12.3k``, ``1.2M`` (``--json`` keeps the number)."""
    if n < 1000:
        return str(n)
    return f"{n / 1000:.1f}k" if n < 1_000_000 else f"{n / 1_000_000:.1f}M"


def clock(seconds: float) -> str:
    """``H:MM:SS``, e.g. a budget's time left (the status line and the headless progress)."""
    secs = int(max(0.0, seconds))
    return f"{secs // 3600}:{secs % 3600 // 60:02d}:{secs % 60:02d}"


def isolation_mark(sandbox: str) -> str:
    """Said on every status line of a run whose code ran unisolated (``--sandbox none``)."""
    return "UNISOLATED (--sandbox none)" if sandbox == "none" else ""


def _left(run: RunDir) -> str:
    """What remains of the run's time and step budgets, e.g. ``, 41 steps, 3:52:10 left``."""
    left = run.meta.limits.left(run.meta.totals)
    parts = []
    if left.max_steps is not None:
        parts.append(f"{left.max_steps} steps")
    if left.max_time is not None:
        parts.append(clock(left.max_time))
    return f", {' '.join(parts)} left" if parts else ""


def ending(run: RunDir) -> str:
    """How the run ended; a stopped one says how to continue it, naming its folder."""
    line = f"{run.meta.status}: {run.meta.status_reason}"
    if run.meta.status in ("interrupted", "error"):
        line += f"\nrun dir: {run.path}\nresume: labcoat run --resume {run.path}"
    return line


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
        print(visible(f"[{run.meta.run_id}] step {step.index} {step.action}{flag}: {step_summary(step)} "
                      f"(tokens {count(t.tokens_in)}/{count(t.tokens_out)}, ${t.cost:.4f}, "
                      f"{t.seconds:.0f}s{_left(run)})"), file=self.stream, flush=True)

    def on_end(self, run: RunDir) -> None:
        print(visible(f"[{run.meta.run_id}] {ending(run)}"), file=self.stream)


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
                 f"{t.steps}/{limits.get('max_steps') or '∞'} · tokens {count(t.tokens_in)}/{count(t.tokens_out)}"
                 f"{token_cap} (cached {count(t.tokens_cached)}) · ${t.cost:.4f}{cost_cap} · {t.llm_calls} calls{left}")
        if mark := isolation_mark(meta.sandbox):
            title += f" · {mark}"
        table = Table(title=safe_text(title), expand=True)
        table.add_column("#", width=4)
        table.add_column("action", width=22)
        table.add_column("observation")
        table.add_column("s", width=6)
        for s in self.rows[-self.keep:]:
            style = "red" if s.error else ""
            table.add_row(str(s.index), safe_text(s.action), safe_text(step_summary(s, 200), style),
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
        self.console.print(safe_text(ending(run)))


def hooks_for(console: Console, quiet: bool) -> RunHooks:
    if quiet:
        return RunHooks()
    return LiveHooks(console) if console.is_terminal else PlainHooks()
