"""Brokers, ZooKeeper sessions and the controller (seed 000 A, D, E; seed 002): crashes, restarts, pauses, controller election, leader election and controlled shutdown."""

from __future__ import annotations

from model.actions.common import (
    acting_controller,
    added,
    deleted_replica,
    following,
    for_incarnation,
    max_broker_epoch,
    put_at,
    removed,
    replica,
    set_replica,
    set_znode,
    shutting_down,
    stops_controlling,
    topic_deleted,
    unknown_leos,
)
from model.actions.replication import advance_hw
from model.config import Config
from model.state import (
    DELETED,
    DOWN,
    EPOCH_DURING_DELETE,
    FETCH_REQUEST,
    FOLLOWER,
    IDLE,
    LEADER,
    NO_LEADER,
    NONE,
    PAUSED,
    UP,
    Broker,
    Fetch,
    LeaderAndIsr,
    Replica,
    State,
    StopReplica,
    Zk,
    ever_created,
)


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
    s = _process_ends(s, cfg, b)
    return s._replace(ghost=s.ghost._replace(crashes=s.ghost.crashes + 1))


def _process_ends(s: State, cfg: Config, b: int) -> State:
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
    """A topic deletion's StopReplica to a broker that dies before answering is never
    answered: the controller counts the broker as down, and the deletion no longer waits
    for it (``create_topic``).  Its copy stays on disk until its startup (seed 000 E 4)."""
    kept = tuple(m for m in s.stop_replica if not _lost_with(m, b))
    return s if len(kept) == len(s.stop_replica) else s._replace(stop_replica=kept)


def _lost_with(m: StopReplica, b: int) -> bool:
    """Whether StopReplica m dies with broker b's process: a deletion's (see above), and a
    controlled shutdown's stop of a follower -- its broker is gone, and the next incarnation
    follows again whatever it starts into."""
    return m.to == b and (m.leader_epoch == EPOCH_DURING_DELETE or not m.delete)




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


def broker_restart(s: State, cfg: Config, b: int) -> State | None:
    """Seed 000 E, ``on_broker_startup``: register, read the leader and ISR of each assigned
    partition from ZK, and become leader (shouldn't happen in general) or follower."""
    broker = s.brokers[b]
    if broker.status != DOWN:
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
    ghost = s.ghost._replace(pauses=s.ghost.pauses + 1)
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




def controller_elect(s: State, cfg: Config, b: int) -> State | None:
    """Seed 000 D / seed 002: /controller is gone, so broker b creates it, bumps
    /controller_epoch, and sends every partition's current LeaderAndISR with INIT."""
    broker = s.brokers[b]
    if s.zk.controller != NO_LEADER or broker.status != UP or b not in s.zk.live:
        return None
    epoch = s.zk.controller_epoch + 1
    zk = s.zk._replace(controller=b, controller_epoch=epoch)
    brokers = put_at(s.brokers, b, broker._replace(is_controller=True, controller_epoch=epoch, new_brokers=()))
    sent = s.leader_and_isr
    mbe = max_broker_epoch(zk)
    for p, zn in enumerate(zk.partitions):
        for to in zn.ar:
            sent = added(sent, LeaderAndIsr(to, p, zn.leader, zn.leader_epoch, zn.isr, zn.zk_version, epoch, mbe, zn.topic_id))
    return s._replace(zk=zk, brokers=brokers, leader_and_isr=sent)


def controller_resign(s: State, cfg: Config, b: int) -> State | None:
    """Seed 002: a broker that acted as controller sees /controller name someone else (or
    its epoch overtaken) and backs off."""
    broker = s.brokers[b]
    if broker.status != UP or not broker.is_controller:
        return None
    if s.zk.controller == b and s.zk.controller_epoch == broker.controller_epoch:
        return None
    return s._replace(brokers=put_at(s.brokers, b, stops_controlling(broker)))


