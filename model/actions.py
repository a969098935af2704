"""The actions of the model: one named function per rule of seed 000, each a guard + effect.

Every action is a pure function ``action(state, cfg, *args) -> State | None``: ``None`` when
its guard does not hold, else the successor state.  ``model.registry`` declares each one
once -- with the function enumerating the arguments worth trying in a state, its design
section, implementation method, trace kind and coverage by every backend -- and holds the
table (``ACTIONS``) and the functions over it (``apply``, ``successors``).

Granularity follows Kafka: steps that are separate RPCs or separate ZooKeeper writes are
separate actions, because the interleavings between them are where the bugs live.  Two
merges are deliberate and sound:

* a controller's conditional ZK write and the sending of the resulting LeaderAndISR
  requests are one step: requests go into the set of requests ever sent, and delivery is a
  separate step that may be delayed, repeated, reordered or never happen -- which covers
  every way the send could have been late or lost;
* seed 000 A 3.1 (read the ISR) and 3.3 (conditional write) are one step: the design asks
  for them to be one ZooKeeper ``multi``, and the write is conditional on the version read.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import NamedTuple

from model.config import Config
from model.preferred import preferred_leader
from model.state import (
    DELETED,
    DOWN,
    EPOCH_DURING_DELETE,
    FETCH_REQUEST,
    FETCH_RESPONSE,
    FETCHING,
    FOLLOWER,
    IDLE,
    LEADER,
    NO_LEADER,
    NONE,
    OK,
    OUT_OF_RANGE,
    PAUSED,
    TRUNCATING,
    UNKNOWN,
    UP,
    Broker,
    Entry,
    Fetch,
    LeaderAndIsr,
    PartitionZnode,
    Replica,
    State,
    StopReplica,
    Zk,
)
from model.truncation import to_high_watermark, truncation_point


class Step(NamedTuple):
    """One transition: the action's name and its arguments (after ``state, cfg``)."""

    action: str
    args: tuple


# ---------------------------------------------------------------------------------------
# Small immutable-update helpers
# ---------------------------------------------------------------------------------------


def _put(t: tuple, i: int, v: object) -> tuple:
    return t[:i] + (v,) + t[i + 1 :]


def _add(t: tuple, v: object) -> tuple:
    return t if v in t else tuple(sorted(t + (v,)))


def _remove(t: tuple, v: object) -> tuple:
    return tuple(x for x in t if x != v)


def replica(s: State, b: int, p: int) -> Replica:
    return s.brokers[b].replicas[p]


def _set_replica(s: State, b: int, p: int, r: Replica) -> State:
    broker = s.brokers[b]
    return s._replace(brokers=_put(s.brokers, b, broker._replace(replicas=_put(broker.replicas, p, r))))


def _set_znode(s: State, p: int, zn: PartitionZnode) -> State:
    return s._replace(zk=s.zk._replace(partitions=_put(s.zk.partitions, p, zn)))


def _unknown(cfg: Config) -> tuple[int, ...]:
    return (UNKNOWN,) * cfg.brokers


def _drop_responses_to(s: State, b: int, p: int) -> State:
    """Stopping a ReplicaFetcherThread: responses not yet read are never read.  Requests it
    already sent stay in the network -- the old leader may still act on them."""
    kept = tuple(m for m in s.fetches if not (m.kind == FETCH_RESPONSE and m.follower == b and m.partition == p))
    return s._replace(fetches=kept) if len(kept) != len(s.fetches) else s


# ---------------------------------------------------------------------------------------
# Shared rule: the leader advances its high watermark (seed 000 G)
# ---------------------------------------------------------------------------------------


def advance_hw(s: State, cfg: Config, b: int, p: int) -> State:
    """``leader.hw = min of leo of every replica in ISR`` -- never moving backwards.

    A follower's LEO is what it last fetched from (UNKNOWN until it fetches from this leader
    in this term, as Kafka's makeLeader resets it).  Records passing below the new HW are
    committed; those this leader appended in its own term are acknowledged to their acks=all
    producers if the ISR still has ``min.insync.replicas`` members.
    """
    r = replica(s, b, p)
    new_hw = min(r.leo if x == b else r.follower_leo[x] for x in r.isr)
    if new_hw <= r.hw:
        return s
    if not _current(s, p, r):  # a leader of a deleted incarnation: nothing it does counts
        return _set_replica(s, b, p, r._replace(hw=new_hw))
    ghost = s.ghost
    committed, acked, zombie_commits = ghost.committed, ghost.acked, ghost.zombie_commits
    superseded = any(lp == p and e > r.leader_epoch for lp, e, _ in ghost.led)
    for offset in range(r.hw, new_hw):
        entry = r.log[offset]
        committed = _add(committed, (p, offset, entry))
        if entry.epoch == r.leader_epoch and len(r.isr) >= cfg.min_insync:
            acked = _add(acked, (p, entry.value))
        if superseded and (p, entry.value) in ghost.zombie_appends:
            zombie_commits = _add(zombie_commits, (p, entry.value))
    s = s._replace(ghost=ghost._replace(committed=committed, acked=acked, zombie_commits=zombie_commits))
    return _set_replica(s, b, p, r._replace(hw=new_hw))


# ---------------------------------------------------------------------------------------
# Brokers, ZooKeeper sessions and the controller (seed 000 A, D, E; seed 002)
# ---------------------------------------------------------------------------------------


def _deregister(zk: Zk, b: int) -> Zk:
    """The broker's ZK session ends: its ephemeral /brokers/ids/b -- and /controller, if it
    held it -- disappear."""
    return zk._replace(
        live=_remove(zk.live, b),
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
                _unknown(cfg), 0, r.topic_id)
        for r in broker.replicas
    )
    brokers = _put(s.brokers, b, _stops_controlling(broker)._replace(status=DOWN, replicas=replicas))
    fetches = tuple(m for m in s.fetches if _addressee(m) != b)
    s = s._replace(zk=_deregister(s.zk, b), brokers=_unannounce(brokers, b), fetches=fetches)
    return _unanswered_deletions_dropped(s, b)


