"""A loopback HTTP stub of the OpenAI and Anthropic APIs, driven by a list of behaviours.

Each request takes the next behaviour: ``{"text": ...}`` (a normal reply, optional
``"tool_calls"`` and ``"usage": [in, out, cached]``, or ``"usage": None`` for none),
``{"status": 429|500, "headers": {...}}``, ``{"hang": seconds}`` (no answer until the client gives
up), and the faults a real server or proxy sends: ``{"raw": text, "content_type": ...}`` (any
body as it is, e.g. truncated JSON, HTML, nothing; ``"status"`` optional), ``{"payload": {...}}``
(a JSON body of any shape) and ``{"reset": True}`` (the connection dropped with a TCP reset).
Servers that hold a call or flood it: ``{"drip": seconds}`` (a normal reply, one byte every so
many seconds), ``{"drip_headers": seconds}`` (the status line and headers the same way, never
ending), ``{"huge": n}`` (a normal reply whose text is ``n`` bytes of ``x``; ``"gzip": True``
sends it compressed, ``"undeclared": True`` without a content-length, to the connection's end)
and ``{"sse_forever": seconds}`` (an event stream that never sends ``[DONE]``). They stop when
the server does; ``sent`` holds the body bytes each of them wrote, ``finished`` how many of them
wrote all they meant to.
It serves at most ``max_requests`` requests and answers 500 once its behaviours are used up.
"""

from __future__ import annotations

import json
import socket
import struct
import threading
import zlib
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

KEY = "sk-labcoat-test-9f8e7d6c5b4a3f2e1d"  # a fake provider key, to check it never leaks


class StubLLM:
    def __init__(self, behaviours: list[dict[str, Any]], max_requests: int = 60) -> None:
        self.behaviours = list(behaviours)
        self.max_requests = max_requests
        self.requests: list[dict[str, Any]] = []
        self.sent: list[int] = []
        self.finished = 0
        self.stop = threading.Event()
        self.lock = threading.Lock()
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802
                body = self.rfile.read(int(self.headers.get("content-length", 0)) or 0)
                with stub.lock:
                    stub.requests.append({"path": self.path, "headers": {k.lower(): v for k, v in self.headers.items()},
                                          "body": json.loads(body or b"{}")})
                    over = len(stub.requests) > stub.max_requests
                    b = stub.behaviours.pop(0) if stub.behaviours and not over else {"status": 500}
                if "hang" in b:
                    stub.stop.wait(b["hang"])
                    return
                anthropic = self.path.endswith("/messages")
                if {"drip", "drip_headers", "huge", "sse_forever"} & set(b):
                    self._flood(b, anthropic)
                    return
                if b.get("reset"):
                    self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                    self.connection.close()
                    self.close_connection = True
                    return
                if "raw" in b:
                    self._send_raw(b.get("status", 200), b["raw"], b.get("content_type", "application/json"),
                                   b.get("headers", {}))
                    return
                if "payload" in b:
                    self._send(b.get("status", 200), b["payload"], b.get("headers", {}))
                    return
                if "status" in b:
                    self._send(b["status"], {"error": {"message": "stub error", "type": "stub"}},
                               b.get("headers", {}))
                    return
                self._send(200, (_anthropic if anthropic else _openai)(b))

            def finish(self) -> None:
                try:
                    super().finish()
                except OSError:  # the connection was reset on purpose
                    pass

            def _flood(self, b: dict, anthropic: bool) -> None:
                """A reply that takes forever or never ends; stops when the server does."""
                index = len(stub.sent)
                stub.sent.append(0)
                try:
                    if "drip_headers" in b:
                        head = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nx-pad: "
                        for byte in _forever(head, b"a"):
                            self.wfile.write(byte)
                            if stub.stop.wait(b["drip_headers"]):
                                return
                    self.send_response(200)
                    self.send_header("content-type", "text/event-stream" if "sse_forever" in b
                                     else "application/json")
                    if "huge" in b and b.get("gzip"):
                        self.send_header("content-encoding", "gzip")
                    body = _huge(b, anthropic) if "huge" in b else None
                    if "drip" in b:
                        data = json.dumps((_anthropic if anthropic else _openai)({"text": "dripped", **b})).encode()
                        self.send_header("content-length", str(len(data)))
                        body = (data[i:i + 1] for i in range(len(data)))
                    elif body is not None and not b.get("undeclared"):
                        body = list(body)
                        self.send_header("content-length", str(sum(map(len, body))))
                    self.end_headers()
                    wait = b.get("drip", b.get("sse_forever", 0))
                    for chunk in body if body is not None else _events(anthropic):
                        self.wfile.write(chunk)
                        stub.sent[index] += len(chunk)
                        if wait and stub.stop.wait(wait):
                            return
                    stub.finished += 1
                except OSError:  # the client gave up and closed the connection
                    pass

            def _send(self, code: int, payload: dict, headers: dict | None = None) -> None:
                self._send_raw(code, json.dumps(payload), "application/json", headers)

            def _send_raw(self, code: int, body: str | bytes, content_type: str,
                          headers: dict | None = None) -> None:
                data = body.encode("utf-8", "surrogatepass") if isinstance(body, str) else body
                self.send_response(code)
                self.send_header("content-type", content_type)
                self.send_header("content-length", str(len(data)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        # shutdown() waits for the loop to look at its flag: at the default 0.5 s poll every
        # test using the stub paid ~0.5 s to stop it
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.01},
                                       daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self) -> StubLLM:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop.set()
        self.server.shutdown()
        self.server.server_close()


