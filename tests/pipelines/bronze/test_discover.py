"""What discovery lists (Hadoop glob, hidden names, sub-folders, time filter, dangling links) and what
it decides for a listed file, given the ``binlog_files`` row an earlier framing of the same real
file left."""

from __future__ import annotations

import dataclasses
import io
import os
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from conf import InputSettings, StorageSettings
from pipelines.bronze.discover import (
    Decision,
    InputError,
    ListedFile,
    check_input,
    decide,
    discover,
    hadoop_glob,
    list_files,
    same_time,
    sequence_of,
    server_of,
)
from pipelines.bronze.framing import FileSummary, ResumePoint, frame_file
from pipelines.bronze.transforms import resume_json, resume_point
from pipelines.storage import Lakehouse
from tests.fixtures.truth import FIXTURES

SAMPLE = FIXTURES / "sample"
SMALL = SAMPLE / "mysql-bin.000005"
"""A real binlog of 408 bytes: what listing reads of it is its name, size and time only."""

WHEN = datetime(2024, 6, 1, 12, 0, tzinfo=UTC)
LATER = WHEN + timedelta(minutes=5)


def _binlog(path: Path, mtime: datetime = WHEN, source: Path = SMALL) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(source.read_bytes())
    os.utime(path, (mtime.timestamp(), mtime.timestamp()))
    return path


def _names(settings: InputSettings) -> list[str]:
    """The listed files, relative to the input folder."""
    return [f.file.removeprefix(f"file:{settings.path}/") for f in list_files(None, settings)]


# -- names ---------------------------------------------------------------------------------------


def test_the_sequence_number_is_the_number_at_the_end_of_the_name_and_orders_numerically() -> None:
    assert [sequence_of(n) for n in ("mysql-bin.000042", "mariadb-bin.999999", "mariadb-bin.1000000")] == [
        42,
        999_999,
        1_000_000,
    ]
    assert sequence_of("mysql-bin.index") is None
    names = ["mysql-bin.1000000", "mysql-bin.999999", "mysql-bin.000002"]
    assert sorted(names, key=sequence_of) == ["mysql-bin.000002", "mysql-bin.999999", "mysql-bin.1000000"]
    assert sorted(names) != sorted(names, key=sequence_of)  # the path string would put .1000000 first


def test_a_files_server_is_its_folder_and_base_name_unless_the_pattern_names_it() -> None:
    assert server_of("s3a://b/db1/mysql-bin.000042") == "s3a://b/db1/mysql-bin"
    assert server_of("file:/data/db1/mariadb-bin.1000000") == "file:/data/db1/mariadb-bin"
    assert server_of("s3a://b/2024-05-01/db1/mysql-bin.000042", r"/(?P<server>db\d+)/") == "db1"
    assert server_of("s3a://b/2024-05-01/db7/mysql-bin.000042", r"/\d{4}-\d\d-\d\d/(db\d+)/") == "db7"
    # a pattern that does not match the path: the folder and base name
    assert server_of("s3a://b/other/mysql-bin.000042", r"/(?P<server>db\d+)/") == "s3a://b/other/mysql-bin"


# -- the glob ------------------------------------------------------------------------------------

GLOB_FILES = [
    "mysql-bin.000001",
    "mysql-bin.000002",
    "mysql-bin.000010",
    "mysql-bin.1000000",
    "mysql-bin.index",
    "mariadb-bin.000001",
    "relay-bin.000001",
    "mysql-bin.00000x",
]

GLOBS = [
    (
        "*.[0-9][0-9][0-9][0-9][0-9][0-9]",
        ["mariadb-bin.000001", "mysql-bin.000001", "mysql-bin.000002", "mysql-bin.000010", "relay-bin.000001"],
    ),
    ("{mysql,mariadb}-bin.00000?", ["mariadb-bin.000001", "mysql-bin.000001", "mysql-bin.000002", "mysql-bin.00000x"]),
    (
        "mysql-bin.[^i]*",
        ["mysql-bin.000001", "mysql-bin.000002", "mysql-bin.00000x", "mysql-bin.000010", "mysql-bin.1000000"],
    ),
    (
        "mysql-bin.[!i]*",  # Hadoop reads [! as [^
        ["mysql-bin.000001", "mysql-bin.000002", "mysql-bin.00000x", "mysql-bin.000010", "mysql-bin.1000000"],
    ),
    ("mysql-bin.00000[0-9]", ["mysql-bin.000001", "mysql-bin.000002"]),
    ("mysql-bin.00000[!0-9]", ["mysql-bin.00000x"]),
    ("*-bin.{000001,1000000}", ["mariadb-bin.000001", "mysql-bin.000001", "mysql-bin.1000000", "relay-bin.000001"]),
    ("mysql-bin.0000?0", ["mysql-bin.000010"]),
]