def _unanswered_deletions_dropped(s: State, b: int) -> State:
    """A topic deletion's StopReplica to a broker that dies before answering is never
    answered: the controller counts the broker as down, and the deletion no longer waits
    for it (``create_topic``).  Its copy stays on disk until its startup (seed 000 E 4)."""
    if not any(m.to == b and m.leader_epoch == EPOCH_DURING_DELETE for m in s.stop_replica):
        return s
    return s._replace(stop_replica=tuple(m for m in s.stop_replica if not (m.to == b and m.leader_epoch == EPOCH_DURING_DELETE)))


def _stops_controlling(broker: Broker) -> Broker:
    """The broker no longer acts as controller (it crashed, resigned or learned of a newer
    controller epoch), and what it knew as controller goes with it: the registrations it
    still owed an onBrokerStartup are the next controller's to cover, by its INIT requests."""
    return broker._replace(is_controller=False, new_brokers=())


def _unannounce(brokers: tuple[Broker, ...], b: int) -> tuple[Broker, ...]:
    """b's registration is gone before the controller ran onBrokerStartup for it: the
    broker-change event it handles no longer shows b, so there is nothing to start."""
    if not any(b in br.new_brokers for br in brokers):
        return brokers
    return tuple(br._replace(new_brokers=_remove(br.new_brokers, b)) if b in br.new_brokers else br for br in brokers)


def _announce(s: State, b: int) -> State:
    """/brokers/ids/b was created: the controller's watch fires, and it will run
    onBrokerStartup for b once (Kafka's ``newBrokers`` of a broker-change event)."""
    c = s.zk.controller
    if c == NO_LEADER:  # nobody to tell: the next controller's INIT requests cover b
        return s
    return s._replace(brokers=_put(s.brokers, c, s.brokers[c]._replace(new_brokers=_add(s.brokers[c].new_brokers, b))))


def _register(zk: Zk, b: int) -> Zk:
    """Create /brokers/ids/b; the new znode's czxid is the broker's epoch (KIP-380)."""
    zxid = zk.zxid + 1
    return zk._replace(live=_add(zk.live, b), zxid=zxid, broker_epochs=_put(zk.broker_epochs, b, zxid))


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
    brokers = _put(
        s.brokers,
        b,
        broker._replace(status=UP, is_controller=False, controller_epoch=max(broker.controller_epoch, zk.controller_epoch), broker_epoch=zk.zxid),
    )
    s = _announce(s._replace(brokers=brokers), b)
    for p, zn in enumerate(zk.partitions):
        if not zn.ar:
            # E 4: "Delete local partitions no longer assigned to this broker (partitions
            # deleted while the broker is down)"
            s = _set_replica(s, b, p, _topic_deleted(cfg, replica(s, b, p), zn.topic_id))
            continue
        if b not in zn.ar:
            # E 4 again, after a reassignment moved p away from b
            s = _set_replica(s, b, p, _deleted(cfg, replica(s, b, p)))
            continue
        r = _for_incarnation(cfg, replica(s, b, p), zn.topic_id)
        epoch = max(r.leader_epoch, zn.leader_epoch)
        if zn.leader == b:
            r = Replica(LEADER, b, epoch, zn.isr, zn.zk_version, r.log, r.hw, IDLE, _unknown(cfg), r.leo, zn.topic_id)
            s = advance_hw(_set_replica(s, b, p, r), cfg, b, p)
        elif zn.leader == NO_LEADER:
            s = _set_replica(s, b, p, r._replace(role=FOLLOWER, leader=NO_LEADER, leader_epoch=epoch, topic_id=zn.topic_id))
        else:
            s = _set_replica(s, b, p, _follow(cfg, r, zn.leader, epoch, zn.topic_id))
    return s


def broker_pause(s: State, cfg: Config, b: int) -> State | None:
    """A GC pause long enough for the ZK session to expire: frozen, yet alive to itself."""
    broker = s.brokers[b]
    if broker.status != UP or s.ghost.pauses >= cfg.max_pauses:
        return None
    brokers = _put(s.brokers, b, broker._replace(status=PAUSED))
    ghost = s.ghost._replace(pauses=s.ghost.pauses + 1)
    return s._replace(zk=_deregister(s.zk, b), brokers=_unannounce(brokers, b), ghost=ghost)


def broker_resume(s: State, cfg: Config, b: int) -> State | None:
    """The pause ends.  The broker carries on with the state it had: still leader, still
    controller in its own eyes (seed 000, 'multiple leaders in transition')."""
    broker = s.brokers[b]
    if broker.status != PAUSED:
        return None
    return s._replace(brokers=_put(s.brokers, b, broker._replace(status=UP)))


def broker_reregister(s: State, cfg: Config, b: int) -> State | None:
    """After session expiry the client opens a new session and re-creates /brokers/ids/b,
    with a new broker epoch."""
    broker = s.brokers[b]
    if broker.status != UP or b in s.zk.live:
        return None
    zk = _register(s.zk, b)
    brokers = _put(s.brokers, b, broker._replace(broker_epoch=zk.zxid))
    return _announce(s._replace(zk=zk, brokers=brokers), b)


def _max_broker_epoch(zk: Zk) -> int:
    return max((zk.broker_epochs[b] for b in zk.live), default=0)


def controller_elect(s: State, cfg: Config, b: int) -> State | None:
    """Seed 000 D / seed 002: /controller is gone, so broker b creates it, bumps
    /controller_epoch, and sends every partition's current LeaderAndISR with INIT."""
    broker = s.brokers[b]
    if s.zk.controller != NO_LEADER or broker.status != UP or b not in s.zk.live:
        return None
    epoch = s.zk.controller_epoch + 1
    zk = s.zk._replace(controller=b, controller_epoch=epoch)
    brokers = _put(s.brokers, b, broker._replace(is_controller=True, controller_epoch=epoch, new_brokers=()))
    sent = s.leader_and_isr
    mbe = _max_broker_epoch(zk)
    for p, zn in enumerate(zk.partitions):
        for to in zn.ar:
            sent = _add(sent, LeaderAndIsr(to, p, zn.leader, zn.leader_epoch, zn.isr, zn.zk_version, epoch, mbe, zn.topic_id))
    return s._replace(zk=zk, brokers=brokers, leader_and_isr=sent)


