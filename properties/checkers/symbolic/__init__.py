"""A z3 encoding of the model's transition relation, for proofs and bounded model checking.

Written by hand from ``model.actions``, one function per action, each computing the
successor's variables as z3 terms of the predecessor's -- and held to the explicit model by
``tests/properties/test_symbolic.py``: on states reached by the explicit model, the successors
this relation allows are exactly those ``model.registry.successors`` produces, and every
property below evaluates as ``properties`` does.

Coverage (say it plainly):

* **One partition**, a fixed broker count ``N`` (the tests use 2 and 3) with AR = every broker
  (with topic deletions, the AR of the topic's current incarnation; with reassignments, the
  AR the moves leave).
* **Actions encoded**: those the registry marks z3-supported (``COVERED``; see
  ``docs/actions.md``), and the ``forget_stale_requests`` clean-up after each step.  Those
  a knob turns on (GC pauses, session expiries, preferred elections, controlled shutdowns:
  ``knobbed``) are cases of the relation only when the configuration's knob is above 0.
  Elections are the model's, unclean ones too where the configuration enables them (a
  live replica outside the ISR leads alone when no ISR member is live); AlterPartition
  (``alter``) is a knobbed action too, its messages one z3 set, and so are topic deletion
  and re-creation (``deletion``), whose shape carries the topic's identity, and replica
  reassignment (``reassign``), which moves that identity's AR.  Each action left out has
  its reason in the registry, and the configuration knob that enables it (partition
  changes).
  ``unsupported(cfg)`` names what a configuration asks for beyond this.
* **Unbounded**: leader epochs, controller epochs, zk versions, broker epochs, zxid, the
  crash counter and the offsets of the ISR/HW arithmetic.  In the induction proofs the
  configuration's ``max_epoch`` and ``max_crashes`` bounds are dropped entirely, and so is
  the bound of each knob above 0 (a knob at 0 still leaves its action out) -- but the
  durability tier keeps the number of reassignments: it is proved for one move.
* **Bounded**: logs are sequences of ``R = cfg.records`` slots (values are 1..R, each written
  once, so no log is ever longer -- the bound is the model's own, not the encoding's); the
  set of LeaderAndISR requests ever sent is an unbounded z3 set over a request datatype.

Ghost history encoding: ``committed`` as the epoch committed at (offset, value) (0 = never;
a value is produced once, so it has one epoch), ``acked``, ``zombie_appends`` and
``zombie_commits`` as a flag per value, ``led`` as one z3 set of epochs per broker plus its maximum.

The package: ``state`` (the symbolic state and the encoding of explicit states), ``cases``
(the relation's parameters and cases), ``encoding``, ``knobbed``, ``alter`` and ``deletion`` (the relation),
``props`` (the properties), ``proofs`` (induction), ``bmc`` (bounded model checking and
the differential check), ``coverage`` (what is covered, from the registry).
"""

from __future__ import annotations

from properties.checkers.symbolic.bmc import bmc, differential, sample_states
from properties.checkers.symbolic.coverage import COVERED, unsupported
from properties.checkers.symbolic.encoding import Disjunct, Encoding, Params
from properties.checkers.symbolic.proofs import Verdict, holds, prove
from properties.checkers.symbolic.props import STATE_PROPERTIES, durable
from properties.checkers.symbolic.state import Shape, encode, initial_state

__all__ = [
    "COVERED", "STATE_PROPERTIES", "Disjunct", "Encoding", "Params", "Shape", "Verdict", "bmc", "differential",
    "durable", "encode", "holds", "initial_state", "prove", "sample_states", "unsupported",
]
