"""The Apache Kafka wire protocol, for clients (docs/kafka-protocol.md).

Kafka's request and response types come from ``kio``, which generates them from Kafka's own
message schemas; this package is the glue: :mod:`.codec` (frames, headers, the versions
served, entities built from plain values), :mod:`.records` (record batches v2, CRC-32C, to
and from the broker's stored values).  The broker's
listener that uses them is :mod:`impl.node.broker.kafka_listener`.
"""

from impl.node.kafka.codec import (
    SERVED,
    KafkaApi,
    KafkaRequest,
    MalformedRequest,
    Refused,
    UnsupportedRequest,
    build,
    decode_request,
    encode_response,
    millis,
    request_api_key,
    response_schema,
)
from impl.node.kafka.records import (
    NO_TIMESTAMP_MS,
    BatchRefused,
    ProducedBatch,
    fetched_batches,
    produced_batches,
)

__all__ = ["NO_TIMESTAMP_MS", "SERVED", "BatchRefused", "KafkaApi", "KafkaRequest",
           "MalformedRequest", "ProducedBatch", "Refused", "UnsupportedRequest", "build",
           "decode_request", "encode_response", "fetched_batches", "millis",
           "produced_batches", "request_api_key", "response_schema"]
