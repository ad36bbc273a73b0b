"""Entry point of the ``bayesbias`` console script and ``python -m bayesbias``.

Its first statements make Ctrl-C and SIGTERM during start-up (imports) end the process
quietly with exit code 130 / 143 instead of a traceback; :func:`bayesbias.cli.main` then
turns them into a clean interruption of the running command (temporary files removed).
Only the interpreter's own start-up, before this module runs, is out of reach.
"""

import _signal  # built in: no import time in which a signal finds no handler (signal: enum)
import os  # already loaded by the interpreter's start-up
import sys


def _early_exit(signum, frame):
    sys.stderr.write(f"bayesbias: {'interrupted' if signum == _signal.SIGINT else 'terminated'}"
                     "; no output written\n")
    for stream in (sys.stdout, sys.stderr):  # after the command: its output stays whole
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    # not SystemExit: a signal that lands in an import's weakref callback would have it printed
    # as "Exception ignored" and the command would go on (nothing is written before cli.main)
    os._exit(128 + signum)


_signal.signal(_signal.SIGINT, _early_exit)
_signal.signal(_signal.SIGTERM, _early_exit)


def main() -> int:
    """Run the command line (see :func:`bayesbias.cli.main`)."""
    from .cli import main as cli_main

    return cli_main()