def _usage(b: dict) -> tuple[int, int, int] | None:
    u = b.get("usage", (100, 20, 0))
    return None if u is None else tuple(u)  # type: ignore[return-value]


def _openai(b: dict) -> dict:
    u = _usage(b)
    message: dict[str, Any] = {"role": "assistant", "content": b.get("text")}
    if b.get("tool_calls"):
        message["tool_calls"] = [{"id": f"call_{n}", "type": "function",
                                  "function": {"name": t["name"], "arguments": json.dumps(t["arguments"])}}
                                 for n, t in enumerate(b["tool_calls"])]
    out = {"id": "chatcmpl-stub", "object": "chat.completion", "created": 0, "model": "stub",
           "choices": [{"index": 0, "message": message,
                        "finish_reason": "tool_calls" if b.get("tool_calls") else "stop"}]}
    if u is not None:
        i, o, c = u
        out["usage"] = {"prompt_tokens": i, "completion_tokens": o, "total_tokens": i + o,
                        "prompt_tokens_details": {"cached_tokens": c}}
    return out


def _anthropic(b: dict) -> dict:
    u = _usage(b)
    content: list[dict[str, Any]] = [{"type": "text", "text": b["text"]}] if b.get("text") else []
    content += [{"type": "tool_use", "id": f"toolu_{n}", "name": t["name"], "input": t["arguments"]}
                for n, t in enumerate(b.get("tool_calls") or [])]
    out = {"id": "msg_stub", "type": "message", "role": "assistant", "model": "stub", "content": content,
           "stop_reason": "tool_use" if b.get("tool_calls") else "end_turn", "stop_sequence": None}
    if u is not None:
        i, o, c = u
        out["usage"] = {"input_tokens": i - c, "output_tokens": o, "cache_read_input_tokens": c,
                        "cache_creation_input_tokens": 0}
    return out


def _forever(head: bytes, filler: bytes) -> Iterator[bytes]:
    yield from (head[i:i + 1] for i in range(len(head)))
    while True:
        yield filler


def _huge(b: dict, anthropic: bool) -> Iterator[bytes]:
    """A well-formed reply whose text is ``b["huge"]`` bytes of ``x``, in 64 KiB pieces."""
    mark = "@@HUGE@@"
    head, tail = json.dumps((_anthropic if anthropic else _openai)({"text": mark})).encode().split(mark.encode())
    piece = b"x" * 65536

    def plain() -> Iterator[bytes]:
        yield head
        left = b["huge"]
        while left > 0:
            yield piece[:left]
            left -= len(piece)
        yield tail

    if not b.get("gzip"):
        yield from plain()
        return
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)  # 31: the gzip format
    for chunk in plain():
        if out := packer.compress(chunk):
            yield out
    yield packer.flush()


def _events(anthropic: bool) -> Iterator[bytes]:
    """Server-sent events that never end (no ``[DONE]``, no ``message_stop``)."""
    event = ({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "x"}}
             if anthropic else {"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "stub",
                                "choices": [{"index": 0, "delta": {"content": "x"}}]})
    while True:
        yield f"data: {json.dumps(event)}\n\n".encode()


def connect(monkeypatch, provider: str, stub: StubLLM) -> str:
    """Point the provider's SDK at the stub; the model string to use."""
    url = stub.url + "/v1" if provider == "openai" else stub.url
    monkeypatch.setenv(f"{provider.upper()}_BASE_URL", url)
    return f"{provider}/stub-model"
