"""Bronze framing without Spark: fixture binlogs a real server wrote, and bad files from the corpus."""

from __future__ import annotations

import contextlib
import hashlib
import io
import itertools
from collections.abc import Callable
from pathlib import Path
from typing import Any, BinaryIO

import pytest
from pipelines.bronze.schema import BINLOG_EVENTS, BINLOG_FILES, QUARANTINE

from binlog_core.constants import ChecksumAlg, EventType, Flavor
from binlog_core.decoder import decode_file
from binlog_core.errors import BinlogError
from binlog_core.event import FormatDescription
from binlog_core.framing import open_events
from binlog_core.rows import RowsEvent
from binlog_core.table_map import TableMap
from pipelines.bronze.framing import (
    DECODED_ELSEWHERE,
    EVENT_COLUMNS,
    FILE_COLUMNS,
    QUARANTINE_COLUMNS,
    EventRow,
    FileSummary,
    HashingReader,
    QuarantineRow,
    frame_file,
    read_table_id,
)
from tests.fixtures.truth import FIXTURES
from tests.harness.corpus import corpus_files, corpus_path

SAMPLE = FIXTURES / "sample"
COMPRESSED = FIXTURES / "compressed"

Framing = tuple[list[EventRow], list[QuarantineRow], FileSummary]


def _opener(data: bytes) -> Callable[[], BinaryIO]:
    return lambda: io.BytesIO(data)


def frame(data: bytes, name: str = "mysql-bin.000001", **kwargs: Any) -> Framing:
    """Frame ``data`` and split what comes out by kind (the summary must come last)."""
    out = list(frame_file(_opener(data), f"file:/binlogs/{name}", name, **kwargs))
    summary = out[-1]
    assert isinstance(summary, FileSummary)
    events = [o for o in out[:-1] if isinstance(o, EventRow)]
    quarantine = [o for o in out[:-1] if isinstance(o, QuarantineRow)]
    assert len(events) + len(quarantine) == len(out) - 1
    return events, quarantine, summary


def corpus(relative: str) -> bytes:
    return corpus_path(relative).read_bytes()


def resume_from(data: bytes, cut: int) -> dict[str, Any]:
    """What discovery hands framing to continue ``data`` after framing its first ``cut`` bytes."""
    events, _quarantine, summary = frame(data[:cut])
    last = events[-1]
    return {
        "start_offset": summary.framed_until,
        "fde_json": last.format_description,
        "gtid": last.gtid,
        "prefix_sha256": summary.prefix_sha256,
        "previous": summary.facts,
    }


def test_row_shapes_name_the_columns_of_the_bronze_tables() -> None:
    assert tuple(BINLOG_EVENTS.names) == EVENT_COLUMNS
    assert tuple(BINLOG_FILES.names) == FILE_COLUMNS
    assert tuple(QUARANTINE.names) == QUARANTINE_COLUMNS


@pytest.mark.parametrize("path", sorted(SAMPLE.glob("mysql-bin.*")) + sorted(COMPRESSED.glob("mysql-bin.*")))
def test_every_event_of_a_fixture_file_becomes_one_row_as_binlog_core_frames_it(path: Path) -> None:
    data = path.read_bytes()
    events, quarantine, summary = frame(data, path.name)
    want = [
        (e.offset, e.inner_index, e.type_code, e.header.timestamp, e.header.server_id, e.header.log_pos, e.body)
        for e in open_events(path)
    ]
    got = [(e.offset, e.inner_index, e.event_type, e.timestamp, e.server_id, e.log_pos, e.body) for e in events]
    assert got == want
    assert quarantine == []
    assert (summary.status, summary.error_code, summary.framed_until, summary.size) == (
        "complete",
        None,
        len(data),
        len(data),
    )
    assert summary.event_count == len(want)
    assert summary.prefix_sha256 == hashlib.sha256(data).hexdigest()
    assert (summary.flavor, summary.binlog_version, summary.checksum_alg, summary.server_id) == (
        "mariadb",
        4,
        "CRC32",
        1,
    )
    assert all(e.checksum_ok is True for e in events)


@pytest.mark.parametrize("path", sorted(SAMPLE.glob("mysql-bin.*"))[:3])
def test_gtid_table_id_and_statement_end_agree_with_the_decoder(path: Path) -> None:
    rows = {(e.offset, e.inner_index): e for e in frame(path.read_bytes(), path.name)[0]}
    checked = 0
    for item in decode_file(path):
        row = rows[(item.event.offset, item.event.inner_index)]
        if item.rows:
            assert row.gtid == item.rows[0].gtid
        if isinstance(item.body, TableMap):
            assert (row.table_id, row.statement_end) == (item.body.table_id, None)
            checked += 1
        elif isinstance(item.body, RowsEvent):
            assert (row.table_id, row.statement_end) == (item.body.table_id, item.body.statement_end)
            checked += 1
        else:
            assert (row.table_id, row.statement_end) == (None, None)
    assert checked > 10


