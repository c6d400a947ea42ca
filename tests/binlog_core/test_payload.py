"""TRANSACTION_PAYLOAD (MySQL 8.0.20+): the header fields, the events packed inside, and what a
damaged header does.

Real payloads are zstd-compressed transactions of MySQL 8.0.28, 8.0.31 and 8.0.32 (corpus;
``mariadb-binlog`` cannot read them). Their header bytes are read by hand in the comments
(``codecs::binary::Transaction_payload::decode``: ``{type | length | value}`` fields, each a
length-encoded integer, then the end mark 0; 1 payload_size, 2 compression_type, 3
uncompressed_size), and the inner events must fill the uncompressed size exactly. A payload of
compression type NONE, which no corpus file holds, is built from the zstd one's decompressed
bytes the way ``Transaction_payload::encode`` writes it (no uncompressed_size for NONE).
https://github.com/mysql/mysql-server/blob/trunk/libs/mysql/binlog/event/codecs/binary.cpp
"""

from __future__ import annotations

import io
import tracemalloc
import zlib

import pytest
import zstandard

from binlog_core.constants import CHECKSUM_LEN, LOG_EVENT_HEADER_LEN, EventType
from binlog_core.decoder import decode_stream
from binlog_core.errors import BinlogError, DecompressionError, MalformedError, UnsupportedError
from binlog_core.event import HEADER, Event, EventHeader
from binlog_core.events import decode_body
from binlog_core.events.control import TransactionPayloadEvent, XidEvent
from binlog_core.framing import iter_events
from binlog_core.payload import TransactionPayload, decode_transaction_payload, explode_payload, inflate
from tests.binlog_core.events import built_event, corpus_event, file_events
from tests.harness.corpus import corpus_path

pytestmark = pytest.mark.corpus

COMPRESSED = "rust_mysql_common/transaction_compression.000001"
"""MySQL 8.0.32: one zstd-compressed transaction (an INSERT) at offset 274."""
PAYLOAD_AT = 274


def _inner(relative: str, offset: int) -> list[Event]:
    return [e for e in file_events(corpus_path(relative)) if e.offset == offset and e.inner_index is not None]


@pytest.mark.parametrize(
    ("relative", "offset", "expected", "inner_types"),
    [
        # 02 01 00 | 03 01 b3 | 01 01 7c | 00: zstd, 179 bytes uncompressed, 124 bytes of payload
        (COMPRESSED, 274, TransactionPayloadEvent(0, 124, 179, b""), ["QUERY", "TABLE_MAP", "WRITE_ROWS", "XID"]),
        # 02 01 00 | 03 03 fc c0 03 | 01 03 fc c3 01 | 00: 960 bytes uncompressed, 451 of payload
        (
            "mysql-binlog-connector-java/mysql-bin.compressed",
            236,
            TransactionPayloadEvent(0, 451, 960, b""),
            ["QUERY", "TABLE_MAP", "UPDATE_ROWS", "XID"],
        ),
        # MySQL 8.0.31 with binlog_rows_query_log_events: a ROWS_QUERY before each TABLE_MAP
        (
            "mysql-binlog-connector-rust/mysql-bin.000057",
            730,
            TransactionPayloadEvent(0, 516, 1255, b""),
            ["QUERY", "ROWS_QUERY", "TABLE_MAP", "UPDATE_ROWS", "ROWS_QUERY", "TABLE_MAP", "WRITE_ROWS", "XID"],
        ),
    ],
)
def test_zstd_payload_header_and_the_events_it_packs(
    relative: str, offset: int, expected: TransactionPayloadEvent, inner_types: list[str]
) -> None:
    event = corpus_event(relative, offset)
    body = decode_body(event)
    assert isinstance(body, TransactionPayloadEvent)
    assert (body.compression_type, body.payload_size, body.uncompressed_size) == (
        expected.compression_type,
        expected.payload_size,
        expected.uncompressed_size,
    )
    assert body.payload[:4] == b"\x28\xb5\x2f\xfd"  # the zstd magic
    assert len(event.body) - len(body.payload) == {124: 10, 451: 14, 516: 14}[expected.payload_size]
    inner = _inner(relative, offset)
    assert [e.type_name for e in inner] == inner_types
    assert [e.inner_index for e in inner] == list(range(len(inner_types)))
    # the inner events fill the uncompressed size exactly, carry no checksum, no log position
    assert sum(e.header.event_size for e in inner) == expected.uncompressed_size
    assert {(e.checksum_ok, e.header.log_pos) for e in inner} == {(None, 0)}


