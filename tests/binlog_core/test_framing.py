"""Framing: files of every binlog version, the description each event is read with, and offsets.

Real files where the corpus has them: v2 (MySQL 4.0.0), v3 (MySQL 4.0.23, 4.1.24, 4.1.26), v4
from MySQL 5.7, 8.0 and MariaDB 10.x/11.x, relay logs that carry a second FORMAT_DESCRIPTION.
The corpus has no v1 file (MySQL 3.23) and no v2 file with a ROTATE: those are built from the
documented layout, as noted at each.
"""

from __future__ import annotations

import itertools
import struct

import pytest

from binlog_core.constants import GTID_EVENTS, EventType
from binlog_core.decoder import DecodedEvent, decode_file
from binlog_core.event import START_V3_BODY_LEN, Event
from binlog_core.events.control import RotateEvent, StartV3Event, StopEvent
from binlog_core.events.query import QueryEvent, StatusVars
from binlog_core.framing import find_transaction_start, iter_events, open_events
from tests.binlog_core.real_events import decode_bytes, file_bytes
from tests.fixtures.truth import FIXTURES
from tests.harness.corpus import corpus_path

V2_40 = "mariadb-test-data/std_data/master-bin.000001"
V3_4023 = "mariadb-test-data/std_data/trunc_binlog.000001"
V3_4126 = "mariadb-test-data/std_data/bug47142_master-bin.000001"
V3_4124 = "mariadb-test-data/suite/binlog/std_data/binlog_old_version_4_1.000001"
MYSQL_5730 = "mysql-cdc-rs/5.7/02_query/log.bin"
MYSQL_8029 = "maxwell/binlog.000004"
MARIADB_1055 = "rust_mysql_common/mariadb-bin.000001"
MARIADB_1185 = "mariadb-poc/domain_id_0/mariadb-repl-bin.000004"
RELAY_50 = "mysql-server/std_data/corrupt-relay-bin.000624"
RELAY_5058 = "mysql-server/std_data/bug33029-slave-relay-bin.000001"

V3_POST_HEADERS = (56, 11, 0, 8, 0, 18, 0, 4, 4, 4, 4, 18)
"""START_V3 .. NEW_LOAD in v2/v3 files: MySQL 5.0 sql/log_event.cc Format_description_log_event
for binlog_ver 3 (START_V3_HEADER_LEN 56, QUERY_HEADER_MINIMAL_LEN 11, ROTATE_HEADER_LEN 8,
LOAD_HEADER_LEN 18, CREATE_FILE/APPEND_BLOCK/EXEC_LOAD/DELETE_FILE 4, NEW_LOAD = LOAD)."""

V1_POST_HEADERS = (56, 11, 0, 0, 0, 18, 0, 4, 4, 4, 4, 18)
"""The same for binlog_ver 1: ``post_header_len[ROTATE_EVENT-1] = (binlog_ver==1) ? 0 : ROTATE_HEADER_LEN``."""


def _decoded(relative: str) -> list[DecodedEvent]:
    return list(decode_file(corpus_path(relative)))


def _statements(items: list[DecodedEvent]) -> list[tuple[int, str, str]]:
    return [
        (item.event.offset, item.body.schema, str(item.body.statement))
        for item in items
        if isinstance(item.body, QueryEvent)
    ]


# --- v1: MySQL 3.23, 13-byte headers -----------------------------------------------------------
#
# Built from the documented layout (no v1 file in the corpus): the 13-byte header is
# when u32 | type u8 | server_id u32 | event_size u32; START_V3 is binlog_version u16 |
# server_version char[50] | created u32; QUERY's post-header is thread_id u32 | exec_time u32 |
# db_len u8 | error_code u16 (QUERY_HEADER_MINIMAL_LEN = 11), then db, NUL and the statement;
# ROTATE holds the next file's name alone.  MySQL 5.0 sql/log_event.cc (Log_event(buf, fde) with
# common_header_len 13, Format_description_log_event for binlog_ver 1, Rotate_log_event):
# https://github.com/mysql/mysql-server/blob/5.0/sql/log_event.cc
# https://dev.mysql.com/doc/dev/mysql-server/latest/page_protocol_replication_binlog_event.html


