"""What each model action is on a real cluster: the harness operation that makes the
implementation take that step, and what it must then have recorded.

Three sorts of operation (docs/drive.md has the table):

* **a fault or an admin operation** -- ``broker_crash`` is kill -9, ``broker_restart`` starts
  the process again, ``broker_pause``/``broker_resume`` are SIGSTOP (until the session
  expires) and SIGCONT, ``broker_expire`` ends a running broker's session through ZooKeeper, ``broker_stop`` is SIGTERM (a clean stop), ``produce`` is one acks=all
  write; ``controlled_shutdown`` is the broker's request sent in its name; ``preferred_election``,
  ``delete_topic``, ``create_topic``, ``add_partitions`` and ``remove_partitions`` are the
  admin client's requests to the controller;
* **the delivery of one held message** -- ``become_leader``/``become_follower``/
  ``reject_leader_and_isr`` release the LeaderAndISR the model names to its broker,
  ``stop_replica`` the StopReplica,
  ``handle_fetch`` releases a follower's fetch to the leader, ``receive_fetch`` the answer;
* **a permit** (``impl.node.step_gate``) for a step the implementation takes on its own --
  ``send_fetch``, ``truncate``, ``shrink_isr``, ``expand_isr``, ``controller_elect``,
  ``elect_leader``, ``broker_reregister`` (a broker whose session expired registers again),
  and ``isr_update_failed`` (the ISR write a leader behind ZooKeeper attempts:
  :func:`isr_write_attempt`); ``on_broker_startup`` and ``controller_resign`` need nothing:
  the implementation takes them as soon as they are enabled.

The registry (``model.registry``) declares, per action, whether a driver exists
(``driver=Supported()``) or why not; the operation's name lives here, beside its code, since
the model must not know the implementation.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from impl.harness.drive.network import record_value
from impl.harness.drive.zombie import on_its_own, waiting_after, write_refused
from impl.node.step_gate import permit_name
from impl.node.wire import RpcError
from model.actions import Step
from model.actions.common import set_replica
from model.config import Config
from model.registry import apply
from model.state import FETCH_RESPONSE, OUT_OF_RANGE, LeaderAndIsr, State
from traces.events import TRUNCATION_COMPLETE

if TYPE_CHECKING:
    from impl.harness.drive.driver import Driver


class Divergence(Exception):
    """The implementation did not take the step: what it did, and what the model allowed."""

    def __init__(self, did: str, allowed: str) -> None:
        super().__init__(f"{did}; the model allowed: {allowed}")
        self.did, self.allowed = did, allowed


@dataclass(frozen=True)
class Operation:
    name: str  # e.g. "LocalCluster.kill", "relay.release(leader_and_isr)", "permit(send_fetch)"
    text: str
    run: Callable[[Driver, Step, State, State], None]


# -- faults and admin operations ----------------------------------------------------------------

def _produce(d: Driver, step: Step, s: State, t: State) -> None:
    b, p = step.args
    value = record_value(t.ghost.produced)
    d.cluster.produce(b, value, p)
    d.expect("produce", b, f"broker {b} appends {value} to partition {p} as leader", partition=p)


def _crash(d: Driver, step: Step, s: State, t: State) -> None:
    b = step.args[0]
    d.cluster.cluster.kill(b)
    d.lost_with(b)


def _restart(d: Driver, step: Step, s: State, t: State) -> None:
    b = step.args[0]
    # a new incarnation fetches over new connections: what its previous one had in flight as
    # a follower and the relay still holds -- a fetch it sent, the answer to one the leader
    # handled after the crash -- is gone, as the model's broker_restart drops it; else a
    # later handle_fetch or receive_fetch could release that one, on a connection nobody reads
    relay = d.cluster.relay
    for f in relay.held("fetch_request", src=b) + relay.held("fetch_response", dst=b):
        relay.drop(f.id)
    d.cluster.cluster.restart(b)
    d.expect("broker_restart", b, f"broker {b} registers and recovers from ZooKeeper", timeout=45)


def _pause(d: Driver, step: Step, s: State, t: State) -> None:
    b = step.args[0]
    d.cluster.cluster.pause(b)
    d.lost_with(b)


def _resume(d: Driver, step: Step, s: State, t: State) -> None:
    b = step.args[0]
    d.cluster.cluster.resume(b)
    _own_steps(d, step, s, t)  # its session expired while it was frozen
    time.sleep(0.2)


def _expire(d: Driver, step: Step, s: State, t: State) -> None:
    """The session ends, the process runs on: messages to it stay in flight, and it takes
    the steps it owes at once (a controller resigns); it re-registers at its own step."""
    b = step.args[0]
    d.cluster.cluster.expire(b)
    _own_steps(d, step, s, t)
    d.settle()


def _own_steps(d: Driver, step: Step, s: State, t: State) -> None:
    """Wait for the steps broker ``step.args[0]`` takes at once after ``step``
    (``zombie.on_its_own``); its re-registration waits for a permit in step mode: granted."""
    b = step.args[0]
    for follow in on_its_own(step, t, d.cfg, waiting_after(step, s, d.cfg, d.waiting)):
        if follow.action == "broker_reregister":
            d.cluster.grant(b, "broker_reregister")
        d.expect(follow.action, b, f"broker {b} takes {follow.action} at once, its session gone")


def _admin(d: Driver, controller: int, what: str, partition: int, replicas: list[int] | None = None,
           count: int = 0) -> dict:
    """An admin request the controller must take; its refusal is the step's divergence."""
    try:
        return d.cluster.admin_request(controller, what, partition, replicas, count)
    except (RpcError, OSError, TimeoutError) as exc:
        raise Divergence(f"controller {controller} refused the admin request {what}: {exc}",
                         f"controller {controller} takes {what}") from None


