"""Bounded reads of untrusted bytes: a size cap before anything is read whole, a depth cap
before anything is parsed.

What a sandbox printed, what a submission sent and what a task folder holds are untrusted.
Python's parsers recurse (``json.loads`` raises RecursionError about a thousand levels deep,
tomllib likewise), and an error nobody expects crashes the host instead of failing the thing
that sent it. So every such read goes through here and fails with :class:`LimitError`, a
``ValueError`` its caller turns into its own error (a failed action, a failed evaluation, a
:class:`~environments.task.spec.TaskError`). The oracle channel checks its frames itself, with the
same depth count (:func:`environments.in_sandbox.channel.json_depth`): that file stands alone in sandboxes.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

from environments.in_sandbox.channel import json_depth

__all__ = ["LimitError", "json_depth", "loads_json", "read_capped"]


class LimitError(ValueError):
    """Untrusted bytes too large, nested too deep, or not the format they claim to be."""


def loads_json(data: str | bytes, *, max_bytes: int, max_depth: int, what: str = "JSON") -> object:
    """``json.loads(data)`` once ``data`` is at most ``max_bytes`` long and nests at most
    ``max_depth`` deep; :class:`LimitError` naming ``what`` otherwise."""
    if len(data) > max_bytes:  # (a str's length in characters: at most its UTF-8 bytes)
        raise LimitError(f"{what} is larger than {max_bytes} bytes")
    try:
        text = data.decode() if isinstance(data, bytes) else data
    except UnicodeDecodeError as err:
        raise LimitError(f"{what} is not valid JSON: {err}") from err
    if json_depth(text) > max_depth:
        raise LimitError(f"{what} is nested deeper than {max_depth}")
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as err:
        raise LimitError(f"{what} is not valid JSON: {err}") from err


def read_capped(path: Path, max_bytes: int) -> bytes:
    """The bytes of ``path``, never reading more than ``max_bytes + 1`` of them: a larger file
    is a :class:`LimitError` (``<path>: larger than N bytes``), however large it is."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)  # a FIFO cannot block it
    with open(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise LimitError(f"{path}: not a regular file")
        data = f.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise LimitError(f"{path}: larger than {max_bytes} bytes")
    return data
