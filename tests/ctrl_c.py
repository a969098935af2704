"""Starting a command the way a terminal does, so that a test's SIGINT is a Ctrl-C.

A process inherits an ignored SIGINT (and a blocked one) across fork and exec: a shell
ignores SIGINT in a command it starts in the background without job control (POSIX), so a
test run so would send its "Ctrl-C" to a command that never sees it, and wait for ever.
(A clean-clone CI run started as ``( ./.ci/run & )`` failed the Ctrl-C tests just so.)"""

from __future__ import annotations

import signal


def as_from_a_terminal() -> None:
    """``preexec_fn`` for a command a test will interrupt: SIGINT at its default
    disposition and unblocked, as in a foreground command at a terminal."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