@pytest.mark.corpus
def test_events_of_a_mysql_transaction_payload_follow_it_with_their_inner_index_and_gtid() -> None:
    events, quarantine, summary = frame(corpus("mysql-binlog-connector-rust/mysql-bin.000057"))
    payload = [
        (e.offset, e.inner_index, e.event_type_name, e.checksum_ok, e.table_id) for e in events if e.offset == 457
    ]
    assert payload == [
        (457, None, "TRANSACTION_PAYLOAD", True, None),
        (457, 0, "QUERY", None, None),
        (457, 1, "ROWS_QUERY", None, None),
        (457, 2, "TABLE_MAP", None, 92),
        (457, 3, "WRITE_ROWS", None, 92),
        (457, 4, "XID", None, None),
    ]
    assert {e.gtid for e in events if e.offset == 457} == {"76f3e7be-6720-11ed-9cad-0242ac110002:12"}
    assert [e.gtid for e in events[:2]] == [None, None]
    assert quarantine == []
    assert (summary.status, summary.event_count, summary.framed_until, summary.flavor, summary.server_version) == (
        "complete",
        21,
        1283,
        "mysql",
        "8.0.31",
    )
    assert (summary.first_timestamp, summary.last_timestamp) == (1668952319, 1668952413)


@pytest.mark.corpus
def test_a_file_cut_inside_an_event_is_truncated_at_the_last_complete_event_with_a_warning() -> None:
    data = corpus("mariadb-test-data/std_data/bug11747416_32228_binlog.000001")
    events, quarantine, summary = frame(data)
    assert [(e.offset, e.event_type_name) for e in events] == [
        (4, "FORMAT_DESCRIPTION"),
        (107, "QUERY"),
        (207, "QUERY"),
        (275, "TABLE_MAP"),
    ]
    assert [(q.stage, q.offset, q.event_type_name, q.code, q.severity, q.body) for q in quarantine] == [
        ("bronze", 316, "WRITE_ROWS_V1", "TRUNCATED", "warning", None)
    ]
    assert quarantine[0].message == "event declares 65567 bytes, the file has 7876 left"
    assert (summary.status, summary.error_code, summary.error_offset, summary.framed_until, summary.size) == (
        "truncated",
        "TRUNCATED",
        316,
        316,
        8192,
    )
    assert summary.prefix_sha256 == hashlib.sha256(data[:316]).hexdigest()
    assert (summary.checksum_alg, summary.server_version, summary.event_count) == ("UNDEF", "5.5.17-debug-log", 4)


@pytest.mark.corpus
def test_a_file_that_is_not_a_binlog_frames_nothing_and_is_quarantined_whole() -> None:
    events, quarantine, summary = frame(corpus("canal/tsdb/mysql-bin.000001"))
    assert events == []
    assert [(q.offset, q.code, q.message) for q in quarantine] == [
        (0, "NOT_A_BINLOG", "starts with ef bf bd 62, not the binlog magic fe 62 69 6e")
    ]
    assert (summary.status, summary.framed_until, summary.event_count, summary.size, summary.flavor) == (
        "not_a_binlog",
        0,
        0,
        178,
        None,
    )
    assert summary.prefix_sha256 == hashlib.sha256(b"").hexdigest()


@pytest.mark.corpus
def test_a_mariadb_encrypted_file_keeps_its_plain_events_and_stops_after_start_encryption() -> None:
    events, quarantine, summary = frame(corpus("mariadb-test-data/std_data/binlog_before_20574.bin"))
    assert [(e.offset, e.event_type_name) for e in events] == [(4, "FORMAT_DESCRIPTION"), (256, "START_ENCRYPTION")]
    assert [(q.offset, q.code) for q in quarantine] == [(296, "ENCRYPTED")]
    assert (summary.status, summary.error_offset, summary.framed_until) == ("encrypted", 296, 296)


@pytest.mark.corpus
def test_a_mysql_encrypted_file_is_encrypted_from_its_first_byte() -> None:
    events, quarantine, summary = frame(corpus("mysql-server/std_data/rpl_nogtid_encryption_master-bin.000002"))
    assert events == []
    assert [(q.offset, q.code) for q in quarantine] == [(0, "ENCRYPTED")]
    assert (summary.status, summary.framed_until, summary.error_code) == ("encrypted", 0, "ENCRYPTED")