def _v1_event(type_code: int, body: bytes, when: int = 1_000_000_000) -> bytes:
    return struct.pack("<IBII", when, type_code, 1, 13 + len(body)) + body


def _v1_file() -> bytes:
    start = struct.pack("<H50sI", 1, b"3.23.58-log", 1_000_000_000)
    query = struct.pack("<IIBH", 7, 2, 4, 0) + b"test\x00" + b"insert into t values (1)"
    return (
        b"\xfebin"
        + _v1_event(EventType.START_V3, start)
        + _v1_event(EventType.QUERY, query, 1_000_000_005)
        + _v1_event(EventType.ROTATE, b"master-bin.002", 1_000_000_009)
    )


def test_v1_file_with_13_byte_headers_frames_and_decodes() -> None:
    items = list(decode_bytes(_v1_file(), "master-bin.001"))
    assert [(i.event.offset, i.event.type_name, i.event.header.event_size, i.problems) for i in items] == [
        (4, "START_V3", 13 + START_V3_BODY_LEN, []),
        (73, "QUERY", 13 + 11 + 5 + 24, []),
        (126, "ROTATE", 13 + 14, []),
    ]
    fde = items[0].event.fde
    assert (fde.binlog_version, fde.header_length, tuple(fde.post_header_lengths)) == (1, 13, V1_POST_HEADERS)
    assert items[0].body == StartV3Event(1, "3.23.58-log", 1_000_000_000)
    query = items[1].body
    assert isinstance(query, QueryEvent)
    assert (query.thread_id, query.exec_time, query.error_code, query.schema, query.statement) == (
        7,
        2,
        0,
        "test",
        "insert into t values (1)",
    )
    assert query.status_vars == StatusVars()
    assert items[2].body == RotateEvent(4, "master-bin.002")  # v1 ROTATE has no position: the file's start


# --- v2: MySQL 4.0.0-4.0.1, 19-byte headers ----------------------------------------------------


@pytest.mark.corpus
def test_v2_file_start_and_stop() -> None:
    items = _decoded(V2_40)
    assert [(i.event.offset, i.event.type_name, i.event.header.log_pos, i.body, i.problems) for i in items] == [
        (4, "START_V3", 1, StartV3Event(2, "4.0.0-debug-log", 992973355), []),
        (79, "STOP", 0, StopEvent(), []),
    ]
    fde = items[0].event.fde
    assert (fde.binlog_version, fde.header_length, tuple(fde.post_header_lengths)) == (2, 19, V3_POST_HEADERS)


@pytest.mark.corpus
def test_v2_rotate_reads_its_8_byte_position() -> None:
    # The v2 file has no ROTATE: one is appended after its real START_V3, in the layout MySQL 4.0
    # writes and reads whenever the header is 19 bytes (Rotate_log_event::write_data:
    # int8store(pos) then the name; Rotate_log_event(buf, len, old_format): pos = uint8korr(...)
    # unless old_format): https://github.com/mysql/mysql-server/blob/5.0/sql/log_event.cc
    start = file_bytes(corpus_path(V2_40))[:79]
    name = b"master-bin.000002"
    body = struct.pack("<Q", 4) + name
    rotate = struct.pack("<IBIIIH", 992973366, EventType.ROTATE, 2, 19 + len(body), 0, 0) + body
    items = list(decode_bytes(start + rotate, "master-bin.000001"))
    assert [(i.event.offset, i.event.type_name, i.body, i.problems) for i in items] == [
        (4, "START_V3", StartV3Event(2, "4.0.0-debug-log", 992973355), []),
        (79, "ROTATE", RotateEvent(4, "master-bin.000002"), []),
    ]


# --- v3: MySQL 4.0.2-4.1 -------------------------------------------------------------------------


