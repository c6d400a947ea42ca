"""Altering real events in place: another type code, another body, a broken checksum, an event spliced in.

Tests that need an input no server wrote (a ROLLBACK where the corpus has none, a map whose body
does not decode, a FORMAT_DESCRIPTION in the middle of a transaction) build it from the bytes of
a real file with these helpers, and say so.

v4 event header (https://mariadb.com/kb/en/2-binlog-event-header/,
``libs/mysql/binlog/event/binlog_event.h``)::

    timestamp u32 | type_code u8 | server_id u32 | event_size u32 | log_pos u32 | flags u16

With ``binlog_checksum=CRC32`` an event's last 4 bytes are the CRC32 of every byte of the event
before them (MariaDB ``Log_event::write_footer``, MySQL ``Log_event_footer``).  ``log_pos`` is
left as the server wrote it: framing computes offsets from the bytes it reads and never trusts it.
"""

from __future__ import annotations

import zlib

HEADER_LEN = 19
CRC_LEN = 4


def event_size(data: bytes, offset: int) -> int:
    """The ``event_size`` of the event at ``offset`` (header bytes 9..12)."""
    return int.from_bytes(data[offset + 9 : offset + 13], "little")


def event_bytes(data: bytes, offset: int) -> bytes:
    """The whole event at ``offset``: header, body and checksum."""
    return data[offset : offset + event_size(data, offset)]


def body_of(data: bytes, offset: int, *, crc32: bool = True) -> bytes:
    """The body of the event at ``offset`` (header and checksum excluded)."""
    return data[offset + HEADER_LEN : offset + event_size(data, offset) - (CRC_LEN if crc32 else 0)]


def rewritten(
    data: bytes, offset: int, *, type_code: int | None = None, body: bytes | None = None, crc32: bool = True
) -> bytes:
    """``data`` with the event at ``offset`` given another type code and/or body; its ``event_size``
    follows the body and, when the file has checksums (``crc32``), its CRC32 is computed again.
    Events after it move by the change of length."""
    size = event_size(data, offset)
    header = bytearray(data[offset : offset + HEADER_LEN])
    new_body = body_of(data, offset, crc32=crc32) if body is None else body
    if type_code is not None:
        header[4] = type_code
    header[9:13] = (HEADER_LEN + len(new_body) + (CRC_LEN if crc32 else 0)).to_bytes(4, "little")
    event = bytes(header) + new_body
    if crc32:
        event += zlib.crc32(event).to_bytes(4, "little")
    return data[:offset] + event + data[offset + size :]


def with_broken_checksum(data: bytes, offset: int) -> bytes:
    """``data`` with the stored CRC32 of the event at ``offset`` wrong (its last byte inverted)."""
    last = offset + event_size(data, offset) - 1
    return data[:last] + bytes([data[last] ^ 0xFF]) + data[last + 1 :]


def with_event_size(data: bytes, offset: int, size: int) -> bytes:
    """``data`` with the header ``event_size`` of one event overwritten (nothing else changes)."""
    return data[: offset + 9] + size.to_bytes(4, "little") + data[offset + 13 :]


def spliced(data: bytes, at: int, event: bytes) -> bytes:
    """``data`` with ``event`` (whole event bytes) inserted at offset ``at``, an event boundary."""
    return data[:at] + event + data[at:]
