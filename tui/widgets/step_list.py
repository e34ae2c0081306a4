"""The run's steps, one line each, drawn with Textual's line API.

A run has hundreds or thousands of steps and a live one grows by one every few seconds. A
DataTable re-renders every visible cell through Rich whenever a row is added or its cursor
moves (its line cache is keyed on the cursor), which made opening a 1,000-step run and
following a live one the slowest part of the Run screen. Here a row is one cached Strip: a
new step draws one line, moving the cursor redraws two.
"""

from __future__ import annotations

from typing import NamedTuple

from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.binding import Binding
from textual.cache import LRUCache
from textual.geometry import Region
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

from tui.terminal_text import visible


class StepRow(NamedTuple):
    """What the list shows of one step."""

    index: int
    action: str
    error: bool


def row_text(row: StepRow) -> str:
    """The row's text in fixed columns: number, action (cut with an ellipsis), ✓ or ✗."""
    action = visible(row.action)
    action = action if len(action) <= 16 else action[:15] + "…"
    return f" {row.index:<4}  {action:<16}  {'✗' if row.error else '✓'}"


HEADER = f" {'#':<4}  {'action':<16}"


class StepList(ScrollView, can_focus=True):
    """Steps with a row cursor; line 0 is a header that stays while the rows scroll.

    ``cursor`` is a row (0-based; step ``cursor + 1``), -1 with no rows. Moving it posts
    :class:`StepList.Highlighted`; code that moves it on purpose wraps the move in
    ``prevent(StepList.Highlighted)`` so its own move does not come back as a user's choice.
    """

    BINDINGS = [
        Binding("up", "cursor(-1)", "Up", show=False),
        Binding("down", "cursor(1)", "Down", show=False),
        Binding("pageup", "page(-1)", "Page up", show=False),
        Binding("pagedown", "page(1)", "Page down", show=False),
        Binding("home", "cursor_to(0)", "First", show=False),
        Binding("end", "cursor_to(-1)", "Last", show=False),
    ]

    COMPONENT_CLASSES = {"step-list--header", "step-list--cursor", "step-list--even-row"}

    cursor: reactive[int] = reactive(-1, always_update=False, repaint=False)

    class Highlighted(Message):
        """The cursor moved to ``row`` (step ``row + 1``)."""

        def __init__(self, step_list: StepList, row: int) -> None:
            super().__init__()
            self.step_list = step_list
            self.row = row

        @property
        def control(self) -> StepList:
            return self.step_list

    def __init__(self, *, name: str | None = None, id: str | None = None,
                 classes: str | None = None) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self.rows: list[StepRow] = []
        # (row, is cursor, width) -> Strip; styles are folded in, so a style change clears it
        self._lines: LRUCache[tuple[int, bool, int], Strip] = LRUCache(1024)
        self._base = Style()

    @property
    def row_count(self) -> int:
        return len(self.rows)

    # --- rows --------------------------------------------------------------------------------
    def add_rows(self, rows: list[StepRow]) -> None:
        """Append rows; only lines on screen are ever drawn, so this is cheap for any count."""
        self.rows.extend(rows)
        self._update_virtual_size()
        first = len(self.rows) - len(rows)
        self.refresh_lines(first + 1, len(rows))

    def add_row(self, row: StepRow) -> None:
        self.add_rows([row])

    def _update_virtual_size(self) -> None:
        self.virtual_size = self.virtual_size.with_height(len(self.rows) + 1)

    # --- cursor ------------------------------------------------------------------------------
    def validate_cursor(self, cursor: int) -> int:
        return max(-1, min(cursor, len(self.rows) - 1)) if self.rows else -1

    def watch_cursor(self, old: int, new: int) -> None:
        for row in (old, new):
            if row >= 0:
                self.refresh_line(row + 1)
        if new >= 0:
            self.scroll_to_row(new)
            self.post_message(self.Highlighted(self, new))

    def scroll_to_row(self, row: int) -> None:
        """Scroll just enough for ``row`` to be on screen below the header.

        Forced and immediate: rows were just added, the scrollbar that would allow the
        scroll only appears at the next layout, and waiting for it costs another refresh.
        """
        visible = max(1, self.scrollable_content_region.height - 1)
        top = round(self.scroll_y)
        if row < top:
            self.scroll_to(y=row, animate=False, force=True)
        elif row >= top + visible:
            self.scroll_to(y=row - visible + 1, animate=False, force=True)

    def action_cursor(self, delta: int) -> None:
        self.cursor = max(0, self.cursor + delta)

    def action_page(self, direction: int) -> None:
        page = max(1, self.scrollable_content_region.height - 1)
        self.cursor = max(0, self.cursor + direction * page)

    def action_cursor_to(self, row: int) -> None:
        self.cursor = row if row >= 0 else len(self.rows) - 1

    def on_click(self, event: events.Click) -> None:
        offset = event.get_content_offset(self)
        if offset is None or offset.y == 0:
            return
        row = round(self.scroll_y) + offset.y - 1
        if 0 <= row < len(self.rows):
            self.cursor = row

    # --- drawing -----------------------------------------------------------------------------
    def notify_style_update(self) -> None:
        """Focus, theme or CSS changed: cached lines carry old styles."""
        super().notify_style_update()
        self._lines.clear()
        self.refresh()

    def on_resize(self, event: events.Resize) -> None:
        self._lines.clear()
        self.scroll_to_row(max(self.cursor, 0))

    def render_lines(self, crop: Region) -> list[Strip]:
        # the widget's style walks its ancestors each time it is asked: ask once per draw
        self._base = self.rich_style
        return super().render_lines(crop)

    def render_line(self, y: int) -> Strip:
        width = self.scrollable_content_region.width
        if y == 0:
            return self._strip(HEADER, self.get_component_rich_style("step-list--header"), width)
        row = round(self.scroll_y) + y - 1
        if not 0 <= row < len(self.rows):
            return Strip.blank(width, self._base)
        key = (row, row == self.cursor, width)
        strip = self._lines.get(key)
        if strip is None:
            strip = self._strip(row_text(self.rows[row]), self._row_style(row), width)
            self._lines[key] = strip
        return strip

    def _row_style(self, row: int) -> Style:
        if row == self.cursor:
            return self.get_component_rich_style("step-list--cursor")
        if row % 2:
            return self.get_component_rich_style("step-list--even-row")
        return self._base

    @staticmethod
    def _strip(text: str, style: Style, width: int) -> Strip:
        return Strip([Segment(text, style)]).adjust_cell_length(width, style)