@pytest.mark.corpus
def test_v3_files_start_queries_and_rotate() -> None:
    trunc = _decoded(V3_4023)
    assert trunc[0].body == StartV3Event(3, "4.0.23-debug-log", 1108844546)
    assert _statements(trunc) == [(79, "test", "BEGIN"), (119, "test", "insert t1 values (1)")]

    bug47142 = _decoded(V3_4126)
    assert bug47142[0].body == StartV3Event(3, "4.1.26-debug-log", 1264103377)
    fde = bug47142[0].event.fde
    assert (fde.binlog_version, fde.header_length, tuple(fde.post_header_lengths)) == (3, 19, V3_POST_HEADERS)
    assert _statements(bug47142) == [
        (79, "test", "create table t1 (a int primary key, b int) engine=innodb"),
        (170, "test", "insert into t1 values (1, 1)"),
        (233, "test", "update t1 set a=a+b, b=b+a"),
        (294, "test", "drop table t1"),
    ]
    assert [(i.event.offset, i.body) for i in bug47142[-1:]] == [(342, RotateEvent(4, "master-bin.000002"))]

    old_41 = _decoded(V3_4124)
    assert old_41[0].body == StartV3Event(3, "4.1.24-debug-log", 1201690911)
    assert _statements(old_41) == [
        (79, "test", "CREATE TABLE t1 (a int, b char(50)) ENGINE = MyISAM"),
        (165, "test", "CREATE TABLE t3 (a char(20))"),
        (270, "test", "INSERT INTO t1 VALUES (@x, 'four')"),
        (374, "test", "INSERT INTO t1 VALUES (RAND() * 1000000, 'random')"),
        (487, "test", "INSERT INTO t1 VALUES (LAST_INSERT_ID(), 'last_insert_id')"),
    ]
    for item in trunc + bug47142 + old_41:
        assert item.problems == []
        if isinstance(item.body, QueryEvent):
            assert (item.body.status_vars, item.body.unknown_status_code) == (StatusVars(), None)


# --- v4: the FORMAT_DESCRIPTION's post-header lengths ------------------------------------------
#
# Checked against the servers' tables: MySQL libs/mysql/binlog/event/control_events.cpp
# (5.7: libbinlogevents/src/control_events.cpp) Format_description_event::server_event_header_length
# -- QUERY_HEADER_LEN 13, ROTATE 8, LOAD 18, CREATE_FILE/APPEND_BLOCK/EXEC_LOAD/DELETE_FILE 4,
# NEW_LOAD 18, FORMAT_DESCRIPTION 57 + number of types, BEGIN_LOAD_QUERY 4, EXECUTE_LOAD_QUERY 26,
# TABLE_MAP 8, rows v1 8, INCIDENT 2, rows v2 10, GTID 42, TRANSACTION_CONTEXT 18, VIEW_CHANGE 52,
# PARTIAL_UPDATE_ROWS 10, TRANSACTION_PAYLOAD 40; 8.0 zeroes the types it no longer writes -- and
# MariaDB sql/log_event_server.cc Format_description_log_event (ANNOTATE_ROWS 0,
# BINLOG_CHECKPOINT 4, GTID 19, GTID_LIST 4, START_ENCRYPTION 0, QUERY_COMPRESSED 13, compressed
# rows v1 8 and v2 10).

COMMON_V4 = (13, 0, 8, 0, 18, 0, 4, 4, 4, 4, 18, 0, 0)
"""QUERY .. USER_VAR as MySQL 5.x and MariaDB write them."""

POST_HEADERS_V4 = {
    MYSQL_5730: (56, *COMMON_V4, 95, 0, 4, 26, 8, 0, 0, 0, 8, 8, 8, 2, 0, 0, 0, 10, 10, 10, 42, 42, 0, 18, 52, 0),
    MYSQL_8029: (
        *(0, 13, 0, 8, 0, 0, 0, 0, 4, 0, 4, 0, 0, 0, 98, 0, 4, 26, 8, 0, 0, 0, 8, 8, 8, 2, 0, 0, 0, 10, 10, 10),
        *(42, 42, 0, 18, 52, 0, 10, 40, 0),
    ),
    MARIADB_1055: (
        *(56, *COMMON_V4, 228, 0, 4, 26, 8, 0, 0, 0, 8, 8, 8, 2, 0, 0, 0, 10, 10, 10),
        *(0,) * 128,  # 33-160: MySQL's GTID events and the gap up to ANNOTATE_ROWS
        *(4, 19, 4, 0, 13, 8, 8, 8, 10, 10, 10),  # 161-171
    ),
}


