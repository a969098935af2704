"""Why Kafka's controller writes a partition's state: what its event thread last said it
handles, in controller.log, before the writes it causes (``election_trigger``)."""

from __future__ import annotations

from typing import Any, NamedTuple


class Trigger(NamedTuple):
    """What the controller's event thread last said it handles (``election_trigger``): a
    preferred-replica election of ``partitions``, the controlled shutdown of ``stopping``,
    or something else (a broker failure: neither)."""

    partitions: frozenset[str] = frozenset()
    stopping: int = -1

    @classmethod
    def of(cls, f: dict[str, Any]) -> Trigger:
        if f["election"] == "PREFERRED":
            return cls(partitions=frozenset(tp for tp in f["tps"].split(",") if tp))
        return cls(stopping=int(f["stopping"])) if f["stopping"] is not None else cls()

    def reason(self, tp: str, removed: int | None) -> str | None:
        """The model's reason for a partition state write the controller makes under this
        trigger -- a new leader (``removed`` None) or a replica taken out of the ISR -- or None
        where the trigger does not explain it: a preferred election writes only a new
        leader of a partition named; a controlled shutdown moves the leadership off the
        broker stopping, and takes it out of the ISRs it follows in."""
        if tp in self.partitions and removed is None:
            return "preferred"
        if self.stopping >= 0 and removed in (None, self.stopping):
            return "controlled_shutdown"
        return None
