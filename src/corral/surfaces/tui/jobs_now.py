"""The control room's first board with no daemon, read in a process of its own: `corral tui`
starts it before importing Textual, whose import holds the interpreter's lock for a third of
a second; on another core the jobs are read meanwhile.

    python -m corral.surfaces.tui.jobs_now FOLDER   (prints [board, warnings] as JSON)
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def main(argv: list[str]) -> int:
    from corral.service import board

    view = board.jobs_board(Path(argv[0]))
    json.dump([view.to_json(), view.warnings], sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
