"""corral daemon: serve the HTTP API on a Unix socket in CORRAL_HOME (optional)."""

from __future__ import annotations

import argparse


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--ensure", action="store_true", help="start it in the background unless it runs"
    )
    parser.add_argument(
        "--tcp", metavar="127.0.0.1:PORT", help="also listen on loopback TCP (bearer token)"
    )


def main(args: argparse.Namespace) -> int:
    from corral.surfaces import daemon

    if args.tcp is not None:
        daemon.parse_tcp(args.tcp)  # a usage error before anything starts
    if args.ensure:
        found = daemon.ensure(args.tcp)
        print(f"corral daemon: running, pid {found['pid']}, socket {daemon.socket_path()}")
        return 0
    return daemon.serve(args.tcp)
