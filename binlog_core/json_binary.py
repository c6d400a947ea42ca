"""MySQL's binary JSON (5.7+), rendered exactly as MySQL prints it, and the JSON diffs of partial updates.

A JSON column value in a row image is one document in MySQL's binary format
(``sql-common/json_binary.h``/``json_binary.cc``,
https://github.com/mysql/mysql-server/blob/trunk/sql-common/json_binary.h)::

    doc    ::= type:u8 value
    object ::= count size key-entry* value-entry* key* value*
    array  ::= count size value-entry* value*

    small container (types 0x00, 0x02): count, size and offsets are u16 LE
    large container (types 0x01, 0x03): count, size and offsets are u32 LE

    +-------+------+--------------------------+-------------------------+------+--------+
    | count | size | key entries (objects)    | value entries           | keys | values |
    |       |      | ofs:u16/u32  len:u16     | type:u8  ofs-or-inline  |      |        |
    +-------+------+--------------------------+-------------------------+------+--------+
    ^ offsets (of keys and of values) count from here; ``size`` covers the whole box

    inlined in the value entry: literals (0x04: 0 null, 1 true, 2 false), int16 (0x05),
    uint16 (0x06), and in large containers also int32 (0x07) and uint32 (0x08)
    stored at the offset: int32/uint32 (small containers), int64 (0x09), uint64 (0x0a),
    double (0x0b, IEEE LE), string (0x0c), opaque (0x0f), nested containers

    string ::= varlen utf8mb4-bytes
    opaque ::= field-type:u8 varlen bytes        (a MySQL column type and its value)
    varlen ::= 1-5 bytes, 7 bits each, low bits first; bit 7 set = another byte follows

Every offset and size is checked against the enclosing container before use: a top-level
value that runs past the end of the data is :class:`TruncatedError`; a value that runs past
its container or points outside it (or into the entries, or onto another value) is
:class:`MalformedError`, and so is a byte sequence MySQL never writes.  Nesting
is limited to 100 containers, like MySQL's ``JSON_DOCUMENT_MAX_DEPTH``.  Bytes after the
top-level value are malformed: MySQL's ``parse_binary`` would skip them, but its serializer
never writes them (a document's outer size is kept even when a partial update shrinks a value
inside it), so they mean the value's length is wrong.

Text follows ``Json_wrapper::to_string`` (``sql-common/json_dom.cc`` ``wrapper_to_string``,
https://github.com/mysql/mysql-server/blob/trunk/sql-common/json_dom.cc), which is what
``SELECT json_col`` prints:

* objects ``{"k": v, "k2": v2}`` with keys in stored order (MySQL stores them sorted by
  length, then bytes), arrays ``[1, 2]``;
* strings double-quoted; ``"`` ``\\`` ``\\b`` ``\\f`` ``\\n`` ``\\r`` ``\\t`` escaped, other
  control characters as ``\\u00xx``, everything else (non-ASCII too) as is;
* integers in decimal; doubles as ``my_gcvt`` prints them (the shortest text that reads back
  as the same double, plain from 1e-15 to below 1e15 and otherwise with a bare exponent:
  ``0.1``, ``0.00000015``, ``1e15``, ``2.5e-16``), with ``.0`` appended when that text has
  neither ``.`` nor ``e`` (``1.0``, ``100000000000000.0``);
* opaque DECIMAL as its number (``3.14``), DATE as ``"2015-01-15"``, TIME as
  ``"23:24:25.000000"``, DATETIME and TIMESTAMP as ``"2015-01-15 23:24:25.000000"`` (always
  six fraction digits), VAR_STRING as a plain string, every other type as
  ``"base64:typeNN:<base64>"`` with MySQL's line break after every 76 base64 characters
  (printed escaped, ``\\n``).

An empty value (zero bytes) is the JSON ``null`` literal: ``parse_binary`` reads it so, and
MySQL writes one for a NOT NULL JSON column given NULL under INSERT IGNORE or a non-strict
``sql_mode``.

PARTIAL_UPDATE_ROWS events carry JSON columns as diff vectors instead of documents
(``sql-common/json_diff.cc`` ``Json_diff_vector::write_binary``,
https://github.com/mysql/mysql-server/blob/trunk/sql-common/json_diff.cc)::

    diff ::= operation:u8 path-length:packed path:utf8 [value-length:packed value:binary-json]
    operation: 0 REPLACE, 1 INSERT, 2 REMOVE (REMOVE has no value)

The row image's 4-byte length in front of the diffs is read by the rows decoder.
:func:`render_json_diffs` prints them as ``mysqlbinlog -vv`` does (``print_json_diff`` in
``sql/log_event.cc``, https://github.com/mysql/mysql-server/blob/trunk/sql/log_event.cc).
"""

