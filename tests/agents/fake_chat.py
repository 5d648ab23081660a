"""A fake OpenAI chat-completions API that follows a script, for driving agents that speak it
(Qwen Code) offline.

Each request that offers `tools` (the agent's main loop) takes the next turn of the script and
gets it back, streamed as `chat.completion.chunk` SSE events when the request asks for a stream,
else as one `chat.completion`. Side requests (no tools: titles, summaries, next-speaker checks)
get a harmless text reply and leave the script where it is. Every request is recorded, so a
test can read what the agent sent back (tool results carry hook denials).
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.helpers import LocalServer

JSON = dict[str, Any]

SIDE_REPLY = "ok"
EXHAUSTED_REPLY = "fake API: the script has no more turns"


@dataclass(frozen=True)
class Text:
    """An assistant text reply; a turn that is only text ends the conversation."""

    text: str


@dataclass(frozen=True)
class Call:
    """An assistant tool call; `id` is generated when left empty."""

    name: str
    arguments: Mapping[str, Any]
    id: str = ""


Reply = Text | Call | tuple[Call, ...]
# A turn is a reply, or a function of the request that gets it (a model answering what the
# agent just told it, e.g. the command a hook's deny named).
Turn = Reply | Callable[["Request"], Reply]


@dataclass(frozen=True)
class Request:
    method: str
    path: str
    body: JSON | None

    @property
    def main(self) -> bool:
        return self.method == "POST" and bool((self.body or {}).get("tools"))

    def messages(self) -> list[JSON]:
        return list((self.body or {}).get("messages") or [])

    def last_tool_result(self) -> str:
        """The text of the last `tool` message (what the agent sent back for a call)."""
        for message in reversed(self.messages()):
            if message.get("role") == "tool":
                return message_text(message)
        raise LookupError("the request carries no tool result")


def message_text(message: Mapping[str, Any]) -> str:
    """The text of a chat message (content may be a string or a list of parts)."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(p.get("text", "")) for p in content if isinstance(p, Mapping))
    return ""


@dataclass
class FakeChat:
    """Serve `script` on 127.0.0.1 (a free port) until `close()`; use as a context manager."""

    script: Sequence[Turn]
    requests: list[Request] = field(default_factory=list)
    overruns: int = 0
    _next_turn: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _ids: Iterator[int] = field(default_factory=lambda: itertools.count(1))
    _server: LocalServer | None = None

    def __enter__(self) -> FakeChat:
        api = self

        class Handler(_Handler):
            fake = api

        self._server = LocalServer(Handler, "fake-chat-api")
        return self

    def __exit__(self, *exc: object) -> None:
        if self._server is not None:
            self._server.close()

    @property
    def url(self) -> str:
        """The base URL an OpenAI client takes (ending in /v1)."""
        assert self._server is not None, "use FakeChat as a context manager"
        return f"http://127.0.0.1:{self._server.port}/v1"

    @property
    def turns_used(self) -> int:
        return self._next_turn

    def main_requests(self) -> list[Request]:
        with self._lock:
            return [r for r in self.requests if r.main]

    def tool_results(self) -> dict[str, str]:
        """The text of every `tool` message the agent sent back, by tool call id."""
        out: dict[str, str] = {}
        for request in self.main_requests():
            for message in request.messages():
                if message.get("role") == "tool":
                    out.setdefault(str(message.get("tool_call_id")), message_text(message))
        return out

    def record(self, request: Request) -> Reply:
        with self._lock:
            self.requests.append(request)
            if not request.main:
                return Text(SIDE_REPLY)
            if self._next_turn >= len(self.script):
                self.overruns += 1
                return Text(EXHAUSTED_REPLY)
            turn = self.script[self._next_turn]
            self._next_turn += 1
            if callable(turn):
                turn = turn(request)
            calls = (turn,) if isinstance(turn, Call) else turn
            if isinstance(calls, Text):
                return calls
            return tuple(c if c.id else Call(c.name, c.arguments, self.new_id()) for c in calls)

    def new_id(self) -> str:
        return f"call_fake_{next(self._ids):04d}"


def _tool_calls(calls: Sequence[Call]) -> list[JSON]:
    return [
        {
            "index": i,
            "id": c.id,
            "type": "function",
            "function": {"name": c.name, "arguments": json.dumps(dict(c.arguments))},
        }
        for i, c in enumerate(calls)
    ]


def completion(turn: Reply, model: str, ident: str) -> JSON:
    """One whole `chat.completion` for a non-streaming request."""
    message: JSON = {"role": "assistant", "content": None}
    if isinstance(turn, Text):
        message["content"] = turn.text
        finish = "stop"
    else:
        message["tool_calls"] = [
            {k: v for k, v in call.items() if k != "index"}
            for call in _tool_calls(turn if isinstance(turn, tuple) else (turn,))
        ]
        finish = "tool_calls"
    return {
        "id": ident,
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }


def chunks(turn: Reply, model: str, ident: str) -> list[JSON]:
    """The `chat.completion.chunk` events of one streamed reply (usage in the last one)."""

    def chunk(delta: JSON, finish: str | None) -> JSON:
        return {
            "id": ident,
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }

    if isinstance(turn, Text):
        body = [chunk({"role": "assistant", "content": turn.text}, None)]
        finish = "stop"
    else:
        calls = turn if isinstance(turn, tuple) else (turn,)
        body = [
            chunk({"role": "assistant", "content": None, "tool_calls": _tool_calls(calls)}, None)
        ]
        finish = "tool_calls"
    last = chunk({}, finish)
    last["usage"] = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
    return [*body, last]


class _Handler(BaseHTTPRequestHandler):
    fake: FakeChat
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the recorded requests are the log."""

    def _send_json(self, payload: JSON, status: int = 200) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        self.fake.record(Request("GET", self.path, None))
        if self.path.rstrip("/").endswith("/models"):
            self._send_json({"object": "list", "data": [{"id": "fake-model", "object": "model"}]})
            return
        self._send_json({"error": {"message": "not found"}}, 404)

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            body = json.loads(raw) if raw else {}
        except json.JSONDecodeError:
            body = {"unparsed": raw.decode("utf-8", "replace")}
        if not isinstance(body, dict):
            body = {"unparsed": body}
        turn = self.fake.record(Request("POST", self.path, body))
        model = str(body.get("model", "fake-model"))
        ident = f"chatcmpl-fake-{len(self.fake.requests):04d}"
        if not body.get("stream"):
            self._send_json(completion(turn, model, ident))
            return
        # SSE without a length: the end of the stream is the end of the connection.
        self.close_connection = True
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        for event in chunks(turn, model, ident):
            self.wfile.write(f"data: {json.dumps(event)}\n\n".encode())
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()
