"""Starts corral's supervisor (`program.py`; its docstring is the usage) from bytecode.

    python3 -I -S launcher.py [SUPERVISOR OPTIONS] -- LINE

A script run by path is compiled from source on every start; a module is imported from its
cached bytecode. This launcher imports the supervisor as a module, so a job's start skips
the compile (milliseconds) and the supervisor never holds the compiler's memory.
"""

import sys

if __name__ == "__main__":
    # The folder that holds the corral package (no `os`: not needed, and not free to load):
    # this file is <root>/corral/supervisor/launcher.py.
    sys.path.insert(0, __file__.rpartition("/")[0].rpartition("/")[0].rpartition("/")[0] or "/")
    import atexit

    from corral.supervisor import program

    # CPython frees a script's syntax tree only once the script's top level returns; the
    # supervisor runs from the exit handlers, after this top level is freed.
    atexit.register(program.run_as_program)
