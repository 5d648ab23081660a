"""Which project a folder belongs to: the one answer listings, names and briefings share."""

from __future__ import annotations

from pathlib import Path


def project_root(folder: Path | None = None) -> Path:
    """The project a folder belongs to: the nearest enclosing git work tree, else itself."""
    start = (folder or Path.cwd()).resolve()
    for candidate in (start, *start.parents):
        if (candidate / ".git").exists():
            return candidate
    return start
