"""Per-column value decoders, chosen once per TABLE_MAP column from a dispatch table.

A :class:`ColumnCodec` knows how to read one column's value from a row image:

* ``read(buf, pos) -> (value, new_pos)`` is the general reader: it checks the bytes it needs
  (raising :class:`TruncatedError`) and returns a lossless Python value;
* ``fmt`` is set when the value is exactly one ``struct`` code (integers, FLOAT, DOUBLE), so
  the row compiler in :mod:`binlog_core.rows` can unpack runs of such columns with a single
  precompiled ``Struct``;
* ``inline`` is set for length-prefixed strings and blobs, which the row compiler writes out
  as straight-line code;
* ``convert`` is set for other fixed-size values (temporal, DECIMAL, ENUM, ...): it makes the
  value from exactly ``size`` bytes, so the row compiler can cut them out within the same
  ``Struct`` run as the integers around them (``"5s"``) and convert them afterwards.

Values (physical decode first, charset and labels applied here because the file says them):

=================================  =====================================================
integers, YEAR, BIT                 ``int`` (signedness from the file; signed when unknown)
FLOAT, DOUBLE                       ``float`` (FLOAT is the float32 value widened)
NEWDECIMAL                          ``str`` of the exact digits, ``"-123.4500"``
DATE, TIME, DATETIME, TIMESTAMP     ``str`` as ``SELECT`` prints it (TIMESTAMP in UTC)
CHAR, VARCHAR, TEXT                 ``str`` in the column's charset; ``bytes`` for binary
                                    or undecodable text (with a warning)
BINARY(n)                           ``bytes``, trailing zero bytes restored to ``n``
ENUM, SET                           label ``str`` when the file carries labels, else the
                                    1-based index / bitmask ``int``
JSON (MySQL binary)                 ``str``, as MySQL prints it
GEOMETRY                            ``bytes``: SRID (4 bytes LE) + WKB
VECTOR                              ``tuple[float, ...]``
=================================  =====================================================

Row image value layouts: MySQL ``sql/field.cc`` ``Field_*::pack``/``unpack`` and
``sql/log_event.cc`` ``log_event_print_value``.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from struct import Struct
from typing import Final

from binlog_core import temporal
from binlog_core.charsets import BINARY_COLLATION, text_decoder
from binlog_core.constants import ColumnType, Flavor
from binlog_core.decimal import decimal_converter, decimal_reader
from binlog_core.errors import DecompressionError, MalformedError, TruncatedError, UnsupportedError
from binlog_core.json_binary import decode_json
from binlog_core.table_map import BLOB_COMPRESSED, VARCHAR_COMPRESSED, Column


class _Absent:
    """The marker for a column that is not part of a row image (MINIMAL/NOBLOB images)."""

    _instance: _Absent | None = None

    def __new__(cls) -> _Absent:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "ABSENT"

    def __bool__(self) -> bool:
        return False

    def __reduce__(self) -> str:
        return "ABSENT"


ABSENT: Final = _Absent()
"""Placeholder value of a column absent from a row image; ``None`` is SQL NULL."""


Reader = Callable[[bytes, int], tuple[object, int]]


@dataclass(frozen=True, slots=True)
class DecodeOptions:
    """Policies for values whose interpretation the file leaves open."""

    default_charset: str | None = "utf-8"
    """Codec for text columns when the file carries no charset (``None``: keep bytes, unreported).
    Bytes that do not decode in it are kept as bytes with a ``CharsetWarning``."""
    restore_binary_padding: bool = True
    """Pad BINARY(n) values back to n bytes (servers strip trailing zero bytes when logging)."""


@dataclass(frozen=True, slots=True)
class ColumnCodec:
    """How one column's value is read; built once per TABLE_MAP column."""

    column: Column
    read: Reader
    size: int | None = None  # fixed byte size, None when variable
    fmt: str | None = None  # single struct code giving the final value directly
    inline: tuple[str, int, Callable[[bytes], object] | None] | None = None
    """``(kind, len_prefix_bytes, convert)`` for length-prefixed values; kind ``"text"`` means
    ``convert`` decodes a charset and returns the bytes unchanged when it cannot."""
    convert: Callable[[bytes], object] | None = None
    """For fixed-size values: the value from exactly ``size`` bytes (raising what ``read`` raises)."""
    default_charset: str | None = None
    """Text of a column the file names no charset for: the codec it is decoded with
    (``DecodeOptions.default_charset``), for the warning when its bytes do not decode in it;
    ``None`` for every other column and when bytes were asked for."""