def election_outcomes(zk: Zk, p: int, cfg: Config, stopping: tuple[int, ...] = ()) -> list[tuple[int, tuple[int, ...], bool]]:
    """Seed 000 A 3.2 -- the new (leader, ISR, unclean?) choices for partition p, or none if
    the live brokers leave it unchanged:

    * the leader is alive: it stays, and the ISR loses its dead members;
    * else any live ISR member may lead, with the live ISR;
    * else, only with unclean election enabled, any live assigned replica, alone in the ISR
      ("potential data loss in this case");
    * else the leader becomes -1 and the ISR is kept, so the last in-sync replica can lead
      again when it returns.

    ``stopping`` are the brokers shutting down (``shutting_down``): a new leader is never one
    of them, nor does one stay in the new ISR (Kafka 2.7's ``liveBrokerIds`` leaves them
    out); a live leader stays even if it is stopping -- it could not leave.
    """
    zn = zk.partitions[p]
    if not zn.ar:  # a deleted topic's partition: nothing to elect
        return []
    live = zk.live
    live_isr = tuple(b for b in zn.isr if b in live)
    if zn.leader != NO_LEADER and zn.leader in live:
        if len(live_isr) == len(zn.isr):
            return []
        return [(zn.leader, live_isr, False)]
    electable = tuple(b for b in live_isr if b not in stopping)
    if electable:
        return [(b, electable, False) for b in electable]
    if cfg.unclean:
        live_ar = [b for b in zn.ar if b in live and b not in stopping]
        if live_ar:
            return [(b, (b,), True) for b in live_ar]
    if zn.leader == NO_LEADER:
        return []
    return [(NO_LEADER, zn.isr, False)]




def write_and_send(s: State, p: int, leader: int, isr: tuple[int, ...]) -> State:
    """The controller's conditional write of p's znode with leader_epoch + 1 (its version
    moves on), then LeaderAndISR to every assigned replica with the max broker epoch -- but
    a broker shutting down only if it leads (Kafka 2.7 sends LeaderAndISR to live replicas,
    which leave out the brokers shutting down: as a follower it would fetch again and
    rejoin the ISR it has left)."""
    zn = s.zk.partitions[p]
    # a reassignment in progress stays so: its request lives in its own admin path
    znode = zn._replace(leader=leader, leader_epoch=zn.leader_epoch + 1, isr=isr, zk_version=zn.zk_version + 1)
    stopping = shutting_down(s)
    s = set_znode(s, p, znode)
    mbe = max_broker_epoch(s.zk)
    sent = s.leader_and_isr
    for to in zn.ar:
        if to in stopping and to != leader:
            continue
        sent = added(sent, LeaderAndIsr(to, p, leader, znode.leader_epoch, isr, znode.zk_version, s.zk.controller_epoch, mbe, zn.topic_id))
    return s._replace(leader_and_isr=sent)


def elect_leader(s: State, cfg: Config, c: int, p: int, leader: int) -> State | None:
    """Seed 000 A ``on_broker_change`` (and ``init_leaders``) for partition p: write the new
    leader, ISR and leader_epoch + 1 conditionally on zk_version, then send LeaderAndISR to
    the assigned replicas."""
    if not acting_controller(s, c):
        return None
    zn = s.zk.partitions[p]
    if zn.leader_epoch + 1 > cfg.max_epoch:
        return None
    for new_leader, isr, unclean in election_outcomes(s.zk, p, cfg, shutting_down(s)):
        if new_leader != leader:
            continue
        s = write_and_send(s, p, leader, isr)
        if unclean:
            s = s._replace(ghost=s.ghost._replace(unclean=added(s.ghost.unclean, p)))
        return s
    return None


