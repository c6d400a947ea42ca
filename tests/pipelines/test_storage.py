"""Specifications of ``pipelines.storage``: catalog registration of the Delta tables, the small tables
read and written on the driver, the Hadoop settings handed to tasks.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import time
import uuid
from datetime import datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from deltalake import DeltaTable as DeltaRsTable
from pyspark.sql import Row, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import LongType, StringType, StructField, StructType, TimestampNTZType, TimestampType

from conf import StorageSettings
from pipelines import storage
from pipelines.progress import file_predicate
from pipelines.storage import Lakehouse, Table, Write, hadoop_filesystem_options
from pipelines.tables import Col, Layer, TableSpec
from tests.harness.sample_lake import commit_engines

PROJECT_ROOT = Path(__file__).resolve().parents[2]


def overwrite(lake: Lakehouse, frame: Any, table: Table) -> None:
    """Write ``frame`` as the whole of ``table`` (a spec made from the frame's own schema)."""
    spec = TableSpec(
        table.layer, table.name, "test rows", tuple(Col(f.name, f.dataType, f.name) for f in frame.schema), ()
    )
    lake.write(Write(spec, frame, mode="overwrite"))


SAMPLE = PROJECT_ROOT / "tests" / "fixtures" / "mariadb" / "sample"

# Catalog registration ------------------------------------------------------------------------------


def _lake(spark: SparkSession, root: Path, suffix: str) -> Lakehouse:
    return Lakehouse(
        spark,
        StorageSettings(
            root=str(root), gold_database=f"storage_gold_{suffix}", bronze_database=f"storage_bronze_{suffix}"
        ),
    )


def test_written_tables_are_registered_by_location_and_read_by_name(spark: SparkSession, tmp_path: Path) -> None:
    lake = _lake(spark, tmp_path / "lake", "named")
    overwrite(lake, spark.createDataFrame([Row(id=1, total=9.5), Row(id=2, total=3.0)]), Table.gold("shop__orders"))
    rows = spark.sql("SELECT id, total FROM storage_gold_named.shop__orders ORDER BY id").collect()
    assert rows == [Row(id=1, total=9.5), Row(id=2, total=3.0)]
    location = spark.sql("DESCRIBE DETAIL storage_gold_named.shop__orders").first()
    assert location is not None and location["location"] == f"file:{tmp_path}/lake/gold/shop__orders"


def test_a_name_registered_for_another_lakehouse_root_is_pointed_at_this_one(
    spark: SparkSession, tmp_path: Path
) -> None:
    first = _lake(spark, tmp_path / "first", "moved")
    overwrite(first, spark.createDataFrame([Row(id=1)]), Table.gold("t"))
    second = _lake(spark, tmp_path / "second", "moved")
    overwrite(second, spark.createDataFrame([Row(id=2), Row(id=3)]), Table.gold("t"))
    assert spark.sql("SELECT id FROM storage_gold_moved.t ORDER BY id").collect() == [Row(id=2), Row(id=3)]
    # dropping the external registration left the first root's table in place
    assert first.read(Table.gold("t")).collect() == [Row(id=1)]


def test_a_mixed_case_table_name_is_found_in_the_catalog_and_pointed_at_this_lakehouse(
    spark: SparkSession, tmp_path: Path
) -> None:
    table = Table.gold("Shop__Orders")  # the catalog keeps names in lower case
    overwrite(_lake(spark, tmp_path / "first", "cased"), spark.createDataFrame([Row(id=1)]), table)
    overwrite(_lake(spark, tmp_path / "second", "cased"), spark.createDataFrame([Row(id=2)]), table)
    assert spark.sql("SELECT id FROM storage_gold_cased.shop__orders").collect() == [Row(id=2)]


def test_a_registration_whose_files_were_deleted_is_replaced(spark: SparkSession, tmp_path: Path) -> None:
    gone = _lake(spark, tmp_path / "gone", "deleted")
    overwrite(gone, spark.createDataFrame([Row(id=1)]), Table.gold("t"))
    shutil.rmtree(tmp_path / "gone")
    overwrite(_lake(spark, tmp_path / "new", "deleted"), spark.createDataFrame([Row(id=5)]), Table.gold("t"))
    assert spark.sql("SELECT id FROM storage_gold_deleted.t").collect() == [Row(id=5)]


def test_tables_written_while_registering_at_end_are_registered_together_when_the_block_ends(
    spark: SparkSession, tmp_path: Path
) -> None:
    lake = _lake(spark, tmp_path / "lake", "batched")
    with lake.registering_at_end():
        overwrite(lake, spark.createDataFrame([Row(id=1)]), Table.gold("a"))
        overwrite(lake, spark.createDataFrame([Row(id=2)]), Table.bronze("b"))
        assert not spark.catalog.tableExists("storage_gold_batched.a")
    assert spark.sql("SELECT id FROM storage_gold_batched.a").collect() == [Row(id=1)]
    assert spark.sql("SELECT id FROM storage_bronze_batched.b").collect() == [Row(id=2)]
    remembered = json.loads((tmp_path / "lake" / "_state" / storage.REGISTERED_FILE).read_text())["tables"]
    assert remembered == {
        "storage_gold_batched.a": f"{tmp_path}/lake/gold/a",
        "storage_bronze_batched.b": f"{tmp_path}/lake/bronze/b",
    }


def test_a_table_a_killed_run_wrote_before_registering_it_is_registered_by_the_next_run(
    spark: SparkSession, tmp_path: Path
) -> None:
    killed = _lake(spark, tmp_path / "lake", "killed")
    with pytest.raises(KeyboardInterrupt), killed.registering_at_end():
        overwrite(killed, spark.createDataFrame([Row(id=3)]), Table.gold("t"))
        raise KeyboardInterrupt  # killed after the commit, before the registration
    assert not spark.catalog.tableExists("storage_gold_killed.t")
    with _lake(spark, tmp_path / "lake", "killed").registering_at_end():
        pass  # the next run writes nothing new
    assert spark.sql("SELECT id FROM storage_gold_killed.t").collect() == [Row(id=3)]


def test_a_name_held_by_a_managed_table_is_not_dropped(spark: SparkSession, tmp_path: Path) -> None:
    spark.sql("CREATE DATABASE IF NOT EXISTS storage_gold_managed")
    spark.sql("CREATE TABLE storage_gold_managed.t (id BIGINT) USING DELTA")
    spark.sql("INSERT INTO storage_gold_managed.t VALUES (7)")
    lake = _lake(spark, tmp_path / "lake", "managed")
    with pytest.raises(RuntimeError, match=r"storage_gold_managed`\.`t` is a managed table at file:.*: rename it"):
        overwrite(lake, spark.createDataFrame([Row(id=1)]), Table.gold("t"))
    assert spark.sql("SELECT id FROM storage_gold_managed.t").collect() == [Row(id=7)]


def test_hadoop_filesystem_options_hand_the_sessions_object_store_settings_to_tasks(spark: SparkSession) -> None:
    configuration = spark.sparkContext._jsc.hadoopConfiguration()
    configuration.set("fs.s3a.endpoint", "http://minio:9000")
    configuration.set("fs.azure.account.key.acct.dfs.core.windows.net", "a2V5")
    try:
        options = hadoop_filesystem_options(spark)
    finally:
        configuration.unset("fs.s3a.endpoint")
        configuration.unset("fs.azure.account.key.acct.dfs.core.windows.net")
    assert options["fs.s3a.endpoint"] == "http://minio:9000"
    assert options["fs.azure.account.key.acct.dfs.core.windows.net"] == "a2V5"
    assert not [key for key in options if not key.startswith(("fs.s3a.", "fs.gs.", "fs.azure."))]


# A Hive catalog persists registrations across sessions -------------------------------------------------

WRITER = textwrap.dedent(
    """
    import sys
    from pyspark.sql import Row
    from conf import load_config
    from pipelines.session import build_spark
    from pipelines.storage import Lakehouse, Write
    from pipelines.tables import Col, Layer, TableSpec

    cfg = load_config(sys.argv[1], env={})
    spark = build_spark(cfg.spark)
    rows = spark.createDataFrame([Row(op="insert", id=1, total="9.50"), Row(op="update", id=1, total="12.00")])
    columns = tuple(Col(f.name, f.dataType, f.name) for f in rows.schema)
    spec = TableSpec(Layer.GOLD, "shop__orders", "test rows", columns, ())
    Lakehouse(spark, cfg.storage).write(Write(spec, rows, mode="overwrite"))
    spark.stop()
    """
)


@pytest.mark.slow
def test_hive_catalog_registrations_are_read_by_name_from_a_later_session(tmp_path: Path) -> None:
    lake = tmp_path / "lake"
    config = tmp_path / "lake.yaml"
    config.write_text(
        textwrap.dedent(
            f"""
            spark:
              master: local[1]
              ui_enabled: false
              log_level: ERROR
              shuffle_partitions: 1
              catalog: hive
              conf:
                spark.databricks.delta.snapshotPartitions: 1
            input:
              path: {SAMPLE}
            storage:
              root: {lake}
            """
        ),
        encoding="utf-8",
    )
    env = {
        key: value for key, value in os.environ.items() if not key.startswith(("PYSPARK_GATEWAY", "BINLOG_LAKEHOUSE__"))
    }

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [sys.executable, *args], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600, check=False
        )
        assert done.returncode == 0, done.stderr[-4000:]
        return done

    run("-c", WRITER, str(config))
    query = "SELECT op, id, total FROM binlog_gold.shop__orders ORDER BY total"
    done = run("-m", "pipelines.session", "--config", str(config), "--sql", query)
    assert done.stdout.splitlines() == ["op\tid\ttotal", "update\t1\t12.00", "insert\t1\t9.50"]
    assert (lake / "_metastore" / "metastore_db").is_dir()
    assert (lake / "_metastore" / "derby.log").is_file()
    assert (lake / "_warehouse" / "binlog_gold.db").is_dir()
    assert sorted(path.name for path in tmp_path.iterdir()) == ["lake", "lake.yaml"]  # nothing in the working dir