def controller_resign(s: State, cfg: Config, b: int) -> State | None:
    """Seed 002: a broker that acted as controller sees /controller name someone else (or
    its epoch overtaken) and backs off."""
    broker = s.brokers[b]
    if broker.status != UP or not broker.is_controller:
        return None
    if s.zk.controller == b and s.zk.controller_epoch == broker.controller_epoch:
        return None
    return s._replace(brokers=_put(s.brokers, b, _stops_controlling(broker)))


def election_outcomes(zk: Zk, p: int, cfg: Config) -> list[tuple[int, tuple[int, ...], bool]]:
    """Seed 000 A 3.2 -- the new (leader, ISR, unclean?) choices for partition p, or none if
    the live brokers leave it unchanged:

    * the leader is alive: it stays, and the ISR loses its dead members;
    * else any live ISR member may lead, with the live ISR;
    * else, only with unclean election enabled, any live assigned replica, alone in the ISR
      ("potential data loss in this case");
    * else the leader becomes -1 and the ISR is kept, so the last in-sync replica can lead
      again when it returns.
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
    if live_isr:
        return [(b, live_isr, False) for b in live_isr]
    if cfg.unclean:
        live_ar = [b for b in zn.ar if b in live]
        if live_ar:
            return [(b, (b,), True) for b in live_ar]
    if zn.leader == NO_LEADER:
        return []
    return [(NO_LEADER, zn.isr, False)]


def _acting_controller(s: State, c: int) -> bool:
    """The controller's writes carry a check of /controller_epoch, so only the broker that
    holds /controller at the current epoch can write; a zombie controller's writes fail."""
    broker = s.brokers[c]
    return (
        broker.status == UP
        and broker.is_controller
        and s.zk.controller == c
        and broker.controller_epoch == s.zk.controller_epoch
    )


def _write_and_send(s: State, p: int, leader: int, isr: tuple[int, ...]) -> State:
    """The controller's conditional write of p's znode with leader_epoch + 1 (its version
    moves on), then LeaderAndISR to every assigned replica with the max broker epoch."""
    zn = s.zk.partitions[p]
    # a reassignment in progress stays so: its request lives in its own admin path
    znode = zn._replace(leader=leader, leader_epoch=zn.leader_epoch + 1, isr=isr, zk_version=zn.zk_version + 1)
    s = _set_znode(s, p, znode)
    mbe = _max_broker_epoch(s.zk)
    sent = s.leader_and_isr
    for to in zn.ar:
        sent = _add(sent, LeaderAndIsr(to, p, leader, znode.leader_epoch, isr, znode.zk_version, s.zk.controller_epoch, mbe, zn.topic_id))
    return s._replace(leader_and_isr=sent)


def elect_leader(s: State, cfg: Config, c: int, p: int, leader: int) -> State | None:
    """Seed 000 A ``on_broker_change`` (and ``init_leaders``) for partition p: write the new
    leader, ISR and leader_epoch + 1 conditionally on zk_version, then send LeaderAndISR to
    the assigned replicas."""
    if not _acting_controller(s, c):
        return None
    zn = s.zk.partitions[p]
    if zn.leader_epoch + 1 > cfg.max_epoch:
        return None
    for new_leader, isr, unclean in election_outcomes(s.zk, p, cfg):
        if new_leader != leader:
            continue
        s = _write_and_send(s, p, leader, isr)
        if unclean:
            s = s._replace(ghost=s.ghost._replace(unclean=_add(s.ghost.unclean, p)))
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
    if not _acting_controller(s, c) or b not in s.brokers[c].new_brokers:
        return None
    s = s._replace(brokers=_put(s.brokers, c, s.brokers[c]._replace(new_brokers=_remove(s.brokers[c].new_brokers, b))))
    mbe = _max_broker_epoch(s.zk)
    sent = s.leader_and_isr
    for p, zn in enumerate(s.zk.partitions):
        if b in zn.ar:
            sent = _add(sent, LeaderAndIsr(b, p, zn.leader, zn.leader_epoch, zn.isr, zn.zk_version, s.zk.controller_epoch, mbe, zn.topic_id))
    return s._replace(leader_and_isr=sent)


def controlled_shutdown(s: State, cfg: Config, c: int, p: int, b: int, leader: int) -> State | None:
    """Controlled shutdown (Kafka's, beside seed 000): before broker b stops, the controller
    takes it out of partition p's ISR and, if b led p, elects a live ISR member in its place
    -- a conditional write with leader_epoch + 1, then LeaderAndISR, like ``elect_leader``.
    The last in-sync replica is left in place: moving it would lose the partition."""
    if not _acting_controller(s, c) or s.brokers[b].status != UP or b not in s.zk.live:
        return None
    if s.ghost.shutdowns >= cfg.max_shutdowns:
        return None
    zn = s.zk.partitions[p]
    if b not in zn.isr or zn.leader_epoch + 1 > cfg.max_epoch:
        return None
    isr = _remove(zn.isr, b)
    if zn.leader == b:
        if leader not in isr or leader not in s.zk.live:
            return None
    elif leader != zn.leader or not isr:
        return None
    return _write_and_send(s, p, leader, isr)


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


# ---------------------------------------------------------------------------------------
# Replica reassignment (seed 000 F): the controller's Reassignment Agent
# ---------------------------------------------------------------------------------------


def _deleted(cfg: Config, r: Replica) -> Replica:
    """Seed 000 C ``stopReplica``: "stop the ReplicaFetcherThread ... delete the partition
    directory locally".  The log and HW go; the highest leader epoch seen is kept, as a
    broker never accepts an older LeaderAndISR again (and ``epoch_monotonic`` asks it)."""
    return Replica(NONE, NO_LEADER, r.leader_epoch, (), -1, (), 0, IDLE, _unknown(cfg), 0, r.topic_id)


