"""Epochal's own connections in Kafka's frames: each API's body dict <-> kio entity.

Every broker, the controller and Epochal's own clients build and read request and
response bodies as plain dicts (the field tables of docs/wire.md).  For each API listed in
:data:`TRANSLATIONS` those dicts travel as Kafka's messages of one flexible version
(:class:`Translation`): the request header v2 and response header v1 each carry one
reserved tagged field, :data:`EPOCHAL_TAG`, holding what Kafka's schema has no field for
-- the sender's Lamport clock (``clock``, for traces) and the body fields the translation
leaves over (seed fields such as ``max_broker_epoch``, an error answer's ``message`` and
hints).  A real Kafka peer skips the unknown tag.  The tag's value is a map in Epochal's
typed value encoding (:mod:`impl.node.wire.values`).

An error answer is the API's response entity with its top-level ``error_code`` set and
every other field at its default; the error body (``message``, ``leader``, ...) rides in
the tag.  (The topic admin requests answer per topic instead, and keep Epochal's own
version, 0 forwarded or 1 for the controller only, in the tag as :data:`API_VERSION`:
:mod:`impl.node.kafka.translate.admin`.)  Nothing here raises anything but :class:`impl.node.codes.ProtocolError` on bad
bytes.
"""

from __future__ import annotations

import functools
import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kio.index import load_request_schema, load_response_schema
from kio.serial import entity_reader

from impl.node.codes import CONTROLLER_VERSIONS, KAFKA_VERSIONS, ApiKey, ErrorCode, ProtocolError
from impl.node.kafka.translate.batches import read_uvarint
from impl.node.kafka.translate.writer import write_values
from impl.node.wire.values import decode_shallow_map, encode_shallow_map

EPOCHAL_TAG = 0x4550  # "EP": the one tagged field of a header that carries Epochal's extras
# the tag's key for Epochal's own version of an admin request that must reach the controller
# (CONTROLLER_VERSIONS: 0 is forwarded, 1 is not), which Kafka's version number cannot hold:
# the header has the one Kafka version Epochal speaks
API_VERSION = "api_version"
CLIENT_ID = "epochal"
_HEAD = struct.Struct(">hhi")  # api key, api version, correlation id
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_CLIENT = _I16.pack(len(CLIENT_ID)) + CLIENT_ID.encode()  # the request header's client id

Body = dict[str, Any]


@dataclass(frozen=True)
class Translation:
    """One API's dict <-> Kafka mapping, at the one version Epochal sends
    (:data:`impl.node.codes.KAFKA_VERSIONS`).

    ``request`` turns a body dict into the kio entity's field values and gives back the
    keys it consumed and what it adds to the tag (nested fields Kafka lacks);
    ``from_request`` turns an entity back into the dict, taking back from the tag's extras
    what ``request`` put there.  ``response`` turns an answer (its error code, its body, the
    request it answers) into field values, the keys consumed and what it adds to the tag,
    putting the error code where Kafka's schema has it; ``from_response`` gives back (error
    code, body), taking back its own extras.  Keys a translation does not consume ride in
    the header's tag."""

    api: ApiKey
    request: Callable[[Body], tuple[Body, frozenset[str], Body]]
    from_request: Callable[[Any, Body], Body]
    response: Callable[[int, Body, Body], tuple[Body, frozenset[str], Body]]
    from_response: Callable[[Any, Body], tuple[int, Body]]

    @property
    def version(self) -> int:
        return KAFKA_VERSIONS[self.api]

    @functools.cached_property
    def _schemas(self) -> tuple[type, type]:
        return _request_schema(int(self.api), self.version), _response_schema(int(self.api), self.version)

    def request_schema(self) -> type:
        return self._schemas[0]

    @functools.cached_property
    def flexible(self) -> bool:
        """Whether its headers have tagged fields (request header v2, response header v1):
        the clock and the extras travel only then."""
        return bool(self.request_schema().__flexible__)

    def response_schema(self) -> type:
        return self._schemas[1]


# kio resolves a schema's module by name on every call: once per API and version here
_request_schema = functools.cache(load_request_schema)
_response_schema = functools.cache(load_response_schema)

TRANSLATIONS: dict[ApiKey, Translation] = {}


def register(*translations: Translation) -> None:
    for t in translations:
        TRANSLATIONS[t.api] = t


def speaks_kafka(api: int | None) -> bool:
    return api in TRANSLATIONS


NOTHING: frozenset[str] = frozenset()


Fields = tuple[Body, frozenset[str], Body]  # (field values, keys consumed, extras for the tag)


def top_level_error(success: Callable[[Body, Body], tuple[Body, frozenset[str]]]
                    ) -> Callable[[int, Body, Body], Fields]:
    """The ``response`` of an API whose Kafka response has a top-level ``error_code``: an
    error answer is the entity at its defaults with that code, its body all in the tag."""
    def response(error: int, body: Body, request: Body) -> Fields:
        values, used = success({} if error else body, request)
        return {**values, "error_code": error}, NOTHING if error else used, {}
    return response