@pytest.mark.corpus
@pytest.mark.parametrize(
    ("relative", "server_version"),
    [
        (MYSQL_5730, "5.7.30-log"),
        (MYSQL_8029, "8.0.29"),
        (MARIADB_1055, "10.5.15-MariaDB-1:10.5.15+maria~focal-log"),
    ],
)
def test_format_description_post_header_lengths(relative: str, server_version: str) -> None:
    first = next(iter(open_events(corpus_path(relative))))
    fde = first.fde
    assert (first.type_name, fde.binlog_version, fde.server_version, fde.header_length) == (
        "FORMAT_DESCRIPTION",
        4,
        server_version,
        19,
    )
    assert tuple(fde.post_header_lengths) == POST_HEADERS_V4[relative]
    assert len(fde.post_header_lengths) + 57 == fde.post_header_len(EventType.FORMAT_DESCRIPTION)


# --- offsets from the bytes read -----------------------------------------------------------------


@pytest.mark.corpus
def test_mariadb_11_events_whose_next_position_is_0_are_placed_by_the_bytes_read() -> None:
    # MariaDB 11.4+ writes log_pos 0 inside transactions (the events go through a cache first)
    events: list[Event] = list(open_events(corpus_path(MARIADB_1185)))
    assert [(e.offset, e.type_name, e.header.event_size, e.header.log_pos) for e in events[:14]] == [
        (4, "FORMAT_DESCRIPTION", 252, 256),
        (256, "GTID_LIST", 43, 299),
        (299, "BINLOG_CHECKPOINT", 50, 349),
        (349, "MARIADB_GTID", 42, 391),
        (391, "QUERY", 114, 0),
        (505, "QUERY", 232, 0),
        (737, "QUERY", 109, 0),
        (846, "QUERY", 319, 0),
        (1165, "XID", 31, 1196),
        (1196, "BINLOG_CHECKPOINT", 50, 1246),
        (1246, "MARIADB_GTID", 42, 1288),
        (1288, "QUERY", 114, 0),
        (1402, "QUERY", 232, 0),
        (1634, "QUERY", 109, 0),
    ]
    assert events[0].fde.server_version == "11.8.5-MariaDB-ubu2404-log"
    assert sum(e.header.log_pos == 0 for e in events) == 1620
    for before, after in itertools.pairwise(events):
        assert before.offset + before.header.event_size == after.offset
        assert before.header.log_pos in (0, after.offset)
    last = events[-1]
    assert last.offset + last.header.event_size == len(file_bytes(corpus_path(MARIADB_1185)))
    assert all(e.checksum_ok for e in events)


# --- a later FORMAT_DESCRIPTION governs the events after it ------------------------------------


@pytest.mark.corpus
def test_a_relay_logs_second_format_description_governs_the_events_after_it() -> None:
    # a replica's relay log: its own description (5.0.46), a ROTATE, then its source's (5.0.30)
    events = list(open_events(corpus_path(RELAY_50)))
    assert [(e.offset, e.type_name, e.fde.server_version) for e in events[:5]] == [
        (4, "FORMAT_DESCRIPTION", "5.0.46-enterprise-gpl-log"),
        (98, "ROTATE", "5.0.46-enterprise-gpl-log"),
        (141, "FORMAT_DESCRIPTION", "5.0.30-enterprise-gpl-log"),
        (235, "QUERY", "5.0.30-enterprise-gpl-log"),
        (294, "INTVAR", "5.0.30-enterprise-gpl-log"),
    ]
    assert {e.fde.server_version for e in events[2:]} == {"5.0.30-enterprise-gpl-log"}