from __future__ import annotations

import base64
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import IntEnum
from itertools import pairwise
from struct import Struct
from typing import Any, Final

from binlog_core.constants import ColumnType
from binlog_core.cursor import F64, I16, I32, I64, U8, U16, U32, U64, Cursor
from binlog_core.decimal import decimal_size, decode_decimal
from binlog_core.errors import BinlogError, MalformedError, TruncatedError

MAX_DEPTH: Final = 100
"""Deepest nesting of arrays and objects MySQL accepts (``JSON_DOCUMENT_MAX_DEPTH``)."""


class JsonbType(IntEnum):
    """The type byte of a binary JSON value (``# orig: JSONB_TYPE_*``)."""

    SMALL_OBJECT = 0x00
    LARGE_OBJECT = 0x01
    SMALL_ARRAY = 0x02
    LARGE_ARRAY = 0x03
    LITERAL = 0x04
    INT16 = 0x05
    UINT16 = 0x06
    INT32 = 0x07
    UINT32 = 0x08
    INT64 = 0x09
    UINT64 = 0x0A
    DOUBLE = 0x0B
    STRING = 0x0C
    OPAQUE = 0x0F


class JsonDiffOperation(IntEnum):
    """The operation byte of one JSON diff (``# orig: enum_json_diff_operation``)."""

    REPLACE = 0
    INSERT = 1
    REMOVE = 2


_LITERALS: Final = {0x00: "null", 0x01: "true", 0x02: "false"}  # orig: JSONB_*_LITERAL

_Reader = Callable[[bytes, int, int, int, list[str]], int]
"""``read(buf, pos, end, depth, out) -> value end``: append the text of the value at ``pos``.

``end`` is where the enclosing container (or the data) ends; ``depth`` counts the containers
around the value.
"""


def _overrun(depth: int, message: str) -> BinlogError:
    """A value runs past its limit: the data ends early (top level) or it leaves its container."""
    if depth == 0:
        return TruncatedError(message)
    return MalformedError(f"{message} (the enclosing container ends first)")


# --- text -------------------------------------------------------------------------------------

_JSON_ESCAPES: Final = {i: f"\\u{i:04x}" for i in range(0x20)} | {
    0x08: "\\b",
    0x09: "\\t",
    0x0A: "\\n",
    0x0C: "\\f",
    0x0D: "\\r",
    0x22: '\\"',
    0x5C: "\\\\",
}
"""``double_quote``/``escape_character`` in ``json_dom.cc``: lowercase hex for other controls."""

_NEEDS_ESCAPE: Final = re.compile(r'[\x00-\x1f"\\]')


def _quote(text: str) -> str:
    """A JSON string literal as MySQL writes it."""
    if _NEEDS_ESCAPE.search(text) is None:
        return f'"{text}"'
    return f'"{text.translate(_JSON_ESCAPES)}"'


def _utf8(raw: bytes, what: str) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise MalformedError(f"{what} is not valid UTF-8 (byte {exc.start}): {raw[:32].hex(' ')}") from None


_MAX_DECPT_FOR_F_FORMAT: Final = 15  # orig: DBL_DIG


