"""A flexible Kafka message written straight from a translation's field values.

kio's entity writer checks every value against its phantom type and wants entities built
first (:func:`impl.node.kafka.codec.build`); on the hot paths (Produce, Fetch,
OffsetForLeaderEpoch) that costs more than the rest of a request.  :func:`write_values`
writes the same bytes from the plain values a :class:`~impl.node.kafka.translate.Translation`
gives, with one plan per schema read once from kio's field metadata (the Kafka type of each
field, its tag, its default) and compiled into one function per entity type (a run of
fixed-width fields packed by one struct).  It covers the field kinds of flexible messages that
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


_INT_KINDS = {"int8": "b", "int16": "h", "int32": "i", "int64": "q", "error_code": "h"}
_FIXED = {**_INT_KINDS, "timedelta_i32": "i", "timedelta_i64": "q", "bool": "?"}
"""The fixed-width kinds, as struct codes: a run of them is packed at once."""


def _ms(value: Any) -> int:
    if isinstance(value, datetime.timedelta):
        return int(value.total_seconds() * 1000)
    return int(value)


def _tagged(f: Field[Any]) -> Callable[[Any], bytes | None]:
    """The bytes of a tagged field's value, None when it is its default (not written)."""
    default = _default(f)
    is_array, inner = _element(f.type)
    if is_dataclass(inner) and not is_array:
        if is_dataclass(default) and all(g.metadata.get("kafka_type") in _INT_KINDS for g in fields(inner)):
            # integers only: its bytes are equal exactly when its values are
            plan = _plan(inner)
            default_raw = bytearray()
            plan(default_raw, default)

            def ints_bytes(value: Any) -> bytes | None:
                out = bytearray()
                plan(out, value)
                return None if out == default_raw else bytes(out)
            return ints_bytes
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


def _write_tags(out: Out, written: list[tuple[int, bytes]]) -> None:
    _uvarint(out, len(written))
    for tag, raw in written:
        _uvarint(out, tag)
        _uvarint(out, len(raw))
        out += raw


@functools.cache
def _plan(entity_type: type) -> _Write:
    """The writer of one flexible entity's values (a dict, or a kio entity): its fields in
    order, each run of fixed-width fields packed by one struct, then its tagged fields.
    The writer is compiled once per entity type into one function, so that a message costs
    one call per entity rather than one per field."""
    env: dict[str, Any] = {"MISSING": MISSING, "is_dataclass": is_dataclass, "_ms": _ms,
                           "_write_tags": _write_tags, "NAME": entity_type.__name__}
    plain = [f for f in fields(entity_type) if "tag" not in f.metadata]
    tags = sorted((int(f.metadata["tag"]), f) for f in fields(entity_type) if "tag" in f.metadata)
    names = [f.name for f in plain] + [f.name for _, f in tags]
    body = ["    if type(values) is not dict and is_dataclass(values):",
            f"        values = {{n: getattr(values, n) for n in {names!r}}}",
            "    get = values.get"]
    required = [f.name for f in plain if _default(f) is MISSING]
    if required:
        env["REQUIRED"] = frozenset(required)
        body += ["    if not REQUIRED <= values.keys():",
                 f"        raise TypeError(NAME + ' needs ' + next(n for n in {required!r} if n not in values))"]
    run: list[tuple[str, str]] = []  # (struct code, the expression of its value)

    def flush() -> None:
        if run:
            pack = f"pack{len(body)}"
            env[pack] = struct.Struct(">" + "".join(c for c, _ in run)).pack
            body.append(f"    out += {pack}({', '.join(e for _, e in run)})")
            run.clear()
    for i, f in enumerate(plain):
        env[f"d{i}"] = _default(f)
        value = f"get({f.name!r}, d{i})"
        kind = f.metadata.get("kafka_type")
        is_array, inner = _element(f.type)
        if kind in _FIXED and not is_array and not is_dataclass(inner):
            conv = {"timedelta_i32": "_ms", "timedelta_i64": "_ms", "bool": ""}.get(kind, "int")
            run.append((_FIXED[kind], f"{conv}({value})"))
            continue
        flush()
        env[f"w{i}"] = _field(f)
        body.append(f"    w{i}(out, {value})")
    flush()
    if not tags:
        body.append("    out.append(0)")
    else:
        body.append("    written = []")
        for tag, f in tags:
            env[f"t{tag}"] = _tagged(f)
            body += [f"    if {f.name!r} in values:",
                     f"        raw = t{tag}(values[{f.name!r}])",
                     "        if raw is not None:",
                     f"            written.append(({tag}, raw))"]
        body.append("    _write_tags(out, written)")
    exec("def write(out, values):\n" + "\n".join(body), env)  # noqa: S102 - source built above
    return env["write"]  # type: ignore[no-any-return]


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
