"""Temporal column values, decoded to the text MySQL's ``SELECT`` prints.

Values are returned as strings because MySQL's ranges are not Python's: zero and partly zero
dates (``0000-00-00``, ``2020-00-15``), TIME beyond 24 hours and negative TIME are ordinary
values in a binlog.  TIMESTAMP is rendered in UTC.  Fraction digits follow the column's
precision (``fsp``), as ``SELECT`` shows them.

Formats (MySQL ``mysys/my_time.cc``, ``sql/field.cc``; MariaDB ``sql/compat56.cc``)::

    DATE (3 bytes LE)          day:5 | month:4 | year:15                 (low bits first)
    TIME (3 bytes LE, signed)  +-HHMMSS as a decimal number
    DATETIME (8 bytes LE)      YYYYMMDDHHMMSS as a decimal number
    TIMESTAMP (4 bytes LE)     seconds since the epoch, 0 = zero date

    DATETIME2 (5 bytes BE + frac)   sign:1 | year*13+month:17 | day:5 | hour:5 | minute:6 | second:6
                                     stored + 0x8000000000
    TIME2 (3 bytes BE + frac)       sign:1 | unused:1 | hour:10 | minute:6 | second:6, + 0x800000;
                                     negative values store the fraction in reverse order
    TIMESTAMP2 (4 bytes BE + frac)  seconds since the epoch

    fraction: fsp 1-2 -> 1 byte (1/100 s), 3-4 -> 2 bytes BE (1/10000 s), 5-6 -> 3 bytes BE (us)

How the server reads the fraction (MySQL ``mysys/my_time.cc`` ``my_datetime_packed_from_binary``,
``my_timestamp_from_binary``, ``my_time_packed_from_binary``; MariaDB ``sql/compat56.cc`` alike)::

    fsp          1-2 (1 byte)         3-4 (2 bytes)         5-6 (3 bytes)
    DATETIME2    signed               signed (sint2korr)    signed (sint3korr)
    TIMESTAMP2   unsigned             signed (sint2korr)    signed (sint3korr)
    TIME2        unsigned, borrowed   unsigned, borrowed    with the integer part, as one
                 when negative        when negative         48-bit value - TIMEF_OFS

The server writes a fraction below one second: 0..99, 0..9999 or 0..999999 stored units, i.e.
0 .. 10^fsp - 1 after scaling to the column's digits.  Anything else is damage: it is MALFORMED
here (the server itself would print ``.-1`` or a seven-digit fraction).  For DATETIME2 and
TIMESTAMP2 one unsigned comparison, ``stored < 10^(2 * bytes)``, is exactly that check whichever
signedness the server reads with: a value it reads as negative has its top bit set, so read
unsigned it is at least 0x80, 0x8000 or 0x800000, above each limit.  TIME2 checks the
microseconds of the packed value, after the borrow of negative times.

https://github.com/mysql/mysql-server/blob/trunk/mysys/my_time.cc
https://github.com/MariaDB/server/blob/11.4/sql/compat56.cc
"""

from __future__ import annotations

import time
from collections.abc import Callable
from struct import Struct

from binlog_core.errors import MalformedError

FRAC_BYTES = (0, 1, 1, 2, 2, 3, 3)
"""Bytes of the fractional part for fsp 0..6."""

_FRAC_SCALE = (0, 10000, 10000, 100, 100, 1, 1)
"""Multiplier from the stored fraction to microseconds, for fsp 0..6."""

_FRAC_LIMIT = (1, 100, 100, 10000, 10000, 1000000, 1000000)
"""Stored fractions are below this, for fsp 0..6: less than one second once scaled."""

_FRAC_UNIT = {100: "hundredths", 10000: "ten-thousandths", 1000000: "millionths"}

DATETIMEF_INT_OFS = 0x8000000000
TIMEF_INT_OFS = 0x800000
TIMEF_OFS = 0x800000000000

_BE16 = Struct(">h")
_U32 = Struct("<I")
_BE32 = Struct(">I")


def _frac(micro: int, fsp: int) -> str:
    """``.fff`` with ``fsp`` digits, or nothing for fsp 0."""
    return f".{micro:06d}"[: fsp + 1] if fsp else ""


def date_text(packed: int) -> str:
    """DATE / NEWDATE from its 3-byte little-endian value."""
    return f"{packed >> 9:04d}-{(packed >> 5) & 15:02d}-{packed & 31:02d}"


