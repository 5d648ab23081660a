"""corral clean: forget finished jobs and records whose supervisor is provably dead."""

from __future__ import annotations

import argparse


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print the versioned JSON envelope")


def main(args: argparse.Namespace) -> int:
    from corral.service.jobs import clean

    result = clean()
    if args.json:
        from corral.core.envelope import dumps

        print(
            dumps(
                {
                    "forgotten": result.forgotten,
                    "kept": [{"id": i, "why": why} for i, why in result.kept],
                    "litter": result.litter,
                }
            )
        )
        return 0
    if result.forgotten or not result.litter:
        print(
            f"forgot {len(result.forgotten)} finished job(s)"
            if result.forgotten
            else "nothing to clean"
        )
    if result.litter:
        print(f"removed {len(result.litter)} leftover file(s) from the ledger folder")
    from corral.core.text import printable

    for job_id, why in result.kept:
        print(printable(f"kept {job_id[:8]}: {why}"))
    return 0
