"""Fencing: which requests a broker refuses, each rule one pure function.

A broker obeys three kinds of senders, and each carries a field that says which decision it
acts on; a request whose field is older than what the broker holds was computed before a
newer decision and must change nothing.  The rules are kept here, apart from sockets and
disks, so each can be tested on its own:

* **Control requests** (:func:`control_refusal`) carry the controller epoch (seed 002: a
  deposed controller must not be obeyed) and a broker epoch (seed 003: the request must not
  be meant for an earlier registration of this broker).  Both are mandatory: a request
  without a broker epoch cannot show it was computed after this broker registered, and the
  design names no value that skips the check -- seed 003's two formats (the cluster-wide
  ``max_broker_epoch``, or KIP-380's per-broker ``broker_epoch``) each carry a real epoch,
  and ``-1`` is below every registration, so it is refused like any older epoch.
* **LeaderAndISR entries** (:func:`leader_and_isr_verdict`): seed 000's broker "only follows
  a leadership change command if its epoc is larger than the current epoc".  An equal epoch
  is a repetition of the decision the broker holds, or nothing: the same epoch with another
  leader (or another ISR under the same ZooKeeper version) would let two brokers lead one
  partition in one epoch, and is refused.
* **Replica fetches** (:func:`fetch_refusal`): the leader serves a fetch only as the leader,
  in the leader epoch the follower names (KIP-320), for the incarnation of the topic the
  follower names (KIP-516, :mod:`impl.node.topic_identity`).  A re-created topic's epochs
  start again, so only the topic id tells a fetch sent before the deletion from one of the
  new incarnation; counting the older fetch's offset would commit a record nobody holds.
  A fetch is served only to a replica in the partition's assignment (AR): the sender's
  ``replica_id`` is its authenticated principal (:mod:`impl.node.auth.rules`), so a broker
  outside the AR cannot read past the HW or take part in the ISR.
* **The controller's identity** (:func:`controller_claim`, :func:`zookeeper_claim_refusal`):
  the authentication rule lets broker N send control requests naming ``controller_id`` = N,
  which any broker can do.  A broker obeys them only from the controller ZooKeeper names at
  that controller epoch.  The confirmed (controller id, epoch) is cached, so the normal path
  reads nothing; a claim the cache cannot settle -- a new epoch after a failover, or one an
  impostor made up -- is checked against ZooKeeper before anything changes, so a made-up
  epoch far above the real one moves no broker's epoch and locks no controller out.  The
  model trusts every sender (it fences stale epochs only); this is the implementation's
  authentication-level rule (docs/security.md).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

from impl.node.replica import LEADER, NONE, PartitionState, Replica
from impl.node.topic_identity import UNKNOWN
from impl.node.wire import ErrorCode


# -- control requests (seeds 002, 003) ----------------------------------------------------------
@dataclass(frozen=True)
class ControlHeader:
    """The fencing fields of a control request, read before anything else of it is used."""

    controller_id: int | None
    controller_epoch: int
    broker_epoch: int  # the seed 003 max_broker_epoch, else the KIP-380 per-broker epoch

    @staticmethod
    def from_wire(body: dict[str, Any]) -> ControlHeader:
        """Read the fields; a request without a controller epoch or a broker epoch is
        malformed (``ValueError``: the server answers INVALID_REQUEST)."""
        if "controller_epoch" not in body:
            raise ValueError("a control request carries its controller epoch")
        if "max_broker_epoch" in body:
            seen = body["max_broker_epoch"]
        elif "broker_epoch" in body:
            seen = body["broker_epoch"]
        else:
            raise ValueError("a control request carries a broker epoch (seed 003)")
        cid = body.get("controller_id")
        return ControlHeader(None if cid is None else int(cid), int(body["controller_epoch"]),
                             int(seen))


def control_refusal(header: ControlHeader, known_controller_epoch: int,
                    own_broker_epoch: int) -> tuple[str, ErrorCode] | None:
    """Why a broker must refuse a control request, or None: an older controller epoch
    (seed 002), or a broker epoch older than this broker's registration (seed 003; ``-1``
    included, see the module docstring)."""
    if header.controller_epoch < known_controller_epoch:
        return "stale_controller_epoch", ErrorCode.STALE_CONTROLLER_EPOCH
    if header.broker_epoch < own_broker_epoch:
        return "stale_broker_epoch", ErrorCode.STALE_BROKER_EPOCH
    return None


# -- the controller's identity (docs/security.md) ---------------------------------------------
@dataclass(frozen=True)
class ControllerTerm:
    """A controller and the epoch it was elected in, as ZooKeeper showed them together."""

    controller_id: int
    controller_epoch: int


def controller_term(holder: int | None, controller_czxid: int, epoch_raw: bytes,
                    epoch_mzxid: int) -> ControllerTerm | None:
    """The term ZooKeeper names, from ``/controller`` (its holder and czxid) and
    ``/controller_epoch`` (its data and mzxid), or None if they do not name one.

    An election creates ``/controller`` and writes ``/controller_epoch`` in one transaction,
    so the two carry one zxid: the pair is a term only if ``/controller``'s czxid is
    ``/controller_epoch``'s mzxid.  Reads that straddle an election, an abnormal holder, or a
    corrupt epoch name none."""
    try:
        epoch = int(epoch_raw.decode())
    except (ValueError, UnicodeDecodeError):
        return None
    if holder is None or controller_czxid != epoch_mzxid:
        return None
    return ControllerTerm(holder, epoch)


class Claim(enum.Enum):
    """What a control request's (controller id, epoch) is, against the confirmed term."""

    CONFIRMED = "confirmed"  # the cached term: obey (after the other fencing rules)
    NOT_CONTROLLER = "not_controller"  # the cached term's epoch, another broker: refuse
    CHECK = "check"  # the cache cannot tell: ask ZooKeeper before anything changes