def need(buf: bytes, pos: int, n: int) -> None:
    """The row decoder's bounds check for one value."""
    if pos + n > len(buf):
        raise TruncatedError(f"value needs {n} bytes at +{pos}, only {max(len(buf) - pos, 0)} remain")


def _struct_reader(fmt: str) -> Reader:
    s = Struct("<" + fmt)
    unpack, size = s.unpack_from, s.size

    def read(buf: bytes, pos: int) -> tuple[object, int]:
        need(buf, pos, size)
        return unpack(buf, pos)[0], pos + size

    return read


def _fixed(column: Column, fmt: str) -> ColumnCodec:
    return ColumnCodec(column, _struct_reader(fmt), Struct("<" + fmt).size, fmt)


_INT_CODES = {
    ColumnType.TINY: "b",
    ColumnType.SHORT: "h",
    ColumnType.LONG: "i",
    ColumnType.LONGLONG: "q",
}


def _integer(column: Column, _ctx: _Context) -> ColumnCodec:
    code = _INT_CODES[ColumnType(column.type)]
    return _fixed(column, code.upper() if column.unsigned else code)


def _int24(column: Column, _ctx: _Context) -> ColumnCodec:
    signed = not column.unsigned

    def read(buf: bytes, pos: int) -> tuple[object, int]:
        need(buf, pos, 3)
        return int.from_bytes(buf[pos : pos + 3], "little", signed=signed), pos + 3

    def convert(raw: bytes) -> object:
        return int.from_bytes(raw, "little", signed=signed)

    return ColumnCodec(column, read, 3, convert=convert)


def _float(column: Column, _ctx: _Context) -> ColumnCodec:
    return _fixed(column, "f")


def _double(column: Column, _ctx: _Context) -> ColumnCodec:
    return _fixed(column, "d")


def _year(column: Column, _ctx: _Context) -> ColumnCodec:
    def read(buf: bytes, pos: int) -> tuple[object, int]:
        need(buf, pos, 1)
        v = buf[pos]
        return (v + 1900 if v else 0), pos + 1

    def convert(raw: bytes) -> object:
        v = raw[0]
        return v + 1900 if v else 0

    return ColumnCodec(column, read, 1, convert=convert)


def _bit(column: Column, _ctx: _Context) -> ColumnCodec:
    n = (column.bits + 7) // 8

    def read(buf: bytes, pos: int) -> tuple[object, int]:
        need(buf, pos, n)
        return int.from_bytes(buf[pos : pos + n], "big"), pos + n

    def convert(raw: bytes) -> object:
        return int.from_bytes(raw, "big")

    return ColumnCodec(column, read, n, convert=convert)


def _newdecimal(column: Column, _ctx: _Context) -> ColumnCodec:
    if column.precision == 0 or column.scale > column.precision:
        raise MalformedError(f"DECIMAL({column.precision},{column.scale}) is impossible")
    read, size = decimal_reader(column.precision, column.scale)
    return ColumnCodec(column, read, size, convert=decimal_converter(column.precision, column.scale))


def _date(column: Column, _ctx: _Context) -> ColumnCodec:
    date_text = temporal.date_text

    def read(buf: bytes, pos: int) -> tuple[object, int]:
        need(buf, pos, 3)
        return date_text(int.from_bytes(buf[pos : pos + 3], "little")), pos + 3

    def convert(raw: bytes) -> object:
        return date_text(int.from_bytes(raw, "little"))

    return ColumnCodec(column, read, 3, convert=convert)


