"""A loopback HTTP stub of the OpenAI and Anthropic APIs, driven by a list of behaviours.

Each request takes the next behaviour: ``{"text": ...}`` (a normal reply, optional
``"tool_calls"`` and ``"usage": [in, out, cached]``), ``{"status": 429|500, "headers": {...}}``
or ``{"hang": seconds}`` (no answer until the client gives up). It serves at most
``max_requests`` requests and answers 500 once its behaviours are used up.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class StubLLM:
    def __init__(self, behaviours: list[dict[str, Any]], max_requests: int = 60) -> None:
        self.behaviours = list(behaviours)
        self.max_requests = max_requests
        self.requests: list[dict[str, Any]] = []
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
                if "status" in b:
                    self._send(b["status"], {"error": {"message": "stub error", "type": "stub"}},
                               b.get("headers", {}))
                    return
                anthropic = self.path.endswith("/messages")
                self._send(200, (_anthropic if anthropic else _openai)(b))

            def _send(self, code: int, payload: dict, headers: dict | None = None) -> None:
                data = json.dumps(payload).encode()
                self.send_response(code)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

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


def _usage(b: dict) -> tuple[int, int, int]:
    return tuple(b.get("usage", (100, 20, 0)))  # type: ignore[return-value]


def _openai(b: dict) -> dict:
    i, o, c = _usage(b)
    message: dict[str, Any] = {"role": "assistant", "content": b.get("text")}
    if b.get("tool_calls"):
        message["tool_calls"] = [{"id": f"call_{n}", "type": "function",
                                  "function": {"name": t["name"], "arguments": json.dumps(t["arguments"])}}
                                 for n, t in enumerate(b["tool_calls"])]
    return {"id": "chatcmpl-stub", "object": "chat.completion", "created": 0, "model": "stub",
            "choices": [{"index": 0, "message": message,
                         "finish_reason": "tool_calls" if b.get("tool_calls") else "stop"}],
            "usage": {"prompt_tokens": i, "completion_tokens": o, "total_tokens": i + o,
                      "prompt_tokens_details": {"cached_tokens": c}}}


def _anthropic(b: dict) -> dict:
    i, o, c = _usage(b)
    content: list[dict[str, Any]] = [{"type": "text", "text": b["text"]}] if b.get("text") else []
    content += [{"type": "tool_use", "id": f"toolu_{n}", "name": t["name"], "input": t["arguments"]}
                for n, t in enumerate(b.get("tool_calls") or [])]
    return {"id": "msg_stub", "type": "message", "role": "assistant", "model": "stub", "content": content,
            "stop_reason": "tool_use" if b.get("tool_calls") else "end_turn", "stop_sequence": None,
            "usage": {"input_tokens": i - c, "output_tokens": o, "cache_read_input_tokens": c,
                      "cache_creation_input_tokens": 0}}
