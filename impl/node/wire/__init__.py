"""The broker RPC protocol: binary, versioned, length-prefixed frames with typed error codes.

Most APIs now travel as Apache Kafka's messages (:mod:`impl.node.kafka.translate`,
docs/wire.md section 2.1: Kafka's headers and bodies, the clock and Epochal's extra fields
in one tagged field); the admin requests still travel in the frames below.  Callers build
and read the same body dicts either way.

Seed 000 gives the requests (LeaderAndISRRequest, StopReplicaRequest, ReplicaFetchRequest)
as a request-type id, a version id and typed fields.  Every frame here is::

    request  := u32 length | i16 api_key | i16 api_version | i32 correlation_id | i64 clock | body
    response := u32 length | i32 correlation_id | i64 clock | i16 error_code | body

``clock`` is the sender's Lamport clock (traces).  ``body`` is one value in a small typed
binary encoding (tag byte, then: i64 ints, f64 floats, u32-length-prefixed UTF-8 strings and
byte strings, u32-counted lists and string-keyed maps); a request body is always a map.  A
frame longer than ``MAX_FRAME`` or a body that does not decode is answered with an error
(``MESSAGE_TOO_LARGE`` / ``CORRUPT_MESSAGE``) and the connection is closed; nothing in this
package raises anything but :class:`ProtocolError` on bad input.

The codec is cut into the parts a port reads one at a time: :mod:`impl.node.codes` (API keys,
versions, error codes; outside this package, since :mod:`impl.node.auth` reads them and the
connections here sign in through it), ``values`` (the typed body encoding), ``frames``, ``connection`` (the
authenticating client connections) and ``fields`` (every API's fields, the table
docs/wire.md prints).  This package re-exports them, so callers import from
``impl.node.wire``.
"""

from impl.node.codes import (
    API_VERSIONS,
    CONTROLLER_VERSIONS,
    MAX_DEPTH,
    MAX_FRAME,
    ApiKey,
    ErrorCode,
    ProtocolError,
    RpcError,
    error_name,
)
from impl.node.wire.connection import AsyncConnection, AuthenticationError, BlockingConnection
from impl.node.wire.fields import ERROR_BODY, MESSAGES, Field, Message, undeclared_fields
from impl.node.wire.frames import (
    EncodedBody,
    decode_encoded_body,
    decode_request_body,
    decode_request_header,
    decode_response,
    encode_request,
    encode_response,
    encoded_body,
    read_frame,
    request_frame_parts,
)
from impl.node.wire.values import KEYED_RECORD, decode_value, encode_value, keyed_record, record_key

__all__ = [
    "API_VERSIONS", "CONTROLLER_VERSIONS", "ERROR_BODY", "KEYED_RECORD", "MAX_DEPTH", "MAX_FRAME",
    "MESSAGES", "ApiKey", "AsyncConnection", "AuthenticationError", "BlockingConnection",
    "EncodedBody", "ErrorCode", "Field", "Message", "ProtocolError", "RpcError",
    "decode_encoded_body", "decode_request_body", "decode_request_header", "decode_response", "decode_value",
    "encode_request", "encode_response", "encode_value", "encoded_body", "error_name", "keyed_record",
    "read_frame", "record_key", "request_frame_parts", "undeclared_fields",
]