def double_text(value: float) -> str:
    """A JSON double as MySQL prints it: ``my_gcvt(value, MY_GCVT_ARG_DOUBLE, 34)``, then ``.0`` if integral-looking.

    ``my_gcvt`` asks ``dtoa`` (mode 4, 34 digits) for the shortest digits that read back as
    the same double -- the digits of Python's ``repr`` -- and places them like ``%g``
    (``strings/dtoa.cc``).  With the 34-character field of ``MY_GCVT_MAX_FIELD_WIDTH``
    (DBL_DIG + 4 + max(5, MAX_DECPT_FOR_F_FORMAT)) no digit is ever cut, and the choice
    reduces to: plain notation when the decimal exponent ``decpt`` (the value is
    ``0.DIGITS * 10**decpt``) is in ``-14..15``, or is 16 with 17 digits; otherwise
    ``D.DDDe[-]X`` with no ``+`` and no zero padding in the exponent.  ``wrapper_to_string``
    then appends ``.0`` when the text has neither ``.`` nor ``e``.

    >>> [double_text(x) for x in (1.0, -0.5, 1e15, 123456789012345.0, 1e-15, 1e-16, 2.5e300, -0.0)]
    ['1.0', '-0.5', '1e15', '123456789012345.0', '0.000000000000001', '1e-16', '2.5e300', '-0.0']
    """
    if not math.isfinite(value):
        raise MalformedError(f"JSON double {value!r} is not a finite number")
    text = repr(value)
    sign = ""
    if text[0] == "-":
        sign, text = "-", text[1:]
    mantissa, _, exponent = text.partition("e")
    whole, _, fraction = mantissa.partition(".")
    digits = whole + fraction
    decpt = len(whole) + (int(exponent) if exponent else 0)
    significant = digits.lstrip("0")
    decpt -= len(digits) - len(significant)
    digits = significant.rstrip("0")
    if not digits:  # zero: dtoa gives "0" with decpt 1
        digits, decpt = "0", 1
    n = len(digits)
    if decpt > -_MAX_DECPT_FOR_F_FORMAT and (decpt <= _MAX_DECPT_FOR_F_FORMAT or n > decpt):
        if decpt <= 0:
            text = "0." + "0" * -decpt + digits
        elif decpt < n:
            text = digits[:decpt] + "." + digits[decpt:]
        else:
            text = digits + "0" * (decpt - n) + ".0"
        return sign + text
    exp = decpt - 1
    text = digits[0] + ("." + digits[1:] if n > 1 else "") + "e" + str(exp)
    return sign + text


# --- temporal opaque values ------------------------------------------------------------------
#
# DATE, TIME, DATETIME and TIMESTAMP inside JSON are opaque values holding MySQL's 8-byte
# "packed" temporal (``Json_datetime::to_packed``: int8store of TIME_to_longlong_packed;
# mysys/my_time.cc ``TIME_from_longlong_*_packed``)::
#
#     int64 LE; a negative TIME is the negated packed value of its magnitude
#     |packed| = intpart << 24 | microseconds (24 bits)
#     DATETIME, TIMESTAMP, DATE  intpart = ((year * 13 + month) << 5 | day) << 17 | hms
#     TIME                       intpart = hms
#     hms = hour << 12 | minute << 6 | second   (hour: 5 bits in a DATETIME, 10 in a TIME)
#
# Printed by ``my_TIME_to_str(t, 6)``: six fraction digits for TIME and DATETIME, none for DATE.

_MICROS_BITS: Final = 24
_MAX_TIME_SECONDS: Final = 838 * 3600 + 59 * 60 + 59  # TIME_MAX_VALUE 838:59:59


