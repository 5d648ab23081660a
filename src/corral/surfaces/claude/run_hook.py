"""Runs corral's Claude Code hook (`hook.py`; its docstring is the usage) from bytecode.

    python3 -I -S run_hook.py pre-tool-use | post-tool-use | session-start | session-end

A script run by path is compiled from source on every start (~2 ms for hook.py, on every
Bash call an agent makes); a module is imported from its cached bytecode. Settings files
run this launcher, which imports the hook as a module.
"""

import sys

if __name__ == "__main__":
    # The folder that holds the corral package: run_hook.py, claude/, surfaces/, corral/.
    root = __file__
    for _ in range(4):
        root = root.rpartition("/")[0]
    sys.path.insert(0, root or "/")
    from corral.surfaces.claude import exit_now
    from corral.surfaces.claude.hook import main

    exit_now(main(sys.argv[1:]))
