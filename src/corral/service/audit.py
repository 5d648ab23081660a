"""The one audit writer: every stop, from every surface, is one audit event, and a failure to
write it is logged and returned (the stop itself was done; the caller says so and fails)."""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Sequence
from typing import Any

log = logging.getLogger("corral.audit")


def record_stop(
    targets: Sequence[dict[str, Any]], *, surface: str, session: str | None = None
) -> list[str]:
    """Write one stop event with every target's outcome (`to_json()` rows). Returns the
    errors for the caller's envelope: empty, or one line saying the audit failed (logged)."""
    from corral.store import db

    try:
        db.audit(db.STOP_EVENT, list(targets), surface=surface, session=session)
    except (sqlite3.Error, OSError) as exc:
        log.warning("stop not audited (%s, %d target(s)): %s", surface, len(targets), exc)
        return [f"the stop was done but could not be audited: {exc}"]
    return []