def reassign_start(s: State, cfg: Config, c: int, p: int, rar: tuple[int, ...]) -> State | None:
    """Seed 000 F, a partition in INIT state: "issue LeaderAndISR command to the brokers in
    RAR (to start bootstrapping new replicas)", then "mark partition p as in IN_PROGRESS".

    The administrative process's write of ``/admin/partitions_reassigned/T/P`` -> RAR (not a
    protocol step: any replica set may be asked for) and the agent picking it up are taken
    together.  While the move is in progress the topic path records AR := AR + RAR, as
    the design's "ISR == AR+RAR" test presumes and Kafka does, so that elections, startup
    recovery and ISR expansion (which only admits assigned replicas) know the new replicas;
    that write is to the topic path, not the leaderAndISR znode, whose version stays put.
    The same RAR may be started again: a new controller restarts pending reassignments at
    INIT (seed 000 D 7).  RAR may name the replicas AR already has: the model's AR is a set,
    so such a move is Kafka's reordering of the replicas (a new preferred leader) -- nothing
    to copy and nobody to stop, but it still completes through a new leader epoch."""
    if not _acting_controller(s, c) or not rar or any(b < 0 or b >= cfg.brokers for b in rar):
        return None
    zn = s.zk.partitions[p]
    if not zn.ar:  # the topic is deleted
        return None
    ghost = s.ghost
    if not zn.rar:
        if ghost.reassignments >= cfg.reassignments:
            return None
        ghost = ghost._replace(reassignments=ghost.reassignments + 1)
    elif zn.rar != rar:
        return None
    ar = tuple(sorted(set(zn.ar) | set(rar)))
    s = _set_znode(s, p, zn._replace(ar=ar, rar=rar))
    mbe = _max_broker_epoch(s.zk)
    sent = s.leader_and_isr
    for to in rar:
        sent = _add(sent, LeaderAndIsr(to, p, zn.leader, zn.leader_epoch, zn.isr, zn.zk_version, s.zk.controller_epoch, mbe, zn.topic_id))
    return s._replace(leader_and_isr=sent, ghost=ghost)


def reassign_complete(s: State, cfg: Config, c: int, p: int, leader: int) -> State | None:
    """Seed 000 F, a partition IN_PROGRESS: "read the ISR from the LeaderAndISR path in ZK;
    if ISR == AR+RAR // all replicas have caught up ... switch the current ISR and AR to
    RAR": conditionally update the leaderAndISR znode (3.2.2), "send a LeaderAndISR command
    to inform the leader of the new ISR" (3.2.3), "send a StopReplica command to the
    brokers in the current AR (but not in RAR)" (3.2.4), "change AR to RAR" (3.2.5) and
    delete the admin path (3.2.6).

    The design waits for the whole of AR+RAR; what the move needs (and Kafka waits for) is
    RAR ⊆ ISR -- a replica about to be removed need not be in sync.  The design leaves the
    leader alone; if it is not in RAR it would lead a partition it no longer replicates,
    so a live member of RAR takes over (every one is in the ISR: a clean election).  Any
    leader change needs a new leader epoch, and Kafka bumps it on every controller write of
    the znode, so the write is ``leader_epoch + 1`` with ISR := ISR ∩ RAR, conditional on
    the version read (one step, as ``elect_leader``: the design asks for a retry loop
    around 3.1-3.2.2, and the topic path is written in the same ZooKeeper multi)."""
    if not _acting_controller(s, c):
        return None
    zn = s.zk.partitions[p]
    rar = zn.rar
    if not rar or not set(rar) <= set(zn.isr) or zn.leader_epoch + 1 > cfg.max_epoch:
        return None
    live_rar = [b for b in rar if b in s.zk.live]
    if leader not in live_rar or (zn.leader in live_rar and leader != zn.leader):
        return None
    isr = tuple(b for b in zn.isr if b in rar)
    znode = PartitionZnode(leader, zn.leader_epoch + 1, isr, zn.zk_version + 1, rar, (), zn.topic_id)
    s = _set_znode(s, p, znode)
    mbe = _max_broker_epoch(s.zk)
    cepoch = s.zk.controller_epoch
    sent = s.leader_and_isr
    for to in rar:
        sent = _add(sent, LeaderAndIsr(to, p, leader, znode.leader_epoch, isr, znode.zk_version, cepoch, mbe, zn.topic_id))
    stops = s.stop_replica
    for b in zn.ar:
        if b not in rar:
            stops = _add(stops, StopReplica(b, p, znode.leader_epoch, cepoch, zn.topic_id))
    return s._replace(leader_and_isr=sent, stop_replica=stops)


def stop_replica(s: State, cfg: Config, m: StopReplica) -> State | None:
    """Seed 000 C ``on_StopReplicaCommand``: the broker stops its replica of the partition
    and deletes it.  A request from an older controller epoch (seed 002), or older than
    the LeaderAndISR the replica has since taken, is refused -- either way it is consumed."""
    b, p = m.to, m.partition
    broker = s.brokers[b]
    if m not in s.stop_replica or broker.status != UP:
        return None
    s = s._replace(stop_replica=_remove(s.stop_replica, m))
    r = replica(s, b, p)
    if cfg.fence_controller_epoch and m.controller_epoch < broker.controller_epoch:
        return s
    deletion = m.leader_epoch == EPOCH_DURING_DELETE
    if deletion and cfg.topic_ids and m.topic_id < r.topic_id:
        return s  # the deletion of an older incarnation: this replica is a newer one's
    if not deletion and m.leader_epoch < r.leader_epoch:
        return s
    if m.controller_epoch > broker.controller_epoch:  # seed 002: a newer controller exists
        s = s._replace(brokers=_put(s.brokers, b, _stops_controlling(broker._replace(controller_epoch=m.controller_epoch))))
    gone = _topic_deleted(cfg, r, max(r.topic_id, m.topic_id)) if deletion else _deleted(cfg, r)
    return _set_replica(_drop_responses_to(s, b, p), b, p, gone)


# ---------------------------------------------------------------------------------------
# Topics deleted and created again (seed 000 B, question 5)
# ---------------------------------------------------------------------------------------


def _current(s: State, p: int, r: Replica) -> bool:
    """Whether replica r acts for p's current incarnation (the topic exists and r took its
    LeaderAndISR or startup state): only that incarnation's commits and acknowledgements are
    the ones the properties hold durable."""
    zn = s.zk.partitions[p]
    return bool(zn.ar) and r.topic_id == zn.topic_id


def _topic_deleted(cfg: Config, r: Replica, topic_id: int) -> Replica:
    """Seed 000 B 2 / C ``stopReplica`` for a deleted topic: the partition's directory goes,
    and with it everything the replica knew -- log, HW and leader-epoch cache.  Unlike a
    reassignment's StopReplica, the leader epoch is forgotten too: a re-created topic starts
    its epochs again.  With topic ids the replica remembers which incarnation it deleted."""
    return Replica(DELETED, NO_LEADER, 0, (), -1, (), 0, IDLE, _unknown(cfg), 0, topic_id)


