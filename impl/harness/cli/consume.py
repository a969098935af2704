"""``epochal consume``: print the committed records of a topic of a running cluster, one value
per line (:class:`impl.node.client.Consumer`)."""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from impl.harness.cli.cluster_access import add_bootstrap_flags, friendly
from impl.harness.cli.errors import UsageError
from impl.harness.cli.output import print_json, wants_json


def register(sub: Any) -> None:
    p = sub.add_parser("consume", help="print committed records, one value per line")
    p.add_argument("topic")
    p.add_argument("--from-beginning", action="store_true", help="from offset 0 (default: from the HW on)")
    p.add_argument("--partition", type=int, help="only this partition (default: every partition)")
    p.add_argument("--max-messages", type=int, metavar="N", help="stop after N records (default: no limit)")
    p.add_argument("--print-partition", action="store_true", help="prefix each value with its partition")
    p.add_argument("--print-offset", action="store_true", help="prefix each value with its offset")
    p.add_argument("--print-key", action="store_true", help="prefix each value with its key (null: none)")
    p.add_argument("--timeout", type=float, default=5.0,
                   help="stop after this many seconds without a new record (default 5)")
    add_bootstrap_flags(p)
    p.set_defaults(func=friendly(run))


def run(args: argparse.Namespace) -> int:
    """Committed records until ``--timeout`` seconds pass with none new, or ``--max-messages``;
    each value on a line, after its partition, offset and key where asked (tab-separated)."""
    from impl.node.client import Consumer

    if args.max_messages is not None and args.max_messages < 1:
        raise UsageError("--max-messages must be at least 1")
    records: list[dict[str, Any]] = []
    with Consumer(args.bootstrap) as consumer:
        consumer.assign(args.topic, args.from_beginning)
        if args.partition is not None:
            _only_partition(consumer, args.topic, args.partition)
        consumed, idle_since = 0, time.monotonic()
        while time.monotonic() - idle_since < args.timeout and consumed != args.max_messages:
            batch = consumer.poll_records()
            if batch:
                idle_since = time.monotonic()
            for r in batch[:None if args.max_messages is None else args.max_messages - consumed]:
                consumed += 1
                record = {"partition": r.partition, "offset": r.offset,
                          "key": None if r.key is None else r.key.decode("utf-8", "replace"),
                          "value": r.value.decode("utf-8", "replace")}
                if wants_json(args):
                    records.append(record)
                else:
                    _print_record(args, record)
    if wants_json(args):
        return print_json(args, 0, topic=args.topic, records=records)
    return 0


def _only_partition(consumer: Any, topic: str, partition: int) -> None:
    """Narrow the consumer's positions to one partition; a UsageError naming the topic's
    partitions where it has no such one."""
    mine = {(t, p): o for (t, p), o in consumer.positions.items() if p == partition}
    if not mine:
        known = sorted(p for _, p in consumer.positions)
        raise UsageError(f"topic {topic} has no partition {partition} (partitions: "
                         f"{', '.join(map(str, known))})")
    consumer.positions = mine


def _print_record(args: argparse.Namespace, record: dict[str, Any]) -> None:
    """The record's value on a line, after its partition, offset and key where asked."""
    key = record["key"]
    prefix = ((f"{record['partition']}\t" if args.print_partition else "")
              + (f"{record['offset']}\t" if args.print_offset else "")
              + (f"{'null' if key is None else key}\t" if args.print_key else ""))
    sys.stdout.write(prefix + record["value"] + "\n")
    sys.stdout.flush()
