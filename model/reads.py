"""What a consumer's fetch returns from a partition's leader (seed 000 question 7).

The model's replicas fetch past the HW (a follower needs every record to catch up); a
consumer reads only committed records, those below the HW.  Seed 000, question 7: "during a
leadership change, a consumer client could be requesting an offset between the new leader's
HW and LEO.  Normally, the server will return an OffsetOutOfRangeException ... In this
particular case, the client request is actually valid ... the server can return an empty
message set to the consumer if the requested offset is between HW and LEO."  So only an
offset beyond the LEO (or below 0) is out of range.  A pure reference rule for the
rule-level vectors (``model.export.vectors``), which hold ``impl.node.broker.clients`` to it.
"""

from __future__ import annotations


def consumer_fetch(leo: int, hw: int, offset: int, max_records: int) -> range | None:
    """The offsets a consumer fetch at ``offset`` returns (empty from the HW to the LEO), or
    ``None`` for OFFSET_OUT_OF_RANGE (beyond the LEO, or negative)."""
    if offset < 0 or offset > leo:
        return None
    return range(offset, max(offset, min(hw, leo, offset + max_records)))
