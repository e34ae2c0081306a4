"""A hard wall-clock deadline and a size cap on each HTTP model call, enforced while it reads.

An attempt's ``timeout`` bounds one socket read, not an answer, and the retry loop checks the
``deadline`` only between attempts: a server that dripped a byte a second (a reply, its headers,
or an event stream that never ends) held one call for minutes past its deadline, and a 400 MB
reply (or a small gzip body that expands to it) was read whole and then logged whole.

So the openai and anthropic SDKs get the HTTP client of :func:`http_client`. While a call runs,
:func:`agent.models.policy.call_with_retries` sets its :class:`CallGuard` for the calling
thread; every socket connect, write and read of the client then waits at most the time left to
the call, and the reply body is counted as it is read (after decompression: only gzip is asked
for, and it is inflated a piece at a time) and cut at ``max_reply_bytes``, a declared length
over the cap before any of it is read. Either ends the attempt with a :class:`CallCut`, which the
policy does not try again. Outside a guarded call (none today) only the default size cap holds.
"""

from __future__ import annotations

import contextlib
import time
import zlib
from collections.abc import Iterable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

import httpcore2
import httpx2

MAX_REPLY_BYTES = 8 << 20  # 8 MiB; CallPolicy.max_reply_bytes
PIECE = 64 << 10  # the most a gzip body is inflated at once


class CallCut(Exception):
    """An attempt its guard ended: the call's deadline came, or the reply outgrew the cap."""


class DeadlineReached(CallCut):
    pass


class ReplyTooLarge(CallCut):
    pass


def size(n: int) -> str:
    return f"{round(n / (1 << 20), 1):g} MiB" if n >= 1 << 20 else f"{n} bytes"


@dataclass
class CallGuard:
    end: float  # time.monotonic() by which the call is over
    deadline: float  # the call's deadline in seconds, for the reason
    max_bytes: int = MAX_REPLY_BYTES

    def left(self, doing: str) -> float:
        """Seconds left to the call; :class:`DeadlineReached` when none are."""
        left = self.end - time.monotonic()
        if left <= 0:
            raise DeadlineReached(f"the call's deadline of {self.deadline:g} s came {doing}")
        return left


_current: ContextVar[CallGuard | None] = ContextVar("labcoat_call_guard", default=None)


@contextlib.contextmanager
def guarded(guard: CallGuard) -> Iterator[CallGuard]:
    """``guard`` holds for the HTTP client's I/O in this thread (this context) meanwhile."""
    token = _current.set(guard)
    try:
        yield guard
    finally:
        _current.reset(token)


@contextlib.contextmanager
def _bounded(timeout: float | None, doing: str) -> Iterator[float | None]:
    """``timeout`` cut to the time left to the guarded call; a timeout that the cut caused is
    the deadline, reported as such."""
    guard = _current.get()
    if guard is None:
        yield timeout
        return
    left = guard.left(doing)
    cut = timeout is None or left < timeout
    try:
        yield left if cut else timeout
    except httpcore2.TimeoutException as err:
        if cut:
            raise DeadlineReached(f"the call's deadline of {guard.deadline:g} s came {doing}") from err
        raise


class _Stream(httpcore2.NetworkStream):
    """A connection whose every wait ends by the guarded call's deadline."""

    def __init__(self, inner: httpcore2.NetworkStream) -> None:
        self._inner = inner

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        with _bounded(timeout, "while waiting for the reply") as t:
            return self._inner.read(max_bytes, t)

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        with _bounded(timeout, "while the request was sent") as t:
            self._inner.write(buffer, t)

    def close(self) -> None:
        self._inner.close()

    def start_tls(self, ssl_context: Any, server_hostname: str | None = None,
                  timeout: float | None = None) -> httpcore2.NetworkStream:
        with _bounded(timeout, "during the TLS handshake") as t:
            return _Stream(self._inner.start_tls(ssl_context, server_hostname, t))

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class _Backend(httpcore2.NetworkBackend):
    def __init__(self, inner: httpcore2.NetworkBackend) -> None:
        self._inner = inner

    def connect_tcp(self, host: str, port: int, timeout: float | None = None,
                    local_address: str | None = None, socket_options: Iterable[Any] | None = None,
                    ) -> httpcore2.NetworkStream:
        with _bounded(timeout, "while connecting") as t:
            return _Stream(self._inner.connect_tcp(host, port, t, local_address, socket_options))

    def connect_unix_socket(self, path: str, timeout: float | None = None,
                            socket_options: Iterable[Any] | None = None) -> httpcore2.NetworkStream:
        with _bounded(timeout, "while connecting") as t:
            return _Stream(self._inner.connect_unix_socket(path, t, socket_options))

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