@pytest.fixture(scope="module")
def glob_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("glob")
    for name in GLOB_FILES:
        _binlog(folder / name)
    return folder


@pytest.mark.parametrize(("pattern", "expected"), GLOBS, ids=[g for g, _ in GLOBS])
def test_file_names_match_the_input_glob_as_hadoop_matches_them(
    glob_folder: Path, pattern: str, expected: list[str]
) -> None:
    assert _names(InputSettings(path=str(glob_folder), glob=pattern)) == expected
    assert sorted(n for n in GLOB_FILES if hadoop_glob(pattern).fullmatch(n)) == expected


def test_the_glob_lists_what_sparks_path_glob_filter_lists(spark: SparkSession, glob_folder: Path) -> None:
    for pattern, expected in GLOBS:
        listed = spark.read.format("binaryFile").option("pathGlobFilter", pattern).load(str(glob_folder)).select("path")
        assert sorted(os.path.basename(r.path) for r in listed.collect()) == expected, pattern


def test_the_default_glob_lists_a_servers_binlogs_after_999999(tmp_path: Path) -> None:
    _binlog(tmp_path / "mysql-bin.999999")
    _binlog(tmp_path / "mysql-bin.1000000")
    (tmp_path / "mysql-bin.index").write_text("./mysql-bin.999999\n./mysql-bin.1000000\n")
    assert sorted(_names(InputSettings(path=str(tmp_path))), key=sequence_of) == [
        "mysql-bin.999999",
        "mysql-bin.1000000",
    ]


@pytest.mark.parametrize("pattern", ["{mysql,mariadb-bin.*", "mysql-bin.[0-9"])
def test_an_unbalanced_glob_is_an_input_error(glob_folder: Path, pattern: str) -> None:
    with pytest.raises(InputError, match=r"^input\.glob "):
        list_files(None, InputSettings(path=str(glob_folder), glob=pattern))


# -- listing -------------------------------------------------------------------------------------


def test_hidden_files_and_folders_are_not_listed_as_spark_hides_them(tmp_path: Path) -> None:
    binlogs = tmp_path / "binlogs"
    _binlog(binlogs / "mysql-bin.000001")
    _binlog(binlogs / ".mysql-bin.000002")  # a copy in progress
    _binlog(binlogs / "_mysql-bin.000003")
    _binlog(binlogs / ".old" / "mysql-bin.000004")
    _binlog(binlogs / "_tmp" / "mysql-bin.000005")
    _binlog(binlogs / "db2" / "mysql-bin.000006")
    assert _names(InputSettings(path=str(binlogs), recursive=True)) == ["db2/mysql-bin.000006", "mysql-bin.000001"]


def test_sub_folders_are_listed_only_when_recursive(tmp_path: Path) -> None:
    binlogs = tmp_path / "binlogs"
    _binlog(binlogs / "mysql-bin.000001")
    _binlog(binlogs / "db2" / "mariadb-bin.000007")
    _binlog(binlogs / "db2" / "archive" / "mariadb-bin.000003")
    assert _names(InputSettings(path=str(binlogs))) == ["mysql-bin.000001"]
    assert _names(InputSettings(path=str(binlogs), recursive=True)) == [
        "db2/archive/mariadb-bin.000003",
        "db2/mariadb-bin.000007",
        "mysql-bin.000001",
    ]


def test_a_listed_file_has_its_uri_length_and_modification_time(tmp_path: Path) -> None:
    path = _binlog(tmp_path / "mysql-bin.000005", WHEN)
    assert list_files(None, InputSettings(path=str(tmp_path))) == [ListedFile(f"file:{path}", 408, WHEN)]
    assert list_files(None, InputSettings(path=str(path))) == [ListedFile(f"file:{path}", 408, WHEN)]  # one file


