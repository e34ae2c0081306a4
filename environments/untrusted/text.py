"""The one rule for showing untrusted text in a terminal (see ``tui.terminal_text``).

Pure and stdlib-only, below every room that prints: the front ends wrap it in rich ``Text``
and consoles; the workbench applies it itself where it writes to a terminal with no front end
(a task's ``prepare.py`` output, relayed live).
"""

from __future__ import annotations

import re

#: C0 controls but newline and tab, DEL, C1 controls (8-bit CSI U+009B and OSC U+009D among
#: them), the bidi embeddings/overrides/isolates (U+202A-U+202E, U+2066-U+2069), lone surrogates
UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
#: each of them -> its escape (``str.translate``: 2-3x faster than a ``re.sub`` callback)
_SHOWN = {code: f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"
          for code in (*range(0x00, 0x09), *range(0x0b, 0x20), *range(0x7f, 0xa0),
                       *range(0x202a, 0x202f), *range(0x2066, 0x206a), *range(0xd800, 0xe000))}


def visible(text: str) -> str:
    """``text`` with every character a terminal would obey (or cannot encode) written out as
    its escape: ``"\\x1b]0;t\\x07"`` becomes the 12 characters ``\\x1b]0;t\\x07``. Newlines
    and tabs stay; everything else printable is unchanged (a clean string is returned as is)."""
    if not isinstance(text, str):
        text = str(text)
    return text.translate(_SHOWN) if UNSAFE.search(text) else text