def controller_claim(header: ControlHeader, confirmed: ControllerTerm | None) -> Claim:
    """Seed 002 gives each epoch one controller, so the confirmed term settles every claim
    of its own epoch; any other claim (a newer epoch, or no term confirmed yet) is read
    against ZooKeeper.  An older epoch never gets here: :func:`control_refusal` refuses it."""
    if confirmed is None or header.controller_epoch != confirmed.controller_epoch:
        return Claim.CHECK
    if header.controller_id == confirmed.controller_id:
        return Claim.CONFIRMED
    return Claim.NOT_CONTROLLER


def zookeeper_claim_refusal(header: ControlHeader,
                            term: ControllerTerm | None) -> tuple[str, ErrorCode] | None:
    """Why a claim ZooKeeper was asked about is refused, or None (the term confirms it).

    * ZooKeeper is at a later epoch: the sender was deposed (``STALE_CONTROLLER_EPOCH``, which
      makes an honest former controller check its own term);
    * no term readable (no controller now, or an election in progress): the claim cannot be
      confirmed, and an honest sender is deposed or about to be (``STALE_CONTROLLER_EPOCH``);
    * an epoch ZooKeeper has not reached, or its epoch with another broker: the sender is
      not the controller it names (``CLUSTER_AUTHORIZATION_FAILED``, as the authentication
      rule answers a body naming an identity its sender does not hold)."""
    if term is None or header.controller_epoch < term.controller_epoch:
        return "stale_controller_epoch", ErrorCode.STALE_CONTROLLER_EPOCH
    if header.controller_epoch > term.controller_epoch or header.controller_id != term.controller_id:
        return "not_controller", ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    return None


# -- LeaderAndISR (seed 000 C) ------------------------------------------------------------------
class Verdict(enum.Enum):
    """What a broker does with one LeaderAndISR entry for a replica it holds."""

    APPLY = "apply"  # a newer leader epoch: become leader or follower
    REPEAT = "repeat"  # the decision the replica holds, again: at most a newer ISR / AR
    REFUSE = "refuse"  # an older epoch, or the same epoch with another decision


