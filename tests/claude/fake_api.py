"""A fake Anthropic Messages API that follows a script, for driving the real Claude Code CLI.

Each request that carries the model's main conversation takes the next turn of the script
and gets it back as a streamed message. Side requests (title generation, quota checks, token
counting, small-model helpers) get a harmless text reply and leave the script where it is.
Every request is recorded, so a test can read what the CLI sent back (tool results, hook
messages, reminders).
"""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any, Literal

from tests.helpers import LocalServer

JSON = dict[str, Any]


@dataclass(frozen=True)
class Text:
    """An assistant text block; a turn that is only text ends the conversation."""

    text: str


@dataclass(frozen=True)
class ToolUse:
    """An assistant tool call; `id` is generated when left empty."""

    name: str
    input: Mapping[str, Any]
    id: str = ""


Block = Text | ToolUse
Turn = Block | tuple[Block, ...]
Kind = Literal["main", "side", "count_tokens", "probe"]

# The main loop always offers tools; side requests (titles, quota checks, topics) offer none.
# The model says nothing: `--model haiku` runs the main loop on the small model.
SIDE_REPLY = "ok"
EXHAUSTED_REPLY = "fake API: the script has no more turns"


@dataclass(frozen=True)
class Request:
    method: str
    path: str
    headers: Mapping[str, str]
    body: JSON | None
    kind: Kind

    def last_user_blocks(self) -> list[JSON]:
        """The content blocks of the last user message (where tool results travel)."""
        messages = (self.body or {}).get("messages") or []
        for message in reversed(messages):
            if message.get("role") == "user":
                content = message.get("content")
                if isinstance(content, str):
                    return [{"type": "text", "text": content}]
                return list(content or [])
        return []


def classify(method: str, path: str, body: JSON | None) -> Kind:
    if method != "POST" or body is None:
        return "probe"
    if path.split("?", maxsplit=1)[0].endswith("/count_tokens"):
        return "count_tokens"
    return "main" if body.get("tools") else "side"


def block_text(block: Mapping[str, Any]) -> str:
    """The text of a text or tool_result block (tool_result content may be a list)."""
    content = block.get("content", block.get("text", ""))
    if isinstance(content, str):
        return content
    return "\n".join(str(part.get("text", "")) for part in content if isinstance(part, Mapping))


def _blocks(turn: Turn) -> tuple[Block, ...]:
    return turn if isinstance(turn, tuple) else (turn,)


@dataclass
class FakeAPI:
    """Serve `script` on 127.0.0.1 (a free port) until `close()`; use as a context manager."""

    script: Sequence[Turn]
    requests: list[Request] = field(default_factory=list)
    overruns: int = 0
    _next_turn: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _ids: Iterator[int] = field(default_factory=lambda: itertools.count(1))
    _server: LocalServer | None = None

    def __enter__(self) -> FakeAPI:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def start(self) -> None:
        api = self

        class Handler(_Handler):
            fake = api

        self._server = LocalServer(Handler, "fake-anthropic-api")

    def close(self) -> None:
        if self._server is not None:
            self._server.close()

    @property
    def url(self) -> str:
        assert self._server is not None, "FakeAPI.start() first"
        return f"http://127.0.0.1:{self._server.port}"

    @property
    def turns_used(self) -> int:
        return self._next_turn

    def main_requests(self) -> list[Request]:
        with self._lock:
            return [r for r in self.requests if r.kind == "main"]

    def side_requests(self) -> list[Request]:
        with self._lock:
            return [r for r in self.requests if r.kind != "main"]

    def tool_results(self) -> list[JSON]:
        """Every tool_result block the CLI sent back, in order, each once."""
        seen: dict[str, JSON] = {}
        for request in self.main_requests():
            for block in request.last_user_blocks():
                if block.get("type") == "tool_result":
                    seen.setdefault(str(block.get("tool_use_id")), block)
        return list(seen.values())

    def tool_result_for(self, tool_use_id: str) -> JSON:
        for block in self.tool_results():
            if block.get("tool_use_id") == tool_use_id:
                return block
        raise KeyError(f"the CLI sent no tool_result for {tool_use_id}")

    def record(self, request: Request) -> tuple[Block, ...]:
        """Store the request; return the blocks to answer it with."""
        with self._lock:
            self.requests.append(request)
            if request.kind != "main":
                return (Text(SIDE_REPLY),)
            if self._next_turn >= len(self.script):
                self.overruns += 1
                return (Text(EXHAUSTED_REPLY),)
            turn = _blocks(self.script[self._next_turn])
            self._next_turn += 1
            return tuple(
                ToolUse(b.name, b.input, b.id or f"toolu_fake_{next(self._ids):04d}")
                if isinstance(b, ToolUse)
                else b
                for b in turn
            )