def _controlled_shutdown(d: Driver, step: Step, s: State, t: State) -> None:
    c, p, b, _ = step.args
    mark = d.frame_mark()
    try:
        d.cluster.request_controlled_shutdown(c, b)
    except (RpcError, OSError, TimeoutError) as exc:
        raise Divergence(f"controller {c} refused broker {b}'s controlled shutdown: {exc}",
                         f"controller {c} moves partition {p} off broker {b}") from None
    if t.zk.partitions[p] != s.zk.partitions[p]:
        d.expect("elect_leader", c, f"controller {c} takes broker {b} out of partition {p}'s ISR")
    else:  # a follower outside the ISR: its StopReplica (no delete) only, nothing written
        d.relay_wait_behind("stop_replica", c, b, lambda f: f.id > mark and not f.summary.get("delete"),
                            f"controller {c} sends broker {b} StopReplica (no delete) for its controlled shutdown")


def _stop(d: Driver, step: Step, s: State, t: State) -> None:
    b = step.args[0]
    code = d.cluster.cluster.stop_broker(b)
    d.lost_with(b)
    if code != 0:
        raise Divergence(f"broker {b}'s controlled shutdown did not complete (exit {code}: recorded as a crash)",
                         f"broker {b} stops cleanly")


def _reassign_start(d: Driver, step: Step, s: State, t: State) -> None:
    c, p, rar = step.args
    _admin(d, c, "reassign", p, list(rar))
    for _ in range(4):  # INIT, then IN_PROGRESS: the step (LeaderAndISR to AR+RAR sent)
        e = d.expect("reassignment", c, f"controller {c} starts reassigning partition {p} to {list(rar)}")
        if (e.get("params") or {}).get("state") == "IN_PROGRESS":
            return
    raise Divergence(f"controller {c} did not start reassigning partition {p}", f"reassign_start{step.args}")


def _reassign_complete(d: Driver, step: Step, s: State, t: State) -> None:
    c, p, _ = step.args
    d.cluster.grant(c, "admin_tick")
    d.expect("elect_leader", c, f"controller {c} switches partition {p} to its new replicas")


