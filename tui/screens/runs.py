"""The Runs screen: past runs with status, task, model and score; open one to replay it."""

from __future__ import annotations

import json
from pathlib import Path

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Header

from environments.runs import RunDir


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
    BINDINGS = [Binding("enter", "open_run", "Open", id="runs.open"),
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
            table.add_row(m.run_id, m.status, m.task, m.model or m.agent, str(m.totals.steps),
                          score_cell(run))

    @on(DataTable.RowSelected, "#runs-table")
    def action_open_run(self) -> None:
        table = self.query_one("#runs-table", DataTable)
        if self.runs:
            from tui.screens.run import RunScreen

            self.app.push_screen(RunScreen(self.runs[table.cursor_row]))
