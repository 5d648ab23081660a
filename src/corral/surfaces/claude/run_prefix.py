"""Runs corral's shell prefix (`prefix.py`; its docstring says what it does) from bytecode.

    python3 -I -S run_prefix.py CHAINED STRING

The sh program `corral install claude` writes runs this only for a Bash call that may start
a long runner; CHAINED is the user's own prefix ("" for none).
"""

import sys

if __name__ == "__main__":
    # The folder that holds the corral package: run_prefix.py, claude/, surfaces/, corral/.
    root = __file__
    for _ in range(4):
        root = root.rpartition("/")[0]
    sys.path.insert(0, root or "/")
    from corral.surfaces.claude.prefix import main

    sys.exit(main(sys.argv[1:]))