def _preferred_election(d: Driver, step: Step, s: State, t: State) -> None:
    c, p = step.args
    _admin(d, c, "elect_preferred", p)
    if t == s:  # the model's controller declines (its preferred replica cannot lead): no write
        if not d.cluster.preferred_request_taken(p, d.step_timeout):
            raise Divergence(f"controller {c} left the preferred-replica election of partition {p} pending "
                             f"for {d.step_timeout:.0f}s", f"controller {c} declines it and writes nothing")
        return
    d.expect("elect_leader", c, f"controller {c} moves partition {p} back to its preferred replica")


def _delete_topic(d: Driver, step: Step, s: State, t: State) -> None:
    c, p = step.args
    _admin(d, c, "delete_topic", p)
    d.expect("topic_deleted", c, f"controller {c} deletes the topic (StopReplica to its live replicas)")


def _create_topic(d: Driver, step: Step, s: State, t: State) -> None:
    c, p, ar, leader = step.args
    # the implementation's controller makes the first live replica listed the leader (seed 000
    # B init_leaders 1.1); the model's administrator names any live one: list it first
    _admin(d, c, "create_topic", p, [leader, *(b for b in ar if b != leader)])
    d.expect("elect_leader", c, f"controller {c} creates the topic with AR {list(ar)} and leader {leader}")


def _add_partitions(d: Driver, step: Step, s: State, t: State) -> None:
    c, p, ar, leader = step.args
    # the topic grown by one partition, the model's AR its replicas, the model's leader listed
    # first (the controller makes the first live replica listed the leader, as at a creation)
    count = sum(1 for zn in s.zk.partitions if zn.ar) + 1
    answer = _admin(d, c, "add_partitions", p, [leader, *(b for b in ar if b != leader)], count)
    added = sorted(int(q) for q in (answer.get("added") or {}))
    if added != [p]:
        raise Divergence(f"controller {c} took the request as adding partition(s) {added}",
                         f"partition {p}, the topic's next fresh id")
    d.expect("elect_leader", c, f"controller {c} adds partition {p} with AR {list(ar)} and leader {leader}",
             partition=p)
    d.expect("partitions_added", c, f"controller {c} records partition {p} added")


def _remove_partitions(d: Driver, step: Step, s: State, t: State) -> None:
    c, p = step.args
    _admin(d, c, "remove_partitions", p)
    d.expect("partitions_removed", c, f"controller {c} removes partition {p} (StopReplica(delete) to its live "
                                      f"replicas)")


# -- deliveries of held messages ----------------------------------------------------------------

def _taken(d: Driver, m: LeaderAndIsr) -> Callable[[dict], bool]:
    """Whether an event is the broker taking LeaderAndISR ``m`` (its leader epoch and
    controller epoch), not refusing it -- not an older request delivered first."""
    def took(e: dict) -> bool:
        params = e.get("params") or {}
        return e["kind"] in ("become_leader", "become_follower") and \
            params.get("leader_epoch") == m.leader_epoch + d.shift and params.get("controller_epoch") == m.controller_epoch
    return took


def _leader_and_isr(kind: str) -> Callable[[Driver, Step, State, State], None]:
    def run(d: Driver, step: Step, s: State, t: State) -> None:
        m = step.args[0]
        d.deliver_leader_and_isr(m)
        b, p = m.to, m.partition
        if t.brokers[b].replicas[p] != s.brokers[b].replicas[p] or kind == "reject_leader_and_isr":
            refuses = kind == "reject_leader_and_isr"  # the request taken instead shows at once
            d.expect(kind, b, f"broker {b} {'refuses' if refuses else 'acts on'} LeaderAndISR (leader {m.leader}, "
                              f"epoch {m.leader_epoch})", partition=p, instead=_taken(d, m) if refuses else None)
        else:
            d.settle()
    return run


