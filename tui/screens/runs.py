"""The Runs screen: past runs with status, task, model and score; open one to replay it."""

from __future__ import annotations

import json
from pathlib import Path

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen, Screen
from textual.widgets import Button, DataTable, Header, Input, Label

from environments.record.runs import RunDir
from environments.reports.records import find_run_dirs
from environments.untrusted.words import gain
from environments.untrusted.words import metric as metric_text
from tui.terminal_text import safe_text, visible
from tui.widgets.footer import KeysFooter

RESUMABLE = ("interrupted", "error")


def run_dirs(runs_dir: Path, skipped: list[str] | None = None) -> list[RunDir]:
    """The runs in ``runs_dir`` (a newer labcoat's status read as ``unknown``); each folder
    whose run.json cannot be read is left out, and why appended to ``skipped``. Found as the
    Scores screen and ``labcoat report`` find them (``find_run_dirs``: a batch's and an
    uplift's runs lie folders deeper), so the two screens count the same runs."""
    runs = []
    if runs_dir.is_dir():
        for p in find_run_dirs(runs_dir):
            try:
                runs.append(RunDir.open(p, newer_ok=True))
            except (ValueError, OSError) as err:
                if skipped is not None:
                    skipped.append(str(err).splitlines()[0] if str(err) else type(err).__name__)
    return runs


def family_order(runs: list[RunDir]) -> list[tuple[RunDir, int]]:
    """``runs`` with each fork right under the run it was forked from, and its depth there
    (a fork whose parent is not in the list stands at the top level)."""
    ids = {r.meta.run_id for r in runs}
    children: dict[str | None, list[RunDir]] = {}
    for r in runs:
        parent = r.meta.fork.parent if r.meta.fork and r.meta.fork.parent in ids else None
        children.setdefault(parent, []).append(r)
    out: list[tuple[RunDir, int]] = []
    stack = [(r, 0) for r in reversed(children.get(None, []))]
    while stack:
        run, depth = stack.pop()
        out.append((run, depth))
        stack += [(c, depth + 1) for c in reversed(children.get(run.meta.run_id, []))]
    return out


def fork_step(run: RunDir) -> int:
    """Where "fork by hand" starts by default: the last step, or the one before a Final Answer."""
    steps = run.steps(trim=False)
    if steps and steps[-1].is_final_answer:
        return len(steps) - 1
    return len(steps)


def score_cells(run: RunDir) -> tuple[str, str]:
    """(the headline: improvement over the baseline and ✓ for a success, the raw metric).
    The headline comes first in the table, so a narrow terminal keeps it; a run scored with
    no known baseline has only its metric."""
    path = run.path / "score.json"
    if not path.exists():
        return "—", ""
    try:
        score = json.loads(path.read_text())
    except (OSError, ValueError):
        return "unreadable", ""
    if score.get("value") is None:  # the machine's failure is not the run's: said apart
        if score.get("failure") == "infrastructure":
            return "infra failure (not scored)", ""
        return f"failed ({score.get('failure')})", ""
    imp = score.get("improvement")
    mark = " ✓" if score.get("success") else ""
    return gain(imp) + (mark if imp is not None else ""), metric_text(score["value"])


