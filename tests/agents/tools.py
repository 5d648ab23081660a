"""Where the pinned agent CLIs are (scripts/install-agents.sh puts them in .tools), and the
skip (or, in CI, the failure) when one is missing."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
QWEN_BIN = ROOT / ".tools" / "qwen" / "node_modules" / ".bin" / "qwen"
OPENCODE_BIN = ROOT / ".tools" / "opencode" / "node_modules" / ".bin" / "opencode"


def binary_or_skip(path: Path, what: str) -> Path:
    """`path` when installed; else skip, except in CI where a missing CLI is a failure."""
    if path.exists():
        return path
    why = f"{what} not installed at {path}: run scripts/install-agents.sh"
    if os.environ.get("CI", "").lower() in ("true", "1"):
        pytest.fail(why)
    pytest.skip(why)
