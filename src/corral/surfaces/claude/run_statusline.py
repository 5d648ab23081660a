"""Runs corral's Claude Code status line (`statusline.py`; its docstring is the usage) from
bytecode.

    python3 -I -S run_statusline.py [--hint TEXT] [--then COMMAND]

A script run by path is compiled from source on every start (~3 ms for statusline.py, which
Claude Code runs on every update); a module is imported from its cached bytecode.
"""

import sys

if __name__ == "__main__":
    # The folder that holds the corral package: run_statusline.py, claude/, surfaces/, corral/.
    root = __file__
    for _ in range(4):
        root = root.rpartition("/")[0]
    sys.path.insert(0, root or "/")
    from corral.surfaces.claude import exit_now
    from corral.surfaces.claude.statusline import main

    exit_now(main(sys.argv[1:]))
