"""Every refusal, whatever its reason, starts with `corral refused:` (the documented prefix a
model and a person recognise)."""

from __future__ import annotations

import inspect

from corral.core.shell import messages
from corral.core.shell.messages import LiveJob, PortHolder

JOB = LiveJob("a" * 32, 10, "x", "/w", (8000,), 5.0, "npm run dev")
HOLDER = PortHolder(8000, 11, "node srv.js", None)
ARGS = {
    "display": "npm run dev",
    "job": JOB,
    "port": 8000,
    "holder": HOLDER,
    "cwd": "/w",
    "first": "a",
    "second": "b",
    "token": "b" * 32,
}


def test_every_refusal_message_starts_with_the_prefix() -> None:
    built = []
    for name, func in inspect.getmembers(messages, inspect.isfunction):
        params = list(inspect.signature(func).parameters)
        if func.__module__ != messages.__name__ or name.startswith("_") or name == "age":
            continue
        text = func(*(ARGS[p] for p in params))
        built.append(name)
        assert text.startswith("corral refused: "), (name, text)
    assert "being_started" in built and "duplicate" in built
