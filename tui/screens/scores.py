"""The Scores screen: the report table for a runs folder, and improvement over steps."""

from __future__ import annotations

from pathlib import Path

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Header, Static

from environments.report import (
    COLUMNS,
    build_report,
    improvement_curves,
    load_runs,
    row_cells,
)
from tui.widgets.plot import ascii_plot


class ScoresScreen(Screen):
    HELP_TITLE = "Scores"
    HELP = """
The report for the runs folder, one row per task and model (as `labcoat report`), and for
the highlighted task the improvement over the baseline at each scored step.
"""
    BINDINGS = [Binding("f5", "reload", "Reload", id="scores.reload"),
                Binding("escape", "app.pop_screen", "Back", id="scores.back")]

    def __init__(self, runs_dir: Path) -> None:
        super().__init__()
        self.runs_dir = runs_dir
        self.rows = []
        self.curves: dict = {}

    def compose(self) -> ComposeResult:
        yield Header()
        yield DataTable(id="scores-table", cursor_type="row", zebra_stripes=True)
        yield Static("", id="scores-plot")
        yield Footer()

    def on_mount(self) -> None:
        self.title = "labcoat · scores"
        self.sub_title = self.runs_dir.name
        self.query_one("#scores-table", DataTable).add_columns(*COLUMNS)
        self.action_reload()

    def action_reload(self) -> None:
        runs = load_runs(self.runs_dir) if self.runs_dir.exists() else []
        self.rows = build_report(runs)
        self.curves = improvement_curves(runs)
        table = self.query_one("#scores-table", DataTable)
        table.clear()
        for row in self.rows:
            table.add_row(*row_cells(row))
        self.show_plot(self.rows[0].task if self.rows else None)

    def show_plot(self, task: str | None) -> None:
        plot = self.query_one("#scores-plot", Static)
        if task is None:
            plot.update(f"No runs in {self.runs_dir.name} yet.")
            return
        series = {model: [(s, m) for s, m, _ in pts] for model, pts in self.curves.get(task, {}).items()}
        text = Text(task, style="bold")
        text.append(": improvement over steps\n\n" + ascii_plot(series))
        plot.update(text)

    @on(DataTable.RowHighlighted, "#scores-table")
    def _highlight(self, event: DataTable.RowHighlighted) -> None:
        if 0 <= event.cursor_row < len(self.rows):
            self.show_plot(self.rows[event.cursor_row].task)
