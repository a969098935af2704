"""Exit codes: one convention for every epochal command, so a CI job can script any of them.

The table (EXIT_CODES) is printed at the end of epochal --help.
"""

from __future__ import annotations

HOLDS = 0
"""Every property holds (the search was exhaustive, or the proof covers every state), the
implementation followed the model, or the traces conform."""

FOUND = 1
"""A violation, a divergence or a non-conformance was found (and reported)."""

USAGE = 2
"""Bad input or usage: one line on stderr, never a traceback."""

INCONCLUSIVE = 3
"""Nothing was found, but something is not proved or not covered: a budget (states, depth,
time, memory, runs) ran out, a property was only bounded-checked, pairs were left
uncovered, or Ctrl-C stopped the command -- always after it reported how far it got."""

VERDICTS = {HOLDS: "holds", FOUND: "violated", USAGE: "bad_input", INCONCLUSIVE: "inconclusive"}
"""The one vocabulary of ``--json``'s ``verdict``: the word of each exit code, the same in
every command (docs/verdict.schema.json)."""

EXIT_CODES = f"""exit codes: the same meaning in every command (docs/cli.md)
  {HOLDS}  holds, followed or conforms
  {FOUND}  a violation, divergence or non-conformance found
  {USAGE}  bad input or usage
  {INCONCLUSIVE}  inconclusive: anything not proved or not covered (a budget ran out, a property only
     bounded-checked, pairs not covered), or Ctrl-C -- after the report"""


def combined(codes: list[int]) -> int:
    """One command's code over several results: a violation found anywhere is the answer;
    else any search left unfinished makes the whole inconclusive."""
    if FOUND in codes:
        return FOUND
    if INCONCLUSIVE in codes:
        return INCONCLUSIVE
    return HOLDS