def _datetime_fields(packed: int, what: str) -> tuple[int, int, int, int, int, int, int]:
    if packed < 0:
        raise MalformedError(f"JSON {what} packed value {packed} is negative")
    micros = packed & 0xFFFFFF
    intpart = packed >> _MICROS_BITS
    ymd, hms = intpart >> 17, intpart & 0x1FFFF
    year, month = divmod(ymd >> 5, 13)
    day = ymd & 31
    hour, minute, second = hms >> 12, (hms >> 6) & 63, hms & 63
    if year > 9999 or hour > 23 or minute > 59 or second > 59 or micros > 999_999:
        raise MalformedError(
            f"JSON {what} packed value {packed} is out of range "
            f"({year}-{month}-{day} {hour}:{minute}:{second}.{micros})"
        )
    return year, month, day, hour, minute, second, micros


def date_from_packed(packed: int) -> str:
    """A JSON DATE from its packed value (``TIME_from_longlong_date_packed``); any time part is not shown.

    >>> date_from_packed(0x198BE40000000000)
    '2012-03-18'
    """
    year, month, day, *_ = _datetime_fields(packed, "DATE")
    return f"{year:04d}-{month:02d}-{day:02d}"


def datetime_from_packed(packed: int) -> str:
    """A JSON DATETIME or TIMESTAMP from its packed value, with six fraction digits.

    >>> datetime_from_packed(0x198BE4B7AD000000)
    '2012-03-18 11:30:45.000000'
    """
    year, month, day, hour, minute, second, micros = _datetime_fields(packed, "DATETIME")
    return f"{year:04d}-{month:02d}-{day:02d} {hour:02d}:{minute:02d}:{second:02d}.{micros:06d}"


def time_from_packed(packed: int) -> str:
    """A JSON TIME from its packed value (``TIME_from_longlong_time_packed``), with six fraction digits.

    >>> time_from_packed(0x0577EE09FBF1), time_from_packed(-(0x0577EE09FBF1))
    ('87:31:46.654321', '-87:31:46.654321')
    """
    sign = ""
    if packed < 0:
        sign, packed = "-", -packed
    micros = packed & 0xFFFFFF
    hms = packed >> _MICROS_BITS
    hour, minute, second = hms >> 12, (hms >> 6) & 63, hms & 63
    beyond_max = (hour * 3600 + minute * 60 + second, micros) > (_MAX_TIME_SECONDS, 0)
    if minute > 59 or second > 59 or micros > 999_999 or beyond_max:
        raise MalformedError(f"JSON TIME packed value {packed} is out of range ({hour}:{minute}:{second}.{micros})")
    return f"{sign}{hour:02d}:{minute:02d}:{second:02d}.{micros:06d}"


# --- opaque values ---------------------------------------------------------------------------


class JsonWithOpaque(str):
    """The text of a document that holds MySQL opaque values (``decode_json`` returns one).

    DATE, TIME, DATETIME, TIMESTAMP and DECIMAL values (``JSON_OBJECT('d', CURDATE())``,
    ``CAST(... AS JSON)``) and other column types print as strings and numbers; read back from
    the text they become JSON strings and doubles, so the text alone does not rebuild the
    document.  It is an ordinary ``str`` otherwise (equal to, and rendered like, the plain text).
    """

    __slots__ = ()


class _OpaquePiece(str):
    """The printed text of one opaque value, as :func:`_read_opaque` appends it."""

    __slots__ = ()


def _opaque_decimal(data: bytes) -> str:
    """``Json_decimal::convert_from_binary``: precision u8, scale u8, then ``decimal2bin`` bytes."""
    if len(data) < 2:
        raise MalformedError(f"JSON DECIMAL of {len(data)} bytes has no precision and scale")
    precision, scale = data[0], data[1]
    if decimal_size(precision, scale) != len(data) - 2:
        raise MalformedError(
            f"JSON DECIMAL({precision},{scale}) needs {decimal_size(precision, scale)} bytes, has {len(data) - 2}"
        )
    return decode_decimal(data, 2, precision, scale)[0]


