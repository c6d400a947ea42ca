"""Bronze framing without Spark: fixture binlogs a real server wrote, bad files from the corpus, and
real files cut, grown, rewritten, emptied or made unreadable.

What the order of a file tells (transaction, commit, map in force) is checked against
:class:`binlog_core.sequence.FileSequence` walking the same file; a grown file resumed at
``resume_offset`` must give the rows a single walk over the whole file gives from there on.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import io
import itertools
import os
import stat
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, BinaryIO

import pytest

from binlog_core.constants import EventType
from binlog_core.decoder import decode_file
from binlog_core.errors import BinlogError
from binlog_core.events import decode_body
from binlog_core.framing import iter_events, open_events
from binlog_core.rows import ROWS_KINDS
from binlog_core.sequence import FileSequence
from pipelines.bronze.discover import resume_point
from pipelines.bronze.framing import (
    COUNTERS,
    DECODED_ELSEWHERE,
    EventRow,
    FileSummary,
    HashingReader,
    Part,
    QuarantineRow,
    ResumePoint,
    frame_file,
    merge_parts,
    plan_parts,
)
from pipelines.tables import BINLOG_EVENTS, QUARANTINE
from tests.binlog_core.real_events import MISC
from tests.fixtures.truth import FIXTURES
from tests.harness.corpus import corpus_files, corpus_path

SAMPLE = FIXTURES / "sample"
COMPRESSED = FIXTURES / "compressed"

Framing = tuple[list[EventRow], list[QuarantineRow], FileSummary]


def _opener(data: bytes) -> Callable[[], BinaryIO]:
    return lambda: io.BytesIO(data)


def frame(data: bytes, name: str = "mysql-bin.000001", **kwargs: Any) -> Framing:
    """Frame ``data`` and split what comes out by kind (the summary must come last, alone)."""
    out = list(frame_file(_opener(data), f"file:/binlogs/{name}", name, **kwargs))
    summary = out[-1]
    assert isinstance(summary, FileSummary)
    events = [o for o in out[:-1] if isinstance(o, EventRow)]
    quarantine = [o for o in out[:-1] if isinstance(o, QuarantineRow)]
    assert len(events) + len(quarantine) == len(out) - 1
    return events, quarantine, summary


def corpus(relative: str) -> bytes:
    return corpus_path(relative).read_bytes()


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def resume_from(summary: FileSummary) -> ResumePoint:
    """What discovery hands framing to continue a file, from the ``binlog_files`` row of ``summary``."""
    return resume_point(dataclasses.asdict(summary))


def position(row: EventRow) -> tuple[int, int]:
    return (row.offset, -1 if row.inner_index is None else row.inner_index)


# -- rows and tables -------------------------------------------------------------------------------


def test_event_and_quarantine_rows_are_the_columns_of_their_tables_without_the_run_id() -> None:
    assert EventRow._fields == tuple(name for name in BINLOG_EVENTS.names if name != "run_id")
    assert QuarantineRow._fields == tuple(name for name in QUARANTINE.names if name != "run_id")


@pytest.mark.parametrize("path", sorted(SAMPLE.glob("mysql-bin.*")) + sorted(COMPRESSED.glob("mysql-bin.*")), ids=str)
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
    assert (summary.status, summary.error_code, summary.framed_until, summary.size, summary.resume_offset) == (
        "complete",
        None,
        len(data),
        len(data),
        len(data),  # every transaction of these files has ended by the last event
    )
    assert summary.event_count == len(want)
    assert summary.rows_events == sum(1 for e in events if e.event_type in ROWS_KINDS)
    assert summary.content_sha256 == summary.prefix_sha256 == sha256(data)
    assert summary.resume_counts == {name: getattr(summary, name) for name in COUNTERS}
    assert (summary.flavor, summary.binlog_version, summary.checksum_alg, summary.server_id) == (
        "mariadb",
        4,
        "CRC32",
        1,
    )
    assert list(summary.format_descriptions) == [4]
    assert {e.fde_offset for e in events} == {4}
    assert all(e.checksum_ok is True for e in events)


def test_every_event_is_classed_by_the_partition_the_later_stages_read() -> None:
    events = [e for path in sorted(SAMPLE.glob("mysql-bin.*")) for e in frame(path.read_bytes(), path.name)[0]]
    classes: dict[str, set[str]] = {}
    for e in events:
        classes.setdefault(e.event_class, set()).add(e.event_type_name)
    assert classes == {
        "rows": {"WRITE_ROWS_V1", "UPDATE_ROWS_V1", "DELETE_ROWS_V1"},
        "table_map": {"TABLE_MAP"},
        "query": {"QUERY"},
        "other": {
            "FORMAT_DESCRIPTION",
            "GTID_LIST",
            "BINLOG_CHECKPOINT",
            "MARIADB_GTID",
            "ANNOTATE_ROWS",
            "XID",
            "ROTATE",
            "STOP",
        },
    }


# -- what the order tells, recorded on each row ----------------------------------------------------


def _sequence_columns(path: Path) -> list[tuple[Any, ...]]:
    """For every event of ``path``, the deferred columns as ``binlog_core.sequence`` tells them."""
    walked = []
    sequence = FileSequence()
    with path.open("rb") as stream, contextlib.suppress(BinlogError):
        for event in iter_events(stream, path.name):
            walked.append((event, sequence.step(event)))
    sequence.finish()
    out = []
    for e, p in walked:
        t, m = p.transaction, p.map
        own = m if e.type_code == EventType.TABLE_MAP else None
        read_with = m if e.type_code in ROWS_KINDS and e.checksum_ok is not False else None
        out.append(
            (
                e.offset,
                e.inner_index,
                p.gtid,
                *((t.start_offset, t.start_inner_index) if t else (None, None)),
                *((t.end_offset, t.end_inner_index, t.commit_us, t.xid) if t else (None,) * 4),
                p.table_id,
                p.statement_end,
                *((read_with.offset, read_with.inner_index) if read_with else (None, None)),
                *((own.until_offset, own.until_inner_index, own.ended_by, own.rows_events) if own else (None,) * 4),
                p.shape_changed,
            )
        )
    return out


def _row_columns(rows: list[EventRow]) -> list[tuple[Any, ...]]:
    return [
        (
            r.offset,
            r.inner_index,
            r.gtid,
            r.trx_offset,
            r.trx_inner_index,
            r.trx_end_offset,
            r.trx_end_inner_index,
            r.commit_timestamp,
            r.xid,
            r.table_id,
            r.statement_end,
            r.map_offset,
            r.map_inner_index,
            r.in_force_until,
            r.in_force_until_inner_index,
            r.ended_by,
            r.rows_events,
            r.shape_changed,
        )
        for r in rows
    ]


def _every_file() -> list[Any]:
    fixtures = [*sorted(FIXTURES.glob("*/mysql-bin.[0-9]*")), MISC]
    return [
        *(pytest.param(p, id=f"fixture:{p.parent.name}/{p.name}") for p in fixtures),
        *(pytest.param(r, id=r, marks=pytest.mark.corpus) for r in corpus_files()),
    ]


@pytest.mark.parametrize("source", _every_file())
def test_the_transaction_commit_and_map_columns_are_what_binlog_core_sequence_says(source: Path | str) -> None:
    path = source if isinstance(source, Path) else corpus_path(source)
    events, _quarantine, _summary = frame(path.read_bytes(), path.name)
    assert _row_columns(events) == _sequence_columns(path)


def test_a_rows_event_carries_its_map_and_its_transactions_end_commit_and_xid() -> None:
    events = frame((SAMPLE / "mysql-bin.000002").read_bytes())[0]
    transaction = [
        (
            e.offset,
            e.event_type_name,
            e.trx_offset,
            e.trx_end_offset,
            e.commit_timestamp,
            e.xid,
            e.table_id,
            e.map_offset,
            e.in_force_until,
            e.ended_by,
            e.rows_events,
        )
        for e in events
        if e.trx_offset == 620
    ]
    xid = next(e for e in events if e.offset == 1497)
    commit = xid.timestamp * 1_000_000
    assert transaction == [
        (620, "MARIADB_GTID", 620, 1497, commit, 370, None, None, None, None, None),
        (662, "ANNOTATE_ROWS", 620, 1497, commit, 370, None, None, None, None, None),
        (761, "TABLE_MAP", 620, 1497, commit, 370, 26, None, 947, "statement_end", 1),
        (947, "UPDATE_ROWS_V1", 620, 1497, commit, 370, 26, 761, None, None, None),
        (1497, "XID", 620, 1497, commit, 370, None, None, None, None, None),
    ]
    assert commit == 1_700_000_100_000_000
    assert decode_body(next(e for e in open_events(SAMPLE / "mysql-bin.000002") if e.offset == 1497)).xid == 370  # type: ignore[attr-defined]


@pytest.mark.corpus
def test_events_of_a_mysql_transaction_payload_follow_it_with_their_inner_index_and_gtid() -> None:
    events, quarantine, summary = frame(corpus("mysql-binlog-connector-rust/mysql-bin.000057"))
    payload = [
        (e.offset, e.inner_index, e.event_type_name, e.checksum_ok, e.table_id, e.map_inner_index, e.event_class)
        for e in events
        if e.offset == 457
    ]
    assert payload == [
        (457, None, "TRANSACTION_PAYLOAD", True, None, None, "other"),
        (457, 0, "QUERY", None, None, None, "query"),
        (457, 1, "ROWS_QUERY", None, None, None, "other"),
        (457, 2, "TABLE_MAP", None, 92, None, "table_map"),
        (457, 3, "WRITE_ROWS", None, 92, 2, "rows"),
        (457, 4, "XID", None, None, None, "other"),
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
def test_events_name_the_format_description_in_force_and_the_summary_keeps_each_one() -> None:
    # a MySQL 8.0.17 relay log: its own FORMAT_DESCRIPTION at 4, the source's at 203
    events, _quarantine, summary = frame(corpus("mysql-server/std_data/rpl_unfiltered_hidden_gcol.000001"))
    assert [(e.offset, e.fde_offset) for e in events][:5] == [(4, 4), (124, 4), (155, 4), (203, 203), (323, 203)]
    assert {e.fde_offset for e in events[3:]} == {203}
    assert list(summary.format_descriptions) == [4, 203]
    assert '"server_version": "8.0.17-debug"' in summary.format_descriptions[203].replace('":"', '": "')


# -- files that end early, are damaged or are no binlog --------------------------------------------


@pytest.mark.corpus
def test_a_file_cut_inside_an_event_is_truncated_at_the_last_complete_event_with_a_warning() -> None:
    data = corpus("mariadb-test-data/std_data/bug11747416_32228_binlog.000001")
    events, quarantine, summary = frame(data)
    assert [(e.offset, e.event_type_name, e.trx_offset, e.trx_end_offset, e.ended_by) for e in events] == [
        (4, "FORMAT_DESCRIPTION", None, None, None),
        (107, "QUERY", None, None, None),
        (207, "QUERY", 207, None, None),  # BEGIN: the transaction has no end in the file
        (275, "TABLE_MAP", 207, None, None),  # in force until the end of the file
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
    assert (summary.resume_offset, summary.resume_gtid) == (207, None)  # the open transaction, framed again
    assert summary.prefix_sha256 == sha256(data[:207])
    assert summary.content_sha256 == sha256(data[:316])
    assert summary.resume_counts == {
        "event_count": 2,
        "rows_events": 0,
        "offset_gaps": 0,
        "checksum_failures": 0,
        "unknown_events": 0,
        "unmapped_rows_events": 0,
    }
    assert summary.problems == {"TRUNCATED warning": 1}
    assert (summary.checksum_alg, summary.server_version, summary.event_count) == ("UNDEF", "5.5.17-debug-log", 4)


@pytest.mark.corpus
def test_a_file_that_is_not_a_binlog_frames_nothing_and_is_quarantined_whole() -> None:
    events, quarantine, summary = frame(corpus("canal/tsdb/mysql-bin.000001"))
    assert events == []
    assert [(q.offset, q.code, q.severity, q.message) for q in quarantine] == [
        (0, "NOT_A_BINLOG", "error", "starts with ef bf bd 62, not the binlog magic fe 62 69 6e")
    ]
    assert (summary.status, summary.framed_until, summary.event_count, summary.size, summary.flavor) == (
        "not_a_binlog",
        0,
        0,
        178,
        None,
    )
    assert (summary.resume_offset, summary.prefix_sha256, summary.content_sha256) == (0, sha256(b""), None)


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
    assert (summary.status, summary.event_count, summary.framed_until, summary.checksum_failures) == (
        "complete",
        12,
        703,
        1,
    )
    # the GTID of the transaction is kept through its bad XID, which does not end it
    assert (bad[0].gtid, bad[0].trx_offset, bad[0].trx_end_offset, bad[0].xid) == (
        "f5ffaa9a-8aae-11ec-8505-0010e0dc7238:2",
        430,
        None,
        None,
    )
    assert summary.resume_offset == 430  # that transaction is still open at the end of the file
    assert summary.located == {"checksum_failures": [672]}  # where the gate's count is


def _with_bad_checksums(data: bytes, count: int) -> tuple[bytes, list[int]]:
    """``data`` with the CRC32 of ``count`` of its events broken (every tenth after the first), and their offsets."""
    offsets = [e.offset for e in iter_events(io.BytesIO(data), "b")][10 : 10 * (count + 1) : 10]
    damaged = bytearray(data)
    for offset in offsets:
        size = int.from_bytes(damaged[offset + 9 : offset + 13], "little")
        damaged[offset + size - 1] ^= 0xFF
    return bytes(damaged), offsets


def test_the_walk_keeps_the_first_offsets_of_its_checksum_failures_for_the_gate() -> None:
    data, offsets = _with_bad_checksums((FIXTURES / "sample" / "mysql-bin.000002").read_bytes(), 7)
    _events, _quarantine, summary = frame(data)
    assert summary.checksum_failures == 7
    assert summary.located == {"checksum_failures": offsets[:5]}


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
    assert sum(summary.problems.values()) == len(quarantine)
    assert summary.problems == dict(Counter(f"{q.code} {q.severity}" for q in quarantine))


@pytest.mark.corpus
def test_an_unknown_event_type_is_kept_raw_and_quarantined_as_a_warning() -> None:
    events, quarantine, summary = frame(corpus("mysql-binlog-connector-java/mysql-bin.aurora-padding"))
    unknown = [e for e in events if e.event_type == 100]
    assert [(e.offset, e.event_type_name, len(e.body) > 0) for e in unknown] == [(281, "UNKNOWN_100", True)]
    assert [(q.offset, q.code, q.severity, q.body) for q in quarantine] == [
        (281, "UNKNOWN_EVENT_TYPE", "warning", unknown[0].body)
    ]
    assert summary.unknown_events == 1
    assert summary.located == {"unknown_events": [281]}


@pytest.mark.corpus
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
    assert [(e.offset, e.trx_end_offset, e.xid) for e in events if e.trx_offset == 430][-1] == (672, 672, 53)


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
        assert summary.resume_offset == summary.framed_until, cut  # no transaction in this file
        assert summary.prefix_sha256 == sha256(data[: summary.framed_until]), cut
        assert summary.content_sha256 == (sha256(data[: summary.framed_until]) if summary.framed_until > 4 else None)


def test_an_empty_file_is_empty_with_a_warning_and_no_events(tmp_path: Path) -> None:
    empty = tmp_path / "mysql-bin.000007"
    empty.write_bytes(b"")
    out = list(frame_file(functools.partial(empty.open, "rb"), f"file:{empty}", empty.name, size=0))
    assert [(q.code, q.severity, q.offset, q.message) for q in out if isinstance(q, QuarantineRow)] == [
        ("EMPTY_FILE", "warning", None, "mysql-bin.000007 is empty (0 bytes): no binlog yet")
    ]
    assert not any(isinstance(o, EventRow) for o in out)
    summary = out[-1]
    assert isinstance(summary, FileSummary)
    assert (summary.status, summary.size, summary.framed_until, summary.resume_offset, summary.content_sha256) == (
        "empty",
        0,
        0,
        0,
        None,
    )
    assert summary.problems == {"EMPTY_FILE warning": 1}


def _unreadable(tmp_path: Path, how: str) -> Path:
    """A path whose opening or reading really fails, even for root."""
    if how == "dangling-link":
        link = tmp_path / "mysql-bin.000003"
        link.symlink_to(tmp_path / "gone" / "mysql-bin.000003")
        return link
    if how == "directory":
        folder = tmp_path / "mysql-bin.000003"
        folder.mkdir()
        return folder
    # permission denied: a copy with no permission bits, unless root, who reads it anyway; then a
    # write-only sysctl file, which the kernel refuses to open for reading even to root
    copy = tmp_path / "mysql-bin.000003"
    copy.write_bytes((SAMPLE / "mysql-bin.000005").read_bytes())
    copy.chmod(0)
    if os.geteuid() != 0:
        return copy
    write_only = Path("/proc/sys/vm/drop_caches")
    assert stat.S_IMODE(write_only.stat().st_mode) == 0o200
    return write_only


@pytest.mark.parametrize(
    ("how", "error"),
    [
        ("dangling-link", "FileNotFoundError: [Errno 2] No such file or directory"),
        ("directory", "IsADirectoryError: [Errno 21] Is a directory"),
        ("permission", "PermissionError: [Errno 13] Permission denied"),
    ],
)
def test_a_file_that_cannot_be_opened_is_unreadable_with_an_error(tmp_path: Path, how: str, error: str) -> None:
    path = _unreadable(tmp_path, how)
    out = list(frame_file(functools.partial(open, path, "rb"), f"file:{path}", path.name, size=408))
    assert not any(isinstance(o, EventRow) for o in out)
    problems = [(q.code, q.severity, q.offset) for q in out if isinstance(q, QuarantineRow)]
    assert problems == [("UNREADABLE_FILE", "error", None)]
    summary = out[-1]
    assert isinstance(summary, FileSummary)
    assert (summary.status, summary.error_code, summary.problems) == (
        "unreadable",
        "UNREADABLE_FILE",
        {"UNREADABLE_FILE error": 1},
    )
    assert summary.error_message is not None and summary.error_message.startswith(error)


# -- events waiting for their transaction: held in memory, or on disk ------------------------------


def _spill_dir_while_framing(data: bytes, spill_dir: Path, **kwargs: Any) -> tuple[Framing, int]:
    """Frame ``data`` with held rows spilling to ``spill_dir``; also the most spill files seen at once."""
    most = 0
    out = []
    for row in frame_file(
        _opener(data), "file:/binlogs/mysql-bin.000001", "mysql-bin.000001", spill_dir=str(spill_dir), **kwargs
    ):
        most = max(most, len(os.listdir(spill_dir)))
        out.append(row)
    summary = out[-1]
    assert isinstance(summary, FileSummary)
    events = [o for o in out if isinstance(o, EventRow)]
    return (events, [o for o in out if isinstance(o, QuarantineRow)], summary), most


@pytest.mark.parametrize("cut", [None, 26_000], ids=["whole", "cut-inside-an-event"])
def test_rows_held_on_disk_beyond_spill_bytes_come_out_as_an_in_memory_walk_gives_them_and_leave_no_file(
    tmp_path: Path, cut: int | None
) -> None:
    data = (SAMPLE / "mysql-bin.000002").read_bytes()[:cut]
    in_memory = frame(data)
    spilled, most = _spill_dir_while_framing(data, tmp_path, spill_bytes=200)
    assert most > 0  # events did wait on disk
    assert spilled == in_memory
    assert [position(e) for e in spilled[0]] == sorted(position(e) for e in spilled[0])
    assert os.listdir(tmp_path) == []


def test_a_walk_stopped_early_leaves_no_spill_file(tmp_path: Path) -> None:
    data = (SAMPLE / "mysql-bin.000002").read_bytes()
    walk = frame_file(
        _opener(data), "file:/b/mysql-bin.000002", "mysql-bin.000002", spill_bytes=200, spill_dir=str(tmp_path)
    )
    seen = 0
    for _ in walk:
        seen += 1
        if os.listdir(tmp_path):
            break
    assert seen and os.listdir(tmp_path)
    walk.close()
    assert os.listdir(tmp_path) == []


# -- growing and rewritten files -------------------------------------------------------------------


def test_a_cut_inside_a_transaction_resumes_at_its_start_with_the_counts_and_hash_of_what_came_before() -> None:
    data = (SAMPLE / "mysql-bin.000002").read_bytes()
    cut = 1857 + 380 // 2  # inside the UPDATE_ROWS_V1 at 1857 of the transaction opened at 1528
    events, quarantine, summary = frame(data[:cut])
    assert [(e.offset, e.event_type_name) for e in events][-4:] == [
        (1497, "XID"),
        (1528, "MARIADB_GTID"),
        (1570, "ANNOTATE_ROWS"),
        (1671, "TABLE_MAP"),
    ]
    assert [(e.trx_offset, e.trx_end_offset, e.commit_timestamp) for e in events[-3:]] == [(1528, None, None)] * 3
    assert [(q.code, q.severity, q.offset) for q in quarantine] == [("TRUNCATED", "warning", 1857)]
    assert (summary.status, summary.framed_until, summary.resume_offset, summary.resume_gtid) == (
        "truncated",
        1857,
        1528,
        None,
    )
    assert (summary.prefix_sha256, summary.content_sha256) == (sha256(data[:1528]), sha256(data[:1857]))
    assert summary.resume_counts == {
        "event_count": 11,
        "rows_events": 1,
        "offset_gaps": 0,
        "checksum_failures": 0,
        "unknown_events": 0,
        "unmapped_rows_events": 0,
    }

    grown, grown_quarantine, grown_summary = frame(data, resume=resume_from(summary))
    whole, _, whole_summary = frame(data)
    assert grown_summary.resumed_from == 1528
    assert [position(e) for e in grown] == [position(e) for e in whole if e.offset >= 1528]
    assert grown_quarantine == []
    assert dataclasses.replace(grown_summary, resumed_from=0) == whole_summary


def _counts_before(rows: list[EventRow], offset: int) -> dict[str, int]:
    """The summary counters of the events of ``rows`` before ``offset``, counted from the rows."""
    before = [r for r in rows if r.offset < offset]
    rows_events = [r for r in before if r.event_class == "rows" and r.checksum_ok is not False]
    return {
        "event_count": len(before),
        "rows_events": len(rows_events),
        "offset_gaps": 0,
        "checksum_failures": sum(1 for r in before if r.checksum_ok is False),
        "unknown_events": sum(1 for r in before if r.event_type_name.startswith("UNKNOWN_")),
        "unmapped_rows_events": sum(1 for r in rows_events if r.map_offset is None),
    }


def _open_at_the_end(data: bytes) -> int | None:
    """Where the transaction still open at the end of ``data`` opened, by ``binlog_core.sequence``."""
    sequence = FileSequence()
    with contextlib.suppress(BinlogError):
        for event in iter_events(io.BytesIO(data), "mysql-bin.000001"):
            sequence.step(event)
    return None if sequence.transaction is None else sequence.transaction.start_offset


def _cuts(rows: list[EventRow], size: int) -> Iterator[int]:
    """Every event boundary, and a byte inside every event."""
    outer = [r for r in rows if r.inner_index is None]
    yield from sorted({r.offset for r in outer} | {r.offset + r.event_size // 2 for r in outer} | {size})


GROWING = [
    pytest.param(SAMPLE / "mysql-bin.000002", id="mariadb-10.11"),
    pytest.param("mysql-server/std_data/binlog_recovery/duplicate_xid_xa_commit.000001", id="mysql-8.0-xa"),
    pytest.param("mysql-server/std_data/binlog_transaction.000001", id="mysql-5.1-begin"),
    pytest.param("mariadb-test-data/suite/binlog/std_data/bug32407.001", id="mysql-5.1-implicit"),
    pytest.param("mysql-binlog-connector-rust/mysql-bin.000057", id="mysql-8.0-payload"),
    pytest.param("mysql-server/std_data/binlog_recovery/duplicate_xid.000001", id="mysql-8.0-bad-checksum"),
]


def _data(source: Path | str) -> bytes:
    return source.read_bytes() if isinstance(source, Path) else corpus(source)


@pytest.mark.parametrize("source", GROWING)
def test_resuming_a_grown_file_yields_the_rows_one_walk_over_the_whole_file_yields_from_the_resume_offset(
    source: Path | str,
) -> None:
    """The file is cut at every event boundary and inside every event, framed, then framed again
    whole from the cut's ``binlog_files`` row.  ``shape_changed`` is left to the test after this one."""
    if isinstance(source, str):
        corpus_path(source)  # a missing corpus fails with advice
    data = _data(source)
    whole, whole_quarantine, whole_summary = frame(data)
    resumed = 0
    for cut in _cuts(whole, len(data)):
        _events, _quarantine, summary = frame(data[:cut])
        assert summary.status in ("complete", "truncated"), cut
        opened = _open_at_the_end(data[:cut])
        assert summary.resume_offset == (summary.framed_until if opened is None else opened), cut
        assert summary.prefix_sha256 == sha256(data[: summary.resume_offset]), cut
        assert summary.content_sha256 == (sha256(data[: summary.framed_until]) if summary.framed_until > 4 else None)
        if summary.resume_offset <= 4:
            continue  # nothing framed yet: discovery frames the file from its start
        assert summary.resume_counts == _counts_before(whole, summary.resume_offset), cut
        events, quarantine, grown = frame(data, resume=resume_from(summary))
        assert grown.resumed_from == summary.resume_offset, cut
        expected = [e for e in whole if e.offset >= summary.resume_offset]
        assert [e._replace(shape_changed=None) for e in events] == [e._replace(shape_changed=None) for e in expected]
        assert quarantine == [q for q in whole_quarantine if q.offset is None or q.offset >= summary.resume_offset]
        assert grown.problems == dict(Counter(f"{q.code} {q.severity}" for q in quarantine)), cut  # this walk's
        assert dataclasses.replace(grown, resumed_from=0, problems=whole_summary.problems) == whole_summary, cut
        resumed += 1
    assert resumed > 4