def _handle_fetch(d: Driver, step: Step, s: State, t: State) -> None:
    m = step.args[0]
    req = d.held_fetch(m.follower, m.leader, m.offset)
    d.cluster.relay.release(req.id)
    resp = d.relay_wait("fetch_response", m.leader, m.follower,
                        lambda f: f.conn == req.conn and f.correlation_id == req.correlation_id,
                        f"leader {m.leader} answers the fetch of broker {m.follower} at offset {m.offset}")
    answered = any(x.kind == FETCH_RESPONSE and x.follower == m.follower and x not in s.fetches
                   for x in t.fetches)
    if not answered:
        # the model refuses the fetch without an answer; the implementation answers with the
        # error, which changes nothing at the follower: deliver it now
        d.cluster.relay.release(resp.id)
        d.settle()


def _receive_fetch(d: Driver, step: Step, s: State, t: State) -> None:
    m = step.args[0]
    resp = d.relay_wait("fetch_response", m.leader, m.follower, None,
                        f"an answer from leader {m.leader} to broker {m.follower} in flight")
    d.cluster.relay.release(resp.id)
    f, p = m.follower, m.partition
    before, after = s.brokers[f].replicas[p], t.brokers[f].replicas[p]
    if before.log != after.log or before.hw != after.hw:
        kind = "truncate" if m.error == OUT_OF_RANGE else "receive_fetch"
        d.expect(kind, f, f"broker {f} takes the answer: log end {after.leo}, hw {after.hw}")
    else:
        d.settle()


def _stop_replica(d: Driver, step: Step, s: State, t: State) -> None:
    m = step.args[0]
    d.deliver_stop_replica(m)
    b, p = m.to, m.partition
    if t.brokers[b].replicas[p] != s.brokers[b].replicas[p]:
        d.expect("stop_replica", b, f"broker {b} stops{' and deletes' if m.delete else ''} its replica of p{p}",
                 partition=p)
    else:
        d.settle()


# -- permits ------------------------------------------------------------------------------------

def _send_fetch(d: Driver, step: Step, s: State, t: State) -> None:
    f, p = step.args
    leader = s.brokers[f].replicas[p].leader
    mark = d.frame_mark()
    d.cluster.grant(f, "send_fetch")
    d.relay_wait("fetch_request", f, leader, lambda x: x.id > mark,
                 f"broker {f} sends a fetch to leader {leader}")


def _truncate(d: Driver, step: Step, s: State, t: State) -> None:
    f, p = step.args
    if not s.brokers[f].replicas[p].log:
        d.settle()  # an empty log asks nothing (the implementation skips the lookup)
        return
    cut = t.brokers[f].replicas[p].leo
    for _ in range(8):  # one permit per OffsetsForLeaderEpoch round
        d.cluster.grant(f, "truncate")
        e = d.expect("truncate", f, f"broker {f} truncates to {cut}")
        if not another_round(e, cut):
            return


def another_round(e: dict[str, Any], cut: int) -> bool:
    """Does the follower that recorded the truncation round ``e`` ask again before it fetches?

    The model takes a truncation as one step, Kafka's follower in as many OffsetsForLeaderEpoch
    rounds as it takes (``impl.node.truncation``): a round that stops above the model's
    ``cut``, or one that reached it but says it is not complete (the leader answered an epoch
    the follower lacks over an older one it has), is followed by another, which the driver
    grants within the same step.  The judge takes the later rounds as that one step too
    (``conformance.judge.search.later_truncation_round``)."""
    params = e.get("params") or {}
    return int(params.get("truncated_to", -1)) > cut or params.get(TRUNCATION_COMPLETE) is False


def _permit(gate: str, actor: Callable[[Step], int], what: str,
            target: Callable[[Step], int] | None = None) -> Callable[[Driver, Step, State, State], None]:
    def run(d: Driver, step: Step, s: State, t: State) -> None:
        b = actor(step)
        d.cluster.grant(b, gate, target(step) if target is not None else None)
        d.expect(gate, b, what.format(b=b, args=step.args))
    return run


