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
import struct
import tracemalloc
import zlib

import pytest
import zstandard

from binlog_core.constants import CHECKSUM_LEN, LOG_EVENT_HEADER_LEN, EventType
from binlog_core.decoder import DecodedEvent, decode_stream
from binlog_core.errors import BinlogError, DecompressionError, MalformedError, UnsupportedError
from binlog_core.event import HEADER, Event, EventHeader
from binlog_core.events import decode_body
from binlog_core.events.control import TransactionPayloadEvent, XidEvent
from binlog_core.framing import iter_events
from binlog_core.payload import TransactionPayload, decode_transaction_payload, explode_payload, inflate
from tests.binlog_core.events import built_event, corpus_event, file_events
from tests.harness.corpus import corpus_path

pytestmark = pytest.mark.corpus

HEADER_SIZE = struct.Struct("<I")
"""An event header's ``event_size`` (at byte 9)."""

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


# -- a damaged payload is a problem of its event; the file goes on ---------------------------

TWO_PAYLOADS = "mysql-binlog-connector-rust/mysql-bin.000057"
"""MySQL 8.0.31: zstd TRANSACTION_PAYLOADs at 457 (5 inner events) and 730 (8), a GTID between."""
FIRST_AT, FIRST_SIZE = 457, 194


def _decoded(data: bytes, name: str = "mysql-bin.000057") -> list[DecodedEvent]:
    """Every event decoding yields (anything raised fails the test)."""
    return list(decode_stream(io.BytesIO(data), name))


def _rewritten_first_payload(new_body: bytes) -> bytes:
    """The two-payload file with the body of its first payload replaced (size, log_pos, CRC32 rewritten)."""
    data = corpus_path(TWO_PAYLOADS).read_bytes()
    size = LOG_EVENT_HEADER_LEN + len(new_body) + CHECKSUM_LEN
    header = EventHeader._make(HEADER.unpack_from(data, FIRST_AT))
    head = HEADER.pack(header.timestamp, header.type_code, header.server_id, size, FIRST_AT + size, header.flags)
    event = head + new_body
    return data[:FIRST_AT] + event + zlib.crc32(event).to_bytes(4, "little") + data[FIRST_AT + FIRST_SIZE :]


def _seen(items: list[DecodedEvent], after: int, moved: int = 0) -> list[tuple[int, int | None, str, list[object]]]:
    """Offset (as in the real file), inner index, type and row values of the events after ``after``."""
    return [
        (d.event.offset - moved, d.event.inner_index, d.event.type_name, [(r.before, r.after) for r in d.rows])
        for d in items
        if d.event.offset > after
    ]


def _packed(value: int) -> bytes:
    """A length-encoded integer (1 byte below 251, else fc + u16, enough here)."""
    return bytes([value]) if value < 251 else b"\xfc" + value.to_bytes(2, "little")


def _field(field_type: int, value: int) -> bytes:
    number = _packed(value)
    return bytes([field_type]) + _packed(len(number)) + number


