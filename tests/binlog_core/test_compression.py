"""MariaDB's compressed event payloads (``log_bin_compress=ON``): QUERY_COMPRESSED and the compressed
rows events, v1 (166-168, real) and v2 (169-171, built).

The real events are those of the small MariaDB 10.11 file of ``events/data``; ``mariadb-binlog``
prints the same statement and rows for them (the agreement tests of the fixtures cover the rows).
MariaDB writes the compressed rows events in their v1 form only; the v2 form, which no real file
holds, is built from each real v1 event as MariaDB's reader expects it
(``Rows_log_event::Rows_log_event``: a post-header of 10 bytes, ``ROWS_HEADER_LEN_V2``, whose
last two hold the length of the extra row data including themselves, then the rows part as in
v1; ``binlog_buf_uncompress`` for the compressed part).
https://github.com/MariaDB/server/blob/11.4/sql/log_event.cc
"""

from __future__ import annotations

import io
import zlib

import pytest

from binlog_core.compression import deflate_mariadb, inflate_mariadb
from binlog_core.constants import CHECKSUM_LEN, LOG_EVENT_HEADER_LEN, EventType
from binlog_core.decoder import decode_stream
from binlog_core.errors import DecompressionError, TruncatedError
from binlog_core.event import HEADER, EventHeader
from binlog_core.events import decode_body
from binlog_core.events.query import QueryEvent
from tests.binlog_core.events import event_at, file_events
from tests.binlog_core.real_events import MISC

STATEMENT = "INSERT INTO t VALUES (20, REPEAT('compressed statement ', 2), 1, 1, 1)"
"""What mariadb-binlog prints for the QUERY_COMPRESSED at 2238."""


def test_compressed_statement_inflates_to_what_mariadb_binlog_prints() -> None:
    event = event_at(MISC, 2238)
    # after the schema "fx\0": 81 = compressed, zlib, 1 length byte | 46 = 70 bytes | zlib stream
    compressed = event.body[event.body.index(b"fx\x00") + 3 :]
    assert compressed[:4].hex(" ") == "81 46 78 9c"
    assert inflate_mariadb(compressed) == STATEMENT.encode()
    query = decode_body(event)
    assert isinstance(query, QueryEvent) and (query.statement, query.compressed) == (STATEMENT, True)


def test_compressed_rows_part_declares_its_uncompressed_length() -> None:
    # WRITE_ROWS_COMPRESSED_V1: table_id 1a 00 00 00 00 00 | flags 01 00 | 5 columns | bitmap 1f |
    # 81 3d: 61 bytes of row image, compressed
    event = event_at(MISC, 2590)
    assert event.body[:10].hex(" ") == "1a 00 00 00 00 00 01 00 05 1f"
    rows = inflate_mariadb(event.body[10:])
    assert len(rows) == 0x3D
    assert b"compressed rows compressed rows " in rows


def _as_v2(body: bytes) -> bytes:
    """A v1 rows body as v2: the same post-header plus the extra-data length 2 (no extra data)."""
    return body[:8] + (2).to_bytes(2, "little") + body[8:]


def _misc_with_v2_compressed_rows() -> bytes:
    """The MariaDB file with its three compressed v1 rows events rewritten as v2 (166 -> 169, ...)."""
    data = MISC.read_bytes()
    out = bytearray(data[:4])
    for event in file_events(MISC):
        start = event.offset
        end = start + event.header.event_size
        if event.type_code not in (166, 167, 168):
            out += data[start:end]
            continue
        body = _as_v2(event.body)
        h = event.header
        size = LOG_EVENT_HEADER_LEN + len(body) + CHECKSUM_LEN
        raw = HEADER.pack(h.timestamp, h.type_code + 3, h.server_id, size, h.log_pos + 2, h.flags) + body
        out += raw + zlib.crc32(raw).to_bytes(4, "little")
    return bytes(out)