def test_a_resumed_walk_tells_whether_a_map_changed_shape_as_the_whole_walk_does() -> None:
    data = (SAMPLE / "mysql-bin.000002").read_bytes()
    cut = 1857 + 380 // 2  # inside the transaction opened at 1528, whose TABLE_MAP at 1671 has the shape of 761's
    _events, _quarantine, summary = frame(data[:cut])
    events, _, _ = frame(data, resume=resume_from(summary))
    whole = {position(e): e.shape_changed for e in frame(data)[0]}
    assert [(e.offset, e.shape_changed) for e in events if e.event_type == EventType.TABLE_MAP][:1] == [(1671, False)]
    assert {position(e): e.shape_changed for e in events} == {p: s for p, s in whole.items() if p[0] >= 1528}


def test_resuming_a_file_whose_prefix_changed_frames_it_again_from_the_start() -> None:
    data = (SAMPLE / "mysql-bin.000002").read_bytes()
    _events, _quarantine, summary = frame(data[:2047])
    assert summary.resume_offset == 1528
    rewritten = (SAMPLE / "mysql-bin.000003").read_bytes()
    events, _quarantine, grown = frame(rewritten, resume=resume_from(summary))
    whole_events, _whole_quarantine, whole_summary = frame(rewritten)
    assert events == whole_events
    assert grown.resumed_from == 0
    assert grown == whole_summary


