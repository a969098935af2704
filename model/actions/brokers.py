"""Brokers and their ZooKeeper sessions: crashes, restarts, pauses, re-registration.

Seed 000 A (a broker failure is what the controller's ``on_broker_change`` reacts to) and
E (startup); seed 003 (a new session is a new broker epoch).  Failures are injected by the
harness, so their implementation is the harness's and their events are the harness's.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from model.actions.common import (
    added,
    brokers_args,
    deleted_replica,
    following,
    for_incarnation,
    put_at,
    removed,
    replica,
    set_replica,
    stops_controlling,
    topic_deleted,
    unknown_leos,
)
from model.actions.entry import (
    DRIVEN,
    Args,
    Coverage,
    Entry,
    Knob,
    Supported,
    Traced,
    View,
)
from model.actions.replication import advance_hw
from model.actions.views import harness_event, nothing_observed, registration_event
from model.state import (
    DELETED,
    DOWN,
    FETCH_REQUEST,
    FOLLOWER,
    IDLE,
    LEADER,
    NO_LEADER,
    NONE,
    PAUSED,
    ROLE_NAMES,
    TRUNCATING,
    UP,
    Broker,
    Fetch,
    Ghost,
    Replica,
    State,
    Zk,
    ever_created,
)
from model.text import leader_text, log_text

if TYPE_CHECKING:
    from model.config import Config


CRASHES = Knob("max_crashes", "broker crashes", default=1, help="broker crashes (kill -9), in all",
               failure=True, always=True)
PAUSES = Knob("max_pauses", "GC pauses", default=0, help="GC pauses (session expiry while frozen), in all",
              failure=True, always=True)
EXPIRIES = Knob("max_expiries", "session expiries", default=0, failure=True,
                help="ZooKeeper session expiries of a broker that keeps running (neither frozen nor crashed), in all")


def _deregister(zk: Zk, b: int) -> Zk:
    """The broker's ZK session ends: its ephemeral /brokers/ids/b -- and /controller, if it
    held it -- disappear."""
    return zk._replace(
        live=removed(zk.live, b),
        controller=NO_LEADER if zk.controller == b else zk.controller,
    )


def _addressee(m: Fetch) -> int:
    return m.leader if m.kind == FETCH_REQUEST else m.follower


def broker_crash(s: State, cfg: Config, b: int) -> State | None:
    """kill -9: memory is lost, the log and the HW checkpoint on disk survive.  Messages on
    their way to it are lost; those it sent before dying are already in the network and may
    still arrive (seen in real traces: a follower reads its dead leader's last response)."""
    if s.brokers[b].status != UP or s.ghost.crashes >= cfg.max_crashes:
        return None
    s = process_ends(s, cfg, b)
    return s._replace(ghost=s.ghost._replace(crashes=s.ghost.crashes + 1))


def process_ends(s: State, cfg: Config, b: int) -> State:
    """What any end of a broker process does, crash or clean stop: memory (roles, fetcher
    and controller state) is gone, the disk (log, HW checkpoint, epoch cache) stays, the ZK
    session ends, and nothing more reaches it."""
    broker = s.brokers[b]
    replicas = tuple(
        Replica(DELETED if r.role == DELETED else NONE, NO_LEADER, r.leader_epoch, (), -1, r.log, r.hw, IDLE,
                unknown_leos(cfg), 0, r.topic_id)
        for r in broker.replicas
    )
    brokers = put_at(s.brokers, b, stops_controlling(broker)._replace(status=DOWN, replicas=replicas))
    fetches = tuple(m for m in s.fetches if _addressee(m) != b)
    s = s._replace(zk=_deregister(s.zk, b), brokers=_no_longer_shutting_down(_unannounce(brokers, b), b), fetches=fetches)
    return _unanswered_deletions_dropped(s, b)


def _unanswered_deletions_dropped(s: State, b: int) -> State:
    """The StopReplica requests to a broker whose process ends die with it: Kafka's
    controller tears the broker's channel down, queue and all, when its registration goes
    (``ControllerChannelManager.removeBroker``), and a new registration gets a new channel
    -- so a restarted broker takes none sent to the process before it.  A deletion's is
    never answered, and the deletion no longer waits for it (``create_topic``): the copy
    stays on disk until the broker's startup (seed 000 E 4); a controlled shutdown's stop of
    a follower is moot, as the next incarnation follows again whatever it starts into; a
    reassignment's removed replica stays on disk as a replica of a partition no longer
    assigned to the broker."""
    kept = tuple(m for m in s.stop_replica if m.to != b)
    return s if len(kept) == len(s.stop_replica) else s._replace(stop_replica=kept)


def _unannounce(brokers: tuple[Broker, ...], b: int) -> tuple[Broker, ...]:
    """b's registration is gone before the controller ran onBrokerStartup for it: the
    broker-change event it handles no longer shows b, so there is nothing to start."""
    if not any(b in br.new_brokers for br in brokers):
        return brokers
    return tuple(br._replace(new_brokers=removed(br.new_brokers, b)) if b in br.new_brokers else br for br in brokers)


def _no_longer_shutting_down(brokers: tuple[Broker, ...], b: int) -> tuple[Broker, ...]:
    """b's registration is gone: the controller's broker-change event drops it from the
    brokers shutting down (Kafka: ``shuttingDownBrokerIds`` keeps live brokers only), so a
    later registration of b is a broker like any other."""
    if not any(b in br.shutting_down for br in brokers):
        return brokers
    return tuple(br._replace(shutting_down=removed(br.shutting_down, b)) if b in br.shutting_down else br for br in brokers)


def _announce(s: State, b: int) -> State:
    """/brokers/ids/b was created: the controller's watch fires, and it will run
    onBrokerStartup for b once (Kafka's ``newBrokers`` of a broker-change event)."""
    c = s.zk.controller
    if c == NO_LEADER:  # nobody to tell: the next controller's INIT requests cover b
        return s
    return s._replace(brokers=put_at(s.brokers, c, s.brokers[c]._replace(new_brokers=added(s.brokers[c].new_brokers, b))))


def _register(zk: Zk, b: int) -> Zk:
    """Create /brokers/ids/b; the new znode's czxid is the broker's epoch (KIP-380)."""
    zxid = zk.zxid + 1
    return zk._replace(live=added(zk.live, b), zxid=zxid, broker_epochs=put_at(zk.broker_epochs, b, zxid))


def restarts_args(s: State, cfg: Config) -> Iterator[tuple]:
    """Each crashed broker; with ``Config.startup_from_controller`` also the high watermark
    its checkpoint may hold at most (0 .. the highest HW it had)."""
    for b, broker in enumerate(s.brokers):
        if broker.status != DOWN:
            continue
        if not cfg.startup_from_controller:
            yield (b,)
        else:
            yield from ((b, h) for h in range(max((r.hw for r in broker.replicas), default=0) + 1))


def broker_restart(s: State, cfg: Config, b: int, checkpointed_hw: int | None = None) -> State | None:
    """Seed 000 E, ``on_broker_startup``: register, read the leader and ISR of each assigned
    partition from ZK, and become leader (shouldn't happen in general) or follower.

    With ``Config.startup_from_controller`` (Kafka's broker): register and load each log,
    and nothing more -- no partition state is read from ZooKeeper; each replica waits, with
    no role, for the controller's LeaderAndISR (``on_broker_startup``).  Its HW is the one
    the replication-offset checkpoint held, written every few seconds: any value up to the
    HW it had (``checkpointed_hw``; a lower HW is safe)."""
    broker = s.brokers[b]
    if broker.status != DOWN or (checkpointed_hw is not None) != cfg.startup_from_controller:
        return None
    zk = _register(s.zk, b)
    # a new incarnation fetches over new connections: what its previous one still had in
    # flight as a follower (a request the leader has not read, the answer to it) is gone
    # -- seen in real traces, where the restarted follower fetches at once
    fetches = tuple(m for m in s.fetches if m.follower != b)
    s = s._replace(zk=zk, fetches=fetches)
    brokers = put_at(
        s.brokers,
        b,
        broker._replace(status=UP, is_controller=False, controller_epoch=max(broker.controller_epoch, zk.controller_epoch), broker_epoch=zk.zxid),
    )
    s = _announce(s._replace(brokers=brokers), b)
    for p, zn in enumerate(zk.partitions):
        if not ever_created(zn):
            continue  # an id the topic has not had yet (seed 000 H): nothing on disk to delete
        if not zn.ar:
            # E 4: "Delete local partitions no longer assigned to this broker (partitions
            # deleted while the broker is down)"
            s = set_replica(s, b, p, topic_deleted(cfg, replica(s, b, p), zn.topic_id))
            continue
        if b not in zn.ar:
            # E 4 again, after a reassignment moved p away from b
            s = set_replica(s, b, p, deleted_replica(cfg, replica(s, b, p)))
            continue
        r = for_incarnation(cfg, replica(s, b, p), zn.topic_id)
        if checkpointed_hw is not None:
            s = set_replica(s, b, p, r._replace(role=NONE, leader=NO_LEADER, isr=(), zk_version=-1,
                                                hw=min(r.hw, checkpointed_hw), fetch_state=IDLE,
                                                follower_leo=unknown_leos(cfg), epoch_start=0))
            continue
        epoch = max(r.leader_epoch, zn.leader_epoch)
        if zn.leader == b:
            r = Replica(LEADER, b, epoch, zn.isr, zn.zk_version, r.log, r.hw, IDLE, unknown_leos(cfg), r.leo, zn.topic_id)
            s = advance_hw(set_replica(s, b, p, r), cfg, b, p)
        elif zn.leader == NO_LEADER:
            s = set_replica(s, b, p, r._replace(role=FOLLOWER, leader=NO_LEADER, leader_epoch=epoch, topic_id=zn.topic_id))
        else:
            s = set_replica(s, b, p, following(cfg, r, zn.leader, epoch, zn.topic_id))
    return s


def broker_pause(s: State, cfg: Config, b: int) -> State | None:
    """A GC pause long enough for the ZK session to expire: frozen, yet alive to itself."""
    broker = s.brokers[b]
    if broker.status != UP or s.ghost.pauses >= cfg.max_pauses:
        return None
    brokers = put_at(s.brokers, b, broker._replace(status=PAUSED))
    return _session_expires(s, b, brokers, s.ghost._replace(pauses=s.ghost.pauses + 1))


def broker_expire(s: State, cfg: Config, b: int) -> State | None:
    """The broker's ZK session expires while it keeps running (cut off from ZooKeeper, not
    frozen): its registration vanishes and the controller fails it over, while it still
    acts on the roles it had -- until it re-registers (``broker_reregister``)."""
    if s.brokers[b].status != UP or b not in s.zk.live or s.ghost.expiries >= cfg.max_expiries:
        return None
    return _session_expires(s, b, s.brokers, s.ghost._replace(expiries=s.ghost.expiries + 1))


def _session_expires(s: State, b: int, brokers: tuple[Broker, ...], ghost: Ghost) -> State:
    """b's ZK session ends without its process ending: its ephemeral znodes go, and the
    controller's broker-change event no longer shows it."""
    return s._replace(zk=_deregister(s.zk, b), brokers=_no_longer_shutting_down(_unannounce(brokers, b), b), ghost=ghost)


def broker_resume(s: State, cfg: Config, b: int) -> State | None:
    """The pause ends.  The broker carries on with the state it had: still leader, still
    controller in its own eyes (seed 000, 'multiple leaders in transition')."""
    broker = s.brokers[b]
    if broker.status != PAUSED:
        return None
    return s._replace(brokers=put_at(s.brokers, b, broker._replace(status=UP)))


def broker_reregister(s: State, cfg: Config, b: int) -> State | None:
    """After session expiry the client opens a new session and re-creates /brokers/ids/b,
    with a new broker epoch."""
    broker = s.brokers[b]
    if broker.status != UP or b in s.zk.live:
        return None
    zk = _register(s.zk, b)
    brokers = put_at(s.brokers, b, broker._replace(broker_epoch=zk.zxid))
    return _announce(s._replace(zk=zk, brokers=brokers), b)


def _restart_text(args: Args, before: State, after: State) -> str:
    b = args[0]
    if len(args) > 1:
        hws = ", ".join(f"p{p} hw={r.hw}" for p, r in enumerate(after.brokers[b].replicas) if r.log or r.hw)
        return (f"broker {b} restarts and registers (broker epoch {after.brokers[b].broker_epoch}); loads its logs "
                f"({hws or 'all empty'}, checkpointed HW at most {args[1]}) and waits for the controller's LeaderAndISR")
    parts = [f"broker {b} restarts and registers (broker epoch {after.brokers[b].broker_epoch}); recovers from ZK:"]
    for p, (rb, ra) in enumerate(zip(before.brokers[b].replicas, after.brokers[b].replicas, strict=True)):
        role = ROLE_NAMES[ra.role]
        cut = f", truncates log to hw={rb.hw}: {log_text(rb.log)} → {log_text(ra.log)}" if ra.log != rb.log else ""
        wait = ", will reconcile by epoch before fetching" if ra.fetch_state == TRUNCATING else ""
        parts.append(f"p{p} {role} of {leader_text(ra.leader)} at epoch {ra.leader_epoch}{cut}{wait}")
    return " ".join(parts)


CRASH = Entry(
    "broker_crash", broker_crash, brokers_args,
    section="000 A", impl="impl.harness.cluster.LocalCluster.kill", trace=Traced("broker_crash"),
    describe=lambda args, before, after: f"broker {args[0]} crashes (kill -9); its ZK registration expires",
    view=nothing_observed, event=harness_event,
    coverage=Coverage(native=Supported(), z3=Supported(), judge=Supported(), driver=DRIVEN),
    knob=CRASHES, freezing=True,
)


def _restart_view(args: Args, before: State, after: State) -> View:
    """What a restart shows of the replica (the judge's one partition): under
    ``Config.startup_from_controller``, the HW it loaded from its replication-offset
    checkpoint -- Kafka logs it when it loads the log ("Log loaded for partition ... with
    initial high watermark N"), so a trace carrying it picks the one checkpoint of the
    restart's choices -- of a replica the restart loads (its partition assigned to it), not
    of one it deletes.  Otherwise nothing: broker epochs are zxids, not the model's."""
    b = args[0]
    if len(args) < 2 or not after.zk.partitions or b not in after.zk.partitions[0].ar:
        return {}
    return {"checkpointed_hw": after.brokers[b].replicas[0].hw}


RESTART = Entry(
    "broker_restart", broker_restart, restarts_args,
    section="000 E", impl="impl.node.broker.Broker.register", trace=Traced("broker_restart"),
    describe=_restart_text, view=_restart_view, event=registration_event,
    coverage=Coverage(native=Supported(), z3=Supported(), judge=Supported(), driver=DRIVEN),
)


PAUSE = Entry(
    "broker_pause", broker_pause, brokers_args,
    section="000 A", impl="impl.harness.cluster.LocalCluster.pause", trace=Traced("broker_pause"),
    describe=lambda args, before, after: f"broker {args[0]} pauses (GC); its ZK session expires while it is frozen",
    view=nothing_observed, event=harness_event,
    coverage=Coverage(native=Supported(), z3=Supported(), judge=Supported(), driver=DRIVEN),
    knob=PAUSES, freezing=True,
)


RESUME = Entry(
    "broker_resume", broker_resume, brokers_args,
    section="000 A", impl="impl.harness.cluster.LocalCluster.resume", trace=Traced("broker_resume"),
    describe=lambda args, before, after: f"broker {args[0]} resumes, still believing its old state",
    view=nothing_observed, event=harness_event,
    coverage=Coverage(native=Supported(), z3=Supported(), judge=Supported(), driver=DRIVEN),
    knob=PAUSES,
)


REREGISTER = Entry(
    "broker_reregister", broker_reregister, brokers_args,
    section="003", impl="impl.node.broker.Broker._after_reconnect", trace=Traced("broker_reregister"),
    describe=lambda args, before, after: (
        f"broker {args[0]} opens a new ZK session and re-registers (broker epoch {after.brokers[args[0]].broker_epoch})"),
    view=nothing_observed, event=registration_event,
    coverage=Coverage(native=Supported(), z3=Supported(), judge=Supported(), driver=DRIVEN),
    knob=PAUSES,
)


EXPIRE = Entry(
    "broker_expire", broker_expire, brokers_args,
    section="000 A", impl="impl.harness.cluster.LocalCluster.expire", trace=Traced("broker_expire"),
    describe=lambda args, before, after: f"broker {args[0]}'s ZK session expires; it keeps running, believing its old state",
    view=nothing_observed, event=harness_event,
    coverage=Coverage(native=Supported("native/expire.c"),
                      z3=Supported(),
                      judge=Supported(), driver=DRIVEN),
    knob=EXPIRIES,
)

ENTRIES = (CRASH, RESTART, PAUSE, RESUME, REREGISTER, EXPIRE)
KNOBS = (CRASHES, PAUSES, EXPIRIES)