def _for_incarnation(cfg: Config, r: Replica, topic_id: int) -> Replica:
    """The replica a broker acts on for a request (or startup state) of incarnation
    ``topic_id``.  With topic ids, a local replica of an older incarnation belongs to a
    deleted topic: it is deleted first (KIP-516: a local log whose id differs is removed),
    so nothing of the old incarnation survives into the new one.  Without them the broker
    cannot tell, and carries on with whatever its directory holds -- seed 000's argument
    that "no partition version is needed"."""
    if cfg.topic_ids and topic_id > r.topic_id:
        return _topic_deleted(cfg, r, topic_id)._replace(role=NONE)
    return r


def delete_topic(s: State, cfg: Config, c: int, p: int) -> State | None:
    """Seed 000 B 2: an administrator deletes the topic; the controller removes its znodes
    and "sends the StopReplicaCommand to all affected brokers" -- the live ones: a broker
    that is down hears nothing, and deletes its copy at startup if the topic is still gone
    (E 4).  The deletion completes at once, as the design has it (Kafka 2.7 waits for every
    replica to confirm).  The znode's version moves on, so a leader's conditional ISR write
    fails; its ids and versions keep counting (the model does not restart zk_version at 0)."""
    if not _acting_controller(s, c) or s.ghost.deletions >= cfg.deletions:
        return None
    zn = s.zk.partitions[p]
    if not zn.ar or zn.rar:
        return None
    cepoch = s.zk.controller_epoch
    stops = s.stop_replica
    for b in zn.ar:
        if b in s.zk.live:
            stops = _add(stops, StopReplica(b, p, EPOCH_DURING_DELETE, cepoch, zn.topic_id))
    s = _set_znode(s, p, PartitionZnode(NO_LEADER, zn.leader_epoch, (), zn.zk_version + 1, (), (), zn.topic_id))
    g = s.ghost
    retired = set(g.retired)
    retired.update((p, e.value) for br in s.brokers for e in br.replicas[p].log)
    retired.update((p, e.value) for m in s.fetches if m.partition == p for e in m.records)
    ghost = g._replace(
        deletions=g.deletions + 1,
        retired=tuple(sorted(retired)),
        committed=tuple(x for x in g.committed if x[0] != p),
        acked=tuple(x for x in g.acked if x[0] != p),
        led=tuple(x for x in g.led if x[0] != p),
        unclean=tuple(x for x in g.unclean if x != p),
        zombie_appends=tuple(x for x in g.zombie_appends if x[0] != p),
        zombie_commits=tuple(x for x in g.zombie_commits if x[0] != p),
    )
    return s._replace(stop_replica=stops, ghost=ghost)


def create_topic(s: State, cfg: Config, c: int, p: int, ar: tuple[int, ...], leader: int) -> State | None:
    """Seed 000 B 1 and ``init_leaders``: an administrator creates the topic again under the
    same name with an explicit assignment -- any brokers, down ones included (the design's
    "we only assign replicas to live brokers" holds only for automatic assignment).  The
    controller selects "one of the live brokers in AR as the new leader and sets all live
    brokers in AR as the new ISR", writes it with leader epoch 1 -- a new topic's epochs
    start again -- and a new topic id, and sends LeaderAndISR to the assigned brokers.

    The name is free again once the deletion is complete: every live replica it went to has
    answered its StopReplica (the controller's requests to one broker are answered in order,
    so none of them takes the new topic's LeaderAndISR first).  A replica that was down got
    nothing -- the design's gap."""
    if not _acting_controller(s, c) or not ar:
        return None
    zn = s.zk.partitions[p]
    if zn.ar or any(m.partition == p and m.leader_epoch == EPOCH_DURING_DELETE for m in s.stop_replica):
        return None  # the topic exists, or its deletion still waits for a live replica's answer
    isr = tuple(b for b in ar if b in s.zk.live)
    if leader not in isr:
        return None
    znode = PartitionZnode(leader, 1, isr, zn.zk_version + 1, ar, (), zn.topic_id + 1)
    s = _set_znode(s, p, znode)
    mbe = _max_broker_epoch(s.zk)
    sent = s.leader_and_isr
    for to in ar:
        sent = _add(sent, LeaderAndIsr(to, p, leader, 1, isr, znode.zk_version, s.zk.controller_epoch, mbe, znode.topic_id))
    return s._replace(leader_and_isr=sent, ghost=s.ghost._replace(led=_add(s.ghost.led, (p, 1, leader))))


# ---------------------------------------------------------------------------------------
# Preferred-replica election (later Kafka, on seed 000 A's election)
# ---------------------------------------------------------------------------------------


def preferred_election(s: State, cfg: Config, c: int, p: int) -> State | None:
    """An administrator asks for a preferred-replica election of partition p (seed 000's
    topic path: "the first replica is the preferred replica"); the controller moves the
    leadership back to it -- only if it is alive, in the ISR and not already leading, so the
    move is a clean election and loses no committed record.  The ISR stays as it is; the
    write is a conditional one with leader_epoch + 1, then LeaderAndISR, like
    ``elect_leader``.  The model's AR is a sorted tuple, so its preferred replica is the
    lowest broker id assigned."""
    if not _acting_controller(s, c) or s.ghost.preferred_elections >= cfg.preferred_elections:
        return None
    zn = s.zk.partitions[p]
    if not zn.ar or zn.leader_epoch + 1 > cfg.max_epoch:
        return None
    preferred = preferred_leader(zn.ar, zn.leader, zn.isr, s.zk.live)
    if preferred is None:
        return None
    s = _write_and_send(s, p, preferred, zn.isr)
    return s._replace(ghost=s.ghost._replace(preferred_elections=s.ghost.preferred_elections + 1))


# ---------------------------------------------------------------------------------------
# Brokers acting on LeaderAndISR (seed 000 C)
# ---------------------------------------------------------------------------------------


