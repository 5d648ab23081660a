"""A fake OpenAI Responses API (`POST /v1/responses`, streamed) that follows a script, for
driving the real Codex CLI offline: each request gets the next scripted tool call as a
`function_call` item, and once the script is done a text message that ends the turn. Every
request body is recorded, so a test reads what Codex sent back (tool outputs, hook text)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class FakeResponses:
    def __init__(self, calls: Sequence[tuple[str, Mapping[str, Any]]]) -> None:
        self.calls = list(calls)  # (tool name, arguments)
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self.port = 0

    def next_item(self, body: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            self.requests.append(body)
            index = len(self.requests) - 1
        if index < len(self.calls):
            name, args = self.calls[index]
            return {"type": "function_call", "id": f"fc_{index}", "call_id": f"call_{index}",
                    "name": name, "arguments": json.dumps(args)}  # fmt: skip
        return {"type": "message", "role": "assistant", "id": f"msg_{index}",
                "content": [{"type": "output_text", "text": "done"}]}  # fmt: skip

    def tool_outputs(self) -> list[str]:
        """The outputs Codex sent back for the scripted calls, in order."""
        found: dict[str, str] = {}
        for body in self.requests:
            for item in body.get("input", []):
                if item.get("type") == "function_call_output":
                    output = item.get("output")
                    found[item["call_id"]] = (
                        output if isinstance(output, str) else json.dumps(output)
                    )
        return [found.get(f"call_{i}", "") for i in range(len(self.calls))]


def _handler(fake: FakeResponses) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            self.send_response(404)
            self.end_headers()

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}")
            item = fake.next_item(body)
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.end_headers()
            rid = f"resp_{len(fake.requests)}"
            usage = {"input_tokens": 1, "output_tokens": 1, "total_tokens": 2,
                     "input_tokens_details": None, "output_tokens_details": None}  # fmt: skip
            for event in (
                {"type": "response.created", "response": {"id": rid}},
                {"type": "response.output_item.done", "item": item},
                {"type": "response.completed", "response": {"id": rid, "usage": usage}},
            ):
                self.wfile.write(f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode())
            self.wfile.flush()

    return Handler


@contextmanager
def serving(calls: Sequence[tuple[str, Mapping[str, Any]]]) -> Iterator[FakeResponses]:
    """The fake on a free loopback port, for the duration of the block."""
    fake = FakeResponses(calls)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(fake))
    fake.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield fake
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