def read_top_level_error(success: Callable[[Any], Body]) -> Callable[[Any, Body], tuple[int, Body]]:
    """The ``from_response`` that goes with :func:`top_level_error`."""
    def from_response(entity: Any, _extras: Body) -> tuple[int, Body]:
        error = int(entity.error_code)
        return error, {} if error else success(entity)
    return from_response


# -- the tag ---------------------------------------------------------------------------------

def _encode_extras(extras: Body) -> bytes:
    """The tag's value: the map in Epochal's value encoding (its usual shallow shape
    written without the general walk, to the same bytes)."""
    return encode_shallow_map(extras)


def _decode_extras(raw: bytes) -> Any:
    return decode_shallow_map(raw)


def _uvarint(value: int) -> bytes:
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


# a tagged-field section of one field, the Epochal tag: its count and tag, then its size
_ONE_TAG = _uvarint(1) + _uvarint(EPOCHAL_TAG)


def _write_tags(out: bytearray, extras: Body) -> None:
    if not extras:
        out.append(0)  # no tagged fields
        return
    raw = _encode_extras(extras)
    out += _ONE_TAG + _uvarint(len(raw)) + raw


def _read_tags(payload: bytes, pos: int) -> tuple[Body, int]:
    """The extras of a tagged-field section (other tags are skipped, as Kafka does)."""
    extras: Body = {}
    if payload[pos:pos + len(_ONE_TAG)] == _ONE_TAG:  # as Epochal writes it: read at once
        size, pos = read_uvarint(payload, pos + len(_ONE_TAG), 32)
        if pos + size > len(payload):
            raise ProtocolError("truncated tagged field")
        return _epochal_tag(payload[pos:pos + size]), pos + size
    count, pos = read_uvarint(payload, pos, 32)
    for _ in range(count):
        tag, pos = read_uvarint(payload, pos, 32)
        size, pos = read_uvarint(payload, pos, 32)
        if pos + size > len(payload):
            raise ProtocolError("truncated tagged field")
        if tag == EPOCHAL_TAG:
            extras = _epochal_tag(payload[pos:pos + size])
        pos += size
    return extras, pos


def _epochal_tag(raw: bytes) -> Body:
    value = _decode_extras(raw)
    if not isinstance(value, dict):
        raise ProtocolError("the Epochal tag is not a map")
    return value


# -- bodies ----------------------------------------------------------------------------------

class EncodedBody(bytes):
    """A request body already encoded (a kio entity's bytes), with the extras its header's
    tag carries.  The controller encodes one UpdateMetadata payload per metadata change and
    hands this same object to every broker's channel (seed 003), so its memory does not grow
    with the number of brokers."""

    extras: Body

    def __new__(cls, data: bytes, extras: Body | None = None) -> EncodedBody:
        obj = super().__new__(cls, data)
        obj.extras = dict(extras or {})
        return obj


def _leftover(body: Body, used: frozenset[str]) -> Body:
    return {k: v for k, v in body.items() if k not in used}


def encode_body(api: ApiKey, body: Body) -> EncodedBody:
    """A request body as Kafka's message of ``api`` (its extras kept beside it)."""
    t = TRANSLATIONS[api]
    try:
        values, used, extras = t.request(body)
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"{api.name} request cannot be sent as Kafka's: {exc!r}") from None
    return EncodedBody(write_values(t.request_schema(), values), {**_leftover(body, used), **extras})


def _read_entity(schema: type, payload: bytes, pos: int, what: Callable[[], str]) -> Any:
    """The entity at ``pos``, the rest of the payload; ``what`` names it in an error (made
    only then: most frames are read without one)."""
    try:
        entity, size = entity_reader(schema)(payload, pos)
    except Exception as exc:  # noqa: BLE001 - kio's reader raises several kinds
        raise ProtocolError(f"{what()}: {exc}", ErrorCode.INVALID_REQUEST) from None
    if pos + size != len(payload):
        raise ProtocolError(f"{what()}: {len(payload) - pos - size} bytes after the body",
                            ErrorCode.INVALID_REQUEST)
    return entity


# -- request frames --------------------------------------------------------------------------

RequestHeader = tuple[int, int, int, int, Body, int]
"""(api key, version, correlation id, clock, extras, where the body starts)."""

def request_frame_parts(api: int, version: int, cid: int, clock: int,
                        body: Body | EncodedBody) -> tuple[bytes, bytes]:
    """(length + header, body): Kafka's request header v2 with the clock and the extras in
    the tag; a pre-encoded body is written as it is, never copied per recipient."""
    t = TRANSLATIONS[api]
    encoded = body if isinstance(body, EncodedBody) else encode_body(t.api, body)
    own: Body = {}
    if api in CONTROLLER_VERSIONS:  # Epochal's version in the tag, Kafka's in the header
        own, version = {API_VERSION: version}, t.version
    header = bytearray(_HEAD.pack(api, version, cid) + _CLIENT)
    if t.flexible:  # request header v2; v1 has no tagged fields
        _write_tags(header, {"clock": clock, **own, **encoded.extras})
    return _I32.pack(len(header) + len(encoded)) + header, encoded


