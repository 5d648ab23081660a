"""Starts corral's supervisor (`supervisor.py`; its docstring is the usage) from bytecode.

    python3 -I -S supervise.py [SUPERVISOR OPTIONS] -- LINE

A script run by path is compiled from source on every start; a module is imported from its
cached bytecode. This launcher imports the supervisor as a module, so a job's start skips
the compile (milliseconds) and the supervisor never holds the compiler's memory.
"""

import sys

if __name__ == "__main__":
    # The folder that holds the corral package (no `os`: not needed, and not free to load).
    sys.path.insert(0, __file__.rpartition("/")[0].rpartition("/")[0] or "/")
    import atexit

    from corral import supervisor

    atexit.register(supervisor.run_as_program)  # after this top level is freed, as below