def _packed_temporal(render: Callable[[int], str], what: str) -> Callable[[bytes], str]:
    def opaque(data: bytes) -> str:
        if len(data) != 8:
            raise MalformedError(f"JSON {what} value has {len(data)} bytes, not the 8 of a packed temporal")
        (packed,) = I64.unpack_from(data, 0)
        return f'"{render(packed)}"'

    return opaque


def _opaque_var_string(data: bytes) -> str:
    """Strings stored as opaque VAR_STRING print as plain JSON strings (``wrapper_to_string``)."""
    return _quote(_utf8(data, "JSON opaque VAR_STRING value"))


def _opaque_base64(field_type: int, data: bytes) -> str:
    """``base64:typeNN:...`` with ``base64_encode``'s line break after every 76 characters."""
    encoded = base64.b64encode(data).decode("ascii")
    lines = "\\n".join(encoded[i : i + 76] for i in range(0, len(encoded), 76))
    return f'"base64:type{field_type}:{lines}"'


_OPAQUE_RENDERERS: Final[dict[int, Callable[[bytes], str]]] = {
    ColumnType.NEWDECIMAL: _opaque_decimal,
    ColumnType.DATE: _packed_temporal(date_from_packed, "DATE"),
    ColumnType.TIME: _packed_temporal(time_from_packed, "TIME"),
    ColumnType.DATETIME: _packed_temporal(datetime_from_packed, "DATETIME"),
    ColumnType.TIMESTAMP: _packed_temporal(datetime_from_packed, "TIMESTAMP"),
    ColumnType.VAR_STRING: _opaque_var_string,
}
"""Opaque field types MySQL prints as values (``Json_wrapper::type``); the rest print as base64."""


# --- scalars ---------------------------------------------------------------------------------


def _var_length(buf: bytes, pos: int, end: int, depth: int, what: str) -> tuple[int, int]:
    """A 1-5 byte length, 7 bits per byte, low bits first (``read_variable_length``); returns (length, pos after)."""
    length = 0
    for i in range(5):
        if pos + i >= end:
            raise _overrun(depth, f"{what}: length field ends after {i} bytes")
        byte = buf[pos + i]
        length |= (byte & 0x7F) << (7 * i)
        if not byte & 0x80:
            if length > 0xFFFFFFFF:
                raise MalformedError(f"{what}: length {length} does not fit in 32 bits")
            return length, pos + i + 1
    raise MalformedError(f"{what}: length field runs over 5 bytes")


def _fixed(st: Struct, name: str, render: Callable[[Any], str] = str) -> _Reader:
    """A reader for a fixed-size number stored at an offset (or at the top level)."""
    size = st.size

    def read(buf: bytes, pos: int, end: int, depth: int, out: list[str]) -> int:
        if pos + size > end:
            raise _overrun(depth, f"JSON {name} needs {size} bytes at +{pos}, {max(end - pos, 0)} remain")
        out.append(render(st.unpack_from(buf, pos)[0]))
        return pos + size

    return read


def _literal(byte: int) -> str:
    text = _LITERALS.get(byte)
    if text is None:
        raise MalformedError(f"JSON literal 0x{byte:02x} is none of null (0), true (1), false (2)")
    return text


def _read_string(buf: bytes, pos: int, end: int, depth: int, out: list[str]) -> int:
    length, start = _var_length(buf, pos, end, depth, "JSON string")
    stop = start + length
    if stop > end:
        raise _overrun(depth, f"JSON string of {length} bytes at +{start}, {end - start} remain")
    out.append(_quote(_utf8(buf[start:stop], "JSON string")))
    return stop


def _read_opaque(buf: bytes, pos: int, end: int, depth: int, out: list[str]) -> int:
    if pos >= end:
        raise _overrun(depth, f"JSON opaque value at +{pos}: no field type byte")
    field_type = buf[pos]
    length, start = _var_length(buf, pos + 1, end, depth, "JSON opaque value")
    stop = start + length
    if stop > end:
        raise _overrun(depth, f"JSON opaque value of {length} bytes at +{start}, {end - start} remain")
    data = buf[start:stop]
    render = _OPAQUE_RENDERERS.get(field_type)
    out.append(_OpaquePiece(render(data) if render is not None else _opaque_base64(field_type, data)))
    return stop


