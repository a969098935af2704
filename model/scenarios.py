"""Known scenarios from Kafka's history, written as scripts of model steps.

Each scenario is a list of ``(action, chooser)`` pairs: the chooser picks the step's
arguments from the current state (which LeaderAndISR request, which fetch), so a scenario
reads like the story it tells and still runs against any configuration.  ``play`` runs one
and reports where it stopped: at the first step the configuration does not allow, at the
first property violation, or at the end.  The exhaustive checker finds shortest versions of
these on its own; the scripts pin the stories in tests and feed the trace exporter.
"""

from __future__ import annotations

from collections.abc import Callable

from model.state import FETCH_REQUEST, FETCH_RESPONSE, State

Chooser = Callable[[State], tuple]
A, B, C = 0, 1, 2


def _lai(to: int, leader: int) -> Chooser:
    def choose(s: State) -> tuple:
        zn = s.zk.partitions[0]
        return next((m,) for m in s.leader_and_isr
                    if m.to == to and m.leader == leader and m.leader_epoch == zn.leader_epoch and m.topic_id == zn.topic_id)

    return choose


def _request(f: int) -> Chooser:
    return lambda s: next((m,) for m in s.fetches if m.kind == FETCH_REQUEST and m.follower == f)


def _response(f: int) -> Chooser:
    return lambda s: next((m,) for m in s.fetches if m.kind == FETCH_RESPONSE and m.follower == f)


def _stop(to: int) -> Chooser:
    return lambda s: next((m,) for m in s.stop_replica if m.to == to)


def _args(*a: object) -> Chooser:
    return lambda s: a


def _fetch(f: int) -> list[tuple[str, Chooser]]:
    return [("send_fetch", _args(f, 0)), ("handle_fetch", _request(f)), ("receive_fetch", _response(f))]


SCENARIOS: dict[str, tuple[str, list[tuple[str, Chooser]]]] = {
    "kafka_1211": (
        "KAFKA-1211 / KIP-101: a follower restarts, truncates a committed record to its stale HW, and is elected",
        [("produce", _args(A, 0)), *_fetch(B), ("send_fetch", _args(B, 0)), ("handle_fetch", _request(B)),
         ("broker_crash", _args(B)), ("broker_crash", _args(A)), ("broker_restart", _args(B)),
         ("controller_elect", _args(B)), ("elect_leader", _args(B, 0, B))],
    ),
    "kip279_divergence": (
        "KIP-279: after two fast leader changes the epoch lookup of KIP-101 keeps a record the new leader never had",
        [("produce", _args(A, 0)), *_fetch(C), ("broker_crash", _args(A)), ("controller_elect", _args(B)),
         ("elect_leader", _args(B, 0, B)), ("become_leader", _lai(B, B)), ("produce", _args(B, 0)),
         ("broker_restart", _args(A)), ("broker_crash", _args(B)), ("controller_elect", _args(C)),
         ("elect_leader", _args(C, 0, C)), ("become_leader", _lai(C, C)), ("broker_restart", _args(B)),
         ("truncate", _args(B, 0)), *_fetch(B)],
    ),
    "kip320_stale_fetch": (
        "KIP-320: a follower still in epoch 1 fetches from a leader now in epoch 3, whose HW then counts it",
        [("produce", _args(A, 0)), *_fetch(C), ("broker_crash", _args(A)), ("controller_elect", _args(B)),
         ("elect_leader", _args(B, 0, B)), ("become_leader", _lai(B, B)), ("produce", _args(B, 0)),
         ("broker_restart", _args(A)), ("truncate", _args(A, 0)), *_fetch(A), ("send_fetch", _args(A, 0)),
         ("handle_fetch", _request(A)), ("expand_isr", _args(B, 0, A)), ("send_fetch", _args(C, 0)),
         ("broker_crash", _args(B)), ("controller_elect", _args(A)), ("elect_leader", _args(A, 0, A)),
         ("become_leader", _lai(A, A)), ("handle_fetch", _request(C)), ("receive_fetch", _response(C))],
    ),
    "topic_recreation": (
        "Seed 000 question 5: a topic deleted while a replica's broker is down and created again with it in the "
        "assignment; without topic ids the broker keeps the old log, rejoins the ISR and is elected without the "
        "acknowledged write (needs deletions=1)",
        [("produce", _args(A, 0)), *_fetch(B), *_fetch(B), ("broker_crash", _args(B)),
         ("elect_leader", _args(A, 0, A)), ("become_leader", _lai(A, A)), ("delete_topic", _args(A, 0)),
         ("stop_replica", _stop(A)), ("create_topic", _args(A, 0, (A, B), A)), ("become_leader", _lai(A, A)),
         ("produce", _args(A, 0)), ("broker_restart", _args(B)), ("truncate", _args(B, 0)),
         ("send_fetch", _args(B, 0)), ("handle_fetch", _request(B)), ("expand_isr", _args(A, 0, B)),
         ("broker_crash", _args(A)), ("controller_elect", _args(B)), ("elect_leader", _args(B, 0, B))],
    ),
}
