"""Untrusted text, safe to show in a terminal: control characters made visible, never obeyed.

Script output, file names an actor chose and a model's words may hold escape sequences: OSC 52
writes the person's clipboard, OSC 0 the window title, ``ESC[8m`` hides what follows, a bidi
override reorders what is read, and a lone surrogate cannot even be encoded (the write fails).
:func:`visible` turns each such character into the escape a person would type (``\\x1b``,
``\\u202e``, ``\\ud800``), so what is shown is what is there and nothing is interpreted. Rich's
``Text`` strips only BEL, BS, VT, FF and CR, and Textual passes ESC through to the terminal, so
both front ends call it where untrusted text enters; the CLI's consoles are also
:class:`SafeConsole`, which applies it to every piece of text they write (rich's own styling
sequences excepted), so whatever was missed upstream still cannot reach the terminal raw.

The rule itself (:func:`visible`) is pure and lives in ``environments.untrusted.text``, so that
what the workbench shows without a front end (prepare.py's output) passes the same one.
This module adds rich only (the headless CLI may use it; it never imports Textual).
"""

from __future__ import annotations

from collections.abc import Iterable

from rich.console import Console
from rich.segment import Segment
from rich.text import Text

from environments.untrusted.text import UNSAFE, visible  # noqa: F401 - the one sanitiser, re-exported


def safe_text(text: str, style: str = "") -> Text:
    """A rich ``Text`` of untrusted ``text``: never markup, never a control sequence."""
    return Text(visible(text), style=style)


def safe_line(*parts: str | tuple[str, str]) -> Text:
    """One ``Text`` of pieces, some styled: ``safe_line(("failed", "red"), " ", reason)``.
    Every piece is plain text (brackets are characters, not markup), control characters shown."""
    return Text.assemble(*((visible(p[0]), p[1]) if isinstance(p, tuple) else visible(p)
                           for p in parts))


class SafeConsole(Console):
    """A rich ``Console`` that writes no control character it did not make itself.

    Each segment of text passes through :func:`visible` as it is turned into output; control
    segments (the live display's cursor moves) and the styles' SGR sequences are rich's own and
    kept. Sanitising where text enters (``safe_text``) still matters: it keeps widths right,
    as rich counts an ESC as zero cells and ``\\x1b`` as four.
    """

    def _render_buffer(self, buffer: Iterable[Segment]) -> str:
        return super()._render_buffer(
            segment if segment.control else Segment(visible(segment.text), segment.style)
            for segment in buffer)