class RunsScreen(Screen):
    HELP_TITLE = "Runs"
    HELP = """
Past runs in the runs folder, with status and score. Enter opens one to replay it step by
step; `c` scores its last step, `C` every step (the curve in the run's Score tab); `u`
resumes an interrupted or failed run with the same actor; `K` forks the run at a step you
choose and lets you continue it by hand (a new run whose first steps are the original's).
A fork is listed under the run it was forked from; `labcoat report family RUN_DIR`
compares the continuations.
"""
    BINDINGS = [Binding("enter", "open_run", "Open", id="runs.open"),
                Binding("c", "score", "Score", id="runs.score"),
                Binding("C", "score_all", "Score all steps", show=False, id="runs.score_all"),
                Binding("u", "resume", "Resume", id="runs.resume"),
                Binding("K", "fork", "Fork", id="runs.fork"),
                Binding("f5", "reload", "Reload", show=False, id="runs.reload")]

    def __init__(self, runs_dir: Path) -> None:
        super().__init__()
        self.runs_dir = runs_dir
        self.runs: list[RunDir] = []

    def compose(self) -> ComposeResult:
        yield Header()
        yield DataTable(id="runs-table", cursor_type="row", zebra_stripes=True)
        yield KeysFooter()

    def on_mount(self) -> None:
        self.title = "labcoat · runs"
        self.sub_title = self.runs_dir.name
        table = self.query_one("#runs-table", DataTable)
        # what a person scans for first (the result), then what tells runs apart (the id, a
        # fork's "(from K)"): at 80 columns these are what fits
        table.add_columns("improvement", "run", "steps", "status", "task", "agent / model", "metric")
        self.action_reload()

    def action_reload(self) -> None:
        table = self.query_one("#runs-table", DataTable)
        table.clear()
        skipped: list[str] = []
        ordered = family_order(run_dirs(self.runs_dir, skipped))
        if skipped:  # named, so a run that vanished from the list is explained
            self.notify(visible(f"skipped {len(skipped)} run folder{'s' * (len(skipped) > 1)} "
                                "it cannot read: " + "; ".join(skipped)),
                        severity="warning", timeout=15, markup=False)
        self.runs = [run for run, _ in ordered]
        for run, depth in ordered:
            m = run.meta
            name = ("  " * (depth - 1) + "└ " if depth else "") + m.run_id
            steps = str(m.totals.steps) + (f" (from {m.fork.step})" if m.fork else "")
            headline, metric = score_cells(run)
            cells = (headline, name, steps, m.status, m.task, m.model or m.agent, metric)
            table.add_row(*(safe_text(cell) for cell in cells))  # a str cell is markup to DataTable

    @property
    def selected(self) -> RunDir | None:
        table = self.query_one("#runs-table", DataTable)
        return self.runs[min(table.cursor_row, len(self.runs) - 1)] if self.runs else None

    @on(DataTable.RowSelected, "#runs-table")
    def action_open_run(self) -> None:
        if self.selected is not None:
            from tui.screens.run import RunScreen

            self.app.push_screen(RunScreen(self.selected))

    def action_score(self) -> None:
        if self.selected is not None:
            self.app.score_run(self.selected.path)

    def action_score_all(self) -> None:
        if self.selected is not None:
            self.app.score_run(self.selected.path, all_steps=True)

    def action_resume(self) -> None:
        """Continue an interrupted (or failed) run where it stopped, with the same actor."""
        run = self.selected
        if run is None:
            return
        if run.meta.status not in RESUMABLE:
            self.notify(f"{run.meta.run_id} is {run.meta.status}: only an interrupted or failed "
                        "run can be resumed", markup=False, severity="warning")
            return
        self.app.resume_run(run.path)

    def action_fork(self) -> None:
        """Ask for a step of the selected run, then continue from it by hand (a new run)."""
        run = self.selected
        if run is None:
            return

        def chosen(step: int | None) -> None:
            if step is not None:
                self.fork_by_hand(run.path, step)

        self.app.push_screen(ForkDialog(run.meta.run_id, fork_step(run), run.meta.totals.steps), chosen)

    @work(thread=True, exclusive=True, group="start")
    def fork_by_hand(self, run_path: Path, step: int) -> None:
        """Fork ``run_path`` at ``step`` into a person's run and open it live (a worker: the
        fork copies snapshots, and opening the session starts its sandbox)."""
        from tui.screens.run import open_fork_by_hand

        open_fork_by_hand(self, run_path, step)

    def on_screen_resume(self) -> None:
        """Back from a run (a fork made here, say): the list shows what changed."""
        if self.is_mounted:
            self.action_reload()

    def show_score(self, message) -> None:
        """A run was scored: its score cell changes (the cursor stays on the same row)."""
        table = self.query_one("#runs-table", DataTable)
        row = table.cursor_row
        self.action_reload()
        table.move_cursor(row=row)


class ForkDialog(ModalScreen[int | None]):
    """Which step to fork at: the step number, checked here against the run's range."""

    DEFAULT_CSS = """
    ForkDialog { align: center middle; }
    #fork-dialog { width: 80; height: auto; border: thick $primary; padding: 1 2; background: $surface; }
    #fork-dialog Horizontal { height: auto; }
    #fork-error { color: $error; }
    """
    BINDINGS = [Binding("escape", "cancel", "Cancel", id="fork.cancel")]

    def __init__(self, run_id: str, default: int, steps: int) -> None:
        super().__init__()
        self.run_id, self.default, self.last = run_id, default, steps

    def compose(self) -> ComposeResult:
        with Vertical(id="fork-dialog"):
            yield Label(Text(f"Fork {self.run_id} and continue by hand from step (0-{self.last}):"))
            yield Input(str(self.default), type="integer", id="fork-step")
            yield Label("", id="fork-error")
            with Horizontal():
                yield Button("Fork", id="fork-ok", variant="primary")
                yield Button("Cancel", id="fork-cancel")

    @on(Input.Submitted, "#fork-step")
    @on(Button.Pressed, "#fork-ok")
    def submit(self) -> None:
        text = self.query_one("#fork-step", Input).value.strip()
        if not text.lstrip("-").isdigit() or not 0 <= int(text) <= self.last:
            self.query_one("#fork-error", Label).update(Text(f"a step from 0 to {self.last}"))
            return
        self.dismiss(int(text))

    @on(Button.Pressed, "#fork-cancel")
    def action_cancel(self) -> None:
        self.dismiss(None)
