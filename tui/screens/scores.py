"""The Scores screen: the report table for a runs folder, improvement over steps, and the
anytime curves (normalized score against wall-clock and against tokens, people included)."""

from __future__ import annotations

from pathlib import Path

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import DataTable, Header, Static

from environments.reports import (
    COLUMNS,
    anytime_curves,
    build_report,
    improvement_curves,
    load_runs,
    row_cells,
)
from tui.terminal_text import visible
from tui.text_plot import ascii_plot
from tui.widgets.footer import KeysFooter

#: the plot's views, in the order ``a`` steps through them: (key, title, x label)
VIEWS = (("steps", "improvement over steps", None),
         ("seconds", "normalized score over wall-clock (anytime)", lambda x: f"{x:,.0f} s"),
         ("tokens", "normalized score over tokens (anytime)", lambda x: f"{x:,.0f} tok"))
#: the report's columns as this screen orders them: the headline numbers first, so that an
#: 80-column terminal shows the improvement and the success rate (the rest scrolls sideways)
SHOWN = ["mean improvement", "success", "task", "model", "normalized",
         *(c for c in COLUMNS if c not in {"mean improvement", "success", "task", "model", "normalized"})]
NO_ANYTIME = ("No normalized per-step scores for this task yet: the task needs anchors.toml, "
              "and `labcoat score RUN --all-steps` scores each step.")


class ScoresScreen(Screen):
    HELP_TITLE = "Scores"
    HELP = """
The report for the runs folder, one row per task and model (as `labcoat report`), and for
the highlighted task the improvement over the baseline at each scored step. `a` switches the
plot to the anytime curves: the normalized score (0 baseline, 1 reference) every actor had
reached by a wall-clock time, then by a number of tokens; runs by a person in the TUI are
scored and drawn the same way (on the clock; they spend no tokens).
"""
    BINDINGS = [Binding("f5", "reload", "Reload", show=False, id="scores.reload"),
                Binding("a", "next_view", "Anytime", id="scores.anytime", show=False),
                Binding("escape", "app.pop_screen", "Back", id="scores.back")]

    def __init__(self, runs_dir: Path) -> None:
        super().__init__()
        self.runs_dir = runs_dir
        self.rows = []
        self.curves: dict = {}
        self.anytime: dict = {}
        self.view = 0
        self.shown_task: str | None = None

    def compose(self) -> ComposeResult:
        yield Header()
        yield DataTable(id="scores-table", cursor_type="row", zebra_stripes=True)
        yield Static("", id="scores-plot")
        yield KeysFooter()

    def on_mount(self) -> None:
        self.title = "labcoat · scores"
        self.sub_title = self.runs_dir.name
        self.query_one("#scores-table", DataTable).add_columns(*SHOWN)
        self.action_reload()

    def action_reload(self) -> None:
        skipped: list[str] = []  # broken run folders: named, never the end of the app
        runs = (load_runs(self.runs_dir, on_skip=lambda _, why: skipped.append(why))
                if self.runs_dir.exists() else [])
        if skipped:
            self.notify(visible(f"skipped {len(skipped)} run folder{'s' * (len(skipped) > 1)} "
                                "it cannot read: " + "; ".join(skipped)),
                        severity="warning", timeout=15, markup=False)
        self.rows = build_report(runs)
        self.curves = improvement_curves(runs)
        self.anytime = {axis: anytime_curves(runs, axis) for axis in ("seconds", "tokens")}
        table = self.query_one("#scores-table", DataTable)
        kept = table.cursor_row  # clearing the table puts the cursor back on row 0
        table.clear()
        order = [COLUMNS.index(name) for name in SHOWN]
        for row in self.rows:
            cells = row_cells(row)
            table.add_row(*(cells[i] for i in order))
        if not self.rows:
            self.show_plot(None)
            return
        row = max(0, min(kept, len(self.rows) - 1))
        table.move_cursor(row=row)
        self.show_plot(self.rows[row].task)  # the highlighted row's task, not the first's

    def action_next_view(self) -> None:
        self.view = (self.view + 1) % len(VIEWS)
        self.show_plot(self.shown_task)

    def show_plot(self, task: str | None) -> None:
        self.shown_task = task
        plot = self.query_one("#scores-plot", Static)
        if task is None:
            plot.update(f"No runs in {self.runs_dir.name} yet.")
            return
        key, title, x_label = VIEWS[self.view]
        text = Text(task, style="bold")
        if key == "steps":
            series = {model: [(p.x, p.mean) for p in pts] for model, pts in self.curves.get(task, {}).items()}
            text.append(f": {title}\n\n" + ascii_plot(series))
        else:
            series = {model: [(p.x, p.mean) for p in pts]
                      for model, pts in self.anytime[key].get(task, {}).items()}
            text.append(f": {title}\n\n" + ascii_plot(series, x_label=x_label,
                                                        y_label=lambda y: f"{y:+.2f}", empty=NO_ANYTIME))
        plot.update(text)

    @on(DataTable.RowHighlighted, "#scores-table")
    def _highlight(self, event: DataTable.RowHighlighted) -> None:
        if 0 <= event.cursor_row < len(self.rows):
            self.show_plot(self.rows[event.cursor_row].task)
