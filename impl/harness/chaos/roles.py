"""Who holds a role in a chaos run's cluster, read from ZooKeeper when a fault fires:
a partition's assignment, its leader and ISR, its followers, the controller."""

from __future__ import annotations

import time
from typing import Any

from impl.harness.chaos.schedule import TOPIC, Fault


class Roles:
    """Reads the cluster's state from ``zk`` (a ZooKeeper client of the harness's own)."""

    def __init__(self, zk: Any) -> None:
        self.zk = zk

    def assignment(self, topic: str = TOPIC) -> dict[int, list[int]]:
        from impl.node import zk as zkl

        data, _ = self.zk.get(zkl.topic_path(topic))
        return {int(p): [int(b) for b in r] for p, r in zkl.decode(data)["partitions"].items()}

    def leader_and_isr(self, p: int, topic: str = TOPIC) -> tuple[int, list[int]]:
        from impl.node import zk as zkl

        data, _ = self.zk.get(zkl.leader_and_isr_path(topic, p))
        st = zkl.LeaderAndIsr.from_json(data)
        return st.leader, list(st.isr)

    def controller(self) -> int:
        """The controller's broker id, waiting up to 15 s while /controller is empty."""
        from impl.node import zk as zkl

        deadline = time.monotonic() + 15
        while True:
            try:
                data, _ = self.zk.get(zkl.CONTROLLER)
                return int(zkl.decode(data)["brokerid"])
            except Exception:  # noqa: BLE001 - no controller for a moment: wait for the next
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)

    def leader(self, p: int) -> int:
        """Partition p's leader (its first assigned replica while it has none)."""
        leader, _ = self.leader_and_isr(p)
        return leader if leader >= 0 else self.assignment()[p][0]

    def followers(self, p: int) -> list[int]:
        leader = self.leader(p)
        return [b for b in self.assignment()[p] if b != leader]

    def resolve(self, f: Fault) -> int:
        """The broker the fault's role names now."""
        if f.target == "broker":
            return f.broker
        if f.target == "controller":
            return self.controller()
        if f.target == "follower":
            followers = self.followers(f.partition)
            return followers[f.follower % len(followers)]
        return self.leader(f.partition)

