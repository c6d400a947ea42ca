"""The bronze stage in Spark: what it writes, and that re-runs, grown, rewritten and killed runs converge."""

from __future__ import annotations

import itertools
import os
import shutil
from pathlib import Path

from chispa.schema_comparer import assert_schema_equality
from pipelines.bronze.schema import BINLOG_EVENTS, BINLOG_FILES, QUARANTINE
from pyspark.sql import Row, SparkSession

from binlog_core.constants import EventType
from binlog_core.framing import open_events
from binlog_core.rows import ROWS_KINDS
from conf import AppConfig, InputSettings, StorageSettings
from pipelines.bronze.stage import BronzeOutput, build_bronze, replace_predicates, write_bronze
from pipelines.storage import Lakehouse, Table
from tests.fixtures.truth import FIXTURES

SAMPLE = FIXTURES / "sample"
EVENTS = Table.bronze("binlog_events")
FILES = Table.bronze("binlog_files")
QUARANTINED = Table.bronze("quarantine")


def lakehouse(spark: SparkSession, binlogs: Path, root: Path) -> tuple[AppConfig, Lakehouse]:
    cfg = AppConfig(
        input=InputSettings(path=str(binlogs)),
        storage=StorageSettings(root=str(root), register_tables=False),
    )
    return cfg, Lakehouse(spark, cfg.storage)


def run(spark: SparkSession, cfg: AppConfig, lake: Lakehouse) -> BronzeOutput:
    out = build_bronze(spark, cfg, lake)
    write_bronze(lake, out)
    out.unpersist()
    return out


def tables(lake: Lakehouse) -> dict[str, list[Row]]:
    """Every bronze row, in a stable order."""
    return {
        "events": lake.read(EVENTS).orderBy("file", "offset", "inner_index").collect(),
        "files": lake.read(FILES).orderBy("file").collect(),
        "quarantine": lake.read(QUARANTINED).orderBy("file", "offset", "inner_index", "code").collect(),
    }


def versions(spark: SparkSession, lake: Lakehouse) -> list[int]:
    return [
        spark.sql(f"DESCRIBE HISTORY delta.`{lake.path(table)}`").agg({"version": "max"}).first()[0]  # type: ignore[index]
        for table in (EVENTS, FILES, QUARANTINED)
    ]


def cut_inside_a_transaction(path: Path) -> tuple[int, int]:
    """(end of a TABLE_MAP followed by a rows event, a byte in the middle of that rows event)."""
    events = list(open_events(path))
    for first, second in itertools.pairwise(events):
        if first.type_code == EventType.TABLE_MAP and second.type_code in ROWS_KINDS:
            return second.offset, second.offset + second.header.event_size // 2
    raise AssertionError(f"{path}: no TABLE_MAP followed by a rows event")


def replace_file(path: Path, data: bytes, mtime: int) -> None:
    path.write_bytes(data)
    os.utime(path, (mtime, mtime))


def test_the_sample_binlogs_become_one_row_per_event_and_a_second_run_adds_nothing(
    spark: SparkSession, tmp_path: Path
) -> None:
    cfg, lake = lakehouse(spark, SAMPLE, tmp_path / "lake")
    out = build_bronze(spark, cfg, lake)
    assert_schema_equality(out.events.schema, BINLOG_EVENTS)
    assert_schema_equality(out.binlog_files.schema, BINLOG_FILES)
    assert_schema_equality(out.quarantine.schema, QUARANTINE)
    names = sorted(p.name for p in SAMPLE.glob("mysql-bin.*"))
    assert out.files == [f"file:{SAMPLE / name}" for name in names]
    assert out.resumed == {}
    write_bronze(lake, out)
    out.unpersist()

    counts = {row.file_name: row["count"] for row in lake.read(EVENTS).groupBy("file_name").count().collect()}
    assert counts == {
        "mysql-bin.000001": 281,
        "mysql-bin.000002": 197,
        "mysql-bin.000003": 174,
        "mysql-bin.000004": 109,
        "mysql-bin.000005": 5,
    }
    assert counts == {name: sum(1 for _ in open_events(SAMPLE / name)) for name in names}
    files = [
        (r.file_name, r.status, r.size, r.framed_until, r.event_count, r.checksum_alg)
        for r in lake.read(FILES).orderBy("file").collect()
    ]
    assert files == [
        (name, "complete", (SAMPLE / name).stat().st_size, (SAMPLE / name).stat().st_size, counts[name], "CRC32")
        for name in names
    ]
    assert lake.read(QUARANTINED).count() == 0

    before = tables(lake)
    written = versions(spark, lake)
    again = run(spark, cfg, lake)
    assert (again.files, again.replace_predicate) == ([], "false")
    assert versions(spark, lake) == written
    assert tables(lake) == before


