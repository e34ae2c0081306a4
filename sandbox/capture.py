"""Bounded capture of a command's output: keep the head and the tail, count the rest.

A script that prints a gigabyte must neither fill the host's memory nor lose the lines that
matter (the first error and the last progress line), so each stream keeps its first and last
``cap/2`` bytes and drains the middle.
"""

from __future__ import annotations

import os
import threading
from collections import deque


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


def drain(fd: int, buf: CappedBuffer) -> threading.Thread:
    """Read ``fd`` to EOF into ``buf`` on a daemon thread (so two pipes never deadlock)."""

    def run() -> None:
        try:
            while chunk := os.read(fd, 1 << 16):
                buf.write(chunk)
        finally:
            os.close(fd)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread
