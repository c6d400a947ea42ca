"""Exact DECIMAL values from MySQL's packed binary format, as MySQL prints them.

NEWDECIMAL columns in row images and DECIMAL values inside binary JSON both use the format of
``decimal2bin`` (MySQL ``strings/decimal.cc``, ``bin2decimal`` reads it back;
https://github.com/mysql/mysql-server/blob/trunk/strings/decimal.cc).  A ``DECIMAL(P,S)`` value
has ``P - S`` integer digits and ``S`` fraction digits, cut into groups of 9 digits: the integer
digits from the right (a short group comes first), the fraction digits from the left (a short
group comes last).  A full group is a 4-byte big-endian number; a short group of ``n`` digits
takes ``DIG2BYTES[n]`` bytes::

    DECIMAL(14,4) = 1234567890.1234  (intg 10 = 1 + 9 digits, frac 4)

    +------+-------------+-------+
    | 81   | 0d fb 38 d2 | 04 d2 |   1 | 234567890 | 1234
    +------+-------------+-------+
     short   full group    short
     int     (9 digits)    frac

    byte 0, bit 7: the sign bit, stored flipped (1 = positive)
    negative values: every byte is inverted (XOR 0xff) before the sign bit is flipped

So the whole value is one big-endian number: flipping the sign bit gives the magnitude of a
positive value; XOR with all ones except the sign bit gives the magnitude of a negative one.
Each group must hold fewer than ``10**digits``; anything else is malformed (``bin2decimal``
lets the leading integer group hold one digit more, which ``decimal2bin`` never writes).
``DECIMAL(0,0)`` takes no bytes: JSON stores a DECIMAL zero without digits that way.

Text is what ``decimal2string`` prints, which is what ``SELECT`` and ``mysqlbinlog -v`` show:
leading zeros dropped (``0`` when there is no integer digit), exactly ``S`` fraction digits,
``-`` only for a value below zero.  The bytes of a negative zero (all digits zero, sign bit
clear) print as zero without a sign: MySQL makes a zero result positive before storing it,
and ``-0.00`` is not a number below zero.

>>> decode_decimal(bytes.fromhex("810dfb38d204d2"), 0, 14, 4)
('1234567890.1234', 7)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from binlog_core.errors import MalformedError, TruncatedError

DIG_PER_DEC: Final = 9
"""Decimal digits in one full 4-byte group (``# orig: DIG_PER_DEC1``)."""

DIG2BYTES: Final = (0, 1, 1, 2, 2, 3, 3, 4, 4, 4)
"""Bytes that hold a group of 0..9 digits (``# orig: dig2bytes``)."""

MAX_PRECISION: Final = 65
"""``DECIMAL_MAX_PRECISION``."""

MAX_SCALE: Final = 30
"""``DECIMAL_MAX_SCALE``."""

DecimalReader = Callable[[bytes, int], tuple[str, int]]
"""``read(buf, pos) -> (text, new_pos)`` for one (precision, scale)."""

_Group = tuple[int, int, int]
"""Where one digit group sits in the value read as one big-endian number:
(bits to the right of it, all-ones mask over its bytes, ``10 ** digits``)."""


def _check(precision: int, scale: int) -> None:
    if not 0 <= precision <= MAX_PRECISION or not 0 <= scale <= min(precision, MAX_SCALE):
        raise MalformedError(f"DECIMAL({precision},{scale}) is outside MySQL's limits (precision <= 65, scale <= 30)")


def decimal_size(precision: int, scale: int) -> int:
    """Bytes a ``DECIMAL(precision, scale)`` value takes (``# orig: decimal_bin_size``).

    >>> decimal_size(10, 2), decimal_size(65, 30)
    (5, 30)
    """
    _check(precision, scale)
    intg = precision - scale
    return (
        intg // DIG_PER_DEC * 4
        + DIG2BYTES[intg % DIG_PER_DEC]
        + scale // DIG_PER_DEC * 4
        + DIG2BYTES[scale % DIG_PER_DEC]
    )


def _digit_groups(precision: int, scale: int) -> tuple[list[int], list[int]]:
    """Digits of each integer group (most significant first) and of each fraction group."""
    intg = precision - scale
    int_groups = ([intg % DIG_PER_DEC] if intg % DIG_PER_DEC else []) + [DIG_PER_DEC] * (intg // DIG_PER_DEC)
    frac_groups = [DIG_PER_DEC] * (scale // DIG_PER_DEC) + ([scale % DIG_PER_DEC] if scale % DIG_PER_DEC else [])
    return int_groups, frac_groups


def _place(digit_groups: list[int], bits_after: int) -> tuple[_Group, ...]:
    """Positions of consecutive groups whose last one ends ``bits_after`` bits from the right."""
    placed: list[_Group] = []
    shift = bits_after + 8 * sum(DIG2BYTES[d] for d in digit_groups)
    for digits in digit_groups:
        shift -= 8 * DIG2BYTES[digits]
        placed.append((shift, (1 << (8 * DIG2BYTES[digits])) - 1, 10**digits))
    return tuple(placed)


def _build_reader(precision: int, scale: int) -> tuple[DecimalReader, Callable[[bytes], str] | None]:
    """Plan once per (precision, scale): byte size, group positions, masks; return reader and converter."""
    size = decimal_size(precision, scale)
    int_digits, frac_digits = _digit_groups(precision, scale)
    frac_bits = 8 * sum(DIG2BYTES[d] for d in frac_digits)
    int_groups = _place(int_digits, frac_bits)
    frac_groups = _place(frac_digits, 0)
    what = f"DECIMAL({precision},{scale})"

    def truncated(buf: bytes, pos: int) -> TruncatedError:
        return TruncatedError(f"{what}: needs {size} bytes at +{pos}, only {max(len(buf) - pos, 0)} remain")

    if size == 0:  # DECIMAL(0,0): how JSON stores a DECIMAL zero without digits

        def read_empty(buf: bytes, pos: int) -> tuple[str, int]:
            return "0", pos

        return read_empty, None

    convert = _build_converter(int_groups, frac_groups, frac_bits, size, scale, what)

    def read(buf: bytes, pos: int) -> tuple[str, int]:
        end = pos + size
        if end > len(buf):
            raise truncated(buf, pos)
        return convert(buf[pos:end]), end

    return read, convert


def _build_converter(
    int_groups: tuple[tuple[int, int, int], ...],
    frac_groups: tuple[tuple[int, int, int], ...],
    frac_bits: int,
    size: int,
    scale: int,
    what: str,
) -> Callable[[bytes], str]:
    """The text of a value from exactly its ``size`` bytes (see :func:`decimal_converter`)."""
    sign_bit = 1 << (8 * size - 1)
    neg_mask = sign_bit - 1  # flips every bit but the sign bit
    frac_mask = (1 << frac_bits) - 1
    frac_limit = 10**scale
    from_bytes = int.from_bytes

    if len(int_groups) <= 1 and len(frac_groups) <= 1:
        # up to 9 integer and 9 fraction digits (the usual case): no loops
        int_limit = int_groups[0][2] if int_groups else 1

        def convert_small(raw: bytes) -> str:
            mag = from_bytes(raw, "big")
            sign = ""
            if mag & sign_bit:
                mag ^= sign_bit
            else:
                mag ^= neg_mask
                sign = "-"
            whole = mag >> frac_bits
            frac = mag & frac_mask
            if whole >= int_limit or frac >= frac_limit:
                raise MalformedError(f"{what}: digit group {whole} or {frac} has more digits than the type allows")
            if not (whole or frac):
                sign = ""  # negative zero
            if scale:
                # str(frac_limit + frac)[1:] is frac zero-padded to `scale` digits, and cheaper
                return f"{sign}{whole}.{str(frac_limit + frac)[1:]}"
            return f"{sign}{whole}"

        return convert_small

    def convert(raw: bytes) -> str:
        mag = from_bytes(raw, "big")
        sign = ""
        if mag & sign_bit:
            mag ^= sign_bit
        else:
            mag ^= neg_mask
            sign = "-"
        whole = 0
        for shift, mask, limit in int_groups:
            part = (mag >> shift) & mask
            if part >= limit:
                raise MalformedError(f"{what}: integer group {part} has more digits than the type allows")
            whole = whole * limit + part
        frac = 0
        for shift, mask, limit in frac_groups:
            part = (mag >> shift) & mask
            if part >= limit:
                raise MalformedError(f"{what}: fraction group {part} has more digits than the type allows")
            frac = frac * limit + part
        if not (whole or frac):
            sign = ""  # negative zero
        if scale:
            return f"{sign}{whole}.{str(frac_limit + frac)[1:]}"
        return f"{sign}{whole}"

    return convert


def decimal_converter(precision: int, scale: int) -> Callable[[bytes], str] | None:
    """``convert(raw)``: the text of a ``DECIMAL(precision, scale)`` value from exactly its bytes.

    ``None`` for DECIMAL(0,0), which has no bytes.  Raises :class:`MalformedError` like the reader.
    """
    decimal_reader(precision, scale)
    return _CONVERTERS[precision, scale]


_READERS: dict[tuple[int, int], tuple[DecimalReader, int]] = {}
_CONVERTERS: dict[tuple[int, int], Callable[[bytes], str] | None] = {}


def decimal_reader(precision: int, scale: int) -> tuple[DecimalReader, int]:
    """The reader for ``DECIMAL(precision, scale)`` values and their byte size, built once per type.

    ``read(buf, pos)`` returns the text and the position after the value, raising
    :class:`TruncatedError` when the bytes end early and :class:`MalformedError` when a digit
    group is out of range.

    >>> read, size = decimal_reader(10, 2)
    >>> read(bytes.fromhex("7fffffd8fa"), 0), size
    (('-39.05', 5), 5)
    """
    entry = _READERS.get((precision, scale))
    if entry is None:
        read, _CONVERTERS[precision, scale] = _build_reader(precision, scale)
        entry = _READERS[precision, scale] = (read, decimal_size(precision, scale))
    return entry


def decode_decimal(buf: bytes, pos: int, precision: int, scale: int) -> tuple[str, int]:
    """The ``DECIMAL(precision, scale)`` value at ``buf[pos:]`` as MySQL prints it, and the position after it.

    >>> decode_decimal(bytes.fromhex("803039"), 0, 5, 5)
    ('0.12345', 3)
    """
    entry = _READERS.get((precision, scale))
    if entry is None:
        entry = decimal_reader(precision, scale)
    return entry[0](buf, pos)
