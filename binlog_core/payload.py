"""MySQL 8.0.20+ TRANSACTION_PAYLOAD: a whole transaction's events, usually zstd-compressed.

Body layout (``# orig: binary_log::codecs::binary::Transaction_payload``), a list of
type-length-value fields, each number a length-encoded integer, ended by type 0, followed by
the payload bytes::

    { field_type | field_len | value } ... | 0 (end mark) | payload[payload_size]

    field_type 1 = payload_size, 2 = compression_type (0 zstd, 255 none),
               3 = uncompressed_size; unknown field types are skipped by their length.

The server writes compression_type, then uncompressed_size (not for type none), then
payload_size; like the server's reader, a header without payload_size or compression_type, or
without the end mark, is malformed (``# orig: codecs::binary::Transaction_payload::decode``).

The decompressed payload is a plain sequence of events with 19-byte headers and no
checksums (the outer event's checksum covers them).
https://dev.mysql.com/doc/dev/mysql-server/latest/classbinary__log_1_1Transaction__payload__event.html
https://github.com/mysql/mysql-server/blob/trunk/libs/mysql/binlog/event/codecs/binary.cpp
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from dataclasses import dataclass
from enum import IntEnum

import zstandard

from binlog_core.constants import LOG_EVENT_HEADER_LEN, event_type_name
from binlog_core.cursor import Cursor
from binlog_core.errors import (
    BinlogError,
    DecompressionError,
    MalformedError,
    UnsupportedError,
    as_event_problem,
)
from binlog_core.event import HEADER, Event, EventHeader

MAX_PAYLOAD_SIZE = 1 << 32
"""A transaction larger than 4 GiB uncompressed is treated as corrupt rather than inflated."""

INFLATE_CHUNK = 1 << 20
"""Bytes asked of the zstd stream per read: memory follows what the payload really holds, never
the size its header declares (``stream_reader.read(n)`` allocates ``n`` bytes up front)."""


class PayloadField(IntEnum):
    """TLV field types of the payload header (``# orig: OTW_PAYLOAD_*``)."""

    END_MARK = 0
    PAYLOAD_SIZE = 1
    COMPRESSION_TYPE = 2
    UNCOMPRESSED_SIZE = 3


class CompressionType(IntEnum):
    """``# orig: mysql::binlog::event::compression::type``."""

    ZSTD = 0
    NONE = 255


@dataclass(frozen=True, slots=True)
class TransactionPayload:
    """The decoded header of a TRANSACTION_PAYLOAD event; ``payload`` is still compressed."""

    compression_type: int
    payload_size: int
    uncompressed_size: int | None
    payload: bytes


def decode_transaction_payload(body: bytes) -> TransactionPayload:
    """Read the TLV header and slice out the (compressed) payload.

    ``payload_size`` and ``compression_type`` must both be present, as the server requires.
    """
    c = Cursor(body)
    payload_size: int | None = None
    compression_type: int | None = None
    uncompressed_size: int | None = None
    while True:
        if c.at_end():
            raise MalformedError("payload header without an end mark")
        field_type = c.packed_int("field_type")
        if field_type == PayloadField.END_MARK:
            break
        field_len = c.packed_int("field_len")
        field = c.sized(field_len, f"field {field_type}")
        if field_type == PayloadField.PAYLOAD_SIZE:
            payload_size = field.packed_int("payload_size")
        elif field_type == PayloadField.COMPRESSION_TYPE:
            compression_type = field.packed_int("compression_type")
        elif field_type == PayloadField.UNCOMPRESSED_SIZE:
            uncompressed_size = field.packed_int("uncompressed_size")
    if payload_size is None or compression_type is None:
        missing = "payload_size" if payload_size is None else "compression_type"
        raise MalformedError(f"payload header without {missing}")
    payload = c.take(payload_size, "payload")
    if not c.at_end():
        raise MalformedError(f"{c.remaining} bytes after the {payload_size}-byte payload")
    return TransactionPayload(compression_type, payload_size, uncompressed_size, payload)


def inflate(header: TransactionPayload) -> bytes:
    """The payload's uncompressed bytes.

    A declared ``uncompressed_size`` the bytes do not have is malformed; zstd output is read in
    chunks of :data:`INFLATE_CHUNK` up to that size (at most :data:`MAX_PAYLOAD_SIZE`), so a
    damaged size never makes this allocate more than the stream really inflates to.
    """
    declared = header.uncompressed_size
    if declared is not None and declared > MAX_PAYLOAD_SIZE:
        raise MalformedError(f"uncompressed_size {declared} exceeds {MAX_PAYLOAD_SIZE}")
    if header.compression_type == CompressionType.NONE:
        out = header.payload
    elif header.compression_type == CompressionType.ZSTD:
        out = _inflate_zstd(header.payload, MAX_PAYLOAD_SIZE if declared is None else declared)
    else:
        raise UnsupportedError(f"compression type {header.compression_type} (known: 0 zstd, 255 none)")
    if declared is not None and len(out) != declared:
        more = "more than" if len(out) > declared else f"{len(out)} bytes, not"
        raise MalformedError(f"payload holds {more} the {declared} bytes its header declares")
    return out


def _inflate_zstd(payload: bytes, limit: int) -> bytes:
    """At most ``limit + 1`` bytes of the zstd stream, read chunk by chunk."""
    chunks: list[bytes] = []
    size = 0
    try:
        source = io.BytesIO(payload)
        with zstandard.ZstdDecompressor().stream_reader(source, read_across_frames=True) as reader:
            while size <= limit:
                chunk = reader.read(min(INFLATE_CHUNK, limit + 1 - size))
                if not chunk:
                    break
                chunks.append(chunk)
                size += len(chunk)
    except zstandard.ZstdError as exc:
        raise DecompressionError(f"zstd: {exc}") from None
    return b"".join(chunks)


def unpack_payload(event: Event) -> tuple[Iterator[Event], BinlogError | None]:
    """The events inside a TRANSACTION_PAYLOAD event, and the problem that stops them short.

    The payload is inflated and its inner event headers walked before anything is returned, so
    the problem is known while the outer event is read; the inner events themselves are cut one
    at a time, numbered by ``inner_index``.  A payload that does not inflate (or whose header is
    damaged) gives no events; an inner event that runs past the payload's end gives the events
    before it, and the problem names its ``inner_index``.  The outer event is whole, so the
    problem is MALFORMED (or DECOMPRESSION_FAILED, UNSUPPORTED), never TRUNCATED, and located on
    the outer event's file and offset::

        inner, problem = unpack_payload(event)   # problem: None, or a BinlogError
    """
    try:
        data = inflate(decode_transaction_payload(event.body))
    except BinlogError as exc:
        return iter(()), event.locate(as_event_problem(exc))
    whole, problem = _scan_inner_events(data, event)
    if problem is not None:
        event.locate(problem)
    return _cut_inner_events(data, event, whole), problem


def explode_payload(event: Event) -> Iterator[Event]:
    """The events inside a TRANSACTION_PAYLOAD event; the problem of :func:`unpack_payload`, if
    any, is raised after the events before it."""
    inner, problem = unpack_payload(event)
    yield from inner
    if problem is not None:
        raise problem


def split_inner_events(data: bytes, outer: Event) -> Iterator[Event]:
    """Frame the events packed (without checksums) inside an outer event's decompressed payload.

    The outer event is whole, so an inner event that runs past the payload's end is damage to
    it (malformed), not a file cut short: raised after the events before it.
    """
    whole, problem = _scan_inner_events(data, outer)
    yield from _cut_inner_events(data, outer, whole)
    if problem is not None:
        raise problem


def _scan_inner_events(data: bytes, outer: Event) -> tuple[int, MalformedError | None]:
    """How many inner events fit the payload whole, and the problem of the first that does not.

    Inner layout: ``{19-byte header | body}`` back to back, each ``event_size`` covering its
    header and body, no checksum (``# orig: Transaction_payload_event``).
    """
    pos = 0
    index = 0
    n = len(data)
    unpack = HEADER.unpack_from
    while pos < n:
        if n - pos < LOG_EVENT_HEADER_LEN:
            return index, MalformedError(
                f"payload ends inside an event header ({n - pos} of {LOG_EVENT_HEADER_LEN} bytes)",
                file=outer.file,
                offset=outer.offset,
                inner_index=index,
            )
        _when, type_code, _server_id, size, _log_pos, _flags = unpack(data, pos)
        if size < LOG_EVENT_HEADER_LEN or pos + size > n:
            message = (
                f"inner event_size {size} is impossible"
                if size < LOG_EVENT_HEADER_LEN
                else f"inner event declares {size} bytes, the payload has {n - pos} left"
            )
            return index, MalformedError(
                message,
                file=outer.file,
                offset=outer.offset,
                inner_index=index,
                event_type=event_type_name(type_code),
            )
        pos += size
        index += 1
    return index, None


def _cut_inner_events(data: bytes, outer: Event, count: int) -> Iterator[Event]:
    """The first ``count`` inner events (checked whole by :func:`_scan_inner_events`), one at a time."""
    desc = outer.fde
    pos = 0
    for index in range(count):
        header = EventHeader._make(HEADER.unpack_from(data, pos))
        end = pos + header.event_size
        yield Event(outer.file, outer.offset, index, header, data[pos + LOG_EVENT_HEADER_LEN : end], desc, None)
        pos = end
