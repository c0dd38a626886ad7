"""What `python -m harness VERB` exits with, so that CI can tell a finding from a breakage.

A crashing implementation used to end `verify` with exit 1, the code for "an
implementation is wrong": a broken harness read as a wrong implementation.
"""

from __future__ import annotations

#: the verb ran and everything it checked holds
OK = 0
#: the verb ran and found a problem: an implementation is wrong (verify), a table matches no
#: convention (identify), a cell got slower (report --fail-slower)
FINDING = 1
#: the command line or its input is wrong (a bad option, an unusable --out, a run in use)
USAGE = 2
#: the harness itself failed (a bug, an isolated process that could not start, a failed
#: bench post-step); the message says what
HARNESS = 3
#: interrupted (Ctrl-C); what had finished is on disk
INTERRUPTED = 130


class UsageError(ValueError):
    """Bad input from the user (a spec field, an option, a file, a config, a plugin's
    declaration): the CLI prints its one line and exits USAGE. A ValueError still, so code
    that catches ValueError for bad input keeps working; any other exception reaching the
    CLI is a harness bug, exit HARNESS with its traceback."""
