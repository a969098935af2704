"""The typed value encoding every frame body uses (tag byte, then the value), and the
keyed-record convention clients put inside a record value (docs/wire.md sections 3-4)."""

from __future__ import annotations

import struct
from typing import Any

from impl.node.codes import MAX_DEPTH, U32, ProtocolError

# -- the typed value encoding ---------------------------------------------------------------

_NONE, _FALSE, _TRUE, _INT, _STR, _BYTES, _LIST, _MAP, _FLOAT = range(9)
_I64 = struct.Struct(">q")
_F64 = struct.Struct(">d")


def encode_value(value: Any) -> bytes:
    out = bytearray()
    _enc(value, out, 0)
    return bytes(out)


def _enc(v: Any, out: bytearray, depth: int) -> None:
    if depth > MAX_DEPTH:
        raise ValueError("value nested too deeply")
    if v is None:
        out.append(_NONE)
    elif v is True:
        out.append(_TRUE)
    elif v is False:
        out.append(_FALSE)
    elif isinstance(v, int):
        out.append(_INT)
        out += _I64.pack(v)
    elif isinstance(v, float):
        out.append(_FLOAT)
        out += _F64.pack(v)
    elif isinstance(v, str):
        b = v.encode()
        out.append(_STR)
        out += U32.pack(len(b)) + b
    elif isinstance(v, bytes | bytearray | memoryview):
        b = bytes(v)
        out.append(_BYTES)
        out += U32.pack(len(b)) + b
    elif isinstance(v, list | tuple | set | frozenset):
        items = sorted(v) if isinstance(v, set | frozenset) else v
        out.append(_LIST)
        out += U32.pack(len(items))
        for item in items:
            _enc(item, out, depth + 1)
    elif isinstance(v, dict):
        out.append(_MAP)
        out += U32.pack(len(v))
        for k, item in v.items():
            kb = str(k).encode()
            out += U32.pack(len(kb)) + kb
            _enc(item, out, depth + 1)
    else:
        raise TypeError(f"cannot encode {type(v).__name__}")


def decode_value(data: bytes) -> Any:
    value, pos = _dec(memoryview(data), 0, 0)
    if pos != len(data):
        raise ProtocolError(f"{len(data) - pos} trailing bytes")
    return value


# -- the same encoding of a shallow map, without the recursive walk ---------------------------
#
# A Kafka header's Epochal tag (impl.node.kafka.translate) is a map of ints and strings, and
# a Fetch's ``partition_extras``: a list of such maps.  These write and read exactly the
# bytes of encode_value / decode_value for that shape, a few times faster; anything else --
# or any doubt -- goes through the general encoding, which is the reference.

_INT_TAG = bytes([_INT])
_MAP_TAG = bytes([_MAP])
_LIST_TAG = bytes([_LIST])
_KEY_CACHE: dict[str, bytes] = {}
_KEY_CACHE_MAX = 256


class _NotShallow(Exception):
    """A value outside the shallow shape: the general encoding handles it."""


def _key(k: str) -> bytes:
    """A map key's length-prefixed bytes (the tag's few key names are cached)."""
    kb = _KEY_CACHE.get(k)
    if kb is None:
        raw = k.encode()
        kb = U32.pack(len(raw)) + raw
        if len(_KEY_CACHE) < _KEY_CACHE_MAX:
            _KEY_CACHE[k] = kb
    return kb


def _enc_flat(m: dict[Any, Any], out: bytearray, nested: bool) -> None:
    out += _MAP_TAG + U32.pack(len(m))
    for k, v in m.items():
        if type(k) is not str:
            raise _NotShallow
        out += _key(k)
        t = type(v)
        if t is int:
            out += _INT_TAG + _I64.pack(v)
        elif t is str:
            b = v.encode()
            out += bytes([_STR]) + U32.pack(len(b)) + b
        elif t is list and not nested:
            out += _LIST_TAG + U32.pack(len(v))
            for item in v:
                if type(item) is not dict:
                    raise _NotShallow
                _enc_flat(item, out, True)
        else:
            raise _NotShallow


def encode_shallow_map(m: dict[str, Any]) -> bytes:
    """``encode_value(m)``'s bytes, read straight off a map of ints, strings and lists of
    maps of ints and strings."""
    out = bytearray()
    try:
        _enc_flat(m, out, False)
    except _NotShallow:
        return encode_value(m)
    return bytes(out)


