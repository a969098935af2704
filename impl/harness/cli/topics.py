"""``epochal topics create|delete|describe|add-partitions|remove-partitions|reassign|elect-preferred``:
the topics of a running cluster, through its admin client (:class:`impl.node.client.Admin`).

Every action but ``delete`` ends by describing the topic as it then is: a line per partition
(leader, leader epoch, ISR, replicas), or the ``--json`` object.  A request the controller
mutation quota refuses is not retried: the command says how long to wait (seed 001).
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from impl.harness.cli.cluster_access import add_bootstrap_flags, admin, friendly
from impl.harness.cli.errors import UsageError
from impl.harness.cli.output import print_json, wants_json


def register(sub: Any) -> None:
    topics = sub.add_parser("topics", help="create, delete, describe, grow, reassign topics")
    tsub = topics.add_subparsers(dest="action", metavar="ACTION", parser_class=type(topics))
    tsub.required = True
    p = tsub.add_parser("create", help="create a topic (no automatic retry when throttled)")
    p.add_argument("topic")
    p.add_argument("--partitions", type=int, default=1, help="partitions (default 1)")
    p.add_argument("--replication-factor", type=int, default=1, help="replicas of each partition (default 1)")
    p.add_argument("--validate-only", action="store_true",
                   help="check the request without creating anything (not charged to the quota)")
    _principal_args(p)
    add_bootstrap_flags(p)
    p.set_defaults(func=friendly(create))
    p = tsub.add_parser("delete", help="delete a topic")
    p.add_argument("topic")
    _principal_args(p)
    add_bootstrap_flags(p)
    p.set_defaults(func=friendly(delete))
    p = tsub.add_parser("describe", help="leader, leader epoch, ISR and replicas per partition")
    p.add_argument("topic", nargs="?")
    add_bootstrap_flags(p)
    p.set_defaults(func=friendly(describe))
    p = tsub.add_parser("add-partitions", help="grow a topic to N partitions in all")
    p.add_argument("topic")
    p.add_argument("--partitions", type=int, dest="count", metavar="N",
                   help="new total number of partitions (Kafka's kafka-topics --alter --partitions)")
    p.add_argument("--count", type=int, dest="count", help=argparse.SUPPRESS)  # the older spelling
    _principal_args(p)
    add_bootstrap_flags(p)
    p.set_defaults(func=friendly(add_partitions))
    p = tsub.add_parser("remove-partitions", help="remove partitions from a topic (seed 000 H)")
    p.add_argument("topic")
    p.add_argument("--partition", type=int, action="append", dest="partition_ids", metavar="ID",
                   help="a partition to remove (repeatable)")
    p.add_argument("--partitions", dest="partition_list", help=argparse.SUPPRESS)  # older: a comma list
    add_bootstrap_flags(p)
    p.set_defaults(func=friendly(remove_partitions))
    p = tsub.add_parser("reassign", help="move a partition to a new replica set")
    p.add_argument("topic")
    p.add_argument("--partition", type=int, required=True)
    p.add_argument("--replicas", required=True, help="comma-separated broker ids, preferred first")
    p.add_argument("--timeout", type=float, default=60.0, help="seconds to wait for the move (default 60)")
    add_bootstrap_flags(p)
    p.set_defaults(func=friendly(reassign))
    p = tsub.add_parser("elect-preferred", help="move leadership back to the preferred replica")
    p.add_argument("topic")
    p.add_argument("--partition", type=int, required=True)
    add_bootstrap_flags(p)
    p.set_defaults(func=friendly(elect_preferred))


def _principal_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--user", help="principal the controller mutation quota is charged to")
    p.add_argument("--client-id", help="client id the quota is charged to")


def _throttled(exc: Any, what: str) -> UsageError:
    return UsageError(f"{what} refused by the controller mutation quota; "
                      f"retry in {exc.throttle_time_ms / 1000:.1f}s")


def create(args: argparse.Namespace) -> int:
    from impl.node.client import ThrottlingQuotaExceeded

    with admin(args) as client:
        try:
            client.create_topic(args.topic, args.partitions, args.replication_factor,
                                validate_only=args.validate_only)
        except ThrottlingQuotaExceeded as exc:
            raise _throttled(exc, f"topic {args.topic} not created:") from None
        if args.validate_only:
            if wants_json(args):
                return print_json(args, 0, topic=args.topic, valid=True, created=False)
            print(f"topic {args.topic}: valid ({args.partitions} partitions, "
                  f"replication factor {args.replication_factor}); nothing created")
            return 0
        return _print_topics(args, client.describe(args.topic))


def delete(args: argparse.Namespace) -> int:
    from impl.node.client import ThrottlingQuotaExceeded

    with admin(args) as client:
        try:
            client.delete_topic(args.topic)
        except ThrottlingQuotaExceeded as exc:
            raise _throttled(exc, f"topic {args.topic} not deleted:") from None
    if wants_json(args):
        return print_json(args, 0, topic=args.topic, deleted=True)
    print(f"deleted topic {args.topic}")
    return 0


def _print_topics(args: argparse.Namespace, topics: dict[str, Any]) -> int:
    """Every partition of ``topics``: a line each, or under ``--json`` the object
    ``{"topics": [{"topic", "partition", "leader", "leader_epoch", "isr", "replicas"}]}``
    (leader -1: none).  Returns the exit code, 0."""
    rows = [{"topic": t, "partition": p, "leader": i.leader, "leader_epoch": i.leader_epoch,
             "isr": list(i.isr), "replicas": list(i.replicas)}
            for t in sorted(topics) for p, i in sorted(topics[t].items())]
    if wants_json(args):
        return print_json(args, 0, topics=rows)
    if not topics:
        print("(no topics)")
    for t in sorted(t for t in topics if not topics[t]):  # every partition removed (seed 000 H)
        print(f"topic {t}  (no partitions)")
    for r in rows:
        leader = r["leader"] if r["leader"] >= 0 else "none"
        print(f"topic {r['topic']}  partition {r['partition']}  leader {leader}  leader_epoch {r['leader_epoch']}  "
              f"isr {','.join(map(str, r['isr']))}  replicas {','.join(map(str, r['replicas']))}")
    return 0


def describe(args: argparse.Namespace) -> int:
    from impl.node.client import Admin

    with Admin(args.bootstrap) as client:
        return _print_topics(args, client.describe(args.topic))


def add_partitions(args: argparse.Namespace) -> int:
    from impl.node.client import ThrottlingQuotaExceeded

    if args.count is None:
        raise UsageError("give --partitions N, the new total number of partitions")
    with admin(args) as client:
        try:
            client.add_partitions(args.topic, args.count)
        except ThrottlingQuotaExceeded as exc:
            raise _throttled(exc, f"partitions of {args.topic} not added:") from None
        return _print_topics(args, client.describe(args.topic))


def _ints(text: str, what: str) -> list[int]:
    try:
        return [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise UsageError(f"{what} must be comma-separated integers, got {text!r}") from None


def remove_partitions(args: argparse.Namespace) -> int:
    from impl.node.client import Admin

    ids = list(args.partition_ids or []) + (_ints(args.partition_list, "--partitions") if args.partition_list else [])
    if not ids:
        raise UsageError("name the partitions to remove: --partition ID (repeatable)")
    with Admin(args.bootstrap) as client:
        client.remove_partitions(args.topic, ids)
        return _print_topics(args, client.describe(args.topic))


def reassign(args: argparse.Namespace) -> int:
    from impl.node.client import Admin

    with Admin(args.bootstrap) as client:
        client.reassign(args.topic, args.partition, _ints(args.replicas, "--replicas"),
                        wait=args.timeout)
        return _print_topics(args, client.describe(args.topic))


def elect_preferred(args: argparse.Namespace) -> int:
    from impl.node.client import Admin

    with Admin(args.bootstrap) as client:
        client.elect_preferred(args.topic, args.partition)
        time.sleep(0.5)
        return _print_topics(args, client.describe(args.topic))