# Writes --------------------------------------------------------------------------------------------


def _spec(*columns: Col) -> TableSpec:
    return TableSpec(Layer.GOLD, "shop__visits", "a visit", columns, ("id",))


def test_a_datetime_column_can_join_an_existing_table_by_schema_merge_or_overwrite(
    spark: SparkSession, tmp_path: Path
) -> None:
    lake = Lakehouse(spark, StorageSettings(root=str(tmp_path / "lake"), register_tables=False))
    ident = Col("id", LongType(), "id")
    seen = Col("seen", TimestampNTZType(), "a DATETIME")
    wide = spark.createDataFrame([(2, datetime(2024, 3, 1, 11, 3))], "id long, seen timestamp_ntz")
    for write, expected in (
        (
            Write(_spec(ident, seen), wide, mode="append", merge_schema=True),
            [(1, None), (2, datetime(2024, 3, 1, 11, 3))],
        ),
        (Write(_spec(ident, seen), wide, mode="overwrite"), [(2, datetime(2024, 3, 1, 11, 3))]),
    ):
        shutil.rmtree(tmp_path / "lake", ignore_errors=True)
        lake.write(Write(_spec(ident), spark.createDataFrame([(1,)], "id long")))
        lake.write(write)
        assert sorted(tuple(r) for r in lake.read(_spec(ident, seen)).collect()) == expected, write.mode