def test_resuming_a_file_shorter_than_the_resume_point_frames_it_again_from_the_start() -> None:
    data = (SAMPLE / "mysql-bin.000002").read_bytes()
    _events, _quarantine, summary = frame(data)
    assert summary.resume_offset == len(data)
    events, _quarantine, shorter = frame(data[:1000], resume=resume_from(summary))
    assert shorter.resumed_from == 0
    assert events == frame(data[:1000])[0]


def test_framing_reads_no_further_than_the_listed_size() -> None:
    data = (SAMPLE / "mysql-bin.000002").read_bytes()
    events, _quarantine, summary = frame(data, size=1528)
    assert (summary.status, summary.size, summary.framed_until) == ("complete", 1528, 1528)
    assert events == frame(data[:1528])[0]


def test_the_prefix_hash_keeps_only_what_is_not_hashed_yet() -> None:
    data = (SAMPLE / "mysql-bin.000002").read_bytes()[:10_000]
    reader = HashingReader(io.BytesIO(data + b"beyond the limit"), limit=10_000)
    assert len(reader.read(4096)) == 4096
    reader.hash_until(1000)
    assert (reader.hashed, reader.unhashed) == (1000, 3096)
    assert len(reader.read(8000)) == 10_000 - 4096
    assert reader.read(1) == b""
    reader.hash_until(9000)
    assert reader.sha.hexdigest() == sha256(data[:9000])
    assert reader.unhashed == 1000