class _Body(httpx2.SyncByteStream):
    """A reply body read within the cap (counted after decompression) and the deadline."""

    def __init__(self, inner: httpx2.SyncByteStream, gzip: bool, max_bytes: int) -> None:
        self._inner = inner
        self._gzip = gzip
        self._max = max_bytes
        self.taken = 0

    def _take(self, data: bytes) -> bytes:
        self.taken += len(data)
        if self.taken > self._max:
            raise ReplyTooLarge(f"the reply is larger than {size(self._max)} (max_reply_bytes); "
                                "cut off there")
        return data

    def __iter__(self) -> Iterator[bytes]:
        inflate = zlib.decompressobj(zlib.MAX_WBITS | 32) if self._gzip else None
        try:
            for raw in self._inner:
                if (guard := _current.get()) is not None:
                    guard.left("while the reply was read")
                if inflate is None:
                    yield self._take(raw)
                    continue
                while raw:
                    out = inflate.decompress(raw, PIECE)
                    raw = inflate.unconsumed_tail
                    yield self._take(out)
            if inflate is not None:
                yield self._take(inflate.flush())
        except zlib.error as err:
            raise httpx2.DecodingError(f"the gzip body cannot be read: {err}") from err

    def close(self) -> None:
        self._inner.close()


class GuardedTransport(httpx2.BaseTransport):
    """An :class:`httpx2.HTTPTransport` whose connections and reply bodies are guarded."""

    def __init__(self, inner: httpx2.BaseTransport) -> None:
        self._inner = inner
        pool = getattr(inner, "_pool", None)  # httpx2 builds its httpcore2 pool with no way to
        if pool is not None and hasattr(pool, "_network_backend"):  # pass a backend: set it here,
            pool._network_backend = _Backend(pool._network_backend)  # before any connection
        self.bounded_io = pool is not None and isinstance(getattr(pool, "_network_backend", None), _Backend)

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        guard = _current.get()
        cap = guard.max_bytes if guard else MAX_REPLY_BYTES
        request.headers["accept-encoding"] = "gzip"  # the one encoding _Body inflates within the cap
        response = self._inner.handle_request(request)
        encoding = response.headers.get("content-encoding", "").strip().lower() or "identity"
        try:
            if encoding not in ("identity", "gzip", "x-gzip"):
                raise CallCut(f"the reply is encoded as {encoding!r}, which was not asked for")
            declared = response.headers.get("content-length", "")
            if encoding == "identity" and declared.isdigit() and int(declared) > cap:
                raise ReplyTooLarge(f"the reply is larger than {size(cap)} (max_reply_bytes): "
                                    f"{size(int(declared))} declared")
        except CallCut:
            response.close()
            raise
        headers = [(k, v) for k, v in response.headers.raw
                   if encoding == "identity" or k.lower() not in (b"content-encoding", b"content-length")]
        assert isinstance(response.stream, httpx2.SyncByteStream)
        return httpx2.Response(status_code=response.status_code, headers=headers,
                               stream=_Body(response.stream, encoding != "identity", cap),
                               extensions=response.extensions)

    def close(self) -> None:
        self._inner.close()


class _Client(httpx2.Client):
    """An httpx2 client whose transports, the default one and any proxy's from the environment,
    are guarded (httpx2 builds both in these two methods)."""

    def _init_transport(self, *args: Any, **kwargs: Any) -> httpx2.BaseTransport:
        return GuardedTransport(super()._init_transport(*args, **kwargs))

    def _init_proxy_transport(self, *args: Any, **kwargs: Any) -> httpx2.BaseTransport:
        return GuardedTransport(super()._init_proxy_transport(*args, **kwargs))


def http_client() -> httpx2.Client:
    """The HTTP client for the openai and anthropic SDKs (redirects followed, as theirs do)."""
    return _Client(follow_redirects=True)
