"""Reading what a chaos run's cluster left behind, for the verdict: the replicas' on-disk
logs, and from the traces the ISR each write was committed with and every leader election."""

from __future__ import annotations

import json
from pathlib import Path

from impl.harness.chaos.schedule import TOPIC
from impl.harness.chaos.verdict import Election, LogRecords


def read_disk_log(directory: Path) -> LogRecords:
    """A replica's records as its segments hold them (read-only; stops at a torn record)."""
    from impl.node.log import read_segments

    return [(rec.offset, rec.leader_epoch, rec.value.decode("utf-8", "replace"))
            for rec in read_segments(directory)]


def read_commit_isr(traces: Path, topic: str = TOPIC) -> dict[tuple[int, int, int], list[int]]:
    """(partition, leader epoch, offset) -> the ISR with which its leader moved the HW past
    the offset, from the leaders' own trace events (``post.hw`` / ``post.isr``).  An acks=all
    write is acknowledged when the HW passes it: that ISR is who held it then."""
    out: dict[tuple[int, int, int], list[int]] = {}
    for f in sorted(traces.glob("broker-*.jsonl")):
        epoch: dict[int, int | None] = {}
        isr: dict[int, list[int]] = {}
        hw: dict[int, int] = {}
        for line in f.read_text().splitlines():
            restart = '"broker_restart"' in line
            if f'"{topic}"' not in line and not restart:
                continue
            try:
                e = json.loads(line)
            except ValueError:
                continue
            if e.get("kind") == "broker_restart":  # a new incarnation leads nothing yet
                epoch.clear()
                continue
            if e.get("topic") != topic:
                continue
            p, kind = int(e["partition"]), e["kind"]
            params, post = e.get("params") or {}, e.get("post") or {}
            if kind == "become_leader":
                epoch[p], isr[p] = int(params["leader_epoch"]), list(params["isr"])
                hw[p] = int(post.get("hw", 0))
                continue
            if kind in ("become_follower", "stop_replica", "isr_update_failed"):
                epoch[p] = None
                continue
            if epoch.get(p) is None:
                continue
            if isinstance(post.get("isr"), list):
                isr[p] = list(post["isr"])
            new_hw = post.get("hw")
            if kind == "shrink_isr" and isr[p] == [e["node"]] and isinstance(post.get("leo"), int):
                # alone in the ISR, the leader's HW jumps to its LEO right after this event
                # (HW = min LEO of the ISR), whether or not a later event shows it
                new_hw = post["leo"]
            if isinstance(new_hw, int) and new_hw > hw.get(p, 0):
                for o in range(hw.get(p, 0), new_hw):
                    out[(p, int(epoch[p] or 0), o)] = isr[p]
                hw[p] = new_hw
    return out


def read_elections(traces: Path) -> list[Election]:
    out = []
    for f in sorted(traces.glob("*.jsonl")):
        for line in f.read_text().splitlines():
            if '"elect_leader"' not in line:
                continue
            try:
                e = json.loads(line)
            except ValueError:
                continue  # a torn last line of a killed broker
            if e.get("kind") == "elect_leader":
                p = e.get("params") or {}
                out.append(Election(str(e["topic"]), int(e["partition"]), int(p["leader"]),
                                    int(p["leader_epoch"]), bool(p.get("unclean"))))
    return sorted(out, key=lambda e: e.leader_epoch)
