"""The `claude` fixture: the real Claude Code CLI against a fake API (see harness.py)."""

from tests.claude.harness import claude

__all__ = ["claude"]
