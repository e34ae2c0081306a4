"""The wire format of an interactive submission's oracle channel (stdlib only, numpy lazily).

An adaptive submission (a sampler that calls a secret denoiser) cannot produce its outputs in
one go: it must ask the trusted side questions. It does so over one stream socket, in frames,
and nothing else: a frame is a 4-byte big-endian header length, a JSON header
``{"kind": ..., "op": ..., "arrays": [[name, dtype, shape], ...], "message": ...}`` and the
arrays' raw bytes, concatenated in that order. Only plain numeric dtypes travel (no pickles, no
objects), so decoding a frame runs no code of the sender's.

The same file runs in three places: the host (``environments/scoring/submission.py`` relays and checks
every frame without numpy), the submission's sandbox and the oracle's sandbox (copied there as
``labcoat_channel.py``, where :func:`send_arrays` / :func:`recv_arrays` turn frames into numpy
arrays). So it imports nothing of labcoat's.
"""

from __future__ import annotations

import json
import math
import re
import socket
import struct
import time

MAX_HEADER = 64 << 10
MAX_DEPTH = 8  # a header is an object > arrays > [name, dtype, shape] > shape: 4 deep
MAX_ARRAYS = 16
MAX_NDIM = 8
KINDS = ("request", "reply", "error", "end")
DTYPES = {"<f8": 8, "<f4": 4, "<i8": 8, "<i4": 4, "|u1": 1, "|b1": 1}


class ChannelError(ValueError):
    """A frame that breaks the format or a bound: the interaction ends, the score fails."""


# A JSON string (escapes included), and a bracket outside one.
_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"')
_BRACKET = re.compile(r"[\[\]{}]")


def json_depth(text: str) -> int:
    """How deep ``text``'s arrays and objects nest, counted without recursion (and without
    parsing): ``json.loads`` recurses per level and raises RecursionError at about a thousand.

    Here because this file must stand alone in the sandboxes; ``environments/untrusted/bounded.py``
    builds every other bounded JSON read on it. Brackets inside strings do not count; an
    unterminated string only makes the count higher (and such text is no JSON anyway)."""
    depth = deepest = 0
    for match in _BRACKET.finditer(_STRING.sub("", text)):
        if match.group() in "[{":
            depth += 1
            deepest = max(deepest, depth)
        else:
            depth -= 1
    return deepest


def _recv_exact(sock: socket.socket, n: int, deadline: float) -> bytes:
    chunks, got = [], 0
    while got < n:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("no complete message before the deadline")
        sock.settimeout(left)
        chunk = sock.recv(min(n - got, 1 << 20))
        if not chunk:
            raise EOFError("the channel closed")
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def check_header(header: object, max_bytes: int) -> int:
    """The payload size a header announces, after checking its every field (ChannelError)."""
    if not isinstance(header, dict) or header.get("kind") not in KINDS:
        raise ChannelError(f"a frame's header must be an object with kind in {KINDS}")
    if not isinstance(header.get("op", ""), str) or len(header.get("op", "")) > 64:
        raise ChannelError("op must be a short string")
    if not isinstance(header.get("message", ""), str):
        raise ChannelError("message must be a string")
    arrays = header.get("arrays", [])
    if not isinstance(arrays, list) or len(arrays) > MAX_ARRAYS:
        raise ChannelError(f"arrays must be a list of at most {MAX_ARRAYS}")
    total = 0
    for item in arrays:
        if not (isinstance(item, list) and len(item) == 3 and isinstance(item[0], str)
                and len(item[0]) <= 64 and item[1] in DTYPES and isinstance(item[2], list)
                and len(item[2]) <= MAX_NDIM
                and all(type(d) is int and 0 <= d for d in item[2])):
            raise ChannelError(f"each array is [name, dtype in {sorted(DTYPES)}, shape], got {item!r:.200}")
        total += DTYPES[item[1]] * math.prod(item[2])
        if total > max_bytes:
            raise ChannelError(f"a message may carry at most {max_bytes} bytes")
    return total


def recv_frame(sock: socket.socket, max_bytes: int, deadline: float) -> tuple[dict, bytes]:
    """One frame, checked before its payload is read: a header that lies about its size, or
    announces more than ``max_bytes``, is refused without reading (or buffering) the rest."""
    (length,) = struct.unpack(">I", _recv_exact(sock, 4, deadline))
    if length > MAX_HEADER:
        raise ChannelError(f"a header may be at most {MAX_HEADER} bytes, not {length}")
    try:
        text = _recv_exact(sock, length, deadline).decode()
        if json_depth(text) > MAX_DEPTH:
            raise ChannelError(f"a header may be nested at most {MAX_DEPTH} deep")
        header = json.loads(text)
    except ChannelError:
        raise
    except (UnicodeDecodeError, ValueError) as err:
        raise ChannelError(f"a header must be JSON: {err}") from err
    size = check_header(header, max_bytes)
    return header, _recv_exact(sock, size, deadline)


def send_frame(sock: socket.socket, header: dict, payload: bytes = b"",
               deadline: float | None = None) -> None:
    data = json.dumps(header).encode()
    sock.settimeout(None if deadline is None else max(deadline - time.monotonic(), 0.001))
    sock.sendall(struct.pack(">I", len(data)) + data + payload)


# --- numpy side (inside the sandboxes) -------------------------------------------------------

def encode(kind: str, op: str = "", arrays: dict | None = None, message: str = "") -> tuple[dict, bytes]:
    import numpy as np

    items, blobs = [], []
    for name, value in (arrays or {}).items():
        a = np.asarray(value)
        a = a.astype(a.dtype.newbyteorder("<")) if a.dtype.byteorder == ">" else a
        if a.dtype.str not in DTYPES:
            a = a.astype("<f8")
        items.append([name, a.dtype.str, list(a.shape)])
        blobs.append(np.ascontiguousarray(a).tobytes())
    return {"kind": kind, "op": op, "arrays": items, "message": message}, b"".join(blobs)


def decode(header: dict, payload: bytes) -> dict:
    import numpy as np

    out, at = {}, 0
    for name, dtype, shape in header.get("arrays", []):
        size = DTYPES[dtype] * math.prod(shape)
        out[name] = np.frombuffer(payload[at:at + size], dtype=dtype).reshape(shape).copy()
        at += size
    return out


def send_arrays(sock: socket.socket, kind: str, op: str = "", arrays: dict | None = None,
                message: str = "") -> None:
    header, payload = encode(kind, op, arrays, message)
    send_frame(sock, header, payload)


def recv_arrays(sock: socket.socket, max_bytes: int, timeout: float) -> tuple[dict, dict]:
    header, payload = recv_frame(sock, max_bytes, time.monotonic() + timeout)
    return header, decode(header, payload)


class OracleClient:
    """What a task's ``produce.py`` gets as ``oracle``: ``oracle(op, **arrays) -> dict`` asks the
    trusted side one question; a refusal (a bad request, the budget spent) raises here."""

    def __init__(self, sock: socket.socket, max_bytes: int, timeout: float) -> None:
        self._sock, self._max, self._timeout = sock, max_bytes, timeout

    def __call__(self, op: str, **arrays) -> dict:
        send_arrays(self._sock, "request", op, arrays)
        header, reply = recv_arrays(self._sock, self._max, self._timeout)
        if header["kind"] != "reply":
            raise RuntimeError(f"the oracle refused: {header.get('message', '')}")
        return reply
