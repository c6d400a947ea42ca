"""MySQL 8.0.20+ TRANSACTION_PAYLOAD: a whole transaction's events, usually zstd-compressed.

Body layout (``# orig: binary_log::codecs::binary::Transaction_payload``), a list of
type-length-value fields, each number a length-encoded integer, ended by type 0, followed by
the payload bytes::

    { field_type | field_len | value } ... | 0 (end mark) | payload[payload_size]

    field_type 1 = payload_size, 2 = compression_type (0 zstd, 255 none),
               3 = uncompressed_size; unknown field types are skipped by their length.

The decompressed payload is a plain sequence of events with 19-byte headers and no
checksums (the outer event's checksum covers them).
https://dev.mysql.com/doc/dev/mysql-server/latest/classbinary__log_1_1Transaction__payload__event.html
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from dataclasses import dataclass
from enum import IntEnum

import zstandard

from binlog_core.constants import LOG_EVENT_HEADER_LEN, event_type_name
from binlog_core.cursor import Cursor
from binlog_core.errors import BinlogError, DecompressionError, MalformedError, TruncatedError, UnsupportedError
from binlog_core.event import HEADER, Event, EventHeader

MAX_PAYLOAD_SIZE = 1 << 32
"""A transaction larger than 4 GiB uncompressed is treated as corrupt rather than inflated."""


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
    """Read the TLV header and slice out the (compressed) payload."""
    c = Cursor(body)
    payload_size: int | None = None
    compression_type = CompressionType.NONE.value
    uncompressed_size: int | None = None
    while True:
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
    if payload_size is None:
        payload_size = c.remaining
    payload = c.take(payload_size, "payload")
    if not c.at_end():
        raise MalformedError(f"{c.remaining} bytes after the {payload_size}-byte payload")
    return TransactionPayload(compression_type, payload_size, uncompressed_size, payload)


def inflate(header: TransactionPayload) -> bytes:
    """The payload's uncompressed bytes."""
    if header.compression_type == CompressionType.NONE:
        return header.payload
    if header.compression_type != CompressionType.ZSTD:
        raise UnsupportedError(f"compression type {header.compression_type} (known: 0 zstd, 255 none)")
    limit = header.uncompressed_size if header.uncompressed_size is not None else MAX_PAYLOAD_SIZE
    if limit > MAX_PAYLOAD_SIZE:
        raise MalformedError(f"uncompressed_size {limit} exceeds {MAX_PAYLOAD_SIZE}")
    try:
        with zstandard.ZstdDecompressor().stream_reader(io.BytesIO(header.payload)) as reader:
            out = reader.read(limit + 1)  # bounded: a corrupt size cannot make us allocate more
    except zstandard.ZstdError as exc:
        raise DecompressionError(f"zstd: {exc}") from None
    if len(out) > limit:
        raise DecompressionError(f"zstd payload inflates past its declared {limit} bytes")
    if header.uncompressed_size is not None and len(out) != header.uncompressed_size:
        raise DecompressionError(
            f"zstd payload inflated to {len(out)} bytes, the header says {header.uncompressed_size}"
        )
    return out


def explode_payload(event: Event) -> Iterator[Event]:
    """The events inside a TRANSACTION_PAYLOAD event, numbered by ``inner_index``."""
    try:
        data = inflate(decode_transaction_payload(event.body))
    except BinlogError as exc:
        raise event.locate(exc) from None
    yield from split_inner_events(data, event)


def split_inner_events(data: bytes, outer: Event) -> Iterator[Event]:
    """Frame the events packed (without checksums) inside an outer event's decompressed payload."""
    desc = outer.fde
    pos = 0
    index = 0
    n = len(data)
    while pos < n:
        if n - pos < LOG_EVENT_HEADER_LEN:
            raise TruncatedError(
                f"payload ends inside an event header ({n - pos} of {LOG_EVENT_HEADER_LEN} bytes)",
                file=outer.file,
                offset=outer.offset,
                inner_index=index,
            )
        header = EventHeader._make(HEADER.unpack_from(data, pos))
        size = header.event_size
        type_name = event_type_name(header.type_code)
        if size < LOG_EVENT_HEADER_LEN:
            raise MalformedError(
                f"inner event_size {size} is impossible",
                file=outer.file,
                offset=outer.offset,
                inner_index=index,
                event_type=type_name,
            )
        if pos + size > n:
            raise TruncatedError(
                f"inner event declares {size} bytes, the payload has {n - pos} left",
                file=outer.file,
                offset=outer.offset,
                inner_index=index,
                event_type=type_name,
            )
        body = data[pos + LOG_EVENT_HEADER_LEN : pos + size]
        yield Event(outer.file, outer.offset, index, header, body, desc, None)
        pos += size
        index += 1