@pytest.mark.corpus
def test_a_later_format_description_without_checksums_ends_the_checksums() -> None:
    # A relay log as a MySQL 5.7 replica of a 5.0 source writes it: the replica's description
    # (CRC32 checksums), then the source's description and events (no checksums).  Real bytes:
    # the 5.7.30 FORMAT_DESCRIPTION, then the 5.0.58 relay log's from its second description on.
    replica = file_bytes(corpus_path(MYSQL_5730))
    replica_fde = replica[4 : 4 + struct.unpack_from("<I", replica, 4 + 9)[0]]
    source = file_bytes(corpus_path(RELAY_5058))[142:]
    items = list(decode_bytes(b"\xfebin" + replica_fde + source, "relay-bin.000001"))
    first_source = 4 + len(replica_fde)
    placed = [(i.event.offset, i.event.type_name, i.event.fde.server_version, i.event.checksum_ok) for i in items]
    assert placed[:4] == [
        (4, "FORMAT_DESCRIPTION", "5.7.30-log", True),
        (first_source, "FORMAT_DESCRIPTION", "5.0.58-debug-log", None),
        (first_source + 94, "QUERY", "5.0.58-debug-log", None),
        (first_source + 94 + 90, "QUERY", "5.0.58-debug-log", None),
    ]
    assert _statements(items)[:4] == [
        (first_source + 94, "test", "DROP TABLE IF EXISTS t1, t2"),
        (first_source + 184, "test", "DROP TRIGGER IF EXISTS tr1"),
        (first_source + 273, "test", "CREATE TABLE t1 (id INT AUTO_INCREMENT PRIMARY KEY)"),
        (first_source + 387, "test", "CREATE TABLE t2 (id INT AUTO_INCREMENT PRIMARY KEY)"),
    ]
    assert [i.event.type_name for i in items[-1:]] == ["STOP"]
    assert all(i.problems == [] for i in items)


# -- a transaction start found without walking from the file's start ------------------------------


@pytest.mark.parametrize(
    "source", ["sample/mysql-bin.000002", "mysql-binlog-connector-java/mysql-bin.checksum-crc32"], ids=str
)
def test_from_any_offset_the_next_gtid_event_one_walk_frames_is_found(source: str) -> None:
    """Every byte offset of the file, inside events too, leads to the first GTID event starting at
    or after it (None past the last one)."""
    path = FIXTURES / source if source.startswith("sample/") else corpus_path(source)
    starts = [e.offset for e in open_events(path) if e.type_code in GTID_EVENTS and e.inner_index is None]
    assert len(starts) > 3
    data = path.read_bytes()
    with path.open("rb") as stream:
        fde = next(iter_events(stream, path.name)).fde
        found = [find_transaction_start(stream, fde, at) for at in range(len(data) + 1)]
    assert found == [next((s for s in starts if s >= at), None) for at in range(len(data) + 1)]


def test_a_transaction_start_is_only_looked_for_where_checksums_tell_event_starts() -> None:
    path = corpus_path("mysql-binlog-connector-java/mysql-bin.checksum-none")
    with path.open("rb") as stream:
        fde = next(iter_events(stream, path.name)).fde
        with pytest.raises(ValueError, match="CRC32"):
            find_transaction_start(stream, fde, 4)


def test_the_search_gives_up_after_its_window() -> None:
    path = FIXTURES / "sample" / "mysql-bin.000002"
    starts = [e.offset for e in open_events(path) if e.type_code in GTID_EVENTS]
    gap_start, gap_end = max(itertools.pairwise(starts), key=lambda pair: pair[1] - pair[0])
    with path.open("rb") as stream:
        fde = next(iter_events(stream, path.name)).fde
        assert find_transaction_start(stream, fde, gap_start + 1, window=gap_end - gap_start - 2) is None
        assert find_transaction_start(stream, fde, gap_start + 1, window=gap_end - gap_start + 64) == gap_end
