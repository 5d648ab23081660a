"""Where the pinned agent CLIs are: scripts/install-agents.sh puts them in .tools."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
QWEN_BIN = ROOT / ".tools" / "qwen" / "node_modules" / ".bin" / "qwen"
OPENCODE_BIN = ROOT / ".tools" / "opencode" / "node_modules" / ".bin" / "opencode"
INSTALL = "scripts/install-agents.sh"