def test_inner_events_decode_like_file_events_and_name_their_index_in_problems() -> None:
    data = (corpus_path(COMPRESSED)).read_bytes()
    decoded = [d for d in decode_stream(io.BytesIO(data), "t.000001") if d.event.inner_index is not None]
    assert [(d.event.offset, d.event.inner_index, d.problems) for d in decoded] == [(274, i, []) for i in range(4)]
    query, table_map, _, xid = (d.body for d in decoded)
    assert query.statement == "BEGIN"  # type: ignore[attr-defined]
    assert table_map.qualified_name == "test.tb1"  # type: ignore[attr-defined]
    assert [(r.inner_index, r.op, r.after) for r in decoded[2].rows] == [(2, "insert", (1,))]
    assert xid == XidEvent(462)


def _replace_payload_event(new_body: bytes) -> bytes:
    """The corpus file with the body of its TRANSACTION_PAYLOAD replaced (sizes and CRC32 rewritten)."""
    data = corpus_path(COMPRESSED).read_bytes()
    header = EventHeader._make(HEADER.unpack_from(data, PAYLOAD_AT))
    end = PAYLOAD_AT + header.event_size
    size = LOG_EVENT_HEADER_LEN + len(new_body) + CHECKSUM_LEN
    head = HEADER.pack(header.timestamp, header.type_code, header.server_id, size, PAYLOAD_AT + size, header.flags)
    event = head + new_body
    return data[:PAYLOAD_AT] + event + zlib.crc32(event).to_bytes(4, "little") + data[end:]


def _uncompressed() -> bytes:
    event = corpus_event(COMPRESSED, PAYLOAD_AT)
    return inflate(decode_transaction_payload(event.body))


def test_payload_of_compression_type_none_packs_the_same_events_uncompressed() -> None:
    # Transaction_payload::encode for NONE: 02 03 fc ff 00 (compression type 255, written as a
    # length-encoded integer of 3 bytes) | 01 01 b3 (payload size 179) | 00 | the events
    raw = _uncompressed()
    assert len(raw) == 179
    body = b"\x02\x03\xfc\xff\x00" + b"\x01\x01" + bytes([len(raw)]) + b"\x00" + raw
    events = list(iter_events(io.BytesIO(_replace_payload_event(body)), "none.000001"))
    outer = next(e for e in events if e.type_code == EventType.TRANSACTION_PAYLOAD)
    assert decode_body(outer) == TransactionPayloadEvent(255, 179, None, _uncompressed())
    inner = [(e.inner_index, e.header, e.body) for e in events if e.inner_index is not None]
    zstd_inner = [(e.inner_index, e.header, e.body) for e in _inner(COMPRESSED, PAYLOAD_AT)]
    assert inner == zstd_inner


@pytest.mark.parametrize("declared", [178, 180, 1 << 20])
def test_payload_whose_declared_uncompressed_size_disagrees_is_malformed(declared: int) -> None:
    event = corpus_event(COMPRESSED, PAYLOAD_AT)
    header = decode_transaction_payload(event.body)
    damaged = TransactionPayload(header.compression_type, header.payload_size, declared, header.payload)
    with pytest.raises(MalformedError) as caught:
        inflate(damaged)
    assert caught.value.code == "MALFORMED"
    assert str(declared) in caught.value.message


def test_uncompressed_payload_whose_declared_size_disagrees_is_malformed() -> None:
    raw = _uncompressed()
    with pytest.raises(MalformedError, match="179 bytes, not the 200"):
        inflate(TransactionPayload(255, len(raw), 200, raw))


