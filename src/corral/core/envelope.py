"""The one machine-output envelope shared by CLI `--json`, HTTP and MCP."""

from __future__ import annotations

import json
from typing import Any

SCHEMA = 1


def envelope(data: Any, errors: list[str] | None = None) -> dict[str, Any]:
    return {"schema": SCHEMA, "data": data, "errors": list(errors or [])}


def dumps(data: Any, errors: list[str] | None = None) -> str:
    return json.dumps(envelope(data, errors), ensure_ascii=False, sort_keys=False)
