"""A controller paused in the middle of an election: the zombie whose ZooKeeper write the
controller-epoch check must refuse.

The model's controller elects in one step (``elect_leader``); the implementation's, in step
mode, decides, then waits for the ``elect_leader`` permit, then re-reads ZooKeeper and writes
(``impl.node.controller.broker_failure``).  A controller frozen (``broker_pause``) while an
election is enabled for it is frozen at that wait: its session expires, another broker
becomes controller at a newer controller epoch, and when it resumes it is still inside the
election.  Given its permit it reads ZooKeeper afresh and attempts the write -- conditional on
a zk_version it has just read, so only the ``/controller_epoch`` check in front of every
controller write (``ControllerContext._txn``) stops it -- and, refused, resigns.  The model
never lets a controller that is not acting write (``acting_controller``): the refused write
changes nothing, and the model's step is ``controller_resign``.

Which paused controllers wait so is a fact of the path, not of one model state, so the
generated paths and the driver both carry it along (:func:`waiting_after`).
"""

from __future__ import annotations

from model.actions import Step
from model.actions.common import acting_controller
from model.config import Config
from model.registry import apply, successors
from model.state import State

Waiting = frozenset[int]
"""The controllers frozen with an election pending: the zombies that will attempt a write."""


def electing(s: State, cfg: Config, c: int) -> bool:
    """Whether controller ``c`` has an election to make in ``s`` (the implementation's
    controller then waits for its ``elect_leader`` permit)."""
    return acting_controller(s, c) and any(
        st.action == "elect_leader" and st.args[0] == c for st, _ in successors(s, cfg))


SESSION_ENDS_RUNNING = ("broker_pause", "broker_expire")
"""The steps that end a controller's session while its process lives on: one inside an
election stays at its permit, frozen or not, and resigns only once its write is refused."""


def waiting_after(step: Step, s: State, cfg: Config, waiting: Waiting) -> Waiting:
    """The zombies with a pending election after ``step`` is taken in ``s``: a controller
    paused, or whose session expired, while electing joins them; one that resigns, crashes
    or restarts leaves them."""
    b = step.args[0] if step.args else None
    if step.action in SESSION_ENDS_RUNNING and electing(s, cfg, b):
        return waiting | {b}
    if step.action in ("controller_resign", "broker_crash", "broker_restart") and b in waiting:
        return waiting - {b}
    return waiting


def _would_write(s: State, c: int, cfg: Config) -> bool:
    """Whether zombie ``c``, reading ZooKeeper afresh as it does once it has its permit, finds
    an election to make: the one its write would be, were it still the acting controller.
    (With none left -- the new controller made it first -- it writes nothing.)"""
    zk = s.zk._replace(controller=c)
    brokers = tuple(b._replace(controller_epoch=zk.controller_epoch) if i == c else b
                    for i, b in enumerate(s.brokers))
    return electing(s._replace(zk=zk, brokers=brokers), cfg, c)


def superseded(s: State, c: int) -> bool:
    """Another controller was elected since ``c`` was: ``/controller_epoch`` moved on."""
    return s.zk.controller_epoch > s.brokers[c].controller_epoch


def write_refused(s: State, c: int, cfg: Config) -> bool:
    """Zombie ``c`` attempts a write that the controller-epoch check refuses."""
    return superseded(s, c) and _would_write(s, c, cfg)


def writes_unfenced(s: State, c: int, cfg: Config) -> bool:
    """Controller ``c``'s session expired while it was frozen inside an election, and no other
    controller has been elected since: ``/controller_epoch`` has not moved, so the check
    passes and its write goes through -- a write the model does not have (its controller
    writes only while it holds ``/controller``).  Kafka's controller fences its writes the same
    way, by the epoch's zkVersion alone.  The generated paths do not take it (docs/drive.md,
    Limits)."""
    return not superseded(s, c) and _would_write(s, c, cfg)


OWN_STEPS = {
    "broker_resume": ("controller_resign", "broker_reregister"),
    "broker_expire": ("controller_resign",),
}
"""What a broker does at once when it finds its session gone: after a resume, a controller
stops acting and the broker registers again; a broker whose session expired while it ran
(``broker_expire``) stops acting as controller at once too, but registers again only at
its own step (in step mode, at its ``broker_reregister`` permit, ``impl.node.step_gate``)."""


def on_its_own(step: Step, t: State, cfg: Config, waiting: Waiting) -> list[Step]:
    """The steps the implementation takes at once after ``step``, where the model lets them
    wait, in the order it takes them (``OWN_STEPS``).  A resumed broker's ZooKeeper client
    finds its session expired while it was frozen: a controller stops acting
    (``controller_resign``) -- unless it is frozen inside an election (``waiting``): its
    event loop is still at the permit, and it resigns once its write is refused -- and the
    broker registers again (``broker_reregister``).  The generated paths and the driver take
    them with ``step``."""
    b = step.args[0] if step.args else None
    out = []
    for action in OWN_STEPS.get(step.action, ()):
        if action == "controller_resign" and b in waiting:
            continue
        follow = Step(action, (b,))
        after = apply(t, cfg, follow)
        if after is not None:
            out.append(follow)
            t = after
    return out


def with_own_steps(step: Step, t: State, cfg: Config, waiting: Waiting) -> State:
    """``t`` after the steps the implementation takes on its own after ``step``."""
    for follow in on_its_own(step, t, cfg, waiting):
        t = apply(t, cfg, follow)
    return t
