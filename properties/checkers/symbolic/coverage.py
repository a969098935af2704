"""What the z3 encoding covers, as the registry decides it (``model.registry``, ``z3``)."""

from __future__ import annotations

from model.config import Config
from model.registry import supported, unsupported_features

COVERED: tuple[str, ...] = supported("z3")
"""The actions the relation encodes (``tests/model/test_registry.py`` checks each has its
cases in ``Encoding.disjuncts`` and no other action has any)."""


def unsupported(cfg: Config) -> str | None:
    """What ``cfg`` asks for that this encoding does not cover, or None: a proof of an
    encoding that silently ignores part of the model proves nothing.  The actions it leaves
    out are the registry's; the rest are limits of the encoding's shape."""
    missing = unsupported_features("z3", cfg)
    if cfg.fetch_max_records:  # the relation answers a fetch with every record from its offset
        missing.append("fetch answers cut short")
    if cfg.replication_factor:
        missing.append("a replication factor below the broker count")
    if cfg.startup_from_controller:
        missing.append("Kafka's broker start (a restart that waits for the controller)")
    if cfg.offline_replica_writes:
        missing.append("Kafka's write per dead replica taken out of the ISR")
    if cfg.hw_waits_outside_isr:
        missing.append("Kafka's HW wait for a caught-up follower outside the ISR")
    if cfg.leader_keeps_follower_state:
        missing.append("Kafka's followers' fetch state kept across a leader's new epoch")
    if cfg.deletions:  # the topic's identity is encoded for the deletions alone
        if not cfg.topic_ids:
            missing.append("topic deletion without topic ids")
        if cfg.alter_partition:
            missing.append("topic deletion with AlterPartition")
    if cfg.reassignments:  # seed 000 F's move is encoded, on the deletions' AR
        if cfg.reassign_phases:
            missing.append("Kafka's reassignment in phases")
        if cfg.alter_partition:
            missing.append("reassignment with AlterPartition")
    return ", ".join(missing) or None