def leader_and_isr_verdict(r: Replica, st: PartitionState) -> Verdict:
    """Seed 000 C: follow a leadership change only if its epoch is larger than the current.

    An entry in the epoch the replica holds is a repetition (INIT after a controller
    failover, a reassignment's AR+RAR) only if it names the same leader, and an ISR that is
    either the one the replica holds or a later write of the znode (a larger zk_version: a
    leader's ISR change does not move the leader epoch).  Anything else in that epoch is a
    second decision for one epoch, and is refused: accepting it is how two brokers came to
    lead one partition in one epoch.  A replica that holds no epoch yet (-1) takes any.

    A replica that stopped or stepped down in its epoch (a failed ISR write, a controlled
    shutdown's StopReplica) refuses that epoch too, as the model's "stale leader epoch"
    does and as Kafka 2.7 ignores a request whose epoch "matches the current leader
    epoch".  Its failed write saw the znode move on, and every controller write moves the
    leader epoch, so its next decision comes in a larger epoch.  Taking an old decision
    again instead let a failover's INIT, delivered after the next election had been
    written, make a stepped-down leader lead again in the superseded epoch."""
    if st.leader_epoch > r.leader_epoch:
        return Verdict.APPLY
    if st.leader_epoch < r.leader_epoch or st.leader != r.leader or r.role == NONE:
        return Verdict.REFUSE
    if st.zk_version == r.zk_version and set(st.isr) != r.isr:
        return Verdict.REFUSE
    return Verdict.REPEAT


# -- replica fetches and OffsetsForLeaderEpoch (seed 000 G, KIP-320, KIP-516) ---------------------
def topic_ids_differ(requested: int, held: int | None) -> bool:
    """Whether a request's topic id names another incarnation than the replica's.  Either
    side unknown (``UNKNOWN``: an older sender; ``None``: a replica without an id) is not
    checked."""
    return requested != UNKNOWN and held not in (None, UNKNOWN) and requested != held


def fetch_refusal(r: Replica | None, offset: int, fetch_epoch: int, topic_id: int, *,
                  follower: int) -> tuple[ErrorCode, dict[str, Any]] | None:
    """Why the leader must not serve (nor count) a replica fetch from ``follower``, or None.

    In order: no such replica; not the leader (naming the leader it knows); a follower not
    in the partition's assignment (Kafka's NOT_LEADER_OR_FOLLOWER: a reassigned-in replica
    whose LeaderAndISR reached it before the leader's waits for the controller, as for any
    refused partition); another
    incarnation of the topic (KIP-516: the fetch was sent to the deleted incarnation's
    leader, whose epochs the new one repeats); another leader epoch (KIP-320, ``-1``: not
    fenced, the ``hw`` rule); an offset outside the log."""
    if r is None:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, {}
    if r.role != LEADER:
        return ErrorCode.NOT_LEADER, {"leader": r.leader}
    if follower not in r.replicas:
        return ErrorCode.NOT_LEADER, {"leader": r.leader, "replicas": list(r.replicas)}
    if topic_ids_differ(topic_id, r.log.topic_id):
        return ErrorCode.INCONSISTENT_TOPIC_ID, {}
    if fetch_epoch >= 0 and fetch_epoch != r.leader_epoch:
        return (ErrorCode.FENCED_LEADER_EPOCH if fetch_epoch < r.leader_epoch
                else ErrorCode.UNKNOWN_LEADER_EPOCH), {"leader_epoch": r.leader_epoch}
    if offset > r.leo or offset < max(0, r.log.log_start_offset):
        return ErrorCode.OFFSET_OUT_OF_RANGE, {"leo": r.leo, "hw": r.hw,
                                               "log_start_offset": r.log.log_start_offset}
    return None


def epoch_lookup_refusal(r: Replica, current_epoch: int, topic_id: int) -> ErrorCode | None:
    """Why the leader must not answer an OffsetsForLeaderEpoch request, or None: another
    incarnation of the topic (KIP-516), or another current leader epoch (KIP-320)."""
    if topic_ids_differ(topic_id, r.log.topic_id):
        return ErrorCode.INCONSISTENT_TOPIC_ID
    if current_epoch >= 0 and current_epoch != r.leader_epoch:
        return (ErrorCode.FENCED_LEADER_EPOCH if current_epoch < r.leader_epoch
                else ErrorCode.UNKNOWN_LEADER_EPOCH)
    return None