# -- a large file framed in pieces by several tasks ----------------------------------------------


def frame_in_pieces(data: bytes, count: int) -> tuple[list[Part], list[Framing]]:
    """The pieces :func:`plan_parts` cuts ``data`` into for ``count`` tasks, and each one's framing."""
    parts = plan_parts(_opener(data), len(data), count)
    return parts, [frame(data, size=len(data), part=part) for part in parts]


def put_together(framings: list[Framing]) -> tuple[list[EventRow], list[QuarantineRow], FileSummary] | None:
    """The pieces' rows one after the other, with the maps :func:`merge_parts` names set back to
    ``shape_changed = False``, and the merged summary; None when the pieces are not merged."""
    merged = merge_parts([summary for _e, _q, summary in framings])
    if merged is None:
        return None
    summary, kept = merged
    events = [e for e, _q, _s in framings for e in e]
    events = [e._replace(shape_changed=False) if (e.offset, e.inner_index) in kept else e for e in events]
    return events, [q for _e, q, _s in framings for q in q], summary


@pytest.mark.parametrize("count", [2, 3, 5])
@pytest.mark.parametrize("source", _every_file())
def test_a_file_framed_in_pieces_gives_the_rows_and_summary_of_one_walk_over_it(source: Path | str, count: int) -> None:
    data = _data(source)
    parts, framings = frame_in_pieces(data, count)
    events, quarantine, summary = frame(data, size=len(data))
    if not parts:  # not cut: a file without CRC32 checksums or GTID events, or too small for the cuts
        return
    assert [p.start for p in parts] == sorted({p.start for p in parts})
    together = put_together(framings)
    assert (together is None) == _state_crosses(events, summary, [p.start for p in parts[1:]])
    if together is not None:
        assert together == (events, quarantine, summary)