def test_v2_compressed_rows_events_decode_to_the_rows_of_their_v1_form() -> None:
    v1 = [d for d in decode_stream(io.BytesIO(MISC.read_bytes()), "v1") if d.event.type_code in (166, 167, 168)]
    v2 = [d for d in decode_stream(io.BytesIO(_misc_with_v2_compressed_rows()), "v2") if d.event.type_code >= 169]
    assert [d.event.type_name for d in v2] == [
        EventType.WRITE_ROWS_COMPRESSED.name,
        EventType.UPDATE_ROWS_COMPRESSED.name,
        EventType.DELETE_ROWS_COMPRESSED.name,
    ]
    assert [d.problems for d in v2] == [[], [], []]
    changes = [[(r.op, r.before, r.after) for r in d.rows] for d in v2]
    assert changes == [[(r.op, r.before, r.after) for r in d.rows] for d in v1]
    # the rows mariadb-binlog prints for the v1 events: INSERT (21, 'compressed rows compressed
    # rows ', 2.000, 2, 2), then UPDATE ... SET @2='upd', then DELETE
    (insert,), (update,), (delete,) = (d.rows for d in v2)
    assert insert.after is not None and insert.after[:2] == (21, "compressed rows compressed rows ")
    assert update.after is not None and update.after[1] == "upd"
    assert delete.before is not None and delete.after is None


# -- the compressed payload itself -----------------------------------------------------------


@pytest.mark.parametrize("size", [1, 255, 256, 65535, 65536, 1 << 24])
def test_the_length_takes_as_many_big_endian_bytes_as_it_needs(size: int) -> None:
    data = bytes(range(256)) * (size // 256) + bytes(size % 256)
    packed = deflate_mariadb(data)
    len_bytes = (size.bit_length() + 7) // 8
    assert packed[0] == 0x80 | len_bytes
    assert int.from_bytes(packed[1 : 1 + len_bytes], "big") == size
    assert inflate_mariadb(packed) == data


@pytest.mark.parametrize(
    ("header", "message"),
    [
        (0x01, "lacks the compressed flag"),
        (0x91, "algorithm 1"),
        (0x89, "reserved bit 3"),
        (0x80, "0 length bytes"),
        (0x85, "5 length bytes"),
    ],
)
def test_header_byte_other_than_the_server_writes_is_refused(header: int, message: str) -> None:
    payload = bytes([header]) + bytes([5]) + zlib.compress(b"hello")
    with pytest.raises(DecompressionError, match=message):
        inflate_mariadb(payload)


def test_declared_length_of_zero_or_above_the_limit_is_refused_before_inflating() -> None:
    with pytest.raises(DecompressionError, match="length 0"):
        inflate_mariadb(b"\x81\x00" + zlib.compress(b"hello"))
    with pytest.raises(DecompressionError, match="exceeds the limit"):
        inflate_mariadb(b"\x84" + (1 << 31).to_bytes(4, "big") + zlib.compress(b"hello"))


def test_declared_length_no_zlib_stream_of_that_size_could_reach_is_refused() -> None:
    # deflate expands at most about 1032:1: 13 compressed bytes cannot hold 1 MiB
    with pytest.raises(DecompressionError, match="cannot inflate"):
        inflate_mariadb(b"\x83" + (1 << 20).to_bytes(3, "big") + zlib.compress(b"hello"))


@pytest.mark.parametrize(("declared", "message"), [(4, "past the declared 4"), (6, "inflated to 5 bytes")])
def test_stream_whose_length_disagrees_with_the_declared_one_is_refused(declared: int, message: str) -> None:
    with pytest.raises(DecompressionError, match=message):
        inflate_mariadb(bytes([0x81, declared]) + zlib.compress(b"hello"))


def test_stream_cut_before_its_end_marker_is_truncated() -> None:
    with pytest.raises(TruncatedError, match="ends early"):
        inflate_mariadb(b"\x81\x05" + zlib.compress(b"hello")[:-6])


def test_bytes_after_the_zlib_stream_are_refused() -> None:
    with pytest.raises(DecompressionError, match="after the end"):
        inflate_mariadb(b"\x81\x05" + zlib.compress(b"hello") + b"junk")


def test_damaged_zlib_stream_fails_decompression() -> None:
    stream = bytearray(zlib.compress(b"hello hello hello"))
    stream[3] ^= 0xFF
    with pytest.raises(DecompressionError, match="zlib"):
        inflate_mariadb(b"\x81\x11" + bytes(stream))


def test_event_header_layout_used_to_rewrite_events_is_the_real_one() -> None:
    # the rewriting above packs headers with the decoder's own layout: check it on a real one
    event = event_at(MISC, 2590)
    raw = MISC.read_bytes()[event.offset : event.offset + LOG_EVENT_HEADER_LEN]
    assert EventHeader._make(HEADER.unpack(raw)) == event.header
