"""The Kafka engine's chaos run judged against the model: its brokers' logs adapted into a
trace (:mod:`conformance.kafka.adapter`, as ``epochal kafka record`` does) and each
(topic, partition) group judged by the configuration of the run's profile -- ``kafka26`` at
``ibp-2.6``, ``kafka39`` at ``3.9``, their ``-unclean`` twins with unclean election on --
within a budget: a judgement the budget cuts short is *inconclusive*, never a pass.

The adapter replays each replica's log from the produce answers; a chaos run's producer
sends one record per request (``batch.num.messages=1``), and the run writes where each
value landed (``produced.jsonl``: the client's acknowledgements and the read-back, offset
and leader epoch each, :func:`write_placements`), which the adapter takes by offset.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

from conformance.judge.replay import Budget, judge
from conformance.kafka.adapter import CONFIGS, AdapterError, adapt, to_records
from conformance.spark.verdict import judge_run, summary_line
from impl.harness.chaos.clients import Delivery, LogRecords
from model.config import UNCLEAN_OF

BUDGET = Budget(seconds=60.0, states=2_000_000)
"""What judging one group of a run may spend (the states summed over its events, the
seconds): a chaos run's trace is thousands of events, each matched in a few states."""


def configuration(profile: str, unclean: bool) -> str:
    """The model configuration that judges a run of ``profile``: the profile's own, with
    unclean election when the run had it on."""
    config = CONFIGS[profile]
    return UNCLEAN_OF[config] if unclean else config


def write_placements(run_dir: Path, acked: list[Delivery], read: dict[tuple[str, int], LogRecords]) -> Path:
    """``produced.jsonl``: each acknowledged value at its offset and leader epoch, and each
    value read back (partition by partition) at its own -- what the adapter places the
    produces by."""
    lines = [{"topic": d.topic, "partition": d.partition, "value": d.value, "offset": d.offset,
              "leader_epoch": d.leader_epoch} for d in acked if d.offset >= 0]
    lines += [{"topic": topic, "partition": p, "value": value, "offset": offset, "leader_epoch": epoch}
              for (topic, p), records in read.items() for offset, epoch, value in records]
    path = run_dir / "produced.jsonl"
    path.write_text("".join(json.dumps(x, sort_keys=True) + "\n" for x in lines))
    return path


def conformance(run_dir: Path, profile: str, unclean: bool, budget: Budget = BUDGET) -> dict[str, Any]:
    """The run's trace judged: ``config``, ``groups``, ``conforming``, ``inconclusive``, one
    ``summary`` line per group, and -- unless every group conforms -- ``problem``, naming
    the first group that does not and the event the judge stopped at."""
    config = configuration(profile, unclean)
    try:
        records = to_records(adapt(run_dir), f"kafka-chaos-{run_dir.name}")
    except AdapterError as exc:
        return {"config": config, "problem": f"the run's logs could not be adapted: {exc}"}
    verdicts = judge_run(run_dir.name, records, functools.partial(judge, budget=budget), config)
    result: dict[str, Any] = {
        "config": config, "events": len(records), "groups": len(verdicts),
        "conforming": sum(v["status"] == "conforms" for v in verdicts),
        "inconclusive": sum(v["status"] == "inconclusive" for v in verdicts),
        "summary": [f"{v['topic']}-{v['partition']}: {summary_line(v)}" for v in verdicts]}
    bad = next((v for v in verdicts if v["status"] != "conforms"), None)
    if bad is not None:
        what = "judgement inconclusive" if bad["status"] == "inconclusive" else "trace does not conform"
        at = "" if bad.get("first_bad_kind") is None else \
            f" at event {bad.get('first_bad')} ({bad['first_bad_kind']} by broker {bad.get('first_bad_node')})"
        result["problem"] = (f"{bad['topic']}-{bad['partition']}: {what} to the model ({config}){at}: "
                             f"{summary_line(bad)}")
    elif not verdicts:
        result["problem"] = "the run's logs show no partition to judge"
    return result