def stale_reason(s: State, cfg: Config, m: LeaderAndIsr) -> str | None:
    """Why broker m.to must refuse m, or None: an older controller epoch (seed 002), a
    request meant for an older incarnation of the broker (seed 003), or a leader epoch no
    newer than the one it has (seed 000, 'only follow ... if its epoc is larger')."""
    broker = s.brokers[m.to]
    if cfg.fence_controller_epoch and m.controller_epoch < broker.controller_epoch:
        return "stale controller epoch"
    if cfg.fence_broker_epoch and m.max_broker_epoch < broker.broker_epoch:
        return "stale broker epoch"
    r = broker.replicas[m.partition]
    if cfg.topic_ids and (m.topic_id < r.topic_id or (m.topic_id == r.topic_id and r.role == DELETED)):
        return "stale topic id"
    if m.leader_epoch <= _for_incarnation(cfg, r, m.topic_id).leader_epoch:
        return "stale leader epoch"
    return None


def _accept(s: State, cfg: Config, m: LeaderAndIsr) -> State:
    """Bookkeeping common to every accepted control request: learn the controller epoch
    (and with it that one is no longer controller), and note in the ghost history if the
    request came from a superseded controller."""
    broker = s.brokers[m.to]
    ghost = s.ghost
    if m.controller_epoch < broker.controller_epoch or m.max_broker_epoch < broker.broker_epoch:
        ghost = ghost._replace(stale_accepts=ghost.stale_accepts + 1)
    if m.controller_epoch > broker.controller_epoch:
        # seed 002: a newer controller epoch means "a new controller has been elected":
        # a broker that still acted as controller realises it no longer is.
        broker = _stops_controlling(broker._replace(controller_epoch=m.controller_epoch))
    return s._replace(brokers=_put(s.brokers, m.to, broker), ghost=ghost)


def become_leader(s: State, cfg: Config, m: LeaderAndIsr) -> State | None:
    """Seed 000 C ``becomeLeader``: stop fetching, take the ISR and zk_version from the
    command, start serving reads and writes."""
    b, p = m.to, m.partition
    if m not in s.leader_and_isr or m.leader != b or s.brokers[b].status != UP:
        return None
    if stale_reason(s, cfg, m) is not None:
        return None
    s = _drop_responses_to(_accept(s, cfg, m), b, p)
    r = _for_incarnation(cfg, replica(s, b, p), m.topic_id)
    r = Replica(LEADER, b, m.leader_epoch, m.isr, m.zk_version, r.log, r.hw, IDLE, _unknown(cfg), r.leo, m.topic_id)
    s = _set_replica(s, b, p, r)
    if _current(s, p, r):  # a deleted incarnation's leaders are no history of the current one
        s = s._replace(ghost=s.ghost._replace(led=_add(s.ghost.led, (p, m.leader_epoch, b))))
    return advance_hw(s, cfg, b, p)


def _follow(cfg: Config, r: Replica, leader: int, epoch: int, topic_id: int) -> Replica:
    """Seed 000 C ``becomeFollower``: stop leading; then either truncate to the HW at once
    (the design) or first reconcile with the leader by epoch (KIP-101 onwards)."""
    if cfg.truncation == "hw":
        cut = to_high_watermark(r.log, r.hw)
        return Replica(FOLLOWER, leader, epoch, (), -1, r.log[:cut], min(r.hw, cut), FETCHING, (UNKNOWN,) * len(r.follower_leo), 0, topic_id)
    return Replica(FOLLOWER, leader, epoch, (), -1, r.log, r.hw, TRUNCATING, (UNKNOWN,) * len(r.follower_leo), 0, topic_id)


def become_follower(s: State, cfg: Config, m: LeaderAndIsr) -> State | None:
    """Seed 000 C 2.2: follow the named leader "if the broker is not already following L"
    (with fenced fetching, every new leader epoch restarts the fetcher)."""
    b, p = m.to, m.partition
    if m not in s.leader_and_isr or m.leader == b or s.brokers[b].status != UP:
        return None
    if stale_reason(s, cfg, m) is not None:
        return None
    s = _accept(s, cfg, m)
    r = _for_incarnation(cfg, replica(s, b, p), m.topic_id)
    if m.leader == NO_LEADER:
        r = Replica(FOLLOWER, NO_LEADER, m.leader_epoch, (), -1, r.log, r.hw, IDLE, _unknown(cfg), 0, m.topic_id)
        return _set_replica(_drop_responses_to(s, b, p), b, p, r)
    already = r.role == FOLLOWER and r.leader == m.leader and not cfg.refollow_on_new_epoch
    if already:
        return _set_replica(s, b, p, r._replace(leader_epoch=m.leader_epoch, topic_id=m.topic_id))
    return _set_replica(_drop_responses_to(s, b, p), b, p, _follow(cfg, r, m.leader, m.leader_epoch, m.topic_id))


def reject_leader_and_isr(s: State, cfg: Config, m: LeaderAndIsr) -> State | None:
    """A broker refuses a stale LeaderAndISR: nothing changes.  (Never explored by the
    checker -- it is a self-loop -- but traces record it and conformance replays it.)"""
    if s.brokers[m.to].status != UP:
        return None
    return s if stale_reason(s, cfg, m) is not None else None


def truncate(s: State, cfg: Config, f: int, p: int) -> State | None:
    """KIP-101/279/320: a new follower asks its leader where its latest epoch ends
    (OffsetsForLeaderEpoch) and truncates there before fetching.  With fenced fetching the
    request carries the follower's leader epoch and a leader in another epoch refuses it."""
    r = replica(s, f, p)
    if s.brokers[f].status != UP or r.role != FOLLOWER or r.fetch_state != TRUNCATING:
        return None
    if r.leader == NO_LEADER or s.brokers[r.leader].status != UP:
        return None
    lr = replica(s, r.leader, p)
    if lr.role != LEADER or (cfg.fenced_fetch and lr.leader_epoch != r.leader_epoch):
        return None
    cut = truncation_point(cfg.truncation, r.log, r.hw, lr.log, lr.leader_epoch)
    r = r._replace(log=r.log[:cut], hw=min(r.hw, cut), fetch_state=FETCHING)
    return _set_replica(s, f, p, r)


# ---------------------------------------------------------------------------------------
# Replication: produce, fetch, high watermark, ISR (seed 000 G)
# ---------------------------------------------------------------------------------------


