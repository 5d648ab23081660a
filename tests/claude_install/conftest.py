"""The `claude` fixture: the real Claude Code CLI against a fake API (tests/claude)."""

from tests.claude.harness import claude

__all__ = ["claude"]
