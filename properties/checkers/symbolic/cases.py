"""What the relation is made of: the parameters it takes from a configuration, and its
cases (one per action and concrete broker arguments)."""

from __future__ import annotations

from dataclasses import dataclass

import z3

from model.config import Config
from properties.checkers.symbolic.state import Term


@dataclass
class Params:
    """What the relation takes from a configuration.  ``None`` bounds are unbounded (proofs)."""

    truncation: str
    min_insync: int = 1
    max_epoch: int | None = None
    max_crashes: int | None = None
    records: int = 2
    fence_controller_epoch: bool = True
    fence_broker_epoch: bool = True
    unclean: bool = False  # unclean.leader.election.enable: with no live ISR member, a live replica leads alone
    # the knobs of the actions a configuration may leave off: 0 leaves the action out of the
    # relation altogether (the configuration never takes it), None takes it unboundedly
    max_pauses: int | None = None
    max_expiries: int | None = None
    preferred_elections: int | None = None
    max_shutdowns: int | None = None
    alter_partition: int | None = None  # on (not 0): the controller writes the ISR the leader proposes
    deletions: int | None = None  # topic deletions (each then re-created); the shape's ``topic`` has the variables
    reassignments: int | None = None  # replica reassignments started; the shape's ``reassign`` has the RAR

    @property
    def fenced_fetch(self) -> bool:
        return self.truncation == "kip320"

    @property
    def sessions_end_alone(self) -> bool:
        """Whether a broker's ZK session may end while its process runs on (a GC pause or a
        session expiry): only then is an up broker ever unregistered, so only then may it
        re-register."""
        return self.max_pauses != 0 or self.max_expiries != 0

    @classmethod
    def of(cls, cfg: Config, bounded: bool = True, kept: tuple[str, ...] = ()) -> Params:
        """``bounded`` False drops the configuration's bounds (a proof's relation), all but
        the knobs named in ``kept``."""
        def knob(value: int, name: str = "") -> int | None:  # a proof drops a bound, never an action's absence
            return value if bounded or value == 0 or name in kept else None

        return cls(cfg.truncation, cfg.min_insync, cfg.max_epoch if bounded else None,
                   cfg.max_crashes if bounded else None, cfg.records, cfg.fence_controller_epoch,
                   getattr(cfg, "fence_broker_epoch", False), cfg.unclean, knob(cfg.max_pauses),
                   knob(cfg.max_expiries), knob(cfg.preferred_elections), knob(cfg.max_shutdowns),
                   knob(cfg.alter_partition), knob(cfg.deletions), knob(cfg.reassignments, "reassignments"))


@dataclass
class Disjunct:
    """One (action, concrete broker arguments) case of the relation: guard and successor."""

    action: str
    args: tuple  # concrete broker indices; a request action also has ``msg``
    guard: Term
    post: dict
    msg: Term | None = None


def below(count: Term, bound: int | None) -> Term:
    """A knob's bound on how often an action is taken (None: unbounded)."""
    return z3.BoolVal(True) if bound is None else count < bound


def ite(c: Term, a: Term, b: Term) -> Term:
    return a if a.eq(b) else z3.If(c, a, b)