def produce(s: State, cfg: Config, b: int, p: int) -> State | None:
    """A client's acks=all write reaches the broker that believes it leads p: appended in
    the leader's epoch; refused (NOT_ENOUGH_REPLICAS) below min.insync.replicas."""
    r = replica(s, b, p)
    if s.brokers[b].status != UP or r.role != LEADER or s.ghost.produced >= cfg.records:
        return None
    if len(r.isr) < cfg.min_insync:
        return None
    value = s.ghost.produced + 1
    s = _set_replica(s, b, p, r._replace(log=r.log + (Entry(value, r.leader_epoch),)))
    ghost = s.ghost._replace(produced=value)
    if any(lp == p and e > r.leader_epoch for lp, e, _ in ghost.led):  # a newer leader exists
        ghost = ghost._replace(zombie_appends=_add(ghost.zombie_appends, (p, value)))
    s = s._replace(ghost=ghost)
    return advance_hw(s, cfg, b, p)


def send_fetch(s: State, cfg: Config, f: int, p: int) -> State | None:
    """The ReplicaFetcherThread asks its leader for records from its LEO (one request
    outstanding at a time), carrying its leader epoch (and its topic id)."""
    r = replica(s, f, p)
    if s.brokers[f].status != UP or r.role != FOLLOWER or r.fetch_state != FETCHING or r.leader == NO_LEADER:
        return None
    for m in s.fetches:
        if m.follower == f and m.partition == p and m.leader == r.leader:
            return None
    req = Fetch(FETCH_REQUEST, f, r.leader, p, r.leo, r.leader_epoch, (), -1, OK, r.topic_id)
    return s._replace(fetches=_add(s.fetches, req))


def handle_fetch(s: State, cfg: Config, m: Fetch) -> State | None:
    """Seed 000 G ``on_ReplicaFetchRequest``: record the follower's LEO, advance the HW, and
    answer with the records from the fetch offset and the HW.  With fenced fetching a
    request from another leader epoch is refused (FENCED/UNKNOWN_LEADER_EPOCH).  With topic
    ids, so is a request from another incarnation of the topic: a re-created topic's epochs
    start again, so a follower's request sent before the deletion carries a current-looking
    epoch, and counting its offset would commit records nobody has (KIP-516's Fetch v13)."""
    if m.kind != FETCH_REQUEST or m not in s.fetches:
        return None
    lb, p = m.leader, m.partition
    lr = replica(s, lb, p)
    if s.brokers[lb].status != UP or lr.role != LEADER:
        return None
    s = s._replace(fetches=_remove(s.fetches, m))
    if cfg.fenced_fetch and m.epoch != lr.leader_epoch:
        return s
    if cfg.topic_ids and m.topic_id != lr.topic_id:
        return s
    if m.offset > lr.leo:
        resp = Fetch(FETCH_RESPONSE, m.follower, lb, p, m.offset, lr.leader_epoch, (), lr.leo, OUT_OF_RANGE, lr.topic_id)
        return s._replace(fetches=_add(s.fetches, resp))
    s = _set_replica(s, lb, p, lr._replace(follower_leo=_put(lr.follower_leo, m.follower, m.offset)))
    s = advance_hw(s, cfg, lb, p)
    lr = replica(s, lb, p)
    resp = Fetch(FETCH_RESPONSE, m.follower, lb, p, m.offset, lr.leader_epoch, lr.log[m.offset :], lr.hw, OK, lr.topic_id)
    return s._replace(fetches=_add(s.fetches, resp))


def receive_fetch(s: State, cfg: Config, m: Fetch) -> State | None:
    """Seed 000 G, the follower: append the records and take the leader's HW (never past
    its own LEO).  A response the fetcher no longer expects -- another leader, another
    offset, another epoch -- is discarded; OFFSET_OUT_OF_RANGE truncates to the leader's LEO."""
    if m.kind != FETCH_RESPONSE or m not in s.fetches:
        return None
    f, p = m.follower, m.partition
    if s.brokers[f].status != UP:
        return None
    s = s._replace(fetches=_remove(s.fetches, m))
    r = replica(s, f, p)
    if (
        r.role != FOLLOWER
        or r.leader != m.leader
        or r.fetch_state != FETCHING
        or m.offset != r.leo
        or (cfg.fenced_fetch and m.epoch != r.leader_epoch)
        or (cfg.topic_ids and m.topic_id != r.topic_id)
    ):
        return s
    if m.error == OUT_OF_RANGE:
        cut = min(m.hw, r.leo)
        return _set_replica(s, f, p, r._replace(log=r.log[:cut], hw=min(r.hw, cut)))
    log = r.log + m.records
    return _set_replica(s, f, p, r._replace(log=log, hw=min(m.hw, len(log))))


def _conditional_isr_write(s: State, cfg: Config, b: int, p: int, isr: tuple[int, ...]) -> State | None:
    """Seed 000 G ``maybe_change_ISR``: the leader updates the ISR in ZK only if the znode is
    still at the version it knows; then adopts it locally and retries the HW."""
    lr = replica(s, b, p)
    zn = s.zk.partitions[p]
    if zn.zk_version != lr.zk_version:
        return None
    s = _set_znode(s, p, zn._replace(isr=isr, zk_version=zn.zk_version + 1))
    s = _set_replica(s, b, p, lr._replace(isr=isr, zk_version=zn.zk_version + 1))
    return advance_hw(s, cfg, b, p)


def shrink_isr(s: State, cfg: Config, b: int, p: int, f: int) -> State | None:
    """A follower that lags the leader's LEO (by messages, or by time: not fetched at all in
    this term) is taken out of the ISR, so the leader can commit without it.  A follower at
    the leader's LEO is never out of sync, however long it has been silent: Kafka's
    ``isFollowerOutOfSync`` requires both ``leo != leader leo`` and the lag time passed."""
    lr = replica(s, b, p)
    if s.brokers[b].status != UP or lr.role != LEADER or f == b or f not in lr.isr:
        return None
    if lr.follower_leo[f] >= lr.leo:
        return None
    return _conditional_isr_write(s, cfg, b, p, _remove(lr.isr, f))


