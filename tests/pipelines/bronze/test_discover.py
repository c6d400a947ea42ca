"""What discovery decides for a listed file, given what ``binlog_files`` says about it."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

from pipelines.bronze.discover import Decision, ListedFile, PreviousFile, decide

THEN = datetime(2024, 5, 1, 12, 0, 0)
LATER = datetime(2024, 5, 1, 12, 5, 0)
FILE = "s3a://binlogs/prod/mysql-bin.000042"

PREVIOUS = PreviousFile(
    size=5000,
    modification_time=THEN,
    status="truncated",
    framed_until=4800,
    prefix_sha256="ab" * 32,
    event_count=40,
    server_id=7,
    server_version="10.11.6-MariaDB-log",
    flavor="mariadb",
    binlog_version=4,
    checksum_alg="CRC32",
    first_timestamp=1714564800,
    last_timestamp=1714565100,
    format_description='{"binlog_version":4}',
    gtid="0-7-1200",
)


def test_a_file_never_seen_is_framed_from_its_start() -> None:
    item = decide(ListedFile(FILE, 5000, THEN), None)
    assert item is not None
    assert (item.decision, item.file_name, item.start_offset, item.format_description, item.event_count) == (
        Decision.NEW,
        "mysql-bin.000042",
        0,
        None,
        None,
    )


def test_a_file_with_the_same_length_and_time_is_left_alone() -> None:
    assert decide(ListedFile(FILE, 5000, THEN), PREVIOUS) is None


def test_a_grown_active_binlog_resumes_where_framing_stopped_with_the_state_in_force_there() -> None:
    item = decide(ListedFile(FILE, 9000, LATER), PREVIOUS)
    assert item is not None
    assert item.row() == (
        FILE,
        "mysql-bin.000042",
        9000,
        LATER,
        4800,
        '{"binlog_version":4}',
        "0-7-1200",
        "ab" * 32,
        40,
        7,
        "10.11.6-MariaDB-log",
        "mariadb",
        4,
        "CRC32",
        1714564800,
        1714565100,
    )
    assert item.decision == Decision.GROWN


def test_a_complete_file_touched_in_place_is_checked_from_its_framed_end() -> None:
    item = decide(ListedFile(FILE, 4800, LATER), replace(PREVIOUS, status="complete", size=4800))
    assert item is not None
    assert (item.decision, item.start_offset) == (Decision.GROWN, 4800)


def test_a_file_shorter_than_what_was_framed_is_framed_again_from_its_start() -> None:
    item = decide(ListedFile(FILE, 4000, LATER), PREVIOUS)
    assert item is not None
    assert (item.decision, item.start_offset, item.prefix_sha256) == (Decision.CHANGED, 0, None)


def test_a_file_that_was_corrupt_encrypted_or_not_a_binlog_is_framed_again_from_its_start() -> None:
    for status in ("corrupt", "encrypted", "not_a_binlog"):
        item = decide(ListedFile(FILE, 9000, LATER), replace(PREVIOUS, status=status))
        assert item is not None
        assert (item.decision, item.start_offset) == (Decision.CHANGED, 0), status


def test_a_file_without_a_complete_event_or_a_known_description_is_framed_again_from_its_start() -> None:
    for previous in (replace(PREVIOUS, framed_until=4), replace(PREVIOUS, format_description=None)):
        item = decide(ListedFile(FILE, 9000, LATER), previous)
        assert item is not None
        assert (item.decision, item.start_offset) == (Decision.CHANGED, 0)