def test_damaged_payload_stops_the_file_at_the_outer_event_with_its_offset() -> None:
    # 03 01 b3 rewritten as 03 01 b0: the header now declares 176 uncompressed bytes
    body = corpus_event(COMPRESSED, PAYLOAD_AT).body.replace(b"\x03\x01\xb3", b"\x03\x01\xb0", 1)
    stream = io.BytesIO(_replace_payload_event(body))
    with pytest.raises(MalformedError) as caught:
        list(iter_events(stream, "damaged.000001"))
    assert (caught.value.code, caught.value.file, caught.value.offset) == ("MALFORMED", "damaged.000001", PAYLOAD_AT)


def test_zstd_inflation_allocates_by_what_the_stream_holds_not_by_the_declared_size() -> None:
    # a damaged uncompressed_size of 4 GiB must not make the decoder reserve 4 GiB
    payload = zstandard.ZstdCompressor().compress(_uncompressed())
    damaged = TransactionPayload(0, len(payload), 1 << 32, payload)
    tracemalloc.start()
    try:
        with pytest.raises(MalformedError, match="179 bytes, not the 4294967296"):
            inflate(damaged)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 8 << 20


def test_uncompressed_size_above_the_4_gib_cap_is_refused_before_inflating() -> None:
    with pytest.raises(MalformedError, match="exceeds"):
        inflate(TransactionPayload(0, 4, (1 << 32) + 1, b"\x28\xb5\x2f\xfd"))


def test_bytes_that_are_not_zstd_fail_decompression() -> None:
    with pytest.raises(DecompressionError):
        inflate(TransactionPayload(0, 6, 179, b"not zstd"))


def test_unknown_compression_type_is_unsupported() -> None:
    with pytest.raises(UnsupportedError, match="compression type 1"):
        inflate(TransactionPayload(1, 3, 3, b"abc"))


@pytest.mark.parametrize(
    ("header", "message"),
    [
        (b"\x02\x01\x00\x03\x01\x05\x00", "without payload_size"),  # no field 1
        (b"\x03\x01\x05\x01\x01\x05\x00", "without compression_type"),  # no field 2
        (b"\x02\x01\x00\x01\x01\x05", "without an end mark"),  # the header runs to the end
    ],
)
def test_payload_header_missing_what_the_server_requires_is_malformed(header: bytes, message: str) -> None:
    # Transaction_payload::decode fails "without both payload size and compression type" or
    # without the end mark
    event = built_event(corpus_event(COMPRESSED, PAYLOAD_AT).fde, EventType.TRANSACTION_PAYLOAD, header)
    with pytest.raises(MalformedError, match=message):
        decode_body(event)


def test_payload_header_skips_fields_of_a_newer_server_by_their_length() -> None:
    raw = _uncompressed()
    body = b"\x07\x02\xab\xcd" + b"\x02\x03\xfc\xff\x00\x01\x01" + bytes([len(raw)]) + b"\x00" + raw
    event = built_event(corpus_event(COMPRESSED, PAYLOAD_AT).fde, EventType.TRANSACTION_PAYLOAD, body)
    assert decode_body(event) == TransactionPayloadEvent(255, 179, None, raw)


@pytest.mark.parametrize(
    ("cut", "message"),
    # the inner events are 71, 45, 36 and 27 bytes: the XID starts at 152
    [(152 + 20, "inner event declares"), (152 + 5, "inside an event header")],
)
def test_inner_event_running_past_the_payload_is_malformed(cut: int, message: str) -> None:
    raw = _uncompressed()[:cut]
    body = b"\x02\x03\xfc\xff\x00\x01\x01" + bytes([len(raw)]) + b"\x00" + raw
    event = built_event(corpus_event(COMPRESSED, PAYLOAD_AT).fde, EventType.TRANSACTION_PAYLOAD, body)
    with pytest.raises(MalformedError, match=message) as caught:
        list(explode_payload(event))
    assert caught.value.code == "MALFORMED" and caught.value.inner_index == 3
    assert isinstance(caught.value, BinlogError)