def _old_time(column: Column, _ctx: _Context) -> ColumnCodec:
    def read(buf: bytes, pos: int) -> tuple[object, int]:
        need(buf, pos, 3)
        return temporal.old_time_text(int.from_bytes(buf[pos : pos + 3], "little", signed=True)), pos + 3

    return ColumnCodec(column, read, 3)


def _old_datetime(column: Column, _ctx: _Context) -> ColumnCodec:
    u64 = Struct("<Q").unpack_from

    def read(buf: bytes, pos: int) -> tuple[object, int]:
        need(buf, pos, 8)
        return temporal.old_datetime_text(u64(buf, pos)[0]), pos + 8

    return ColumnCodec(column, read, 8)


def _old_timestamp(column: Column, _ctx: _Context) -> ColumnCodec:
    u32 = Struct("<I").unpack_from
    text = temporal.timestamp_text

    def read(buf: bytes, pos: int) -> tuple[object, int]:
        need(buf, pos, 4)
        return text(u32(buf, pos)[0]), pos + 4

    return ColumnCodec(column, read, 4)


_TEMPORAL2_CONVERTERS: dict[Callable[[bytes, int, int], str], Callable[[int], Callable[[bytes], str]]] = {
    temporal.datetime2_text: temporal.datetime2_converter,
    temporal.timestamp2_text: temporal.timestamp2_converter,
}
"""Renderers with a specialised per-precision converter from raw bytes."""


def _temporal2(base: int, render: Callable[[bytes, int, int], str]) -> Callable[[Column, _Context], ColumnCodec]:
    def make(column: Column, _ctx: _Context) -> ColumnCodec:
        fsp = column.fsp
        if fsp > 6:
            raise MalformedError(f"fractional-second precision {fsp} > 6")
        size = base + temporal.FRAC_BYTES[fsp]

        def read(buf: bytes, pos: int) -> tuple[object, int]:
            need(buf, pos, size)
            return render(buf, pos, fsp), pos + size

        convert = _TEMPORAL2_CONVERTERS.get(render)
        if convert is not None:
            return ColumnCodec(column, read, size, convert=convert(fsp))

        def convert_any(raw: bytes) -> object:
            return render(raw, 0, fsp)

        return ColumnCodec(column, read, size, convert=convert_any)

    return make


def _length_prefixed(
    column: Column,
    prefix: int,
    convert: Callable[[bytes], object] | None,
    kind: str,
    default_charset: str | None = None,
) -> ColumnCodec:
    """A value stored as a little-endian length of ``prefix`` bytes, then that many bytes."""
    if prefix not in (1, 2, 3, 4):
        raise MalformedError(f"length prefix of {prefix} bytes is impossible")

    def read(buf: bytes, pos: int) -> tuple[object, int]:
        need(buf, pos, prefix)
        n = buf[pos] if prefix == 1 else int.from_bytes(buf[pos : pos + prefix], "little")
        pos += prefix
        need(buf, pos, n)
        raw = buf[pos : pos + n]
        return (convert(raw) if convert is not None else raw), pos + n

    return ColumnCodec(column, read, None, None, (kind, prefix, convert), default_charset=default_charset)


def _text_or_binary(column: Column, ctx: _Context, prefix: int, pad_to: int = 0) -> ColumnCodec:
    """A length-prefixed character or binary string: decoded text, or bytes (padded for BINARY(n)).

    Text decoders return the bytes unchanged when they do not decode (or the charset has no
    codec); the row decoder turns such values into :class:`~binlog_core.rows.UndecodedText`
    with a warning -- also when the file names no charset and the bytes do not decode in the
    default one (``DecodeOptions.default_charset``; with ``None`` text stays bytes, unwarned).
    """
    collation = column.collation
    if collation == BINARY_COLLATION:
        pad = None
        if pad_to and ctx.options.restore_binary_padding:
            pad = lambda raw: raw.ljust(pad_to, b"\x00")  # noqa: E731
        return _length_prefixed(column, prefix, pad, "bytes")
    default = ctx.options.default_charset
    return _length_prefixed(
        column, prefix, text_decoder(collation, default), "text", default if collation is None else None
    )