def test_files_modified_before_the_instant_given_are_not_listed(tmp_path: Path) -> None:
    binlogs = tmp_path / "binlogs"
    _binlog(binlogs / "mysql-bin.000001", datetime(2024, 5, 31, 22, 0, tzinfo=UTC))
    _binlog(binlogs / "mysql-bin.000002", datetime(2024, 6, 1, 0, 0, tzinfo=UTC))
    (binlogs / "mysql-bin.index").write_text("./mysql-bin.000001\n./mysql-bin.000002\n")

    def listed(after: datetime | None) -> list[str]:
        return _names(InputSettings(path=str(binlogs), modified_after=after))

    plus_two, minus_two = timezone(timedelta(hours=2)), timezone(timedelta(hours=-2))
    assert listed(None) == ["mysql-bin.000001", "mysql-bin.000002"]
    assert listed(datetime(2024, 5, 31, 23, 0, tzinfo=UTC)) == ["mysql-bin.000002"]
    assert listed(datetime(2024, 6, 1, 1, 30, tzinfo=plus_two)) == ["mysql-bin.000002"]  # 23:30 UTC the day before
    assert listed(datetime(2024, 6, 1, 0, 30)) == []  # no zone: UTC
    assert listed(datetime(2024, 5, 31, 22, 30, tzinfo=minus_two)) == []  # 00:30 UTC the day after
    assert listed(datetime(2024, 6, 1, 0, 0, tzinfo=UTC)) == []  # after, not at


def test_a_dangling_symbolic_link_is_listed_with_the_problem_that_it_cannot_be_read(tmp_path: Path) -> None:
    binlogs = tmp_path / "binlogs"
    _binlog(binlogs / "mysql-bin.000001")
    target = tmp_path / "archive" / "mysql-bin.000002"
    (binlogs / "mysql-bin.000002").symlink_to(target)
    listed = list_files(None, InputSettings(path=str(binlogs)))
    assert [(f.file_name, f.size, f.problem) for f in listed] == [
        ("mysql-bin.000001", 408, None),
        ("mysql-bin.000002", 0, f"a dangling symbolic link (to {target})"),
    ]