# --- containers ------------------------------------------------------------------------------

_SMALL_HEADER: Final = Struct("<HH")  # count, size
_LARGE_HEADER: Final = Struct("<II")
_SMALL_KEY_ENTRY: Final = Struct("<HH")  # key offset, key length
_LARGE_KEY_ENTRY: Final = Struct("<IH")

_Inlined = dict[int, tuple[Struct, Callable[[int], str]]]

_SMALL_INLINED: Final[_Inlined] = {
    JsonbType.LITERAL: (U8, _literal),
    JsonbType.INT16: (I16, str),
    JsonbType.UINT16: (U16, str),
}
"""Value-entry types whose value sits in the entry itself (``inlined_type``), small containers."""

_LARGE_INLINED: Final[_Inlined] = _SMALL_INLINED | {JsonbType.INT32: (I32, str), JsonbType.UINT32: (U32, str)}


def _container(large: bool, is_object: bool) -> _Reader:
    """The reader of one of the four container types."""
    header_struct = _LARGE_HEADER if large else _SMALL_HEADER
    key_entry = _LARGE_KEY_ENTRY if large else _SMALL_KEY_ENTRY
    offset_struct = U32 if large else U16
    inlined = _LARGE_INLINED if large else _SMALL_INLINED
    offset_size = 4 if large else 2
    key_entry_size = offset_size + 2 if is_object else 0
    value_entry_size = offset_size + 1
    opening, closing = ("{", "}") if is_object else ("[", "]")
    name = f"{'large' if large else 'small'} {'object' if is_object else 'array'}"

    def read(buf: bytes, pos: int, end: int, depth: int, out: list[str]) -> int:
        if depth >= MAX_DEPTH:
            raise MalformedError(f"JSON nests deeper than {MAX_DEPTH} arrays and objects")
        if pos + 2 * offset_size > end:
            raise _overrun(depth, f"JSON {name} header at +{pos}: {max(end - pos, 0)} bytes remain")
        count: int
        size: int
        count, size = header_struct.unpack_from(buf, pos)
        if size > end - pos:
            raise _overrun(depth, f"JSON {name} of {size} bytes at +{pos}, {end - pos} remain")
        header_size = 2 * offset_size + count * (key_entry_size + value_entry_size)
        if header_size > size:
            raise MalformedError(f"JSON {name} of {size} bytes cannot hold the entries of {count} elements")
        stop = pos + size
        keys_at = pos + 2 * offset_size
        entry = keys_at + count * key_entry_size
        spans: list[tuple[int, int]] = []
        out.append(opening)
        for i in range(count):
            if i:
                out.append(", ")
            step = f"[{i}]"
            try:
                if is_object:
                    key_offset, key_length = key_entry.unpack_from(buf, keys_at + i * key_entry_size)
                    if key_offset < header_size or key_offset + key_length > size:
                        raise MalformedError(
                            f"key at offset {key_offset} (+{key_length}) lies outside the keys of a {size}-byte {name}"
                        )
                    key = _utf8(buf[pos + key_offset : pos + key_offset + key_length], "JSON object key")
                    step = f".{key}"
                    out.append(_quote(key))
                    out.append(": ")
                value_type = buf[entry]
                inline = inlined.get(value_type)
                if inline is not None:
                    inline_struct, render = inline
                    out.append(render(inline_struct.unpack_from(buf, entry + 1)[0]))
                else:
                    reader = _READERS.get(value_type)
                    if reader is None:
                        raise MalformedError(f"unknown JSON value type 0x{value_type:02x}")
                    (offset,) = offset_struct.unpack_from(buf, entry + 1)
                    if offset < header_size or offset >= size:
                        raise MalformedError(f"value offset {offset} lies outside the values of a {size}-byte {name}")
                    start = pos + offset
                    spans.append((start, reader(buf, start, stop, depth + 1, out)))
            except BinlogError as exc:
                raise exc.within(step) from None
            entry += value_entry_size
        out.append(closing)
        if len(spans) > 1:
            spans.sort()
            for (_, prev_end), (start, _) in pairwise(spans):
                if start < prev_end:
                    raise MalformedError(f"two values of a JSON {name} share bytes at +{start}")
        return stop

    return read


