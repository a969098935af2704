"""The one error every ``epochal`` command raises for what the user got wrong.

The layers below the command line raise their own errors, in their own terms (a
configuration that does not exist, a run directory already in use, an unreadable trace);
each command translates the ones that are the user's into :class:`UsageError`, and
:func:`impl.harness.cli.main.main` prints it as one line and exits 2 -- never a traceback.
"""

from __future__ import annotations


class UsageError(Exception):
    """A problem with what the user asked for; printed as one line, exit code 2."""