def test_a_merge_with_keep_deletes_the_rows_it_marks_gone_and_inserts_only_the_kept(
    spark: SparkSession, tmp_path: Path
) -> None:
    lake = Lakehouse(spark, StorageSettings(root=str(tmp_path / "lake"), register_tables=False))
    spec = _spec(Col("id", LongType(), "id"), Col("v", LongType(), "v"))
    rows = "id long, v long, keep boolean"
    lake.write(Write(spec, spark.createDataFrame([(1, 1, True), (2, 2, True), (3, 3, False)], rows), keep="keep"))
    assert sorted(lake.read(spec).collect()) == [Row(id=1, v=1), Row(id=2, v=2)]  # a new table: the kept only
    again = spark.createDataFrame([(1, 10, True), (2, 2, False), (4, 4, True), (5, 5, False)], rows)
    for _ in range(2):  # merging the same rows again changes nothing
        lake.write(Write(spec, again, mode="merge", keep="keep"))
        assert sorted(lake.read(spec).collect()) == [Row(id=1, v=10), Row(id=4, v=4)]


# Small tables read on the driver ---------------------------------------------------------------------


SMALL_ROWS = (
    "id long, name string, n int, ok boolean, at timestamp, wall timestamp_ntz, "
    "counts map<string,long>, described map<long,string>, names array<string>, "
    "columns array<struct<name:string,key:boolean>>, first struct<name:string,at:timestamp>"
)


