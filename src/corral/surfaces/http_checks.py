"""The daemon's request checks, for its own routes (surfaces.http) and the mod's
(surfaces.http_claude): a bad request raises BadRequest, which the app answers with its 4xx
and the envelope, changing nothing. A module of their own: http imports http_claude's routes,
so http_claude cannot import http."""

from __future__ import annotations

import json
import os
from typing import Any

from starlette.requests import Request

MAX_BODY = 64 * 1024


class BadRequest(Exception):
    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


async def body(request: Request) -> dict[str, Any]:
    """The request's JSON object (at most MAX_BODY bytes)."""
    length = request.headers.get("content-length")
    if length is not None and (not length.isdigit() or int(length) > MAX_BODY):
        raise BadRequest(f"request body too large: at most {MAX_BODY} bytes", 413)
    raw = b""
    async for chunk in request.stream():
        raw += chunk
        if len(raw) > MAX_BODY:
            raise BadRequest(f"request body too large: at most {MAX_BODY} bytes", 413)
    try:
        data = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise BadRequest(f"body is not JSON: {exc}") from None
    except RecursionError:
        raise BadRequest("body is JSON nested too deeply") from None
    if not isinstance(data, dict):
        raise BadRequest("body must be a JSON object")
    return data


def only_fields(data: dict[str, Any], allowed: set[str]) -> None:
    """A body holds no field but `allowed`."""
    unknown = sorted(set(data) - allowed)
    if unknown:
        raise BadRequest(f"unknown field(s) {', '.join(unknown)}; allowed: {sorted(allowed)}")


def only_params(request: Request, allowed: set[str]) -> None:
    """A query holds no parameter but `allowed`."""
    unknown = sorted(set(request.query_params) - allowed)
    if unknown:
        raise BadRequest(f"unknown query parameter(s) {', '.join(unknown)}")


def flag(request: Request, name: str) -> bool:
    """Query parameter `name`: true or false (absent: false)."""
    value = request.query_params.get(name, "false")
    if value not in ("true", "false"):
        raise BadRequest(f"query parameter {name} must be true or false")
    return value == "true"


def path_param(request: Request, name: str, *, required: bool = False) -> str | None:
    """Query parameter `name`, an absolute path (None when absent and not `required`)."""
    value = request.query_params.get(name)
    if value is None and not required:
        return None
    if value is None or not os.path.isabs(value):
        raise BadRequest(f"query parameter {name} must be an absolute path")
    return value
