"""Protocol-buffer wire format, decoded by field number with no generated classes.

jaxlib ships no `hlo_pb2` and TpuGraphs' raw records need TensorFlow's protos, so hlotune reads
both by the field numbers of the public schemas (docs/format.md). A message decodes to a dict
from field number to the list of its values: ints for varint and fixed fields, bytes for
length-delimited ones (sub-messages, strings, packed repeated scalars).
"""

from __future__ import annotations

from collections.abc import Container, Iterator

from hlotune.errors import HlotuneError

Fields = dict[int, list]

_VARINT, _FIXED64, _LENGTH, _FIXED32 = 0, 1, 2, 5
_TWO_64 = 1 << 64
_TWO_63 = 1 << 63


class WireError(HlotuneError):
    """The bytes are not a well-formed protocol-buffer message."""


def decode(buf: bytes) -> Fields:
    """Decode one message level; nested messages stay as bytes until asked for."""
    fields: Fields = {}
    pos, end = 0, len(buf)
    try:
        while pos < end:
            key = buf[pos]  # one-byte keys and values inline: the common case, and hot
            if key < 0x80:
                pos += 1
            else:
                key, pos = _varint(buf, pos)
            number, wire_type = key >> 3, key & 7
            if number == 0:
                raise WireError("field number 0")
            if wire_type == _VARINT:
                value = buf[pos]
                if value < 0x80:
                    pos += 1
                else:
                    value, pos = _varint(buf, pos)
            elif wire_type == _LENGTH:
                size = buf[pos]
                if size < 0x80:
                    pos += 1
                else:
                    size, pos = _varint(buf, pos)
                if pos + size > end:
                    raise WireError("length-delimited field runs past the end")
                value, pos = buf[pos : pos + size], pos + size
            elif wire_type == _FIXED64 or wire_type == _FIXED32:
                width = 8 if wire_type == _FIXED64 else 4
                if pos + width > end:
                    raise WireError("fixed-width field runs past the end")
                value, pos = int.from_bytes(buf[pos : pos + width], "little"), pos + width
            else:
                raise WireError(f"unsupported wire type {wire_type} in field {number}")
            fields.setdefault(number, []).append(value)
    except IndexError:
        raise WireError("message is truncated") from None
    return fields


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    byte = buf[pos]
    if byte < 0x80:
        return byte, pos + 1
    result, shift = byte & 0x7F, 7
    while True:
        pos += 1
        byte = buf[pos]
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result, pos + 1
        shift += 7
        if shift > 63:
            raise WireError("varint longer than 10 bytes")


def _signed(value: int) -> int:
    """int32/int64 fields store negatives as 64-bit two's complement."""
    return value - _TWO_64 if value >= _TWO_63 else value


def ints(fields: Fields, number: int, *, signed: bool = True) -> list[int]:
    """A repeated integer field, accepting both packed and unpacked encodings."""
    out: list[int] = []
    for value in fields.get(number, ()):
        if isinstance(value, int):
            out.append(value)
        elif value.isascii():  # every byte below 0x80: each byte is one whole varint
            out.extend(value)
        else:
            pos, end = 0, len(value)
            try:
                while pos < end:
                    item, pos = _varint(value, pos)
                    out.append(item)
            except IndexError:
                raise WireError(f"packed field {number} is truncated") from None
    if signed and out and max(out) >= _TWO_63:
        return [_signed(v) for v in out]
    return out


def integer(fields: Fields, number: int, default: int = 0, *, signed: bool = True) -> int:
    """A singular integer field (the last value wins, as in protobuf)."""
    values = fields.get(number)
    if not values:
        return default
    value = values[-1]
    if not isinstance(value, int):
        raise WireError(f"field {number} should be an integer")
    return _signed(value) if signed else value


def message(fields: Fields, number: int) -> Fields | None:
    """A singular sub-message, or None when absent."""
    values = fields.get(number)
    return None if not values else decode(_bytes(values[-1], number))


def messages(fields: Fields, number: int) -> list[Fields]:
    """A repeated sub-message field."""
    return [decode(_bytes(v, number)) for v in fields.get(number, ())]


def iter_messages(fields: Fields, number: int) -> Iterator[Fields]:
    """`messages`, decoded one at a time so that only one is alive at once."""
    for value in fields.get(number, ()):
        yield decode(_bytes(value, number))


def raw(fields: Fields, number: int) -> bytes | None:
    """A singular length-delimited field, undecoded (e.g. to cache what it decodes to)."""
    values = fields.get(number)
    return None if not values else _bytes(values[-1], number)


def string(fields: Fields, number: int) -> str:
    values = fields.get(number)
    if not values:
        return ""
    try:
        return _bytes(values[-1], number).decode("utf-8")
    except UnicodeDecodeError:
        raise WireError(f"field {number} is not a UTF-8 string") from None


def _bytes(value: int | bytes, number: int) -> bytes:
    if isinstance(value, int):
        raise WireError(f"field {number} should be length-delimited")
    return value


# Encoding: used to build raw records (tests, converters) with the same schema.


def encode_varint(value: int) -> bytes:
    value &= _TWO_64 - 1
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def field_varint(number: int, value: int) -> bytes:
    return encode_varint(number << 3 | _VARINT) + encode_varint(value)


def field_bytes(number: int, payload: bytes) -> bytes:
    return encode_varint(number << 3 | _LENGTH) + encode_varint(len(payload)) + payload


def field_packed(number: int, values: list[int]) -> bytes:
    return field_bytes(number, b"".join(encode_varint(v) for v in values))


def partition(buf: bytes, numbers: Container[int]) -> tuple[bytes, Fields]:
    """Split a message into the raw bytes of the fields not in `numbers` and the decoded values
    of those in it. Rewriting a few fields then keeps every other byte (and wire type) exact."""
    kept: list[bytes] = []
    taken: Fields = {}
    pos, end = 0, len(buf)
    try:
        while pos < end:
            start = pos
            key, pos = _varint(buf, pos)
            number = key >> 3
            value, pos = _field_value(buf, pos, number, key & 7)
            if number in numbers:
                taken.setdefault(number, []).append(value)
            else:
                kept.append(buf[start:pos])
    except IndexError:
        raise WireError("message is truncated") from None
    return b"".join(kept), taken


def _field_value(buf: bytes, pos: int, number: int, wire_type: int) -> tuple[int | bytes, int]:
    """One field's value after its key, as `decode` reads it, and the position after it."""
    if number == 0:
        raise WireError("field number 0")
    if wire_type == _VARINT:
        return _varint(buf, pos)
    if wire_type == _LENGTH:
        size, pos = _varint(buf, pos)
        if pos + size > len(buf):
            raise WireError("length-delimited field runs past the end")
        return buf[pos : pos + size], pos + size
    if wire_type == _FIXED64 or wire_type == _FIXED32:
        width = 8 if wire_type == _FIXED64 else 4
        if pos + width > len(buf):
            raise WireError("fixed-width field runs past the end")
        return int.from_bytes(buf[pos : pos + width], "little"), pos + width
    raise WireError(f"unsupported wire type {wire_type} in field {number}")
