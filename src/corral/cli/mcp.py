"""corral mcp: serve corral's tools to an agent over MCP (stdio). See surfaces/mcp.py."""

from __future__ import annotations

import argparse


def configure(parser: argparse.ArgumentParser) -> None:
    parser.usage = "corral mcp"


def main(args: argparse.Namespace) -> int:
    from corral.surfaces.mcp import serve

    serve()
    return 0
