"""What discovery lists (time filter, sub-folders) and decides for a listed file, given what
``binlog_files`` says about it."""

from __future__ import annotations

import os
from dataclasses import replace
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from urllib.parse import urlparse

from pyspark.sql import SparkSession

from conf import InputSettings, StorageSettings
from pipelines.bronze.discover import Decision, ListedFile, PreviousFile, decide, discover
from pipelines.storage import Lakehouse

SAMPLE = Path(__file__).resolve().parents[2] / "fixtures" / "mariadb" / "sample"

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


def _lake(spark: SparkSession, root: Path) -> Lakehouse:
    return Lakehouse(spark, StorageSettings(root=str(root), register_tables=False))


def _binlog(path: Path, mtime: datetime) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes((SAMPLE / "mysql-bin.000005").read_bytes())
    os.utime(path, (mtime.timestamp(), mtime.timestamp()))


def _listed(spark: SparkSession, settings: InputSettings, root: Path) -> list[tuple[str, Decision, int]]:
    items = discover(spark, settings, _lake(spark, root))
    return sorted((urlparse(item.file).path, item.decision, item.start_offset) for item in items)


def test_files_modified_before_the_instant_given_are_not_listed(spark: SparkSession, tmp_path: Path) -> None:
    binlogs = tmp_path / "binlogs"
    _binlog(binlogs / "mysql-bin.000001", datetime(2024, 5, 31, 22, 0, tzinfo=UTC))
    _binlog(binlogs / "mysql-bin.000002", datetime(2024, 6, 1, 0, 0, tzinfo=UTC))
    (binlogs / "mysql-bin.index").write_text("./mysql-bin.000001\n./mysql-bin.000002\n")

    def listed(after: datetime | None) -> list[str]:
        settings = InputSettings(path=str(binlogs), modified_after=after)
        return [os.path.basename(path) for path, _, _ in _listed(spark, settings, tmp_path / "lake")]

    plus_two, minus_two = timezone(timedelta(hours=2)), timezone(timedelta(hours=-2))
    assert listed(None) == ["mysql-bin.000001", "mysql-bin.000002"]
    assert listed(datetime(2024, 5, 31, 23, 0, tzinfo=UTC)) == ["mysql-bin.000002"]
    assert listed(datetime(2024, 6, 1, 1, 30, tzinfo=plus_two)) == ["mysql-bin.000002"]  # 23:30 UTC the day before
    assert listed(datetime(2024, 6, 1, 0, 30)) == []  # no zone: UTC
    assert listed(datetime(2024, 5, 31, 22, 30, tzinfo=minus_two)) == []  # 00:30 UTC the day after


def test_sub_folders_are_listed_only_when_recursive(spark: SparkSession, tmp_path: Path) -> None:
    binlogs = tmp_path / "binlogs"
    when = datetime(2024, 6, 1, tzinfo=UTC)
    _binlog(binlogs / "mysql-bin.000001", when)
    _binlog(binlogs / "db2" / "mariadb-bin.000007", when)
    _binlog(binlogs / "db2" / "archive" / "mariadb-bin.000003", when)

    flat = _listed(spark, InputSettings(path=str(binlogs)), tmp_path / "lake")
    deep = _listed(spark, InputSettings(path=str(binlogs), recursive=True), tmp_path / "lake")

    assert flat == [(str(binlogs / "mysql-bin.000001"), Decision.NEW, 0)]
    assert deep == [
        (str(binlogs / "db2" / "archive" / "mariadb-bin.000003"), Decision.NEW, 0),
        (str(binlogs / "db2" / "mariadb-bin.000007"), Decision.NEW, 0),
        (str(binlogs / "mysql-bin.000001"), Decision.NEW, 0),
    ]