def isr_write_attempt(s: State, cfg: Config, b: int, p: int) -> tuple[str, int | None]:
    """The conditional ISR write leader ``b`` is made to attempt for the model's
    ``isr_update_failed (b, p)``, as a permit: the implementation attempts one only to change
    the ISR, so the change the model's own guards would let it make were its zk_version
    current -- taking out the lowest follower that lags (``shrink_isr:F``), else adding the
    lowest that caught up (``expand_isr:F``); with neither, the harness-only ``isr_write_as_is``,
    the ISR as it stands.  The judge's view of the step is the zk_version the write expected,
    whichever ISR it proposed."""
    lr = s.brokers[b].replicas[p]
    current = set_replica(s, b, p, lr._replace(zk_version=s.zk.partitions[p].zk_version))
    for gate in ("shrink_isr", "expand_isr"):
        for f in range(cfg.brokers):
            if f != b and apply(current, cfg, Step(gate, (b, p, f))) is not None:
                return gate, f
    return "isr_write_as_is", None


def _isr_update_failed(d: Driver, step: Step, s: State, t: State) -> None:
    b, p = step.args
    gate, follower = isr_write_attempt(s, d.cfg, b, p)
    d.cluster.grant(b, gate, follower)
    d.expect("isr_update_failed", b, f"leader {b} attempts its ISR write ({permit_name(gate, follower)}) at "
                                     f"zk_version {s.brokers[b].replicas[p].zk_version}, which ZooKeeper's "
                                     f"{s.zk.partitions[p].zk_version} has moved past, and steps down")
    # stepping down shows in no event and in nothing the driver compares: ask the broker
    try:
        leads = d.cluster.serves_as_leader(b, s.brokers[b].replicas[p].hw, p)
    except (RpcError, OSError, TimeoutError) as exc:
        raise Divergence(f"broker {b} answered a consumer's fetch with {exc}",
                         f"broker {b} refuses it NOT_LEADER (it stopped acting as leader)") from None
    if leads:
        raise Divergence(f"broker {b} recorded isr_update_failed and still serves partition {p} as its leader",
                         f"broker {b} stops acting as leader")


def _follower(step: Step) -> int:
    """``shrink_isr`` / ``expand_isr`` (leader, partition, follower): the follower moved."""
    return int(step.args[2])


def _await(kind: str, actor: Callable[[Step], int]) -> Callable[[Driver, Step, State, State], None]:
    def run(d: Driver, step: Step, s: State, t: State) -> None:
        b = actor(step)
        d.expect(kind, b, f"broker {b} records {kind} on its own")
    return run


def _resign(d: Driver, step: Step, s: State, t: State) -> None:
    c = step.args[0]
    if c not in d.waiting:
        _await("controller_resign", _first)(d, step, s, t)
        return
    # a zombie frozen inside an election (drive.zombie): it resumes there, and given its
    # permit attempts the write; only the controller-epoch check refuses it, and it resigns
    due = write_refused(s, c, d.cfg)
    d.cluster.grant(c, "elect_leader")
    e = d.expect("controller_resign", c, f"zombie controller {c} attempts its election's write, which the "
                                         f"/controller_epoch check refuses, and resigns")
    reason = (e.get("params") or {}).get("reason")
    if due and reason != "epoch_fenced":
        raise Divergence(f"zombie controller {c} resigned for {reason!r}, its election's write not refused by "
                         f"the controller-epoch check", f"controller {c}'s write refused (epoch_fenced)")


def _silent(d: Driver, step: Step, s: State, t: State) -> None:
    d.settle()  # the controller takes it as soon as it sees the registration; nothing is recorded


def _first(step: Step) -> int:
    return int(step.args[0])