_READERS: Final[dict[int, _Reader]] = {
    JsonbType.SMALL_OBJECT: _container(large=False, is_object=True),
    JsonbType.LARGE_OBJECT: _container(large=True, is_object=True),
    JsonbType.SMALL_ARRAY: _container(large=False, is_object=False),
    JsonbType.LARGE_ARRAY: _container(large=True, is_object=False),
    JsonbType.LITERAL: _fixed(U8, "literal", _literal),
    JsonbType.INT16: _fixed(I16, "int16"),
    JsonbType.UINT16: _fixed(U16, "uint16"),
    JsonbType.INT32: _fixed(I32, "int32"),
    JsonbType.UINT32: _fixed(U32, "uint32"),
    JsonbType.INT64: _fixed(I64, "int64"),
    JsonbType.UINT64: _fixed(U64, "uint64"),
    JsonbType.DOUBLE: _fixed(F64, "double", double_text),
    JsonbType.STRING: _read_string,
    JsonbType.OPAQUE: _read_opaque,
}
"""Value readers keyed by type byte (``parse_value``/``parse_scalar``)."""


def decode_json(data: bytes) -> str:
    """One binary JSON document as the text ``SELECT`` shows for it (a :class:`JsonWithOpaque`
    when the document holds opaque values).

    >>> decode_json(bytes.fromhex("00 0100 0c00 0b00 0100 050100 63".replace(" ", "")))
    '{"c": 1}'
    >>> decode_json(b"")
    'null'
    """
    if not data:
        return "null"  # parse_binary: an empty document is the null literal
    reader = _READERS.get(data[0])
    if reader is None:
        raise MalformedError(f"unknown JSON document type 0x{data[0]:02x}")
    out: list[str] = []
    end = reader(data, 1, len(data), 0, out)
    if end != len(data):
        raise MalformedError(f"{len(data) - end} bytes follow the JSON value that ends at +{end}")
    text = "".join(out)
    # an opaque value has the type byte 0x0f in its value entry (or as the document type)
    if b"\x0f" in data and any(type(piece) is _OpaquePiece for piece in out):
        return JsonWithOpaque(text)
    return text


# --- partial updates -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class JsonDiff:
    """One change of a partially updated JSON column: ``JSON_<operation>(col, path[, value])``.

    ``value`` is the new value as MySQL prints it (``None`` for ``REMOVE``).
    """

    operation: str
    path: str
    value: str | None


def decode_json_diff(data: bytes) -> list[JsonDiff]:
    """The diffs of one JSON column in a PARTIAL_UPDATE_ROWS after image (without their 4-byte length).

    >>> decode_json_diff(bytes.fromhex("00 05 242e616765 03 051a00".replace(" ", "")))
    [JsonDiff(operation='REPLACE', path='$.age', value='26')]
    """
    c = Cursor(data)
    diffs: list[JsonDiff] = []
    while not c.at_end():
        try:
            code = c.u8("JSON diff operation")
            if code > JsonDiffOperation.REMOVE:
                raise MalformedError(f"JSON diff operation {code} is none of REPLACE (0), INSERT (1), REMOVE (2)")
            operation = JsonDiffOperation(code)
            path = _utf8(c.packed_bytes("JSON diff path"), "JSON diff path")
            if not path.startswith("$"):
                raise MalformedError(f"JSON diff path {path[:40]!r} does not start with '$'")
            value = None
            if operation != JsonDiffOperation.REMOVE:
                value = decode_json(c.packed_bytes("JSON diff value"))
        except BinlogError as exc:
            raise exc.within(f"diff {len(diffs)}") from None
        diffs.append(JsonDiff(operation.name, path, value))
    return diffs


