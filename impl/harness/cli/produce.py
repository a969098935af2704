"""``epochal produce``: send one record per line of stdin to a topic of a running cluster
(:class:`impl.node.client.Producer`), with a key where ``--key-separator`` asks for one."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from impl.harness.cli.cluster_access import add_bootstrap_flags, friendly
from impl.harness.cli.errors import UsageError
from impl.harness.cli.output import print_json, wants_json

ACKS = {"all": -1, "-1": -1, "1": 1, "0": 0}
"""``--acks`` as written -> the produce request's acks."""


def register(sub: Any) -> None:
    p = sub.add_parser("produce", help="send one record per line of stdin (UTF-8), with a key where asked")
    p.add_argument("topic")
    p.add_argument("--key-separator", metavar="SEP",
                   help="each line is KEY SEP VALUE, split at the first SEP (default: no keys; a line without SEP "
                        "is then an error)")
    p.add_argument("--acks", choices=list(ACKS), default="all", help="acks (default all)")
    p.add_argument("--partition", type=int, help="send every record to this partition (default: round robin)")
    p.add_argument("--retries", type=int, default=None,
                   help="at most this many retries of a retriable error (default: as many as the "
                        "producer's 30 s delivery timeout allows, docs/durability.md)")
    add_bootstrap_flags(p)
    p.set_defaults(func=friendly(run))


class _Produced:
    """The records written so far, per partition: what a failure part-way reports."""

    def __init__(self, topic: str) -> None:
        self.topic = topic
        self.by_partition: dict[int, int] = {}

    @property
    def total(self) -> int:
        return sum(self.by_partition.values())

    def add(self, partition: int) -> None:
        self.by_partition[partition] = self.by_partition.get(partition, 0) + 1

    def stopped(self, why: str) -> UsageError:
        where = ", ".join(f"partition {p}: {n}" for p, n in sorted(self.by_partition.items()))
        return UsageError(f"{why}; {self.total} record(s) were produced to {self.topic} before it"
                          + (f" ({where})" if where else "") + " and stay written")


def _record(n: int, raw: bytes, key_separator: str | None) -> tuple[str | None, str]:
    """Line ``n`` of stdin as (key, value); a ValueError saying why where it cannot be one."""
    try:
        value = raw.rstrip(b"\n").decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"line {n} is not UTF-8 ({exc.reason} at byte {exc.start}): stopped there") from None
    if key_separator is None:
        return None, value
    key, sep, value = value.partition(key_separator)
    if not sep:
        raise ValueError(f"line {n} has no key separator {key_separator!r}: stopped there")
    return key, value


def run(args: argparse.Namespace) -> int:
    """One record per line of stdin, read as bytes: a line that is not UTF-8 stops the
    command there, and -- like any failure part-way -- it says how many records were
    written before it (those stay written: there is no transaction to undo them)."""
    from impl.node.client import Producer

    produced = _Produced(args.topic)
    with Producer(args.bootstrap, acks=ACKS[args.acks], retries=args.retries) as producer:
        producer.partitions(args.topic)  # fail fast on an unknown topic
        for n, raw in enumerate(sys.stdin.buffer, 1):
            try:
                key, value = _record(n, raw, args.key_separator)
            except ValueError as exc:
                raise produced.stopped(str(exc)) from None
            try:
                resp = producer.send(args.topic, value, args.partition, key=key)
            except Exception as exc:  # noqa: BLE001 -- any failure: say what was written first
                raise produced.stopped(f"line {n} not produced: {exc}") from None
            produced.add(resp["partition"])
    if wants_json(args):
        return print_json(args, 0, topic=args.topic, acks=args.acks, produced=produced.total,
                          partitions={str(p): n for p, n in sorted(produced.by_partition.items())})
    print(f"produced {produced.total} record(s) to {args.topic} with acks={args.acks}", file=sys.stderr)
    return 0
