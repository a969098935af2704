"""Kafka's Envelope v0 (ApiKey 58, KIP-590): a forwarded request inside a broker's request.

The request carries ``request_data`` (the forwarded request: its header and body, without
the frame's length prefix), ``request_principal`` (the original client's principal as
Kafka's ``DefaultPrincipalData``, prefixed by its i16 version, as Kafka's
``DefaultKafkaPrincipalBuilder.serialize`` writes it) and ``client_host_address`` (the
client's IP address, 4 or 16 bytes).  The response carries ``response_data`` (the
forwarded request's response: its header and body) and a top-level ``error_code`` for the
Envelope itself (NOT_CONTROLLER, CLUSTER_AUTHORIZATION_FAILED, ...): an Envelope refused
has no ``response_data``.  Epochal's ``forwarded_by`` (the forwarding broker's id), which
Kafka has no field for, rides in the tag.
"""

from __future__ import annotations

import struct
from typing import Any

from kio.schema.default_principal_data.v0.data import DefaultPrincipalData
from kio.serial import entity_reader

from impl.node.codes import ApiKey, ErrorCode, ProtocolError
from impl.node.kafka.translate import (
    Body,
    Fields,
    Translation,
    read_top_level_error,
    top_level_error,
)
from impl.node.kafka.translate.writer import write_values

PRINCIPAL_TYPE = "User"  # Kafka's KafkaPrincipal.USER_TYPE: every Epochal principal is a user
_VERSION = struct.Struct(">h")
_ENVELOPE_KEYS = frozenset({"request_data", "request_principal", "client_host_address"})


def principal_bytes(name: str) -> bytes:
    """``request_principal``: ``name`` as Kafka's version-prefixed ``DefaultPrincipalData``."""
    return _VERSION.pack(DefaultPrincipalData.__version__) + write_values(
        DefaultPrincipalData, {"type_": PRINCIPAL_TYPE, "name": name, "token_authenticated": False})


def principal_name(raw: Any) -> str:
    """The user an Envelope's ``request_principal`` names; ProtocolError
    (PRINCIPAL_DESERIALIZATION_FAILURE) if it is not Kafka's serialized principal of a user."""
    def refuse(why: str) -> ProtocolError:
        return ProtocolError(f"request_principal: {why}", ErrorCode.PRINCIPAL_DESERIALIZATION_FAILURE)

    if not isinstance(raw, bytes) or len(raw) < _VERSION.size:
        raise refuse("absent or shorter than its version")
    (version,) = _VERSION.unpack_from(raw)
    if version != DefaultPrincipalData.__version__:
        raise refuse(f"DefaultPrincipalData v{version} (Epochal reads v0)")
    try:
        data, size = entity_reader(DefaultPrincipalData)(raw, _VERSION.size)
    except Exception as exc:  # noqa: BLE001 - kio's reader raises several kinds
        raise refuse(str(exc)) from None
    if _VERSION.size + size != len(raw):
        raise refuse("bytes after the principal")
    if data.type_ != PRINCIPAL_TYPE or not data.name:
        raise refuse(f"principal {data.type_}:{data.name!r} is not a user")
    return str(data.name)


def _request(body: Body) -> Fields:
    principal = body.get("request_principal")
    return {"request_data": bytes(body["request_data"]),
            "request_principal": None if principal is None else bytes(principal),
            "client_host_address": bytes(body.get("client_host_address") or b"")}, \
        _ENVELOPE_KEYS, {}


def _from_request(e: Any, _extras: Body) -> Body:
    return {"request_data": bytes(e.request_data), "request_principal": e.request_principal,
            "client_host_address": bytes(e.client_host_address)}


def _answer(body: Body, _request: Body) -> tuple[Body, frozenset[str]]:
    data = body.get("response_data")
    return {"response_data": None if data is None else bytes(data)}, frozenset({"response_data"})


def _read_answer(e: Any) -> Body:
    return {} if e.response_data is None else {"response_data": bytes(e.response_data)}


TRANSLATIONS: tuple[Translation, ...] = (
    Translation(ApiKey.ENVELOPE, _request, _from_request, top_level_error(_answer),
                read_top_level_error(_read_answer)),
)
