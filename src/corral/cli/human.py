"""Numbers and paths as the human tables show them (shared by ls, procs and the session
commands; the tui shares them too, from corral.core.human)."""

from __future__ import annotations

from corral.core.human import human_age, human_bytes, job_state, short_path

__all__ = ["human_age", "human_bytes", "job_state", "short_path"]
