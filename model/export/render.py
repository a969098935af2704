"""Readable text for steps and states: counterexamples are for people.

The text of each step is declared with its action (``model.registry``, field ``describe``);
the text of states, records and broker sets is ``model.text``.  This module is where the
checkers and the CLI take both from.
"""

from __future__ import annotations

from model.actions import Step
from model.registry import ACTIONS
from model.state import State
from model.text import brokers_text, leader_text, log_text, record, state_text, value_text

__all__ = ["brokers_text", "describe", "leader_text", "log_text", "record", "state_text", "value_text"]


def describe(step: Step, before: State, after: State) -> str:
    """One line saying what happened, in the design's words."""
    entry = ACTIONS.get(step.action)
    if entry is None:
        return f"{step.action}{step.args}"
    return entry.describe(step.args, before, after)
