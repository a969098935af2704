"""One request and its answer through the wire codec, in process: the codec's own cost,
without sockets or scheduling.

    .venv/bin/python bench/bench_wire_roundtrip.py
    PYTHONPATH=<a worktree of an older commit> .venv/bin/python bench/bench_wire_roundtrip.py

A round trip is: the client's request frame, the server's header and body decode, the
server's answer frame, the client's decode.  Two messages: a follower's Fetch of one
partition answered with one 100-byte record, and a one-record Produce (acks=all).  Best of
7 x 500.  It reads only ``impl.node.wire.frames``' entry points, whose signatures differ
between Epochal's old frames and Kafka's messages (the answer's API key, the decoded
header), so the same script measures a commit from before the switch to Kafka's messages
and one after: docs/benchmarks.md has the figures side by side.
"""

from __future__ import annotations

import inspect
import time
from typing import Any

from impl.node.codes import API_VERSIONS, ApiKey
from impl.node.wire import frames

KAFKA_FRAMES = "header" in inspect.signature(frames.decode_request_body).parameters
"""Whether this tree's frames are Kafka's (the body decoder takes the decoded header)."""

FETCH = ({"replica_id": 1, "max_wait_ms": 100, "min_bytes": 1, "max_bytes": 1 << 20, "broker_epoch": 5,
          "partitions": [{"topic": "t", "partition": 0, "fetch_offset": 10, "leader_epoch": 3, "hw": 9}],
          "partition_max_bytes": 1 << 20},
         {"partitions": [{"topic": "t", "partition": 0, "error": 0, "hw": 10, "leo": 11, "log_start_offset": 0,
                          "leader": 0, "leader_epoch": 3, "records": [[10, 3, b"x" * 100]]}]})
PRODUCE = ({"topic": "t", "partition": 0, "acks": -1, "values": [b"x" * 100], "timeout_ms": 1000},
           {"base_offset": 10, "leader_epoch": 3})
ROUNDS, TIMES = 7, 500


def round_trip(api: ApiKey, request: dict[str, Any], answer: dict[str, Any]) -> None:
    payload = frames.encode_request(api, API_VERSIONS.get(api, 0), 1, 5, request)[4:]
    if KAFKA_FRAMES:
        frames.decode_request_body(payload, frames.decode_request_header(payload))
        frames.decode_response(frames.encode_response(1, 6, 0, answer, api)[4:], api)
    else:
        frames.decode_request_header(payload)
        frames.decode_request_body(payload)
        frames.decode_response(frames.encode_response(1, 6, 0, answer)[4:])


def best_us(api: ApiKey, request: dict[str, Any], answer: dict[str, Any]) -> float:
    round_trip(api, request, answer)  # fails loudly here if this tree cannot carry the message
    best = float("inf")
    for _ in range(ROUNDS):
        start = time.perf_counter()
        for _ in range(TIMES):
            round_trip(api, request, answer)
        best = min(best, time.perf_counter() - start)
    return best / TIMES * 1e6


def main() -> int:
    print(f"frames: {'Kafka messages' if KAFKA_FRAMES else 'Epochal frames'}; best of {ROUNDS} x {TIMES}")
    for name, api, (request, answer) in (("follower Fetch, one record", ApiKey.FETCH, FETCH),
                                         ("Produce, one record", ApiKey.PRODUCE, PRODUCE)):
        print(f"  {name:<28} {best_us(api, request, answer):6.0f} µs", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