@pytest.mark.corpus
def test_an_event_failing_its_checksum_is_kept_and_quarantined_with_its_body() -> None:
    data = corpus("mysql-server/std_data/binlog_recovery/duplicate_xid.000001")
    events, quarantine, summary = frame(data)
    bad = [e for e in events if e.checksum_ok is False]
    assert [(e.offset, e.event_type_name, e.body) for e in bad] == [(672, "XID", b"5\x00\x00\x00\x00\x00\x00\x00")]
    assert [(q.offset, q.event_type_name, q.code, q.body) for q in quarantine] == [
        (672, "XID", "CHECKSUM_MISMATCH", b"5\x00\x00\x00\x00\x00\x00\x00")
    ]
    assert (summary.status, summary.event_count, summary.framed_until) == ("complete", 12, 703)
    # the GTID of the transaction is kept through its bad XID
    assert bad[0].gtid == "f5ffaa9a-8aae-11ec-8505-0010e0dc7238:2"


def _decoder_problems(path: Path) -> list[tuple[int, str, str, str]]:
    """(offset, event type, code, severity) of every per-event problem the file decoder reports."""
    found = []
    with contextlib.suppress(BinlogError):  # a fatal error: framing reports it as the file's status
        for item in decode_file(path):
            for problem in item.problems:
                assert problem.offset is not None  # located at its event
                found.append((problem.offset, item.event.type_name, problem.code, problem.severity))
    return found


@pytest.mark.corpus
@pytest.mark.parametrize("relative", corpus_files())
def test_bronze_reports_every_problem_the_decoder_reports_on_the_events_bronze_decodes(relative: str) -> None:
    path = corpus_path(relative)
    events, quarantine, summary = frame(path.read_bytes(), path.name)
    types = {e.offset: e.event_type for e in events if e.inner_index is None}
    expected = [
        p for p in _decoder_problems(path) if p[2] == "CHECKSUM_MISMATCH" or types[p[0]] not in DECODED_ELSEWHERE
    ]
    stopped = [] if summary.error_code is None else [(summary.error_offset, summary.error_code)]
    reported = [(q.offset, q.event_type_name, q.code, q.severity) for q in quarantine]
    assert reported[: len(reported) - len(stopped)] == expected
    assert [(q.offset, q.code) for q in quarantine[len(quarantine) - len(stopped) :]] == stopped


def test_an_unknown_event_type_is_kept_raw_and_quarantined_as_a_warning() -> None:
    events, quarantine, _summary = frame(corpus("mysql-binlog-connector-java/mysql-bin.aurora-padding"))
    unknown = [e for e in events if e.event_type == 100]
    assert [(e.offset, e.event_type_name, len(e.body) > 0) for e in unknown] == [(281, "UNKNOWN_100", True)]
    assert [(q.offset, q.code, q.severity, q.body) for q in quarantine] == [
        (281, "UNKNOWN_EVENT_TYPE", "warning", unknown[0].body)
    ]


def test_an_incident_event_naming_no_known_incident_is_quarantined_as_malformed() -> None:
    events, quarantine, summary = frame(corpus("mysql-server/std_data/bug40482-bin.000001"))
    assert [(q.offset, q.event_type_name, q.code) for q in quarantine] == [(106, "INCIDENT", "MALFORMED")]
    assert summary.status == "complete" and any(e.offset == 106 for e in events)


@pytest.mark.corpus
def test_without_checksum_verification_no_event_is_judged() -> None:
    events, quarantine, _summary = frame(
        corpus("mysql-server/std_data/binlog_recovery/duplicate_xid.000001"), verify_checksums=False
    )
    assert {e.checksum_ok for e in events} == {None}
    assert quarantine == []


def test_every_cut_of_a_small_file_frames_the_events_before_it_and_reports_the_rest_as_a_warning() -> None:
    data = (SAMPLE / "mysql-bin.000005").read_bytes()
    whole = frame(data)[0]
    boundaries = [4] + [e.offset + e.event_size for e in whole]
    for cut in range(len(data) + 1):
        events, quarantine, summary = frame(data[:cut])
        complete = [e for e in whole if e.offset + e.event_size <= cut]
        assert events == complete, cut
        assert summary.framed_until == (boundaries[len(complete)] if complete or cut >= 4 else 0), cut
        if cut in boundaries[1:]:
            assert (summary.status, quarantine) == ("complete", []), cut
        else:
            assert summary.status == "truncated", cut
            assert [(q.code, q.severity, q.offset) for q in quarantine] == [
                ("TRUNCATED", "warning", summary.framed_until)
            ], cut
        assert summary.prefix_sha256 == hashlib.sha256(data[: summary.framed_until]).hexdigest(), cut