def _dec_flat(raw: bytes, pos: int, nested: bool) -> tuple[dict[str, Any], int]:
    if raw[pos] != _MAP:
        raise _NotShallow
    (n,) = U32.unpack_from(raw, pos + 1)
    pos += 5
    out: dict[str, Any] = {}
    for _ in range(n):
        (kn,) = U32.unpack_from(raw, pos)
        pos += 4
        if pos + kn > len(raw):
            raise _NotShallow
        key = raw[pos:pos + kn].decode()
        pos += kn
        tag = raw[pos]
        if tag == _INT:
            out[key] = _I64.unpack_from(raw, pos + 1)[0]
            pos += 9
        elif tag == _STR:
            (sn,) = U32.unpack_from(raw, pos + 1)
            pos += 5
            if pos + sn > len(raw):
                raise _NotShallow
            out[key] = raw[pos:pos + sn].decode()
            pos += sn
        elif tag == _LIST and not nested:
            (ln,) = U32.unpack_from(raw, pos + 1)
            pos += 5
            if ln > len(raw) - pos:
                raise _NotShallow
            items = []
            for _ in range(ln):
                item, pos = _dec_flat(raw, pos, True)
                items.append(item)
            out[key] = items
        else:
            raise _NotShallow
    return out, pos


def decode_shallow_map(raw: bytes) -> Any:
    """``decode_value(raw)``, read directly when ``raw`` is a shallow map as
    :func:`encode_shallow_map` writes one; anything else (or bad bytes) is read, and
    refused, by :func:`decode_value`."""
    try:
        value, pos = _dec_flat(raw, 0, False)
    except (_NotShallow, IndexError, struct.error, UnicodeDecodeError):
        return decode_value(raw)
    return value if pos == len(raw) else decode_value(raw)


KEYED_RECORD = b"\xffK"
"""The first bytes of a record value that carries a key (docs/wire.md §4.1).  No UTF-8 text
starts with 0xff, so a value produced as text never reads as keyed."""


def keyed_record(value: bytes, key: bytes | None) -> bytes:
    """The record value a producer sends: ``value`` itself when there is no key (and it does
    not start with ``KEYED_RECORD``), else ``KEYED_RECORD`` and the encoding of ``[key,
    value]``.  Brokers store, replicate and serve it as any value; only clients look inside,
    so the log format and replication are those of unkeyed records."""
    if key is None and not value.startswith(KEYED_RECORD):
        return value
    return KEYED_RECORD + encode_value([key, value])


def record_key(stored: bytes) -> tuple[bytes | None, bytes]:
    """``(key, value)`` of a record value as fetched (key None: it has none).  A value that
    starts with the marker but does not decode as ``[key, value]`` is shown as written."""
    if not stored.startswith(KEYED_RECORD):
        return None, stored
    try:
        key, value = decode_value(stored[len(KEYED_RECORD):])
    except (ProtocolError, ValueError, TypeError):
        return None, stored
    if not isinstance(value, bytes) or not (key is None or isinstance(key, bytes)):
        return None, stored
    return key, value


def _need(buf: memoryview, pos: int, n: int) -> None:
    if n < 0 or pos + n > len(buf):
        raise ProtocolError("truncated value")


def _dec(buf: memoryview, pos: int, depth: int) -> tuple[Any, int]:
    if depth > MAX_DEPTH:
        raise ProtocolError("value nested too deeply")
    _need(buf, pos, 1)
    tag = buf[pos]
    pos += 1
    if tag == _NONE:
        return None, pos
    if tag == _TRUE:
        return True, pos
    if tag == _FALSE:
        return False, pos
    if tag == _INT:
        _need(buf, pos, 8)
        return _I64.unpack_from(buf, pos)[0], pos + 8
    if tag == _FLOAT:
        _need(buf, pos, 8)
        return _F64.unpack_from(buf, pos)[0], pos + 8
    if tag in (_STR, _BYTES):
        _need(buf, pos, 4)
        n = U32.unpack_from(buf, pos)[0]
        pos += 4
        _need(buf, pos, n)
        raw = bytes(buf[pos:pos + n])
        if tag == _BYTES:
            return raw, pos + n
        try:
            return raw.decode(), pos + n
        except UnicodeDecodeError as exc:
            raise ProtocolError("invalid UTF-8 string") from exc
    if tag in (_LIST, _MAP):
        _need(buf, pos, 4)
        n = U32.unpack_from(buf, pos)[0]
        pos += 4
        if n > len(buf) - pos:  # every item takes at least one byte
            raise ProtocolError("count larger than the frame")
        if tag == _LIST:
            items = []
            for _ in range(n):
                item, pos = _dec(buf, pos, depth + 1)
                items.append(item)
            return items, pos
        mapping: dict[str, Any] = {}
        for _ in range(n):
            _need(buf, pos, 4)
            kn = U32.unpack_from(buf, pos)[0]
            pos += 4
            _need(buf, pos, kn)
            try:
                key = bytes(buf[pos:pos + kn]).decode()
            except UnicodeDecodeError as exc:
                raise ProtocolError("invalid UTF-8 key") from exc
            pos += kn
            mapping[key], pos = _dec(buf, pos, depth + 1)
        return mapping, pos
    raise ProtocolError(f"unknown value tag {tag}")