def _state_crosses(events: list[EventRow], summary: FileSummary, cuts: list[int]) -> bool:
    """Whether one walk carries state over a cut that a piece starting there cannot know: a
    FORMAT_DESCRIPTION after the file's first (anywhere: it clears the shapes later maps are
    compared with), a map still in force, an error that stopped the walk."""
    if any(e.event_type == EventType.FORMAT_DESCRIPTION and e.offset > 4 for e in events):
        return True
    for cut in cuts:
        if summary.error_offset is not None and summary.error_offset < cut:
            return True
        for e in events:
            if e.offset >= cut:
                break
            ends = e.in_force_until
            if e.event_type == EventType.TABLE_MAP and (ends is None or ends >= cut):
                return True
    return False


def test_the_sample_files_are_cut_at_transaction_starts_and_merged_with_the_shapes_set_back() -> None:
    data = (SAMPLE / "mysql-bin.000002").read_bytes()
    parts, framings = frame_in_pieces(data, 3)
    whole = frame(data)[0]
    gtids = {e.offset for e in whole if e.event_type == EventType.MARIADB_GTID}
    assert len(parts) == 3 and {p.start for p in parts[1:]} <= gtids
    assert [(p.end, q.start) for p, q in itertools.pairwise(parts)] == [(q.start, q.start) for q in parts[1:]]
    kept = merge_parts([s for _e, _q, s in framings])
    assert kept is not None and kept[1], "a table mapped in an earlier piece keeps its shape in a later one"
    first_in_piece = [e for _e, _q, _s in framings[1:] for e in _e if e.event_type == EventType.TABLE_MAP][:1]
    assert first_in_piece and first_in_piece[0].shape_changed is True  # the piece alone cannot tell