def _cut_inside_a_transaction(data: bytes) -> tuple[int, int]:
    """(end of a TABLE_MAP followed by its rows event, a byte inside that rows event)."""
    events = frame(data)[0]
    for first, second in itertools.pairwise(events):
        if first.event_type == EventType.TABLE_MAP and second.table_id is not None:
            return first.offset + first.event_size, second.offset + second.event_size // 2
    raise AssertionError("no TABLE_MAP followed by a rows event")


@pytest.mark.parametrize("inside_event", [False, True], ids=["at-event-boundary", "inside-an-event"])
def test_resuming_a_grown_file_yields_the_rows_of_one_walk_over_the_whole_file(inside_event: bool) -> None:
    data = (SAMPLE / "mysql-bin.000002").read_bytes()
    boundary, middle = _cut_inside_a_transaction(data)
    state = resume_from(data, middle if inside_event else boundary)
    assert state["start_offset"] == boundary
    assert state["gtid"] is not None
    events, quarantine, summary = frame(data, "mysql-bin.000001", **state)
    whole_events, whole_quarantine, whole_summary = frame(data)
    assert events == [e for e in whole_events if e.offset >= boundary]
    assert quarantine == whole_quarantine == []
    assert summary.resumed_from == boundary
    assert summary.row() == whole_summary.row()


def test_resuming_a_file_whose_prefix_changed_frames_it_again_from_the_start() -> None:
    data = (SAMPLE / "mysql-bin.000002").read_bytes()
    boundary, _middle = _cut_inside_a_transaction(data)
    state = resume_from(data, boundary)
    rewritten = (SAMPLE / "mysql-bin.000003").read_bytes()
    events, _quarantine, summary = frame(rewritten, **state)
    whole_events, _whole_quarantine, whole_summary = frame(rewritten)
    assert events == whole_events
    assert summary.resumed_from == 0
    assert summary.row() == whole_summary.row()


def test_resuming_a_file_shorter_than_the_resume_point_frames_it_again_from_the_start() -> None:
    data = (SAMPLE / "mysql-bin.000002").read_bytes()
    state = resume_from(data, len(data))
    events, _quarantine, summary = frame(data[:1000], **state)
    assert summary.resumed_from == 0
    assert [e.offset for e in events] == [e.offset for e in frame(data[:1000])[0]]


def test_framing_reads_no_further_than_the_listed_size() -> None:
    data = (SAMPLE / "mysql-bin.000002").read_bytes()
    boundary, _middle = _cut_inside_a_transaction(data)
    events, _quarantine, summary = frame(data, size=boundary)
    assert (summary.status, summary.size, summary.framed_until) == ("complete", boundary, boundary)
    assert events == frame(data[:boundary])[0]


def test_the_prefix_hash_keeps_only_what_is_not_hashed_yet() -> None:
    reader = HashingReader(io.BytesIO(bytes(range(256)) * 64), limit=10_000)
    assert len(reader.read(4096)) == 4096
    reader.hash_until(1000)
    assert (reader.hashed, reader.unhashed) == (1000, 3096)
    assert len(reader.read(8000)) == 10_000 - 4096
    assert reader.read(1) == b""
    reader.hash_until(9000)
    assert reader.sha.hexdigest() == hashlib.sha256((bytes(range(256)) * 64)[:9000]).hexdigest()
    assert reader.unhashed == 1000


def _description(table_map_post_header: int) -> FormatDescription:
    lengths = bytearray(40)
    lengths[EventType.TABLE_MAP - 1] = table_map_post_header
    lengths[EventType.WRITE_ROWS_V1 - 1] = table_map_post_header
    return FormatDescription(4, "5.1.15", 0, 19, bytes(lengths), ChecksumAlg.UNDEF, Flavor.MYSQL, (5, 1, 15))


def test_table_ids_are_six_bytes_or_four_when_the_post_header_is_six_long() -> None:
    body = bytes.fromhex("0102030400000100") + b"rest"
    assert read_table_id(body, EventType.TABLE_MAP, _description(8)) == (0x04030201, None)
    assert read_table_id(body, EventType.WRITE_ROWS_V1, _description(8)) == (0x04030201, True)
    assert read_table_id(body, EventType.WRITE_ROWS_V1, _description(6)) == (0x04030201, False)
    assert read_table_id(body[:5], EventType.WRITE_ROWS_V1, _description(6)) == (None, None)