def _string(column: Column, ctx: _Context) -> ColumnCodec:
    """CHAR/BINARY (real type STRING): 1-byte length below 256 bytes, else 2."""
    return _text_or_binary(column, ctx, 1 if column.length < 256 else 2, column.length)


def _varchar(column: Column, ctx: _Context) -> ColumnCodec:
    return _text_or_binary(column, ctx, 1 if column.length < 256 else 2)


def _blob(column: Column, ctx: _Context) -> ColumnCodec:
    """BLOB/TEXT: ``pack_length`` bytes of length (1 TINY, 2 BLOB, 3 MEDIUM, 4 LONG)."""
    return _text_or_binary(column, ctx, column.pack_length)


def _geometry(column: Column, _ctx: _Context) -> ColumnCodec:
    return _length_prefixed(column, column.pack_length, None, "bytes")


def _json(column: Column, _ctx: _Context) -> ColumnCodec:
    return _length_prefixed(column, column.pack_length, decode_json, "bytes")


def _vector(column: Column, _ctx: _Context) -> ColumnCodec:
    def floats(raw: bytes) -> object:
        if len(raw) % 4:
            raise MalformedError(f"VECTOR value of {len(raw)} bytes is not a whole number of floats")
        return struct.unpack(f"<{len(raw) // 4}f", raw)

    return _length_prefixed(column, column.pack_length or 4, floats, "bytes")


def _enum(column: Column, _ctx: _Context) -> ColumnCodec:
    """ENUM: 1 or 2 bytes LE holding the 1-based index (0 is the error value ``''``)."""
    n = column.length
    if n not in (1, 2):
        raise MalformedError(f"ENUM stored in {n} bytes")
    labels = column.enum_values

    def read(buf: bytes, pos: int) -> tuple[object, int]:
        need(buf, pos, n)
        index = buf[pos] if n == 1 else int.from_bytes(buf[pos : pos + 2], "little")
        if labels is None:
            return index, pos + n
        if index > len(labels):
            raise MalformedError(f"ENUM index {index} beyond its {len(labels)} labels")
        return (labels[index - 1] if index else ""), pos + n

    if labels is not None and n == 1:  # the common case, without the reader
        num_labels = len(labels)

        def convert(raw: bytes) -> object:
            index = raw[0]
            if index > num_labels:
                raise MalformedError(f"ENUM index {index} beyond its {num_labels} labels")
            return labels[index - 1] if index else ""

    else:

        def convert(raw: bytes) -> object:
            return read(raw, 0)[0]

    return ColumnCodec(column, read, n, convert=convert)


def _set(column: Column, _ctx: _Context) -> ColumnCodec:
    """SET: 1-8 bytes LE, one bit per member in declaration order."""
    n = column.length
    if not 1 <= n <= 8:
        raise MalformedError(f"SET stored in {n} bytes")
    labels = column.set_values

    def read(buf: bytes, pos: int) -> tuple[object, int]:
        need(buf, pos, n)
        bits = int.from_bytes(buf[pos : pos + n], "little")
        if labels is None:
            return bits, pos + n
        if bits >> len(labels):
            raise MalformedError(f"SET bits {bits:#x} beyond its {len(labels)} members")
        return ",".join(label for i, label in enumerate(labels) if bits >> i & 1), pos + n

    return ColumnCodec(column, read, n)


def inflate_column(raw: bytes, limit: int) -> bytes:
    """MariaDB column compression (``sql/field_comp.cc``)::

    header u8: 0x80 compressed | 0x08 raw deflate (no zlib wrapper) | len_length:3
    [original length, big-endian, len_length bytes] | zlib data
    header without 0x80: the value follows uncompressed.
    """
    if not raw:
        return raw
    header = raw[0]
    if not header & 0x80:
        return raw[1:]
    n = header & 7
    if len(raw) < 1 + n:
        raise TruncatedError(f"compressed column: {len(raw)} bytes, header needs {1 + n}")
    size = int.from_bytes(raw[1 : 1 + n], "big")
    if size > limit:
        raise DecompressionError(f"compressed column claims {size} bytes, more than its {limit}")
    try:
        inflater = zlib.decompressobj(-zlib.MAX_WBITS if header & 8 else zlib.MAX_WBITS)
        out = inflater.decompress(raw[1 + n :], size + 1)
    except zlib.error as exc:
        raise DecompressionError(f"compressed column: {exc}") from None
    if len(out) != size:
        raise DecompressionError(f"compressed column inflated to {len(out)} bytes, header says {size}")
    return out