def test_grown_and_rewritten_files_end_as_one_ingestion_of_their_final_content_even_after_a_killed_run(
    spark: SparkSession, tmp_path: Path
) -> None:
    source = SAMPLE / "mysql-bin.000002"
    data = source.read_bytes()
    boundary, middle = cut_inside_a_transaction(source)
    binlogs = tmp_path / "binlogs"
    binlogs.mkdir()
    active, rewritten = binlogs / "mysql-bin.000002", binlogs / "mysql-bin.000004"
    shutil.copy(SAMPLE / "mysql-bin.000005", binlogs / "mysql-bin.000005")
    cfg, lake = lakehouse(spark, binlogs, tmp_path / "lake")

    replace_file(active, data[:middle], 1_700_000_000)  # the server is writing a rows event
    replace_file(rewritten, (SAMPLE / "mysql-bin.000004").read_bytes(), 1_700_000_000)
    run(spark, cfg, lake)
    first = {r.file_name: (r.status, r.framed_until, r.error_offset) for r in lake.read(FILES).collect()}
    assert first["mysql-bin.000002"] == ("truncated", boundary, boundary)
    assert [(q.file_name, q.code, q.offset) for q in lake.read(QUARANTINED).collect()] == [
        ("mysql-bin.000002", "TRUNCATED", boundary)
    ]

    replace_file(active, data, 1_700_000_060)  # the server finished the transaction
    # rewritten in place with other, longer content: its old prefix no longer matches
    replace_file(rewritten, (SAMPLE / "mysql-bin.000003").read_bytes(), 1_700_000_060)
    killed = build_bronze(spark, cfg, lake)
    assert killed.files == [f"file:{active}", f"file:{rewritten}"]
    assert killed.resumed == {f"file:{active}": boundary}
    lake.replace_where(killed.events, EVENTS, killed.replace_predicate)  # killed before the other writes
    killed.unpersist()
    out = build_bronze(spark, cfg, lake)
    assert out.resumed == {f"file:{active}": boundary}
    write_bronze(lake, out)
    write_bronze(lake, out)  # writing the same output twice changes nothing
    out.unpersist()

    once_cfg, once = lakehouse(spark, binlogs, tmp_path / "once")
    run(spark, once_cfg, once)
    final, expected = tables(lake), tables(once)
    assert final == expected
    counts = {row.file_name: row["count"] for row in lake.read(EVENTS).groupBy("file_name").count().collect()}
    assert counts == {"mysql-bin.000002": 197, "mysql-bin.000004": 174, "mysql-bin.000005": 5}
    assert final["quarantine"] == []
    assert {(f.file_name, f.status, f.framed_until) for f in final["files"]} == {
        ("mysql-bin.000002", "complete", len(data)),
        ("mysql-bin.000004", "complete", (SAMPLE / "mysql-bin.000003").stat().st_size),
        ("mysql-bin.000005", "complete", 408),
    }


def test_new_and_changed_files_are_replaced_whole_and_grown_files_from_where_they_resume() -> None:
    events, quarantine = replace_predicates(["file:/b/mysql-bin.000001"], {"file:/b/mysql-bin.000002": 900})
    assert (
        events == "`file` IN ('file:/b/mysql-bin.000001') OR (`file` = 'file:/b/mysql-bin.000002' AND `offset` >= 900)"
    )
    assert quarantine == (
        "`stage` = 'bronze' AND (`file` IN ('file:/b/mysql-bin.000001') OR "
        "(`file` = 'file:/b/mysql-bin.000002' AND (`offset` IS NULL OR `offset` >= 900)))"
    )
    assert replace_predicates([], {}) == ("false", "false")
