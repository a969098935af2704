"""Size limits: how large a record, a fetch response and a frame may be, and how they agree.

Kafka bounds each of them, and so must we: a fetch response limited only by a record count
could exceed the frame size, and then a follower never catches up (three acks=all values of
3 MiB made every catch-up fetch larger than the 8 MiB frame) and a consumer gives up with
"response too large".  The limits, with Kafka's names:

* ``max_message_bytes`` (``max.message.bytes``): the largest value a producer may write; a
  larger one is refused with RECORD_TOO_LARGE before anything is appended.
* ``fetch_max_bytes`` (``fetch.max.bytes`` / ``replica.fetch.response.max.bytes``): the most
  record bytes one fetch response carries, over all its partitions.
* ``fetch_partition_max_bytes`` (``max.partition.fetch.bytes`` / ``replica.fetch.max.bytes``):
  the most record bytes one partition contributes to a response.
* **KIP-74**: the limits are soft for the first record of the first partition that has any:
  it is returned whole even if it is larger, so a record between the fetch limits and
  ``max_message_bytes`` can never stall a fetcher.
* ``max_frame``: the largest frame a broker reads or sends.  :func:`check` holds the limits
  consistent -- the largest response, one record larger than the fetch limits included,
  must fit in a frame, with room for the partitions' own fields -- so no legal record can
  produce a frame the receiver refuses.

A record's size counts its value and what the wire encoding adds around it
(``RECORD_OVERHEAD``).  The functions are pure so the rules are tested apart from sockets.
"""

from __future__ import annotations

from collections.abc import Sequence

from impl.node.log import Record

# [offset, leader_epoch, value] in the wire encoding: a list header (5), two tagged i64 (18),
# a tagged, length-prefixed byte string (5); and a replica fetch's [offset, producer_id,
# sequence] of an idempotent producer's record (KIP-98): a list header and three tagged i64
# (32); rounded up
RECORD_OVERHEAD = 64
# what a response needs besides records (each partition's name, error, HW, LEO, epoch and
# topic id, the frame header): one MiB, enough for thousands of partitions
FRAME_HEADROOM = 1 << 20


def record_size(value: bytes) -> int:
    """What one record costs in a fetch response."""
    return len(value) + RECORD_OVERHEAD


def within(records: Sequence[Record], max_bytes: int, at_least_one: bool) -> list[Record]:
    """The longest prefix of ``records`` whose size is at most ``max_bytes``; with
    ``at_least_one`` (KIP-74) the first record even if it alone is larger."""
    out: list[Record] = []
    used = 0
    for rec in records:
        size = record_size(rec.value)
        if used + size > max_bytes and not (at_least_one and not out):
            break
        out.append(rec)
        used += size
    return out


def check(max_frame: int, max_message_bytes: int, fetch_max_bytes: int,
          fetch_partition_max_bytes: int) -> None:
    """Refuse (``ValueError``, one line) limits that could produce a frame larger than
    ``max_frame``: a response carries at most ``fetch_max_bytes`` of records, or one record
    of at most ``max_message_bytes`` (KIP-74); either, with the headroom, must fit."""
    if min(max_message_bytes, fetch_max_bytes, fetch_partition_max_bytes) <= 0:
        raise ValueError("max_message_bytes, fetch_max_bytes and fetch_partition_max_bytes must be positive")
    largest = max(fetch_max_bytes, record_size(b"") + max_message_bytes)
    if largest + FRAME_HEADROOM > max_frame:
        raise ValueError(f"a fetch response of up to {largest} bytes of records (fetch_max_bytes "
                         f"{fetch_max_bytes}, max_message_bytes {max_message_bytes}) does not fit "
                         f"in max_frame {max_frame} with {FRAME_HEADROOM} bytes of headroom")