def _jobs_of(spark: SparkSession, read: Any) -> tuple[Any, list[int]]:
    """What ``read()`` returns, and the Spark jobs it ran."""
    context = spark.sparkContext
    group = f"small-table-read-{uuid.uuid4().hex}"
    context.setJobGroup(group, "rows read on the driver")
    try:
        found = read()
    finally:
        context.setLocalProperty("spark.jobGroup.id", None)  # type: ignore[arg-type]
    return found, list(context.statusTracker().getJobIdsForGroup(group))


def test_a_small_table_is_read_on_the_driver_without_a_spark_job_as_spark_collects_it(
    spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TZ", "America/New_York")  # a timestamp reads in the local time zone, as PySpark gives it
    time.tzset()
    try:
        lake = Lakehouse(spark, StorageSettings(root=str(tmp_path / "lake"), register_tables=False))
        spec = TableSpec(Layer.STATE, "small", "a small table", (), ("id",))
        frame = spark.createDataFrame(
            [
                (
                    1,
                    "a",
                    7,
                    True,
                    datetime(2024, 3, 1, 11, 3, 4, 123456),
                    datetime(2024, 3, 1, 11, 3),
                    {"events": 281, "gaps": 0},
                    {4: '{"binlog_version": 4}'},
                    ["x", "y"],
                    [("id", True), ("v", None)],
                    ("id", datetime(2024, 3, 1, 11, 3)),
                ),
                (2, None, None, None, None, None, {}, {}, [], [], (None, None)),
                (3, "c", -1, False, datetime(1999, 12, 31, 23, 59, 59, 1), None, None, None, None, None, None),
            ],
            SMALL_ROWS,
        )
        assert _jobs_of(spark, lambda: lake.rows(spec))[0] == []  # before its first write
        frame.write.format("delta").save(lake.path(spec))
        collected = sorted((row.asDict() for row in lake.read(spec).collect()), key=lambda r: r["id"])
        found, jobs = _jobs_of(spark, lambda: lake.rows(spec))
        assert jobs == []
        assert sorted(found, key=lambda r: r["id"]) == collected
        assert all(list(row) == lake.read(spec).columns for row in found)  # the table's column order
        assert collected[0]["at"] == datetime(2024, 3, 1, 11, 3, 4, 123456)
        first = sorted(found, key=lambda r: r["id"])[0]  # structs as the Rows Spark gives, fields by name
        assert [c.asDict() for c in first["columns"]] == [{"name": "id", "key": True}, {"name": "v", "key": None}]
        assert first["first"].name == "id" and first["first"].at == datetime(2024, 3, 1, 11, 3)
    finally:
        monkeypatch.undo()
        time.tzset()


def test_a_small_table_with_a_type_the_driver_read_does_not_map_is_collected_through_spark_unless_left_out(
    spark: SparkSession, tmp_path: Path
) -> None:
    lake = Lakehouse(spark, StorageSettings(root=str(tmp_path / "lake"), register_tables=False))
    spec = TableSpec(Layer.STATE, "bodies", "a table with bytes", (), ("id",))
    spark.createDataFrame([(1, bytearray(b"\x00\xfe"), "k")], "id long, body binary, code string").write.format(
        "delta"
    ).save(lake.path(spec))
    found, jobs = _jobs_of(spark, lambda: lake.rows(spec))
    assert found == [{"id": 1, "body": bytearray(b"\x00\xfe"), "code": "k"}] and jobs  # through Spark
    found, jobs = _jobs_of(spark, lambda: lake.rows(spec, ["code", "id"]))
    assert found == [{"code": "k", "id": 1}] and jobs == []


# Small work written on the driver ------------------------------------------------------------------

VISITS = TableSpec(
    Layer.GOLD,
    "shop__visits",
    "a visit",
    (
        Col("file", StringType(), "the binlog", nullable=False),
        Col("offset", LongType(), "where", nullable=False),
        Col("seen", TimestampNTZType(), "a DATETIME"),
        Col("at", TimestampType(), "a TIMESTAMP"),
        Col("who", StructType([StructField("name", StringType()), StructField("id", LongType())]), "a struct"),
        Col("kind", StringType(), "the partition"),
    ),
    ("file", "offset"),
    partition_by=("kind",),
    skipping=("seen",),
)
VISITS_ROWS = "file string, offset long, seen timestamp_ntz, at timestamp, who struct<name:string,id:long>, kind string"
LONG_FOLDER = "/binlogs/" + "a-folder-whose-name-runs-past-the-sixty-four-characters-delta-rs-keeps/" * 2


def _visits(spark: SparkSession, *rows: tuple[str, int]) -> Any:
    return spark.createDataFrame(
        [
            (file, offset, datetime(2024, 3, 1, 11, offset % 60), datetime(2024, 3, 1, 11, 3), ("ann", offset), "k")
            for file, offset in rows
        ],
        VISITS_ROWS,
    )


def test_small_work_is_written_by_delta_rs_into_the_table_spark_would_write_and_then_reads_and_writes(
    spark: SparkSession, tmp_path: Path
) -> None:
    lakes = {
        small: Lakehouse(
            spark, StorageSettings(root=str(tmp_path / str(small)), register_tables=False), small_work=lambda s=small: s
        )
        for small in (False, True)
    }
    quoted = LONG_FOLDER + "it's\\1"
    first = _visits(spark, (LONG_FOLDER + "b.000001", 4), (LONG_FOLDER + "b.000001", 90), (quoted, 4))
    again = _visits(spark, (quoted, 120))
    for lake in lakes.values():
        lake.write(Write(VISITS, first, mode="append"))
        lake.write(Write(VISITS, again, file_predicate([quoted])))  # replaces the rows of one file only
    spark_lake, driver_lake = lakes[False], lakes[True]
    assert commit_engines(Path(driver_lake.path(VISITS))) == ["delta-rs"] * 3  # made, appended, replaced
    assert commit_engines(Path(spark_lake.path(VISITS))) == ["Apache-Spark"] * 2
    read = {small: lake.read(VISITS) for small, lake in lakes.items()}
    nullable = StructType([StructField(f.name, f.dataType, True, f.metadata) for f in VISITS.schema])
    assert read[True].schema == read[False].schema == nullable  # with the comments
    assert sorted(read[True].collect()) == sorted(read[False].collect())
    assert sorted((r.file, r.offset) for r in read[True].collect()) == [
        (LONG_FOLDER + "b.000001", 4),
        (LONG_FOLDER + "b.000001", 90),
        (quoted, 120),
    ]
    tables = {small: DeltaRsTable(lake.path(VISITS)) for small, lake in lakes.items()}
    protocols = {small: t.protocol() for small, t in tables.items()}
    assert (protocols[True].min_reader_version, protocols[True].min_writer_version) == (3, 7)
    assert protocols[True].reader_features == protocols[False].reader_features == ["timestampNtz"]
    assert set(protocols[True].writer_features or []) <= set(protocols[False].writer_features or [])
    assert tables[True].metadata().configuration == tables[False].metadata().configuration == VISITS.properties
    assert tables[True].metadata().partition_columns == ["kind"]
    stats = pa.table(tables[True].get_add_actions(flatten=True))
    bounds = {*stats.column("min.file").to_pylist(), *stats.column("max.file").to_pylist()}
    assert bounds == {LONG_FOLDER + "b.000001", quoted}  # not cut at 64 characters
    assert sorted(n for n in stats.column_names if n.startswith("min.")) == ["min.file", "min.offset", "min.seen"]
    driver_lake.small_work = lambda: False  # Spark appends to the table delta-rs made
    driver_lake.write(Write(VISITS, _visits(spark, ("x", 1)), mode="append"))
    assert commit_engines(Path(driver_lake.path(VISITS)))[-1] == "Apache-Spark"
    assert driver_lake.read(VISITS).count() == 4


def test_a_small_write_delta_rs_would_not_write_as_spark_does_goes_through_spark(
    spark: SparkSession, tmp_path: Path
) -> None:
    lake = Lakehouse(
        spark, StorageSettings(root=str(tmp_path / "lake"), register_tables=False), small_work=lambda: True
    )
    lake.write(Write(VISITS, _visits(spark, ("a", 1)), mode="append"))
    wider = TableSpec(
        VISITS.layer, VISITS.name, VISITS.row, (*VISITS.columns, Col("note", StringType(), "new")), VISITS.key
    )
    lake.write(Write(wider, _visits(spark, ("b", 2)).withColumn("note", F.lit("n")), mode="append", merge_schema=True))
    newline = _visits(spark, ("c\n", 3)).withColumn("note", F.lit("n"))
    lake.write(Write(wider, newline, "`file` = 'c\\n'"))  # Spark reads the escape as a line break
    lake.write(Write(wider, _visits(spark, ("a", 1)).withColumn("note", F.lit("m")), mode="merge"))
    engines = commit_engines(Path(lake.path(VISITS)))
    assert engines == ["delta-rs"] * 2 + ["Apache-Spark"] * 3  # made and appended; a new column, an escape, a merge
    assert sorted((r.file, r.note) for r in lake.read(wider).collect()) == [("a", "m"), ("b", "n"), ("c\n", "n")]


@pytest.mark.parametrize(
    ("spark_sql", "datafusion"),
    [
        ("`file` IN ('a', 'b')", "\"file\" IN ('a', 'b')"),
        ("stage = 'gold' AND (`file` IN ('it\\'s', 'C:\\\\x'))", "stage = 'gold' AND (\"file\" IN ('it''s', 'C:\\x'))"),
        ("`we``ird` = 'x'", "\"we`ird\" = 'x'"),
        ("false", "false"),
    ],
)
def test_a_replace_predicate_reads_in_delta_rs_as_spark_reads_it(spark_sql: str, datafusion: str) -> None:
    assert storage.datafusion_predicate(spark_sql) == datafusion


@pytest.mark.parametrize("spark_sql", ["a = 'x\\n'", 'a = "x"', "File = 'x'", "a = 'open"])
def test_a_predicate_delta_rs_could_read_otherwise_than_spark_is_left_to_spark(spark_sql: str) -> None:
    assert storage.datafusion_predicate(spark_sql) is None