OPERATIONS: dict[str, Operation] = {
    "produce": Operation("produce (acks=all, one attempt)", "one acks=all write to the broker's own port", _produce),
    "broker_crash": Operation("LocalCluster.kill", "kill -9, then wait for the ZooKeeper session to end", _crash),
    "broker_restart": Operation("LocalCluster.restart", "start the broker's process again", _restart),
    "broker_pause": Operation("LocalCluster.pause", "SIGSTOP until the ZooKeeper session expires", _pause),
    "broker_resume": Operation("LocalCluster.resume", "SIGCONT", _resume),
    "become_leader": Operation("relay.release(leader_and_isr)", "deliver the held LeaderAndISR", _leader_and_isr("become_leader")),
    "become_follower": Operation("relay.release(leader_and_isr)", "deliver the held LeaderAndISR", _leader_and_isr("become_follower")),
    "reject_leader_and_isr": Operation("relay.release(leader_and_isr)", "deliver the held LeaderAndISR", _leader_and_isr("reject_leader_and_isr")),
    "stop_replica": Operation("relay.release(stop_replica)", "deliver the held StopReplica", _stop_replica),
    "controlled_shutdown": Operation("ControlledShutdown (in the broker's name)", "the broker's ControlledShutdown "
                                     "request to the controller, sent by the harness", _controlled_shutdown),
    "broker_stop": Operation("LocalCluster.stop_broker", "SIGTERM: the broker's own controlled shutdown, then its "
                             "clean exit", _stop),
    "reassign_start": Operation("Admin.reassign", "ask the controller to reassign the partition to RAR",
                                _reassign_start),
    "reassign_complete": Operation("permit(admin_tick)", "let the controller's admin scan run once: it switches "
                                   "the partition to RAR", _reassign_complete),
    "preferred_election": Operation("Admin.elect_preferred", "ask the controller for a preferred-replica election",
                                    _preferred_election),
    "delete_topic": Operation("Admin.delete_topics", "ask the controller to delete the topic", _delete_topic),
    "create_topic": Operation("Admin.create_topics", "create the topic with the model's assignment, its leader "
                              "listed first", _create_topic),
    "add_partitions": Operation("Admin.add_partitions", "grow the topic by the model's partition, with its AR "
                                "(the leader listed first)", _add_partitions),
    "remove_partitions": Operation("Admin.remove_partitions", "ask the controller to remove the partition",
                                   _remove_partitions),
    "handle_fetch": Operation("relay.release(fetch_request)", "deliver the held fetch to the leader", _handle_fetch),
    "receive_fetch": Operation("relay.release(fetch_response)", "deliver the held answer to the follower", _receive_fetch),
    "send_fetch": Operation("permit(send_fetch)", "let the follower send one fetch (held)", _send_fetch),
    "truncate": Operation("permit(truncate)", "let the follower run its epoch lookup", _truncate),
    "shrink_isr": Operation("permit(shrink_isr:F)", "let the leader take follower F out of the ISR",
                            _permit("shrink_isr", _first, "leader {b} shrinks the ISR", _follower)),
    "expand_isr": Operation("permit(expand_isr:F)", "let the leader add follower F to the ISR",
                            _permit("expand_isr", _first, "leader {b} expands the ISR", _follower)),
    "isr_update_failed": Operation("permit(shrink_isr:F | expand_isr:F | isr_write_as_is)", "let the leader attempt "
                                   "the ISR write it would make (isr_write_attempt), which must fail",
                                   _isr_update_failed),
    "controller_elect": Operation("permit(controller_elect)", "let the broker campaign for /controller", _permit("controller_elect", _first, "broker {b} becomes controller")),
    "elect_leader": Operation("permit(elect_leader)", "let the controller elect", _permit("elect_leader", _first, "controller {b} writes a new leader and ISR")),
    "on_broker_startup": Operation("(none: the controller's own)", "nothing: the controller reacts to the registration", _silent),
    "controller_resign": Operation("(awaited)",
                                    "wait for the broker to resign; a zombie frozen inside an election first gets its "
                                    "permit, and its write must be refused by the controller-epoch check", _resign),
    "broker_expire": Operation("LocalCluster.expire", "end the running broker's ZooKeeper session (a second client "
                               "attached to it closes it), then wait for /brokers/ids/N to go", _expire),
    "broker_reregister": Operation("permit(broker_reregister)", "let the broker whose session expired register "
                                   "again (after a resume: granted with it)",
                                   _permit("broker_reregister", _first, "broker {b} registers again in a new session")),
}
"""Every model action the driver can execute, by name."""


def operation_names() -> dict[str, str]:
    """action -> harness operation, for docs and the CLI."""
    return {a: op.name for a, op in OPERATIONS.items()}

