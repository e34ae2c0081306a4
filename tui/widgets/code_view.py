"""A file's text with line numbers, drawn with Textual's line API.

The file viewer used a Static holding a Rich Syntax: the Static rendered the whole file to
measure its height and again to draw it, and a change in the file's length resized the
widget, which costs Textual a second layout of the screen. Here the file is highlighted
once, its size is known from its lines, and only the lines on screen are drawn.
"""

from __future__ import annotations

from pygments.token import Token
from rich.segment import Segment
from rich.style import Style
from textual.cache import LRUCache
from textual.content import Content
from textual.geometry import Region, Size
from textual.highlight import HighlightTheme, highlight
from textual.scroll_view import ScrollView
from textual.strip import Strip

from tui.terminal_text import visible


class CodeTheme(HighlightTheme):
    """Textual's highlight theme, plus the added and removed lines of a diff."""

    STYLES = {
        **HighlightTheme.STYLES,
        Token.Generic.Inserted: "$text-success",
        Token.Generic.Deleted: "$text-error",
        Token.Generic.Subheading: "$text-primary",
        Token.Generic.Heading: "bold",
    }


class CodeView(ScrollView, can_focus=True):
    """Highlighted code with a line-number gutter that stays put when scrolled sideways."""

    COMPONENT_CLASSES = {"code-view--gutter"}
    #: fold unnumbered lines at the view's width instead of cropping them (a diff: its changed
    #: value is often at the end of a long line, past a narrow pane's edge)
    WRAP = False

    def __init__(self, text: str = "", *, name: str | None = None, id: str | None = None,
                 classes: str | None = None) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self.lines: list[Content] = []
        self._shown: list[Content] = []  # the rows drawn: ``lines``, folded when wrapped
        self.numbered = False
        self._gutter = 0
        # row -> the whole line, styled; cropped to the scroll position when drawn
        self._rows: LRUCache[int, Strip] = LRUCache(512)
        self._base = Style()
        self.show_text(text)

    @property
    def text(self) -> str:
        """The plain text shown (for tests and copying)."""
        return "\n".join(line.plain for line in self.lines)

    def show_text(self, text: str) -> None:
        """A message: no line numbers, no highlighting."""
        self._set_lines(Content(visible(text)).split("\n", allow_blank=True), numbered=False)

    def show_code(self, code: str, language: str, *, numbered: bool = True,
                  keep_scroll: bool = False) -> None:
        """``code`` highlighted as ``language`` (Textual's highlighter, in the app's theme).

        ``keep_scroll``: another version of the same file, so the reader keeps their place.
        """
        # a file's control characters are shown as escapes (Textual writes them raw)
        lines = highlight(visible(code), language=language, theme=CodeTheme).split("\n", allow_blank=True)
        self._set_lines(lines, numbered=numbered, keep_scroll=keep_scroll)

    def _set_lines(self, lines: list[Content], *, numbered: bool, keep_scroll: bool = False) -> None:
        self.lines = lines
        self.numbered = numbered
        self._gutter = len(str(len(lines))) + 1 if numbered else 0
        self._layout()
        if not keep_scroll:
            # forced: the scrollbars for the new size only appear at the next layout
            self.scroll_to(0, 0, animate=False, force=True)
        self.refresh()

    def _layout(self) -> None:
        """The rows to draw at the current width (every line whole, or folded: ``WRAP``)."""
        self._rows.clear()
        width = self.size.width - self.styles.scrollbar_size_vertical  # a scrollbar may come
        if self.WRAP and not self.numbered and width > 1:
            # a folded line's rest is indented by one, under the text after a diff's +/- mark
            self._shown = [part if i == 0 else Content(" ") + part for line in self.lines
                           for i, part in enumerate(line.wrap(width - 1) or [line])]
        else:
            self._shown = self.lines
        widest = max((line.cell_length for line in self._shown), default=0)
        self.virtual_size = Size(self._gutter + widest, len(self._shown))

    def on_resize(self) -> None:
        if self.WRAP:
            self._layout()
            self.refresh()

    def notify_style_update(self) -> None:
        """Theme or CSS changed: cached rows carry the old styles."""
        super().notify_style_update()
        self._rows.clear()
        self.refresh()

    def render_lines(self, crop: Region) -> list[Strip]:
        # the widget's style walks its ancestors each time it is asked: ask once per draw
        self._base = self.rich_style
        return super().render_lines(crop)

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        row = scroll_y + y
        width = self.scrollable_content_region.width
        base = self._base
        if row >= len(self._shown):
            return Strip.blank(width, base)
        line = self._rows.get(row)
        if line is None:
            line = self._rows[row] = self._render_row(row)
        code = line.crop_extend(scroll_x, scroll_x + width - self._gutter, base)
        if not self._gutter:
            return code
        return Strip.join([self._gutter_strip(row), code])

    def _render_row(self, row: int) -> Strip:
        style = self.visual_style
        return Strip([Segment(text, (style + text_style).rich_style)
                      for text, text_style in self._shown[row].render(style, end="")])

    def _gutter_strip(self, row: int) -> Strip:
        style = self.get_component_rich_style("code-view--gutter")
        number = f"{row + 1:>{self._gutter - 1}} "
        return Strip([Segment(number, style)], self._gutter)
