"""corral audit: the stops corral made, from any surface, with every target's result."""

from __future__ import annotations

import argparse
import time


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--limit", type=int, default=50, help="how many events (latest last)")
    parser.add_argument("--json", action="store_true", help="print the versioned JSON envelope")


def main(args: argparse.Namespace) -> int:
    from corral.service.sessions import audit_events

    events = audit_events(max(1, args.limit))
    if args.json:
        from corral.core.envelope import dumps

        print(dumps(events))
        return 0
    from corral.core.text import printable

    if not events:
        print("no audit events yet")
    for e in events:
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(e["at"]))
        session = f" session {e['session']}" if e["session"] else ""
        print(printable(f"{when}  {e['event']}  via {e['surface']}{session}  ({e['actor']})"))
        for t in e["targets"]:
            detail = f" ({t['detail']})" if t.get("detail") else ""
            target = f"  pid {t.get('pid')} @ {t.get('started_at')}: {t.get('result')}{detail}"
            print(printable(target))
    return 0