@pytest.mark.parametrize("new", [0x00, 0xFF])
def test_payload_damaged_in_its_compressed_bytes_is_a_problem_of_its_event_and_the_file_goes_on(new: int) -> None:
    # the middle byte of the first payload's 161 zstd bytes overwritten, the CRC32 recomputed
    # (as a server would have written the damaged bytes): zstd finds the corruption
    data = bytearray(corpus_path(TWO_PAYLOADS).read_bytes())
    # header 02 01 00 | 03 01 d6 | 01 01 a1 | 00: zstd, 214 bytes uncompressed, 161 of payload
    compressed_at = FIRST_AT + LOG_EVENT_HEADER_LEN + 10
    assert data[compressed_at : compressed_at + 4] == b"\x28\xb5\x2f\xfd"  # the zstd magic
    data[compressed_at + 161 // 2] = new
    body_end = FIRST_AT + FIRST_SIZE - CHECKSUM_LEN
    data[body_end : body_end + 4] = zlib.crc32(data[FIRST_AT:body_end]).to_bytes(4, "little")
    whole = _decoded(corpus_path(TWO_PAYLOADS).read_bytes())
    damaged = _decoded(bytes(data))

    payload = next(d for d in damaged if d.event.offset == FIRST_AT and d.event.inner_index is None)
    assert [(type(p), p.code, p.file, p.offset, p.inner_index, p.event_type) for p in payload.problems] == [
        (DecompressionError, "DECOMPRESSION_FAILED", "mysql-bin.000057", FIRST_AT, None, "TRANSACTION_PAYLOAD")
    ]
    assert "zstd" in payload.problems[0].message
    assert isinstance(payload.body, TransactionPayloadEvent)  # its header still decodes
    # none of its inner events, and every event after it as in the real file, with no problem
    assert [d.event.inner_index for d in damaged if d.event.offset == FIRST_AT] == [None]
    assert _seen(damaged, FIRST_AT) == _seen(whole, FIRST_AT)
    assert [d.event.type_name for d in damaged if d.event.offset > FIRST_AT][:2] == ["GTID", "TRANSACTION_PAYLOAD"]
    assert sum(len(d.rows) for d in damaged if d.event.offset > FIRST_AT) == 2
    assert [d for d in damaged if d.problems and d is not payload] == []


def test_inner_event_running_past_its_payload_keeps_the_inner_events_before_it_and_the_file_goes_on() -> None:
    # the first payload's WRITE_ROWS (#3, 36 bytes) declaring 136, recompressed with zstd as the
    # server writes it (Transaction_payload::encode: compression type, uncompressed size, payload size)
    raw = bytearray(inflate(decode_transaction_payload(corpus_event(TWO_PAYLOADS, FIRST_AT).body)))
    sizes = [e.header.event_size for e in _inner(TWO_PAYLOADS, FIRST_AT)]
    assert sizes == [68, 43, 40, 36, 27]
    write_rows_at = sum(sizes[:3])
    HEADER_SIZE.pack_into(raw, write_rows_at + 9, 136)
    compressed = zstandard.ZstdCompressor().compress(bytes(raw))
    body = _field(2, 0) + _field(3, len(raw)) + _field(1, len(compressed)) + b"\x00" + compressed
    data = _rewritten_first_payload(body)
    moved = len(data) - len(corpus_path(TWO_PAYLOADS).read_bytes())
    damaged = _decoded(data)
    whole = _decoded(corpus_path(TWO_PAYLOADS).read_bytes())

    payload = next(d for d in damaged if d.event.offset == FIRST_AT and d.event.inner_index is None)
    assert [str(p) for p in payload.problems] == [
        "mysql-bin.000057@457#3 WRITE_ROWS: inner event declares 136 bytes, the payload has 63 left [MALFORMED]"
    ]
    # the inner events before the damage decode as in the real file; the WRITE_ROWS and XID are lost
    inner = [d for d in damaged if d.event.offset == FIRST_AT and d.event.inner_index is not None]
    real = [d for d in whole if d.event.offset == FIRST_AT and d.event.inner_index is not None]
    assert [(d.event.inner_index, d.event.type_name, d.body, d.problems) for d in inner] == [
        (d.event.inner_index, d.event.type_name, d.body, d.problems) for d in real[:3]
    ]
    assert _seen(damaged, FIRST_AT, moved) == _seen(whole, FIRST_AT)
    assert [d for d in damaged if d.problems and d is not payload] == []


def test_damaged_payload_header_is_reported_once_on_its_event_and_the_file_goes_on() -> None:
    # 03 01 b3 rewritten as 03 01 b0: the header now declares 176 uncompressed bytes, not 179
    data = corpus_path(COMPRESSED).read_bytes()
    body = corpus_event(COMPRESSED, PAYLOAD_AT).body.replace(b"\x03\x01\xb3", b"\x03\x01\xb0", 1)
    damaged = _decoded(_replace_payload_event(body), "damaged.000001")
    assert [(d.event.offset, d.event.inner_index, d.event.type_name, [str(p) for p in d.problems]) for d in damaged][
        3:
    ] == [
        (
            PAYLOAD_AT,
            None,
            "TRANSACTION_PAYLOAD",
            [
                "damaged.000001@274 TRANSACTION_PAYLOAD: payload holds more than the 176 bytes its header "
                "declares [MALFORMED]"
            ],
        ),
        (431, None, "ROTATE", []),
    ]
    assert len(data) == 475  # the ROTATE is the file's last event


def test_framing_hands_the_payload_problem_on_the_outer_event_before_its_inner_events() -> None:
    body = corpus_event(COMPRESSED, PAYLOAD_AT).body.replace(b"\x03\x01\xb3", b"\x03\x01\xb0", 1)
    events = list(iter_events(io.BytesIO(_replace_payload_event(body)), "damaged.000001"))
    assert [(e.offset, e.inner_index, e.type_name) for e in events] == [
        (4, None, "FORMAT_DESCRIPTION"),
        (126, None, "PREVIOUS_GTIDS"),
        (197, None, "ANONYMOUS_GTID"),
        (PAYLOAD_AT, None, "TRANSACTION_PAYLOAD"),
        (431, None, "ROTATE"),
    ]
    problems = [(e.offset, None if e.problem is None else (e.problem.code, e.problem.offset)) for e in events]
    assert problems == [(4, None), (126, None), (197, None), (PAYLOAD_AT, ("MALFORMED", PAYLOAD_AT)), (431, None)]
    # a whole payload carries none
    assert {e.problem for e in file_events(corpus_path(COMPRESSED))} == {None}


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