def message_events(blocks: Sequence[Block], model: str, message_id: str) -> list[JSON]:
    """The SSE events of one streamed assistant message."""
    stop = "tool_use" if any(isinstance(b, ToolUse) for b in blocks) else "end_turn"
    usage = {"input_tokens": 10, "output_tokens": 1}
    events: list[JSON] = [
        {
            "type": "message_start",
            "message": {
                "id": message_id,
                "type": "message",
                "role": "assistant",
                "model": model,
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": usage,
            },
        }
    ]
    for index, block in enumerate(blocks):
        if isinstance(block, Text):
            start: JSON = {"type": "text", "text": ""}
            delta: JSON = {"type": "text_delta", "text": block.text}
        else:
            start = {"type": "tool_use", "id": block.id, "name": block.name, "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(dict(block.input))}
        events += [
            {"type": "content_block_start", "index": index, "content_block": start},
            {"type": "content_block_delta", "index": index, "delta": delta},
            {"type": "content_block_stop", "index": index},
        ]
    events += [
        {
            "type": "message_delta",
            "delta": {"stop_reason": stop, "stop_sequence": None},
            "usage": {"output_tokens": 5},
        },
        {"type": "message_stop"},
    ]
    return events


def whole_message(blocks: Sequence[Block], model: str, message_id: str) -> JSON:
    """The same message for a non-streaming request."""
    content: list[JSON] = [
        {"type": "text", "text": b.text}
        if isinstance(b, Text)
        else {"type": "tool_use", "id": b.id, "name": b.name, "input": dict(b.input)}
        for b in blocks
    ]
    stop = "tool_use" if any(isinstance(b, ToolUse) for b in blocks) else "end_turn"
    return {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 5},
    }


class _Handler(BaseHTTPRequestHandler):
    fake: FakeAPI
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the recorded requests are the log."""

    def _record(self, body: JSON | None) -> tuple[Request, tuple[Block, ...]]:
        kind = classify(self.command, self.path, body)
        request = Request(self.command, self.path, dict(self.headers.items()), body, kind)
        return request, self.fake.record(request)

    def _send_json(self, payload: JSON, status: int = 200) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_HEAD(self) -> None:
        self._record(None)
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_GET(self) -> None:
        self._record(None)
        self._send_json({"type": "error", "error": {"type": "not_found_error"}}, 404)

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        try:
            body = json.loads(raw) if raw else {}
        except json.JSONDecodeError:
            body = {"unparsed": raw.decode("utf-8", "replace")}
        request, blocks = self._record(body)
        if request.kind == "count_tokens":
            self._send_json({"input_tokens": 10})
            return
        model = str(body.get("model", "claude-fake"))
        message_id = f"msg_fake_{len(self.fake.requests):04d}"
        if not body.get("stream"):
            self._send_json(whole_message(blocks, model, message_id))
            return
        # SSE without a length: the end of the stream is the end of the connection.
        self.close_connection = True
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        for event in message_events(blocks, model, message_id):
            self.wfile.write(f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode())
        self.wfile.flush()
