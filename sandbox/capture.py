"""Bounded capture of a command's output: keep the head and the tail, count the rest.

A script that prints a gigabyte must neither fill the host's memory nor lose the lines that
matter (the first error and the last progress line), so each stream keeps its first and last
``cap/2`` bytes and drains the middle.
"""

from __future__ import annotations

import os
import threading
from collections import deque
from collections.abc import Callable

Tee = Callable[[int, bytes], None]
"""Called with (1 for stdout or 2 for stderr, a chunk) as a command's output arrives: what a
caller that shows output live (a task's prepare.py at the terminal) passes to ``exec``."""


class CappedBuffer:
    """Head + tail of a byte stream with a total cap."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.head = bytearray()
        self.tail: deque[bytes] = deque()
        self.tail_len = 0
        self.total = 0

    def write(self, data: bytes) -> None:
        self.total += len(data)
        room = self.cap // 2 - len(self.head)
        if room > 0:
            self.head += data[:room]
            data = data[room:]
        if not data:
            return
        self.tail.append(data)
        self.tail_len += len(data)
        keep = self.cap - self.cap // 2
        while self.tail_len - len(self.tail[0]) >= keep:
            self.tail_len -= len(self.tail.popleft())

    @property
    def truncated(self) -> bool:
        return self.total > len(self.head) + self.tail_len or self.tail_len > self.cap - self.cap // 2

    def text(self) -> str:
        tail = b"".join(self.tail)
        keep = self.cap - self.cap // 2
        if len(tail) > keep:
            tail = tail[-keep:]
        dropped = self.total - len(self.head) - len(tail)
        if dropped <= 0:
            return (bytes(self.head) + tail).decode("utf-8", "replace")
        note = f"\n[... {dropped} bytes of output dropped by the sandbox ...]\n"
        return self.head.decode("utf-8", "replace") + note + tail.decode("utf-8", "replace")


def drain(fd: int, buf: CappedBuffer, tee: Tee | None = None, stream: int = 1) -> threading.Thread:
    """Read ``fd`` to EOF into ``buf`` on a daemon thread (so two pipes never deadlock);
    ``tee(stream, chunk)`` also gets each chunk as it comes, uncapped."""

    def run() -> None:
        try:
            while chunk := os.read(fd, 1 << 16):
                buf.write(chunk)
                if tee is not None:
                    try:
                        tee(stream, chunk)
                    except Exception:  # a broken display must not stop the draining
                        pass
        finally:
            os.close(fd)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


class Streams:
    """A command's stdin, stdout and stderr as pipes: the child's ends to hand over, the host's
    ends drained into capped buffers (and stdin fed) on daemon threads."""

    def __init__(self, cap: int, stdin: str | bytes | int | None, tee: Tee | None = None) -> None:
        self.out, self.err = CappedBuffer(cap), CappedBuffer(cap)
        self._tee = tee
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        if stdin is None:
            in_r, in_w = os.open(os.devnull, os.O_RDONLY), None
        elif isinstance(stdin, int):  # a live descriptor (an oracle channel's socket): handed over
            in_r, in_w, stdin = os.dup(stdin), None, None
        else:
            in_r, in_w = os.pipe()
        self.child_fds = [in_r, out_w, err_w]
        self._host = [out_r, err_r]
        self._stdin = (in_w, stdin.encode() if isinstance(stdin, str) else stdin)
        self._readers: list[threading.Thread] = []

    def started(self) -> None:
        """The child holds its ends now: close ours (so EOF can come) and start the threads."""
        for fd in self.child_fds:
            os.close(fd)
        self.child_fds = []
        self._readers = [drain(self._host[0], self.out, self._tee, 1),
                         drain(self._host[1], self.err, self._tee, 2)]
        self._host = []
        in_w, data = self._stdin
        if in_w is not None:
            threading.Thread(target=_feed, args=(in_w, data), daemon=True).start()
            self._stdin = (None, None)

    def wait(self) -> None:
        """Let the readers take the last output (a straggler holding a pipe is not waited for)."""
        for r in self._readers:
            r.join(timeout=5)

    def close(self) -> None:
        """Close whatever was never handed over (the command never started)."""
        in_w = self._stdin[0]
        for fd in [*self.child_fds, *self._host, *([in_w] if in_w is not None else [])]:
            os.close(fd)
        self.child_fds, self._host, self._stdin = [], [], (None, None)


def _feed(fd: int, data: bytes) -> None:
    try:
        with open(fd, "wb") as f:
            f.write(data)
    except OSError:
        pass
