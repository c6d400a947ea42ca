"""A bounds-checked read cursor over one event body.

The one place where lengths read from a file are compared with the bytes that remain: every
read goes through :meth:`Cursor.need`, which raises :class:`TruncatedError` naming the field.
Fixed-width integers are read with module-level ``struct.Struct`` objects and ``unpack_from``.

The row-image hot loop in :mod:`binlog_core.rows` does not use a cursor per value: it checks
the bytes a run of fixed-width columns needs with one comparison per run and calls
:func:`need` for variable-length values.

>>> c = Cursor(b"\\x01\\x02\\x00\\xfc\\x10\\x27")
>>> c.u8("a"), c.u16("b"), c.packed_int("c")
(1, 2, 10000)
"""

from __future__ import annotations

from struct import Struct
from typing import Any

from binlog_core.errors import MalformedError, TruncatedError

U8 = Struct("<B")
U16 = Struct("<H")
U32 = Struct("<I")
U64 = Struct("<Q")
I8 = Struct("<b")
I16 = Struct("<h")
I32 = Struct("<i")
I64 = Struct("<q")
F32 = Struct("<f")
F64 = Struct("<d")
U16_U8 = Struct("<HB")
U32_U16 = Struct("<IH")


def need(buf_len: int, pos: int, n: int, what: str) -> None:
    """Raise :class:`TruncatedError` unless ``n`` bytes remain at ``pos`` of a ``buf_len`` buffer."""
    if n < 0:
        raise MalformedError(f"{what}: negative length {n}")
    if pos + n > buf_len:
        raise TruncatedError(f"{what}: needs {n} bytes at +{pos}, only {max(buf_len - pos, 0)} remain")


class Cursor:
    """Reads little-endian fields from ``buf[pos:end]``, checking bounds before every read.

    A cursor made by :meth:`sized` reads a region whose length the file declared: running
    past its end means the declared length is wrong (:class:`MalformedError`), whereas running
    past the end of the bytes themselves means they were cut short (:class:`TruncatedError`).
    """

    __slots__ = ("buf", "end", "pos", "region")

    def __init__(self, buf: bytes, pos: int = 0, end: int | None = None, *, region: bool = False) -> None:
        self.buf = buf
        self.pos = pos
        self.end = len(buf) if end is None else end
        self.region = region

    @property
    def remaining(self) -> int:
        """Bytes left before ``end``."""
        return self.end - self.pos

    def at_end(self) -> bool:
        """True when every byte has been consumed."""
        return self.pos >= self.end

    def need(self, n: int, what: str) -> None:
        """The bounds check: ``n`` more bytes must be present."""
        if n >= 0 and self.pos + n <= self.end:
            return
        if self.region and self.pos + n > self.end:
            raise MalformedError(f"{what}: needs {n} bytes, its declared region has {self.end - self.pos} left")
        need(self.end, self.pos, n, what)

    def skip(self, n: int, what: str) -> None:
        """Advance ``n`` bytes."""
        self.need(n, what)
        self.pos += n

    def unpack(self, layout: Struct, what: str) -> tuple[Any, ...]:
        """Several fixed-width fields at once, with one module-level ``struct.Struct``."""
        self.need(layout.size, what)
        values = layout.unpack_from(self.buf, self.pos)
        self.pos += layout.size
        return values

    def u8(self, what: str) -> int:
        """One unsigned byte."""
        self.need(1, what)
        v = self.buf[self.pos]
        self.pos += 1
        return v

    def u16(self, what: str) -> int:
        """Unsigned 16-bit little-endian."""
        self.need(2, what)
        (v,) = U16.unpack_from(self.buf, self.pos)
        self.pos += 2
        return int(v)

    def u24(self, what: str) -> int:
        """Unsigned 24-bit little-endian."""
        self.need(3, what)
        v = int.from_bytes(self.buf[self.pos : self.pos + 3], "little")
        self.pos += 3
        return v

    def u32(self, what: str) -> int:
        """Unsigned 32-bit little-endian."""
        self.need(4, what)
        (v,) = U32.unpack_from(self.buf, self.pos)
        self.pos += 4
        return int(v)

    def uint(self, n: int, what: str) -> int:
        """Unsigned little-endian integer of ``n`` bytes (1..8)."""
        self.need(n, what)
        v = int.from_bytes(self.buf[self.pos : self.pos + n], "little")
        self.pos += n
        return v

    def u64(self, what: str) -> int:
        """Unsigned 64-bit little-endian."""
        self.need(8, what)
        (v,) = U64.unpack_from(self.buf, self.pos)
        self.pos += 8
        return int(v)

    def i64(self, what: str) -> int:
        """Signed 64-bit little-endian."""
        self.need(8, what)
        (v,) = I64.unpack_from(self.buf, self.pos)
        self.pos += 8
        return int(v)

    def f64(self, what: str) -> float:
        """IEEE double, little-endian."""
        self.need(8, what)
        (v,) = F64.unpack_from(self.buf, self.pos)
        self.pos += 8
        return float(v)

    def take(self, n: int, what: str) -> bytes:
        """The next ``n`` bytes."""
        self.need(n, what)
        v = bytes(self.buf[self.pos : self.pos + n])
        self.pos += n
        return v

    def rest(self) -> bytes:
        """Every byte up to ``end``."""
        v = bytes(self.buf[self.pos : self.end])
        self.pos = self.end
        return v

    def cstring(self, what: str) -> bytes:
        """Bytes up to a NUL terminator (consumed, not returned)."""
        nul = self.buf.find(b"\x00", self.pos, self.end)
        if nul < 0:
            error = MalformedError if self.region else TruncatedError
            raise error(f"{what}: no NUL terminator in the {self.remaining} bytes left")
        v = bytes(self.buf[self.pos : nul])
        self.pos = nul + 1
        return v

    def packed_int(self, what: str) -> int:
        """A length-encoded integer (``# orig: net_field_length``).

        ``< 0xfb``: the byte itself; ``0xfc``: 2 bytes follow; ``0xfd``: 3; ``0xfe``: 8.
        ``0xfb`` (SQL NULL in the client protocol) and ``0xff`` are malformed here.
        """
        first = self.u8(what)
        if first < 0xFB:
            return first
        if first == 0xFC:
            return self.u16(what)
        if first == 0xFD:
            return self.u24(what)
        if first == 0xFE:
            return self.u64(what)
        raise MalformedError(f"{what}: invalid length-encoded integer prefix 0x{first:02x}")

    def packed_bytes(self, what: str) -> bytes:
        """A length-encoded byte string: packed length, then that many bytes."""
        n = self.packed_int(what)
        return self.take(n, what)

    def sized(self, n: int, what: str) -> Cursor:
        """A child cursor over the next ``n`` bytes; this cursor moves past them."""
        self.need(n, what)
        child = Cursor(self.buf, self.pos, self.pos + n, region=True)
        self.pos += n
        return child


def bounded_count(n: int, limit: int, what: str) -> int:
    """Check a count read from the file against what the remaining bytes could possibly hold.

    Used before allocating lists sized by the file (column counts, GTID set sizes).
    """
    if n < 0:
        raise MalformedError(f"{what}: negative count {n}")
    if n > limit:
        raise TruncatedError(f"{what}: count {n} needs more than the remaining bytes hold (at most {limit})")
    return n