def test_an_input_path_that_does_not_exist_is_an_input_error(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere"
    with pytest.raises(InputError, match=rf"^input\.path: {missing} does not exist$"):
        list_files(None, InputSettings(path=str(missing)))
    with pytest.raises(InputError, match=rf"^input\.path: {missing} does not exist$"):
        check_input(InputSettings(path=str(missing)))


def test_an_input_folder_matching_no_file_is_an_input_error_before_any_spark_work(tmp_path: Path) -> None:
    (tmp_path / "mysql-bin.index").write_text("./mysql-bin.000001\n")
    _binlog(tmp_path / "db2" / "mysql-bin.000001")
    with pytest.raises(InputError, match=r"^input\.path: no file in .* matches input\.glob '\{\*\.\[0-9\]"):
        check_input(InputSettings(path=str(tmp_path)))
    assert check_input(InputSettings(path=str(tmp_path), recursive=True)) == 1


# -- decisions -----------------------------------------------------------------------------------

FILE = "file:/binlogs/mysql-bin.000002"


def _row(data: bytes, mtime: datetime = WHEN, **changes: Any) -> dict[str, Any]:
    """The ``binlog_files`` row a framing of ``data`` leaves (as ``known_files`` reads it back)."""
    out = list(frame_file(lambda: io.BytesIO(data), FILE, "mysql-bin.000002"))
    summary = out[-1]
    assert isinstance(summary, FileSummary)
    row = dataclasses.asdict(summary)
    row.update(size=len(data), modification_time=mtime.replace(tzinfo=None), **changes)
    return row


def _data(cut: int | None = None) -> bytes:
    return (SAMPLE / "mysql-bin.000002").read_bytes()[:cut]


def test_a_file_never_seen_is_framed_from_its_start() -> None:
    item = decide(ListedFile(FILE, 27030, WHEN), None)
    assert item is not None
    assert (item.decision, item.file_name, item.start_offset, item.resume) == (
        Decision.NEW,
        "mysql-bin.000002",
        0,
        None,
    )
    assert item.row() == (FILE, "mysql-bin.000002", 27030, WHEN, None, None)  # no resume point, whole


def test_a_file_of_the_same_length_and_instant_is_left_alone_whatever_zone_the_times_are_read_in(
    local_zone: str,
) -> None:
    previous = _row(_data())
    previous["modification_time"] = WHEN.astimezone().replace(tzinfo=None)  # read back from Delta: naive, local
    assert previous["modification_time"] != WHEN.replace(tzinfo=None)  # not the UTC wall clock
    assert decide(ListedFile(FILE, 27030, WHEN), previous) is None
    assert decide(ListedFile(FILE, 27030, WHEN + timedelta(microseconds=1)), previous) is not None
    assert same_time(WHEN, previous["modification_time"])


def test_a_grown_active_binlog_resumes_at_the_start_of_the_transaction_left_open_with_the_state_there() -> None:
    previous = _row(_data(2047))  # cut inside the rows event of the transaction opened at 1528
    assert (previous["status"], previous["framed_until"], previous["resume_offset"]) == ("truncated", 1857, 1528)
    item = decide(ListedFile(FILE, 27030, LATER), previous)
    assert item is not None
    assert (item.decision, item.start_offset, item.size, item.modification_time) == (
        Decision.GROWN,
        1528,
        27030,
        LATER,
    )
    assert item.resume == ResumePoint(
        offset=1528,
        format_descriptions=previous["format_descriptions"],
        gtid=None,
        prefix_sha256=previous["prefix_sha256"],
        counts=previous["resume_counts"],
        shapes=previous["resume_shapes"],
        facts={
            "server_id": 1,
            "server_version": previous["server_version"],
            "flavor": "mariadb",
            "binlog_version": 4,
            "checksum_alg": "CRC32",
            "first_timestamp": previous["first_timestamp"],
            "last_timestamp": previous["last_timestamp"],
        },
    )
    assert list(item.resume.format_descriptions) == [4]
    assert resume_point(item.row()[4]) == item.resume  # the work item's JSON carries it whole
    assert resume_json(item.resume) == item.row()[4]


def test_a_complete_file_touched_or_grown_is_continued_from_its_resume_offset() -> None:
    previous = _row(_data(1528))  # ends at a transaction boundary: complete
    assert (previous["status"], previous["resume_offset"], previous["resume_gtid"]) == ("complete", 1528, "0-1-25")
    for size in (1528, 27030):
        item = decide(ListedFile(FILE, size, LATER), previous)
        assert item is not None
        assert (item.decision, item.start_offset) == (Decision.GROWN, 1528), size
        assert item.resume is not None and item.resume.gtid == "0-1-25"


@pytest.mark.parametrize(
    ("changes", "listed_size"),
    [
        pytest.param({}, 1800, id="shorter-than-framed"),
        *(
            pytest.param({"status": status}, 27030, id=status)
            for status in ("corrupt", "encrypted", "not_a_binlog", "empty", "unreadable", "duplicate")
        ),
        pytest.param({"resume_offset": 4}, 27030, id="nothing-framed"),
        pytest.param({"format_descriptions": {}}, 27030, id="no-format-description"),
    ],
)
def test_any_other_change_frames_the_file_again_from_its_start(changes: dict[str, Any], listed_size: int) -> None:
    previous = _row(_data(2047), **changes)
    item = decide(ListedFile(FILE, listed_size, LATER), previous)
    assert item is not None
    assert (item.decision, item.start_offset, item.resume) == (Decision.CHANGED, 0, None)


def test_discovery_orders_the_work_by_bytes_to_read_and_keeps_what_binlog_files_knew(
    spark: SparkSession, tmp_path: Path
) -> None:
    binlogs = tmp_path / "binlogs"
    for name in ("mysql-bin.000001", "mysql-bin.000004", "mysql-bin.000005"):
        _binlog(binlogs / name, WHEN, SAMPLE / name)
    lake = Lakehouse(spark, StorageSettings(root=str(tmp_path / "lake"), register_tables=False))
    found = discover(spark, InputSettings(path=str(binlogs)), lake)
    assert [f.file_name for f in found.listed] == ["mysql-bin.000001", "mysql-bin.000004", "mysql-bin.000005"]
    assert [(w.file_name, w.decision, w.size) for w in found.work] == [
        ("mysql-bin.000001", Decision.NEW, 43930),
        ("mysql-bin.000004", Decision.NEW, 13235),
        ("mysql-bin.000005", Decision.NEW, 408),
    ]
    assert found.known == {}


@pytest.fixture
def local_zone(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The process's local time zone set to one far from UTC (naive times then differ from UTC's)."""
    monkeypatch.setenv("TZ", "Asia/Kolkata")
    time.tzset()
    try:
        yield "Asia/Kolkata"
    finally:
        monkeypatch.undo()
        time.tzset()
