"""A flexible Kafka message written straight from a translation's field values.

kio's entity writer checks every value against its phantom type and wants entities built
first (:func:`impl.node.kafka.codec.build`); on the hot paths (Produce, Fetch,
OffsetForLeaderEpoch) that costs more than the rest of a request.  :func:`write_values`
writes the same bytes from the plain values a :class:`~impl.node.kafka.translate.Translation`
gives, with one plan per schema read once from kio's field metadata (the Kafka type of each
field, its tag, its default).  It covers the field kinds of flexible messages that
Epochal's translations use; anything else (a non-flexible version, a kind not listed in
:data:`_PRIMITIVES`) goes through kio, so the bytes are kio's either way -- and a test
holds the two byte-for-byte over generated values.
"""

from __future__ import annotations

import datetime
import functools
import io
import struct
import types
import typing
from collections.abc import Callable
from dataclasses import MISSING, Field, fields, is_dataclass
from typing import Any

from kio.serial import entity_writer

from impl.node.kafka.codec import build

Out = bytearray
_Write = Callable[[Out, Any], None]


def _uvarint(out: Out, value: int) -> None:
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)


def _packer(fmt: str) -> _Write:
    pack = struct.Struct(fmt).pack

    def write(out: Out, value: Any) -> None:
        out += pack(int(value))
    return write


def _millis(fmt: str) -> _Write:
    pack = struct.Struct(fmt).pack

    def write(out: Out, value: Any) -> None:
        if isinstance(value, datetime.timedelta):
            value = int(value.total_seconds() * 1000)
        out += pack(int(value))
    return write


def _datetime(out: Out, value: Any) -> None:
    if isinstance(value, datetime.datetime):
        value = int(value.timestamp() * 1000)
    out += struct.pack(">q", -1 if value is None else int(value))


def _bool(out: Out, value: Any) -> None:
    out.append(1 if value else 0)


def _compact_bytes(out: Out, value: Any) -> None:
    if value is None:
        out.append(0)
        return
    if isinstance(value, str):
        value = value.encode()
    _uvarint(out, len(value) + 1)
    out += value


_PRIMITIVES: dict[str, _Write] = {
    "int8": _packer(">b"), "int16": _packer(">h"), "int32": _packer(">i"),
    "int64": _packer(">q"), "error_code": _packer(">h"),
    "timedelta_i32": _millis(">i"), "timedelta_i64": _millis(">q"),
    "datetime_i64": _datetime, "bool": _bool,
    "string": _compact_bytes, "bytes": _compact_bytes, "records": _compact_bytes,
}


def _array(item: _Write) -> _Write:
    def write(out: Out, value: Any) -> None:
        if value is None:
            out.append(0)
            return
        _uvarint(out, len(value) + 1)
        for v in value:
            item(out, v)
    return write


def _default(f: Field[Any]) -> Any:
    if f.default is not MISSING:
        return f.default
    if f.default_factory is not MISSING:
        return f.default_factory()
    return MISSING


def _element(field_type: Any) -> tuple[bool, Any]:
    """(is an array, the element or value type) of a field, ``X | None`` unwrapped."""
    args = [t for t in typing.get_args(field_type) if t is not type(None)]
    if typing.get_origin(field_type) in (typing.Union, types.UnionType):
        field_type, args = args[0], list(typing.get_args(args[0]))
    if typing.get_origin(field_type) is tuple:
        return True, args[0]
    return False, field_type


def _tagged(f: Field[Any]) -> Callable[[Any], bytes | None]:
    """The bytes of a tagged field's value, None when it is its default (not written)."""
    default = _default(f)
    is_array, inner = _element(f.type)
    if is_dataclass(inner) and not is_array:
        write_entity = entity_writer(inner)

        def entity_bytes(value: Any) -> bytes | None:
            entity = value if is_dataclass(value) else build(inner, **value)
            if entity == default:
                return None
            buf = io.BytesIO()
            write_entity(buf, entity)
            return buf.getvalue()
        return entity_bytes
    write = _field(f, tagged=True)

    def primitive_bytes(value: Any) -> bytes | None:
        if value == default:
            return None
        out = bytearray()
        write(out, value)
        return bytes(out)
    return primitive_bytes


def _field(f: Field[Any], tagged: bool = False) -> _Write:
    is_array, inner = _element(f.type)
    if is_dataclass(inner):
        plan = _plan(inner)
        return _array(plan) if is_array else plan
    kind = f.metadata.get("kafka_type")
    if kind not in _PRIMITIVES:
        raise LookupError(kind)
    return _array(_PRIMITIVES[kind]) if is_array else _PRIMITIVES[kind]


@functools.cache
def _plan(entity_type: type) -> _Write:
    """The writer of one flexible entity's values (a dict, or a kio entity)."""
    plain: list[tuple[str, Any, _Write]] = []
    tags: list[tuple[int, str, Callable[[Any], bytes | None]]] = []
    for f in fields(entity_type):
        if "tag" in f.metadata:
            tags.append((int(f.metadata["tag"]), f.name, _tagged(f)))
        else:
            plain.append((f.name, _default(f), _field(f)))
    tags.sort()

    def write(out: Out, values: Any) -> None:
        if is_dataclass(values):
            values = {name: getattr(values, name) for name, _, _ in plain} | \
                {name: getattr(values, name) for _, name, _ in tags}
        for name, default, w in plain:
            value = values.get(name, default)
            if value is MISSING:
                raise TypeError(f"{entity_type.__name__} needs {name}")
            w(out, value)
        written = [(tag, raw) for tag, name, raw_of in tags if name in values
                   for raw in [raw_of(values[name])] if raw is not None]
        _uvarint(out, len(written))
        for tag, raw in written:
            _uvarint(out, tag)
            _uvarint(out, len(raw))
            out += raw
    return write


@functools.cache
def _writer(schema: type) -> _Write | None:
    if not schema.__flexible__:
        return None
    try:
        return _plan(schema)
    except LookupError:  # a kind this writer does not cover: kio writes it
        return None


def write_values(schema: type, values: dict[str, Any]) -> bytes:
    """``schema``'s message with these field values: kio's bytes, written without kio's
    checks where :func:`_plan` covers the schema."""
    write = _writer(schema)
    if write is None:
        buf = io.BytesIO()
        entity_writer(schema)(buf, build(schema, **values))
        return buf.getvalue()
    out = bytearray()
    write(out, values)
    return bytes(out)
