"""The Runs screen: past runs with status, task, model and score; open one to replay it."""

from __future__ import annotations

import json
from pathlib import Path

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Header

from environments.runs import RunDir

RESUMABLE = ("interrupted", "error")


def load_runs(runs_dir: Path) -> list[RunDir]:
    runs = []
    if runs_dir.is_dir():
        for p in sorted(runs_dir.iterdir()):
            if (p / "run.json").exists():
                try:
                    runs.append(RunDir.open(p))
                except (ValueError, OSError):
                    continue
    return runs


def score_cell(run: RunDir) -> str:
    path = run.path / "score.json"
    if not path.exists():
        return "—"
    score = json.loads(path.read_text())
    if score.get("value") is None:
        return f"failed ({score.get('failure')})"
    imp = score.get("improvement")
    mark = " ✓" if score.get("success") else ""
    return f"{score['value']:.4g}" + ("" if imp is None else f" ({imp:+.0%}){mark}")


class RunsScreen(Screen):
    HELP_TITLE = "Runs"
    HELP = """
Past runs in the runs folder, with status and score. Enter opens one to replay it step by
step; `c` scores its last step, `C` every step (the curve in the run's Score tab); `u`
resumes an interrupted or failed run with the same actor.
"""
    BINDINGS = [Binding("enter", "open_run", "Open", id="runs.open"),
                Binding("c", "score", "Score", id="runs.score"),
                Binding("C", "score_all", "Score all steps", id="runs.score_all"),
                Binding("u", "resume", "Resume", id="runs.resume"),
                Binding("f5", "reload", "Reload", id="runs.reload")]

    def __init__(self, runs_dir: Path) -> None:
        super().__init__()
        self.runs_dir = runs_dir
        self.runs: list[RunDir] = []

    def compose(self) -> ComposeResult:
        yield Header()
        yield DataTable(id="runs-table", cursor_type="row", zebra_stripes=True)
        yield Footer()

    def on_mount(self) -> None:
        self.title = "labcoat · runs"
        self.sub_title = self.runs_dir.name
        table = self.query_one("#runs-table", DataTable)
        table.add_columns("run", "status", "task", "agent / model", "steps", "score")
        self.action_reload()

    def action_reload(self) -> None:
        table = self.query_one("#runs-table", DataTable)
        table.clear()
        self.runs = load_runs(self.runs_dir)
        for run in self.runs:
            m = run.meta
            cells = (m.run_id, m.status, m.task, m.model or m.agent, str(m.totals.steps),
                     score_cell(run))
            table.add_row(*(Text(cell) for cell in cells))  # a str cell is markup to DataTable

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

    def show_score(self, message) -> None:
        """A run was scored: its score cell changes (the cursor stays on the same row)."""
        table = self.query_one("#runs-table", DataTable)
        row = table.cursor_row
        self.action_reload()
        table.move_cursor(row=row)
