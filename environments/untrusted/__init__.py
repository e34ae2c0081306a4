"""Untrusted input, bounded: what a sandbox printed, a submission sent, a task folder or an
imported log holds, read under size and depth caps (:mod:`.bounded`), and text shown in a
terminal made visible, never interpreted (:mod:`.text`). Stdlib and pydantic only: every floor
above reads untrusted bytes through here."""

from __future__ import annotations

from environments.untrusted.bounded import (
    LimitError,
    json_depth,
    loads_json,
    read_capped,
)
from environments.untrusted.text import UNSAFE, visible

__all__ = ["LimitError", "UNSAFE", "json_depth", "loads_json", "read_capped", "visible"]