MYSQLBINLOG_LINE_SEPARATOR: Final = "\n###      "
"""What ``mysqlbinlog -vv`` puts between the parts of a multi-diff expression."""

_SQL_ESCAPES: Final = {i: f"\\x{i:02x}" for i in range(0x20)} | {
    0x08: "\\b",
    0x09: "\\t",
    0x0A: "\\n",
    0x0C: "\\f",
    0x0D: "\\r",
    0x27: "\\'",
    0x5C: "\\\\",
}
"""``get_quote_table`` in ``sql/log_event.cc`` (``my_b_write_quoted``)."""


def _sql_quote(text: str) -> str:
    return f"'{text.translate(_SQL_ESCAPES)}'"


def _unquote(json_string: str) -> str:
    """The text of a JSON string literal that :func:`_quote` wrote."""
    body = json_string[1:-1]
    if "\\" not in body:
        return body
    out: list[str] = []
    i = 0
    simple = {"b": "\b", "t": "\t", "n": "\n", "f": "\f", "r": "\r", '"': '"', "\\": "\\"}
    while i < len(body):
        ch = body[i]
        if ch != "\\":
            out.append(ch)
            i += 1
        elif body[i + 1] == "u":
            out.append(chr(int(body[i + 2 : i + 6], 16)))
            i += 6
        else:
            out.append(simple[body[i + 1]])
            i += 2
    return "".join(out)


def _value_sql(value: str) -> str:
    """A diff value as ``mysqlbinlog`` writes it (``json_wrapper_to_string``, not JSON-quoted).

    Numbers, booleans and null as they are; strings, temporals and opaque values unquoted from
    JSON and quoted for SQL; arrays and objects as ``CAST('...' AS JSON)``.
    """
    first = value[:1]
    if first == '"':
        return _sql_quote(_unquote(value))
    if first in ("{", "["):
        return f"CAST({_sql_quote(value)} AS JSON)"
    return value


def _function_name(diff: JsonDiff) -> str:
    if diff.operation == "INSERT" and diff.path.endswith("]"):
        return "JSON_ARRAY_INSERT"
    return f"JSON_{diff.operation}"


def render_json_diffs(diffs: Sequence[JsonDiff], column: str, *, multiline: bool = False) -> str:
    """The diffs as the nested SQL expression ``mysqlbinlog -vv`` prints (``print_json_diff``).

    Consecutive diffs with the same function share one call; ``multiline`` puts
    ``mysqlbinlog``'s line breaks (``"\\n###      "``) where it does.

    >>> d = [JsonDiff("REPLACE", "$.a", "1"), JsonDiff("REPLACE", "$.b", '"x"'), JsonDiff("INSERT", "$.c", "[1]")]
    >>> render_json_diffs(d, "@2")
    "JSON_INSERT(JSON_REPLACE(@2, '$.a', 1, '$.b', 'x'), '$.c', CAST('[1]' AS JSON))"
    """
    separator = MYSQLBINLOG_LINE_SEPARATOR if multiline else ""
    comma = "," + (MYSQLBINLOG_LINE_SEPARATOR if multiline else " ")
    names = [_function_name(d) for d in diffs]
    opened = [names[i] + "(" for i in reversed(range(len(names))) if i == 0 or names[i - 1] != names[i]]
    parts = [separator.join(opened), column]
    if not diffs:
        return "".join(parts)
    parts.append(", ")
    last = len(diffs) - 1
    for i, diff in enumerate(diffs):
        parts.append(_sql_quote(diff.path))
        if diff.value is not None:
            parts.append(", ")
            parts.append(_value_sql(diff.value))
        if i == last or names[i + 1] != names[i]:
            parts.append(")")
        if i != last:
            parts.append(comma)
    return "".join(parts)