def old_time_text(value: int) -> str:
    """Old TIME (before 5.6) from its signed ``HHMMSS`` number."""
    sign = "-" if value < 0 else ""
    value = abs(value)
    return f"{sign}{value // 10000:02d}:{value // 100 % 100:02d}:{value % 100:02d}"


def old_datetime_text(value: int) -> str:
    """Old DATETIME (before 5.6) from its ``YYYYMMDDHHMMSS`` number."""
    d, t = divmod(value, 1000000)
    return f"{d // 10000:04d}-{d // 100 % 100:02d}-{d % 100:02d} {t // 10000:02d}:{t // 100 % 100:02d}:{t % 100:02d}"


def timestamp_text(seconds: int, micro: int = 0, fsp: int = 0) -> str:
    """TIMESTAMP in UTC; 0 seconds (and no fraction) is MySQL's zero timestamp."""
    if seconds == 0 and micro == 0:
        return "0000-00-00 00:00:00" + _frac(0, fsp)
    t = time.gmtime(seconds)
    return f"{t.tm_year:04d}-{t.tm_mon:02d}-{t.tm_mday:02d} {t.tm_hour:02d}:{t.tm_min:02d}:{t.tm_sec:02d}" + _frac(
        micro, fsp
    )


def bad_fraction(type_name: str, fsp: int, stored: bytes) -> MalformedError:
    """The error for a stored fraction of one second or more (or one the server reads as negative)."""
    limit = _FRAC_LIMIT[fsp]
    return MalformedError(
        f"{type_name}({fsp}) fraction {stored.hex()} is out of range: 0..{limit - 1} {_FRAC_UNIT[limit]} of a second"
    )


def read_fraction(buf: bytes, pos: int, fsp: int, type_name: str) -> int:
    """The stored fraction of a DATETIME2/TIMESTAMP2 value, in microseconds (checked, see the module doc)."""
    n = FRAC_BYTES[fsp]
    if n == 0:
        return 0
    raw = int.from_bytes(buf[pos : pos + n], "big")
    if raw >= _FRAC_LIMIT[fsp]:
        raise bad_fraction(type_name, fsp, bytes(buf[pos : pos + n]))
    return raw * _FRAC_SCALE[fsp]


def datetime2_text(buf: bytes, pos: int, fsp: int) -> str:
    """DATETIME2 at ``pos`` (5 + frac bytes; the caller checked they are there)."""
    intpart = int.from_bytes(buf[pos : pos + 5], "big") - DATETIMEF_INT_OFS
    if intpart < 0:
        raise MalformedError(f"negative DATETIME2 value {intpart}")
    micro = read_fraction(buf, pos + 5, fsp, "DATETIME2")
    ymd, hms = intpart >> 17, intpart & 0x1FFFF
    ym, day = ymd >> 5, ymd & 31
    year, month = divmod(ym, 13)
    return f"{year:04d}-{month:02d}-{day:02d} {hms >> 12:02d}:{(hms >> 6) & 63:02d}:{hms & 63:02d}" + _frac(micro, fsp)


_TWO_DIGITS = tuple(f"{i:02d}" for i in range(100))
_DATE_CACHE_LIMIT = 4096
"""Distinct dates whose text each DATETIME2 converter keeps (OLTP rows share few dates)."""


def datetime2_converter(fsp: int) -> Callable[[bytes], str]:
    """:func:`datetime2_text` specialised for one precision, reading exactly ``5 + frac`` bytes.

    The ``YYYY-MM-DD`` part is looked up in a small cache by its packed value and the
    time of day is built from a table of two-digit strings (hour < 32, minute and second < 64).
    """
    n = FRAC_BYTES[fsp]
    frac_bits = 8 * n
    frac_mask = (1 << frac_bits) - 1
    limit = _FRAC_LIMIT[fsp]
    scale = _FRAC_SCALE[fsp]
    cut = fsp + 1
    from_bytes = int.from_bytes
    two = _TWO_DIGITS
    dates: dict[int, str] = {}

    def convert(raw: bytes) -> str:
        v = from_bytes(raw, "big")
        intpart = (v >> frac_bits) - DATETIMEF_INT_OFS
        if intpart < 0:
            raise MalformedError(f"negative DATETIME2 value {intpart}")
        ymd = intpart >> 17
        date = dates.get(ymd)
        if date is None:
            if len(dates) >= _DATE_CACHE_LIMIT:
                dates.clear()
            year, month = divmod(ymd >> 5, 13)
            date = dates[ymd] = f"{year:04d}-{month:02d}-{ymd & 31:02d} "
        hms = intpart & 0x1FFFF
        text = f"{date}{two[hms >> 12]}:{two[(hms >> 6) & 63]}:{two[hms & 63]}"
        if not n:
            return text
        frac = v & frac_mask
        if frac >= limit:
            raise bad_fraction("DATETIME2", fsp, raw[5:])
        return text + f".{frac * scale:06d}"[:cut]

    return convert