def expand_isr(s: State, cfg: Config, b: int, p: int, f: int) -> State | None:
    """A follower that has caught up to the HW rejoins the ISR -- with fenced fetching only
    once it has also reached the start of the leader's epoch (KIP-320)."""
    lr = replica(s, b, p)
    if s.brokers[b].status != UP or lr.role != LEADER or f in lr.isr or f not in s.zk.partitions[p].ar:
        return None
    leo = lr.follower_leo[f]
    if leo == UNKNOWN or leo < lr.hw or (cfg.fenced_fetch and leo < lr.epoch_start):
        return None
    return _conditional_isr_write(s, cfg, b, p, _add(lr.isr, f))


def isr_update_failed(s: State, cfg: Config, b: int, p: int) -> State | None:
    """The conditional update fails because the znode moved on: "broker A will realize that
    it's no longer the leader any more" (seed 000, question 3) -- it stops acting as leader."""
    lr = replica(s, b, p)
    if s.brokers[b].status != UP or lr.role != LEADER or s.zk.partitions[p].zk_version == lr.zk_version:
        return None
    r = lr._replace(role=NONE, leader=NO_LEADER, isr=(), zk_version=-1, follower_leo=_unknown(cfg), epoch_start=0)
    return _set_replica(s, b, p, r)


# ---------------------------------------------------------------------------------------
# The arguments worth trying in a state (the registry names one per action)
# ---------------------------------------------------------------------------------------


def _brokers(s: State, cfg: Config) -> Iterator[tuple]:
    return ((b,) for b in range(cfg.brokers))


def _broker_partitions(s: State, cfg: Config) -> Iterator[tuple]:
    return ((b, p) for b in range(cfg.brokers) for p in range(cfg.partitions))


def _isr_changes(s: State, cfg: Config) -> Iterator[tuple]:
    return ((b, p, f) for b in range(cfg.brokers) for p in range(cfg.partitions) for f in range(cfg.brokers) if f != b)


def _elections(s: State, cfg: Config) -> Iterator[tuple]:
    c = s.zk.controller
    if c == NO_LEADER:
        return
    for p in range(cfg.partitions):
        for leader, _isr, _unclean in election_outcomes(s.zk, p, cfg):
            yield (c, p, leader)


def _startups(s: State, cfg: Config) -> Iterator[tuple]:
    c = s.zk.controller
    if c != NO_LEADER:
        yield from ((c, b) for b in s.brokers[c].new_brokers)


def _shutdowns(s: State, cfg: Config) -> Iterator[tuple]:
    c = s.zk.controller
    if c == NO_LEADER or s.ghost.shutdowns >= cfg.max_shutdowns:
        return
    for p, zn in enumerate(s.zk.partitions):
        for b in zn.isr:
            for leader in (zn.isr if zn.leader == b else (zn.leader,)):
                if leader != b:
                    yield (c, p, b, leader)


def _reassign_starts(s: State, cfg: Config) -> Iterator[tuple]:
    """A pending reassignment restarted at INIT, or -- within the bound -- a new one to any
    non-empty replica set (the current AR too: a reordering, see ``reassign_start``)."""
    c = s.zk.controller
    if c == NO_LEADER:
        return
    for p, zn in enumerate(s.zk.partitions):
        if zn.rar:
            yield (c, p, zn.rar)
        elif s.ghost.reassignments < cfg.reassignments:
            for mask in range(1, 1 << cfg.brokers):
                yield (c, p, tuple(b for b in range(cfg.brokers) if mask >> b & 1))


def _reassign_completions(s: State, cfg: Config) -> Iterator[tuple]:
    c = s.zk.controller
    if c == NO_LEADER:
        return
    for p, zn in enumerate(s.zk.partitions):
        if zn.rar:
            yield from ((c, p, b) for b in zn.rar if b in s.zk.live)


def _deletions(s: State, cfg: Config) -> Iterator[tuple]:
    c = s.zk.controller
    if c == NO_LEADER or s.ghost.deletions >= cfg.deletions:
        return
    yield from ((c, p) for p, zn in enumerate(s.zk.partitions) if zn.ar and not zn.rar)


def _creations(s: State, cfg: Config) -> Iterator[tuple]:
    """Any non-empty assignment (down brokers included) and any live member of it as leader."""
    c = s.zk.controller
    if c == NO_LEADER:
        return
    for p, zn in enumerate(s.zk.partitions):
        if zn.ar:
            continue
        for mask in range(1, 1 << cfg.brokers):
            ar = tuple(b for b in range(cfg.brokers) if mask >> b & 1)
            yield from ((c, p, ar, leader) for leader in ar if leader in s.zk.live)


def _preferred_elections(s: State, cfg: Config) -> Iterator[tuple]:
    c = s.zk.controller
    if c == NO_LEADER or s.ghost.preferred_elections >= cfg.preferred_elections:
        return
    yield from ((c, p) for p in range(cfg.partitions))


def _stop_requests(s: State, cfg: Config) -> Iterator[tuple]:
    return ((m,) for m in s.stop_replica)


def _requests(s: State, cfg: Config) -> Iterator[tuple]:
    return ((m,) for m in s.leader_and_isr)


def _fetch_messages(s: State, cfg: Config) -> Iterator[tuple]:
    return ((m,) for m in s.fetches)


def forget_stale_requests(s: State, cfg: Config) -> State:
    """Drop LeaderAndISR requests every addressee will refuse forever.

    A broker's known leader epoch and controller epoch never go backwards (they survive a
    crash: the epoch cache is on disk, and a restart only reads newer ones from ZK), so a
    request that is stale now is stale for ever: delivering it is a self-loop.  Forgetting
    it changes no behaviour and keeps the set of requests ever sent from growing.
    """
    kept = tuple(m for m in s.leader_and_isr if not _stale_for_ever(s, cfg, m))
    return s if len(kept) == len(s.leader_and_isr) else s._replace(leader_and_isr=kept)


def _stale_for_ever(s: State, cfg: Config, m: LeaderAndIsr) -> bool:
    """Whether m is stale now and will stay so.  Without topic ids a deleted topic's replica
    forgets its leader epoch with its directory (seed 000 B 2), so a request refused for its
    leader epoch may be taken later; every other reason is for ever: controller and broker
    epochs never go back, and with topic ids a replica's id never does either."""
    why = stale_reason(s, cfg, m)
    return why is not None and not (why == "stale leader epoch" and cfg.deletions and not cfg.topic_ids)