def test_a_file_without_checksums_is_not_cut() -> None:
    data = corpus("mysql-binlog-connector-java/mysql-bin.checksum-none")
    assert plan_parts(_opener(data), len(data), 4) == []
    assert plan_parts(_opener(corpus("mysql-binlog-connector-java/mysql-bin.checksum-crc32")), 10**9, 1) == []


def test_pieces_that_do_not_fit_together_are_framed_again_whole() -> None:
    data = (SAMPLE / "mysql-bin.000002").read_bytes()
    parts, framings = frame_in_pieces(data, 2)
    assert merge_parts([s for _e, _q, s in framings]) is not None
    assert merge_parts([framings[1][2]]) is None  # the first piece is missing
    inside = Part(parts[0].start, parts[0].end - 7, parts[0].format_description)  # ends inside an event
    early = Part(inside.end, None, parts[1].format_description)
    cut = [frame(data, size=len(data), part=part)[2] for part in (inside, early)]
    assert merge_parts(cut) is None


def test_the_last_piece_of_a_file_shorter_than_listed_does_not_fit() -> None:
    data = (SAMPLE / "mysql-bin.000002").read_bytes()
    parts, framings = frame_in_pieces(data, 2)
    short = frame(data[: parts[1].start - 1], size=len(data), part=parts[1])
    assert (short[0], short[1]) == ([], [])
    assert merge_parts([framings[0][2], short[2]]) is None