def timestamp2_converter(fsp: int) -> Callable[[bytes], str]:
    """:func:`timestamp2_text` specialised for one precision, reading exactly ``4 + frac`` bytes.

    The date is computed once per UTC day (``time.gmtime`` at midnight, cached) and the time of
    day from the seconds left over; zero seconds with a zero fraction is the zero timestamp.
    """
    n = FRAC_BYTES[fsp]
    frac_bits = 8 * n
    frac_mask = (1 << frac_bits) - 1
    limit = _FRAC_LIMIT[fsp]
    scale = _FRAC_SCALE[fsp]
    from_bytes = int.from_bytes
    two = _TWO_DIGITS
    days: dict[int, str] = {}

    def convert(raw: bytes) -> str:
        v = from_bytes(raw, "big")
        seconds = v >> frac_bits
        micro = 0
        if n:
            frac = v & frac_mask
            if frac >= limit:
                raise bad_fraction("TIMESTAMP2", fsp, raw[4:])
            micro = frac * scale
        if seconds == 0 and micro == 0:
            return "0000-00-00 00:00:00" + _frac(0, fsp)
        day, rest = divmod(seconds, 86400)
        date = days.get(day)
        if date is None:
            if len(days) >= _DATE_CACHE_LIMIT:
                days.clear()
            t = time.gmtime(day * 86400)
            date = days[day] = f"{t.tm_year:04d}-{t.tm_mon:02d}-{t.tm_mday:02d} "
        minutes, second = divmod(rest, 60)
        return f"{date}{two[minutes // 60]}:{two[minutes % 60]}:{two[second]}" + _frac(micro, fsp)

    return convert


def time2_text(buf: bytes, pos: int, fsp: int) -> str:
    """TIME2 at ``pos`` (3 + frac bytes; the caller checked they are there).

    Follows ``my_time_packed_from_binary``: the packed value is ``intpart << 24 | frac``
    in a signed 64-bit space; negative values carry a borrowed fraction.  The microseconds of
    the packed value's magnitude must be below one second (see the module doc).
    """
    n = FRAC_BYTES[fsp]
    if n == 3:
        packed = int.from_bytes(buf[pos : pos + 6], "big") - TIMEF_OFS
    else:
        intpart = int.from_bytes(buf[pos : pos + 3], "big") - TIMEF_INT_OFS
        frac = 0
        if n == 1:
            frac = buf[pos + 3]
            if intpart < 0 and frac:
                intpart += 1
                frac -= 0x100
            frac *= 10000
        elif n == 2:
            frac = int.from_bytes(buf[pos + 3 : pos + 5], "big")
            if intpart < 0 and frac:
                intpart += 1
                frac -= 0x10000
            frac *= 100
        packed = (intpart << 24) + frac
    sign = ""
    if packed < 0:
        sign, packed = "-", -packed
    hms, micro = packed >> 24, packed & 0xFFFFFF
    if micro > 999999:
        raise bad_fraction("TIME2", fsp, bytes(buf[pos + 3 : pos + 3 + n]))
    hour, minute, second = (hms >> 12) & 0x3FF, (hms >> 6) & 63, hms & 63
    return f"{sign}{hour:02d}:{minute:02d}:{second:02d}" + _frac(micro, fsp)


def timestamp2_text(buf: bytes, pos: int, fsp: int) -> str:
    """TIMESTAMP2 at ``pos`` (4 + frac bytes; the caller checked they are there)."""
    (seconds,) = _BE32.unpack_from(buf, pos)
    return timestamp_text(seconds, read_fraction(buf, pos + 4, fsp, "TIMESTAMP2"), fsp)
