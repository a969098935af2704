"""The conformance table wraps an event's JSON between its fields: a line break never falls
inside a field name or a value (only a single word longer than a whole line could be split)."""

from __future__ import annotations

import json
import re

from conformance.spark.report import Outcome, render


def test_the_events_beside_the_first_bad_one_wrap_between_fields():
    event = {"_file": "/traces/leader-kill/broker-2.jsonl", "_line": 7, "clock": 12, "kind": "send_fetch",
             "node": 2, "params": {"fetch_offset": 1, "leader": 1, "leader_epoch": 0},
             "post": {"hw": 2, "leo": 1}, "run": "r1", "seq": 6, "topic": "t", "partition": 0}
    compact = json.dumps(event, separators=(",", ":"), sort_keys=True)
    verdict = {"run": "r1", "topic": "t", "partition": 0, "status": "violates", "total": 37, "out_of_order": 0,
               "matched": 15, "reason": "send_fetch by broker 2 does not match", "first_bad": 15,
               "observed": compact, "before": [compact] * 3}
    for width in (80, 100, 120):
        text = render(Outcome(1, groups=1, violating=1, verdicts=[verdict]), width=width)
        assert all(len(line) <= width for line in text.splitlines())
        tokens = set(re.findall(r'"[^"]*"', compact))  # every field name and string value
        joined = text.split("first non-conforming step", 1)[1]
        for token in tokens:
            if len(token) < width - 10:
                assert joined.count(token) == 4, (width, token)  # whole, in the observed line and each "before"
