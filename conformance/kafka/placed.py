"""Where a chaos run's values landed: the adapter places each produce's value by its offset.

A chaos run's producer sends one record per request and the run writes, for each value, the
offset and leader epoch its acknowledgement and the read-back saw (``produced.jsonl``,
``impl.harness.chaos.kafka_judge.write_placements``).
"""

from __future__ import annotations

from typing import Any


class Placed:
    """Where the workload's values landed, per topic, partition and offset: (leader_epoch, value) as the client's
    acknowledgements and the read-back saw them (``-1``: epoch unknown).  A value no one saw
    (appended, never acknowledged, truncated away) is named by its place."""

    def __init__(self, entries: list[dict[str, Any]]) -> None:
        self.at: dict[tuple[str, int, int], list[tuple[int, str]]] = {}
        for e in entries:
            key = (str(e.get("topic", "")), int(e.get("partition", 0)), int(e["offset"]))
            self.at.setdefault(key, []).append((int(e.get("leader_epoch", -1)), str(e["value"])))

    def value(self, topic: str, partition: int, offset: int, leader_epoch: int) -> str:
        seen = self.at.get((topic, partition, offset), []) or self.at.get(("", partition, offset), [])
        exact = [v for epoch, v in seen if epoch == leader_epoch]
        unknown = [v for epoch, v in seen if epoch < 0]
        if exact or unknown:
            return (exact or unknown)[0]
        return seen[0][1] if len({v for _, v in seen}) == 1 else f"unseen@{offset}/{leader_epoch}"
