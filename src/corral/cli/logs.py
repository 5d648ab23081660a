"""corral logs: a job's output, as the job wrote it (its name or id, a unique prefix)."""

from __future__ import annotations

import argparse
import sys

from corral.errors import UsageError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from corral.service.logs import LogRead


def configure(parser: argparse.ArgumentParser) -> None:
    parser.usage = (
        "corral logs ID|NAME [-f] [-n N] [--since DURATION|TIME] [--grep REGEX] "
        "[--after CURSOR] [--json]"
    )
    parser.add_argument("ref", metavar="ID|NAME", help="the job: its name or id (a prefix will do)")
    parser.add_argument(
        "-f", "--follow", action="store_true", help="keep printing what it writes until it ends"
    )
    parser.add_argument("-n", "--lines", type=int, metavar="N", help="only the last N lines")
    parser.add_argument(
        "--since",
        metavar="DURATION|TIME",
        help="only what it wrote since then: 30s, 5m, 2h, 1d ago, or a local time "
        "(2026-01-31T14:05, 14:05 today)",
    )
    parser.add_argument("--grep", metavar="REGEX", help="only lines matching REGEX")
    parser.add_argument(
        "--after",
        type=int,
        metavar="CURSOR",
        help="only what came after CURSOR (the `cursor` of an earlier --json answer)",
    )
    parser.add_argument(
        "--json", action="store_true", help="lines with byte cursors, in the versioned envelope"
    )


def main(args: argparse.Namespace) -> int:
    import re

    from corral.service import jobs, logs

    if args.lines is not None and args.lines < 0:
        raise UsageError("-n takes a number of lines, 0 or more")
    if args.after is not None and args.after < 0:
        raise UsageError("--after takes a cursor from an earlier `corral logs --json`")
    if args.grep is not None:
        try:
            re.compile(args.grep)
        except re.error as exc:
            raise UsageError(f"--grep: the regex does not compile: {exc}") from None
    since = None if args.since is None else since_seconds(args.since)
    record = jobs.resolve(args.ref)
    got = logs.read(record, tail=args.lines, grep=args.grep, after=args.after, since=since)
    if args.json and not args.follow:
        from corral.core.envelope import dumps

        notes = ["some of the lines asked for were dropped (size cap)"] if got.missed else []
        print(dumps(got.to_json(), notes))
        return 0
    _emit(got, args.json)
    if args.follow:
        logs.follow(record, got.cursor, lambda more: _emit(more, args.json), grep=args.grep)
    return 0


_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def since_seconds(text: str, now: float | None = None) -> float:
    """`--since`: a duration ago (`30s`, `5m`, `2h`, `1d`; a bare number is seconds) or a
    local time (`2026-01-31T14:05[:SS]`, or `14:05[:SS]` today), as Unix seconds."""
    import time
    from datetime import datetime

    now = time.time() if now is None else now
    number, unit = text[:-1], text[-1:]
    if unit.isdigit():
        number, unit = text, "s"
    if unit in _UNITS and number.replace(".", "", 1).isdigit() and number.isascii():
        return now - float(number) * _UNITS[unit]
    try:
        if "T" not in text and " " not in text and text.count(":") in (1, 2):
            today = datetime.fromtimestamp(now).date().isoformat()
            return datetime.fromisoformat(f"{today}T{text}").timestamp()
        return datetime.fromisoformat(text).timestamp()
    except (ValueError, OverflowError, OSError):  # not a time, or one no clock can hold
        raise UsageError(
            f"--since takes a duration (30s, 5m, 2h) or a time (2026-01-31T14:05), not {text!r}"
        ) from None


def _emit(got: LogRead, as_json: bool) -> None:
    out = sys.stdout
    if got.missed:
        sys.stderr.write("corral logs: some lines were dropped (the log passed its size cap)\n")
    if as_json:  # one object per line while following: a stream a program can read
        import json

        for line in got.lines:
            out.write(json.dumps(line.to_json(), ensure_ascii=False) + "\n")
    else:  # the job's own bytes, to the person who asked
        out.flush()
        out.buffer.write(b"".join(line.raw() for line in got.lines))
    out.flush()