def _compressed(column: Column, ctx: _Context) -> ColumnCodec:
    """MariaDB VARCHAR/BLOB ... COMPRESSED: a length-prefixed value holding compressed bytes."""
    varchar = column.type == VARCHAR_COMPRESSED
    prefix = (1 if column.length < 256 else 2) if varchar else column.pack_length
    limit = column.length if varchar else (1 << (8 * column.pack_length)) - 1
    binary = column.collation == BINARY_COLLATION
    after = None if binary else text_decoder(column.collation, ctx.options.default_charset)

    def convert(raw: bytes) -> object:
        plain = inflate_column(raw, limit)
        return after(plain) if after is not None else plain

    default = ctx.options.default_charset if column.collation is None else None
    return _length_prefixed(column, prefix, convert, "bytes" if binary else "text", default)


def _null_type(column: Column, _ctx: _Context) -> ColumnCodec:
    return ColumnCodec(column, lambda _buf, pos: (None, pos), 0)


@dataclass(frozen=True, slots=True)
class _Context:
    options: DecodeOptions
    flavor: Flavor


CODEC_FACTORIES: dict[int, Callable[[Column, _Context], ColumnCodec]] = {
    ColumnType.TINY: _integer,
    ColumnType.SHORT: _integer,
    ColumnType.LONG: _integer,
    ColumnType.LONGLONG: _integer,
    ColumnType.INT24: _int24,
    ColumnType.FLOAT: _float,
    ColumnType.DOUBLE: _double,
    ColumnType.NEWDECIMAL: _newdecimal,
    ColumnType.YEAR: _year,
    ColumnType.BIT: _bit,
    ColumnType.DATE: _date,
    ColumnType.NEWDATE: _date,
    ColumnType.TIME: _old_time,
    ColumnType.DATETIME: _old_datetime,
    ColumnType.TIMESTAMP: _old_timestamp,
    ColumnType.TIME2: _temporal2(3, temporal.time2_text),
    ColumnType.DATETIME2: _temporal2(5, temporal.datetime2_text),
    ColumnType.TIMESTAMP2: _temporal2(4, temporal.timestamp2_text),
    ColumnType.STRING: _string,
    ColumnType.VARCHAR: _varchar,
    ColumnType.VAR_STRING: _varchar,
    ColumnType.BLOB: _blob,
    ColumnType.TINY_BLOB: _blob,
    ColumnType.MEDIUM_BLOB: _blob,
    ColumnType.LONG_BLOB: _blob,
    ColumnType.GEOMETRY: _geometry,
    ColumnType.JSON: _json,
    ColumnType.VECTOR: _vector,
    ColumnType.ENUM: _enum,
    ColumnType.SET: _set,
    ColumnType.NULL: _null_type,
    VARCHAR_COMPRESSED: _compressed,
    BLOB_COMPRESSED: _compressed,
}
"""Real column type -> factory of its codec."""


def codec_for(column: Column, options: DecodeOptions, flavor: Flavor) -> ColumnCodec:
    """Choose and bind the decoder of one column (once per TABLE_MAP).

    Errors name the column (``col 3 price``): its type has no decoder, or its metadata is
    impossible for the type.
    """
    make = CODEC_FACTORIES.get(column.type)
    try:
        if make is None:
            raise UnsupportedError(f"column type {column.type_name} ({column.type}) in a row image")
        return make(column, _Context(options, flavor))
    except (MalformedError, UnsupportedError) as exc:
        raise exc.within(f"col {column.index + 1} {column.display_name}") from None