def on_broker_startup(s: State, cfg: Config, c: int, b: int) -> State | None:
    """Kafka's ``onBrokerStartup``: when a broker (re-)registers, the controller sends it the
    current LeaderAndISR of every partition assigned to it, carrying the new max broker
    epoch -- requests sent to its previous incarnation are fenced (seed 003).

    Once per registration (``Broker.new_brokers``, filled by ``_announce``): the
    broker-change event names b among its new brokers, and the controller handles it once.
    A guard of "b is live" alone let a controller send b the LeaderAndISR of every later ISR
    version as well -- a behaviour neither Kafka nor ``impl.node.controller`` has, and the source
    of a three-broker state space that did not end (docs/checking.md, "Three-broker searches")."""
    if not acting_controller(s, c) or b not in s.brokers[c].new_brokers:
        return None
    s = s._replace(brokers=put_at(s.brokers, c, s.brokers[c]._replace(new_brokers=removed(s.brokers[c].new_brokers, b))))
    mbe = max_broker_epoch(s.zk)
    sent = s.leader_and_isr
    for p, zn in enumerate(s.zk.partitions):
        if b in zn.ar:
            sent = added(sent, LeaderAndIsr(b, p, zn.leader, zn.leader_epoch, zn.isr, zn.zk_version, s.zk.controller_epoch, mbe, zn.topic_id))
    return s._replace(leader_and_isr=sent)


def controlled_shutdown(s: State, cfg: Config, c: int, p: int, b: int, leader: int) -> State | None:
    """Controlled shutdown as Kafka 2.7 does it (beside seed 000): before broker b stops, the
    controller notes that b is shutting down (``Broker.shutting_down``, Kafka's
    ``shuttingDownBrokerIds``: no election chooses it from now on), takes b out of partition
    p's ISR and, if b led p -- or p's leader is another broker shutting down, which could not
    leave before -- elects a live ISR member not shutting down in its place: a conditional
    write with leader_epoch + 1, then LeaderAndISR to the replicas not shutting down, like
    ``elect_leader``.  b, now a follower of p, gets StopReplica without delete instead: it
    stops fetching, so its leader does not put it back into the ISR it has just left.  The
    last in-sync replica is left in place: moving it would lose the partition.

    A follower of p outside its ISR is stopped all the same (Kafka 2.7 takes every replica
    the broker follows offline): StopReplica without delete, and nothing to write -- the
    step an implementation records only as the broker's ``stop_replica``."""
    if not acting_controller(s, c) or s.brokers[b].status != UP or b not in s.zk.live:
        return None
    if s.ghost.shutdowns >= cfg.max_shutdowns:
        return None
    zn = s.zk.partitions[p]
    stopping = added(s.brokers[c].shutting_down, b)
    if b not in zn.isr and b in zn.ar and b != zn.leader and leader == zn.leader:
        s = s._replace(brokers=put_at(s.brokers, c, s.brokers[c]._replace(shutting_down=stopping)))
        stop = StopReplica(b, p, zn.leader_epoch, s.zk.controller_epoch, zn.topic_id, delete=False)
        return s._replace(stop_replica=added(s.stop_replica, stop))
    if b not in zn.isr or zn.leader_epoch + 1 > cfg.max_epoch:
        return None
    isr = removed(zn.isr, b)
    if zn.leader in stopping:
        if leader not in isr or leader not in s.zk.live or leader in stopping:
            return None
    elif leader != zn.leader or not isr:
        return None
    s = s._replace(brokers=put_at(s.brokers, c, s.brokers[c]._replace(shutting_down=stopping)))
    s = write_and_send(s, p, leader, isr)
    zn = s.zk.partitions[p]
    stop = StopReplica(b, p, zn.leader_epoch, s.zk.controller_epoch, zn.topic_id, delete=False)
    return s._replace(stop_replica=added(s.stop_replica, stop))


def broker_stop(s: State, cfg: Config, b: int) -> State | None:
    """A clean stop after controlled shutdown: like a crash (memory gone, disk kept,
    session closed), counted against the shutdown bound rather than the crash bound."""
    broker = s.brokers[b]
    if broker.status != UP or s.ghost.shutdowns >= cfg.max_shutdowns:
        return None
    if any(b in zn.isr and len(zn.isr) > 1 for zn in s.zk.partitions):
        return None  # controlled shutdown first moves it out of every ISR it can leave
    s = _process_ends(s, cfg, b)
    return s._replace(ghost=s.ghost._replace(shutdowns=s.ghost.shutdowns + 1))