def decode_request_header(payload: bytes) -> RequestHeader:
    """(api key, version, correlation id, clock, extras, where the body starts)."""
    if len(payload) < _HEAD.size + _I16.size:
        raise ProtocolError("frame shorter than the request header", ErrorCode.INVALID_REQUEST)
    api, version, cid = _HEAD.unpack_from(payload)
    (n,) = _I16.unpack_from(payload, _HEAD.size)
    pos = _HEAD.size + _I16.size + max(n, 0)
    if pos > len(payload):
        raise ProtocolError("truncated client id", ErrorCode.INVALID_REQUEST)
    extras, pos = _read_tags(payload, pos) if TRANSLATIONS[api].flexible else ({}, pos)
    clock = extras.pop("clock", 0)
    return api, _epochal_version(api, version, extras), cid, \
        int(clock) if isinstance(clock, int) else 0, extras, pos


def _epochal_version(api: int, version: int, extras: Body) -> int:
    """The version Epochal handles a request at: Kafka's, or for an admin request of
    CONTROLLER_VERSIONS the tag's (a request without it, a Kafka peer's, is at the controller
    version); a Kafka version other than the one Epochal speaks is UNSUPPORTED_VERSION."""
    if api not in CONTROLLER_VERSIONS:
        return version
    t = TRANSLATIONS[ApiKey(api)]
    if version != t.version:
        raise ProtocolError(f"{t.api.name} v{version}: Epochal speaks v{t.version}",
                            ErrorCode.UNSUPPORTED_VERSION)
    own = extras.pop(API_VERSION, CONTROLLER_VERSIONS[ApiKey(api)])
    if type(own) is not int:
        raise ProtocolError(f"{t.api.name}: {API_VERSION} is not an int", ErrorCode.INVALID_REQUEST)
    return own


def decode_request_body(payload: bytes, header: RequestHeader | None = None) -> Body:
    """The body dict of a request frame; ``header``: what :func:`decode_request_header`
    already read from this payload (the server reads the header first, to screen it, and
    its tag is not decoded twice)."""
    api, version, _, _, extras, pos = header or decode_request_header(payload)
    t = TRANSLATIONS[api]
    if version != t.version and api not in CONTROLLER_VERSIONS:  # checked with the header
        raise ProtocolError(f"{t.api.name} v{version}: Epochal speaks v{t.version}",
                            ErrorCode.UNSUPPORTED_VERSION)
    entity = _read_entity(t.request_schema(), payload, pos, lambda: f"{t.api.name} v{version}")
    try:
        return _from_request(t, entity, extras)
    except (KeyError, TypeError, ValueError) as exc:
        raise ProtocolError(f"{t.api.name}: {exc!r}", ErrorCode.INVALID_REQUEST) from None


def decode_encoded_body(api: ApiKey, body: EncodedBody) -> Body:
    """The dict a pre-encoded request body stands for (what its recipient reads)."""
    t = TRANSLATIONS[api]
    entity = _read_entity(t.request_schema(), bytes(body), 0, lambda: t.api.name)
    return _from_request(t, entity, body.extras)


def _from_request(t: Translation, entity: Any, extras: Body) -> Body:
    rest = dict(extras)
    out = t.from_request(entity, rest)  # takes back its own extras from ``rest``
    return {**out, **rest}


# -- response frames -------------------------------------------------------------------------

def encode_response(api: ApiKey, cid: int, clock: int, error: int, body: Body,
                    request: Body | None = None) -> bytes:
    """Kafka's response header v1 (the clock and extras in its tag) and the response to
    ``request`` (its topics and partitions name the answer's; None: unknown)."""
    t = TRANSLATIONS[api]
    schema = t.response_schema()
    values, used, extras = t.response(error, body, request or {})
    frame = bytearray(_I32.pack(0) + _I32.pack(cid))
    if t.flexible:  # response header v1; v0 has no tagged fields
        _write_tags(frame, {"clock": clock, **_leftover(body, used), **extras})
    frame += write_values(schema, values)
    _I32.pack_into(frame, 0, len(frame) - _I32.size)
    return bytes(frame)


def decode_response(payload: bytes, api: ApiKey) -> tuple[int, int, int, Body]:
    """(correlation id, clock, error code, body) of a response to ``api``."""
    t = TRANSLATIONS[api]
    if len(payload) < _I32.size:
        raise ProtocolError("frame shorter than the response header")
    (cid,) = _I32.unpack_from(payload)
    extras, pos = _read_tags(payload, _I32.size) if t.flexible else ({}, _I32.size)
    clock = extras.pop("clock", 0)
    entity = _read_entity(t.response_schema(), payload, pos, lambda: f"{t.api.name} response")
    error, body = t.from_response(entity, extras)  # takes back its own extras
    return cid, int(clock) if isinstance(clock, int) else 0, error, {**body, **extras}


def _register_all() -> None:
    from impl.node.kafka.translate import admin, clients, control, envelope, replication

    register(*control.TRANSLATIONS, *replication.TRANSLATIONS, *clients.TRANSLATIONS,
             *admin.TRANSLATIONS, *envelope.TRANSLATIONS)


_register_all()
