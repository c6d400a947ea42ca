"""Specifications of ``pipelines.staging`` and of how the lakehouse commits what tasks wrote: the files
are those Spark would write (schema, partition folders, statistics), they enter the table in one Delta
commit through Spark's Delta log (a new table made in that same commit, Delta choosing its protocol),
or, for small work on a local lake, through delta-rs on the driver into the table Spark would make;
and a write Spark must make (rows that replace others, rows to change, a schema that grows) reads them
back and leaves none of them behind.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from deltalake import DeltaTable as DeltaRsTable
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import LongType, StringType, StructField, StructType, TimestampNTZType, TimestampType

from conf import StorageSettings
from pipelines.staging import Staged, StagedFile, TableTarget, TableWriter, arrow_schema, conformed, hive_escape
from pipelines.storage import Lakehouse, Write
from pipelines.tables import Col, Layer, TableSpec
from tests.harness.sample_lake import commit_engines

IMAGE = StructType([StructField("seen", TimestampNTZType()), StructField("n", LongType())])
SPEC = TableSpec(
    Layer.GOLD,
    "staged_probe",
    "test rows",
    (
        Col("file", StringType(), "the binlog", nullable=False),
        Col("offset", LongType(), "where"),
        Col("at", TimestampType(), "when"),
        Col("after", IMAGE, "the image"),
        Col("part", StringType(), "a partition"),
    ),
    ("file", "offset"),
    partition_by=("part",),
    skipping=("at",),
)
T0 = datetime(2024, 3, 1, 10, 29, 0, 46_001, tzinfo=UTC)


def rows(file: str, offsets: range, part: str = "a") -> pa.Table:
    return pa.Table.from_pylist(
        [
            {"file": file, "offset": o, "at": T0, "after": {"seen": datetime(2024, 3, 1, 23, 59), "n": o}, "part": part}
            for o in offsets
        ],
        schema=arrow_schema(SPEC),
    )


def lake_of(spark: SparkSession, tmp_path: Path, *, small: bool = False) -> Lakehouse:
    settings = StorageSettings(root=str(tmp_path / "lake"), register_tables=False)
    return Lakehouse(spark, settings, small_work=lambda: small)


def staged(lake: Lakehouse, *tables: pa.Table) -> Staged:
    """What a task writing ``tables`` hands back, as the driver collects it."""
    writer = TableWriter(lake.target(SPEC))
    for table in tables:
        writer.write(table)
    return Staged(tuple(StagedFile.of(f.row()) for f in writer.close()))


def log_actions(table: Path, version: int) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (table / "_delta_log" / f"{version:020d}.json").read_text().splitlines()]


def log_adds(table: Path) -> list[dict[str, Any]]:
    """Every ``add`` action of the table's log, oldest commit first."""
    return [
        a for c in sorted((table / "_delta_log").glob("*.json")) for a in log_actions(table, int(c.stem)) if "add" in a
    ]


def test_rows_are_conformed_to_the_tables_columns_by_name() -> None:
    given = pa.table({"part": ["x"], "offset": pa.array([7], pa.int32()), "file": ["f"]})
    out = conformed(given, arrow_schema(SPEC))
    assert out.column_names == SPEC.names
    assert out.to_pylist() == [{"file": "f", "offset": 7, "at": None, "after": None, "part": "x"}]


def test_partition_values_are_escaped_in_folder_names_as_hive_writes_them() -> None:
    assert hive_escape("a b/c=d%e") == "a b%2Fc%3Dd%25e"


def test_a_task_writes_one_file_per_partition_value_with_the_statistics_of_the_key_and_skipping_columns(
    tmp_path: Path,
) -> None:
    target = TableTarget.of(SPEC, str(tmp_path / "t"), {})
    writer = TableWriter(target)
    writer.write(pa.concat_tables([rows("f1", range(0, 3)), rows("f2", range(3, 5), part="b/c")]))
    writer.write(rows("f1", range(5, 6)))
    files = sorted(writer.close(), key=lambda f: f.path)
    assert [(f.partition_values, f.num_records, f.sources) for f in files] == [
        ({"part": "a"}, 4, ["f1"]),
        ({"part": "b/c"}, 2, ["f2"]),
    ]
    assert files[1].path.startswith("part=b%252Fc/")  # escaped folder, then quoted as a Delta log path
    stats = json.loads(files[0].stats)
    assert stats == {
        "numRecords": 4,
        "minValues": {"file": "f1", "offset": 0, "at": "2024-03-01T10:29:00.046Z"},
        "maxValues": {"file": "f1", "offset": 5, "at": "2024-03-01T10:29:00.047Z"},  # rounded outwards
        "nullCount": {"file": 0, "offset": 0, "at": 0},
    }
    assert all((tmp_path / "t" / f.path.replace("%252F", "%2F")).is_file() for f in files)


def test_a_string_longer_than_the_statistics_prefix_leaves_its_bounds_out(tmp_path: Path) -> None:
    writer = TableWriter(TableTarget.of(SPEC, str(tmp_path / "t"), {}))
    writer.write(rows("/" + "x" * 300, range(2)))
    (written,) = writer.close()
    stats = json.loads(written.stats)
    assert "file" not in stats["minValues"] and "file" not in stats["maxValues"]
    assert stats["nullCount"]["file"] == 0


def test_files_tasks_wrote_make_a_new_table_in_one_commit_that_spark_reads_as_its_own(
    spark: SparkSession, tmp_path: Path
) -> None:
    lake = lake_of(spark, tmp_path)
    lake.write(Write(SPEC, staged(lake, rows("f1", range(3)), rows("f2", range(3, 4), part="b")), fresh=True))
    folder = tmp_path / "lake" / "gold" / "staged_probe"
    assert commit_engines(folder) == ["Apache-Spark"] and lake.commits == 1
    actions = log_actions(folder, 0)
    assert actions[0]["commitInfo"]["operation"] == "WRITE"
    protocol = next(a["protocol"] for a in actions if "protocol" in a)
    assert "timestampNtz" in protocol["readerFeatures"]  # Delta chose it for the wall-clock field
    metadata = next(a["metaData"] for a in actions if "metaData" in a)
    assert metadata["partitionColumns"] == ["part"]
    assert metadata["configuration"] == SPEC.properties
    schema = json.loads(metadata["schemaString"])
    assert [(f["name"], f["nullable"], f["metadata"]) for f in schema["fields"]][:2] == [
        ("file", True, {"comment": "the binlog"}),
        ("offset", True, {"comment": "where"}),
    ]
    table = lake.read(SPEC)
    assert [f.name for f in table.schema.fields] == SPEC.names
    assert sorted((r.file, r.offset, r.part, r.after.n) for r in table.collect()) == [
        ("f1", 0, "a", 0),
        ("f1", 1, "a", 1),
        ("f1", 2, "a", 2),
        ("f2", 3, "b", 3),
    ]
    assert table.where(F.col("at") > F.lit(T0)).count() == 0  # instants kept to the microsecond
    assert {r.col_name: r.comment for r in spark.sql(f"DESCRIBE delta.`{folder}`").collect()}["at"] == "when"
    assert table.where("file = 'f2'").inputFiles() and len(table.where("file = 'f2'").inputFiles()) == 1


def test_new_files_and_the_drivers_own_rows_enter_an_existing_table_in_one_more_commit(
    spark: SparkSession, tmp_path: Path
) -> None:
    lake = lake_of(spark, tmp_path)
    lake.write(Write(SPEC, staged(lake, rows("f1", range(2))), fresh=True))
    extra = spark.createDataFrame([("f3", 9, None, None, "a")], SPEC.schema)
    more = staged(lake, rows("f2", range(2, 4))).adding(
        lake.stage_rows(SPEC, [{"file": "f4", "offset": 10, "part": "c"}])
    )
    lake.write(Write(SPEC, more.with_extra(extra), "`file` IN ('f2', 'f3', 'f4')", fresh=True))
    folder = tmp_path / "lake" / "gold" / "staged_probe"
    assert commit_engines(folder) == ["Apache-Spark", "Apache-Spark"]
    assert sorted((r.file, r.offset) for r in lake.read(SPEC).collect()) == [
        ("f1", 0), ("f1", 1), ("f2", 2), ("f2", 3), ("f3", 9), ("f4", 10)
    ]  # fmt: skip
    written = lake.written_frame(SPEC, {"part": ["a"]})
    assert written is not None
    assert sorted((r.file, r.offset) for r in written.collect()) == [("f2", 2), ("f2", 3), ("f3", 9)]


def test_files_written_for_small_work_on_a_local_lake_are_committed_by_delta_rs_into_the_table_spark_makes(
    spark: SparkSession, tmp_path: Path
) -> None:
    lakes = {small: lake_of(spark, tmp_path / str(small), small=small) for small in (False, True)}
    for lake in lakes.values():
        lake.write(Write(SPEC, staged(lake, rows("f1", range(3)), rows("f2", range(3, 4), part="b")), fresh=True))
    driver_lake = lakes[True]
    folders = {small: Path(lake.path(SPEC)) for small, lake in lakes.items()}
    assert commit_engines(folders[True]) == ["delta-rs", "delta-rs"] and driver_lake.commits == 2  # made, added
    assert commit_engines(folders[False]) == ["Apache-Spark"]
    read = {small: lake.read(SPEC) for small, lake in lakes.items()}
    assert read[True].schema == read[False].schema  # with the comments
    assert sorted(read[True].collect()) == sorted(read[False].collect())
    assert len(read[True].collect()) == 4
    tables = {small: DeltaRsTable(str(folder)) for small, folder in folders.items()}
    assert tables[True].protocol().reader_features == tables[False].protocol().reader_features == ["timestampNtz"]
    assert tables[True].metadata().partition_columns == ["part"]
    assert tables[True].metadata().configuration == tables[False].metadata().configuration == SPEC.properties
    added = {
        small: sorted((a["add"]["partitionValues"]["part"], json.loads(a["add"]["stats"])) for a in log_adds(folder))
        for small, folder in folders.items()
    }
    assert added[True] == added[False] and len(added[True]) == 2  # the task's statistics, as written
    written = driver_lake.written_frame(SPEC, {"part": ["b"]})
    assert written is not None and [(r.file, r.offset) for r in written.collect()] == [("f2", 3)]
    driver_lake.write(Write(SPEC, staged(driver_lake, rows("f3", range(5, 6))), fresh=True))
    assert commit_engines(folders[True]) == ["delta-rs"] * 3
    driver_lake.small_work = lambda: False  # Spark commits to the table delta-rs made
    driver_lake.write(Write(SPEC, staged(driver_lake, rows("f4", range(6, 7))), fresh=True))
    assert commit_engines(folders[True])[-1] == "Apache-Spark"
    assert sorted(r.file for r in driver_lake.read(SPEC).collect()) == ["f1", "f1", "f1", "f2", "f3", "f4"]


@pytest.mark.parametrize("how", ["replace", "transform", "new field"])
def test_rows_spark_must_write_are_read_back_from_the_files_which_are_then_removed(
    spark: SparkSession, tmp_path: Path, how: str
) -> None:
    lake = lake_of(spark, tmp_path)
    lake.write(Write(SPEC, staged(lake, rows("f1", range(3)), rows("f2", range(3, 4))), fresh=True))
    spec, again = SPEC, staged(lake, rows("f1", range(10, 12)))
    write = Write(spec, again, "`file` = 'f1'")  # rows of f1 are in the table: they are replaced
    if how == "transform":
        write = Write(spec, again.changed(lambda r: r.where("offset > 10")), "`file` = 'f1'")
    elif how == "new field":
        wider = StructType([*IMAGE.fields, StructField("note", StringType())])
        spec = TableSpec(SPEC.layer, SPEC.name, SPEC.row, (*SPEC.columns[:3], Col("after", wider, "the image"),
                         SPEC.columns[4]), SPEC.key, SPEC.partition_by, skipping=SPEC.skipping)  # fmt: skip
        writer = TableWriter(lake.target(spec))
        writer.write(conformed(rows("f5", range(20, 21)), arrow_schema(spec)))
        write = Write(spec, Staged(tuple(writer.close())), "`file` = 'f5'", merge_schema=True, fresh=True)
    lake.write(write)
    got = sorted((r.file, r.offset) for r in lake.read(spec).collect())
    assert (
        got
        == {
            "replace": [("f1", 10), ("f1", 11), ("f2", 3)],
            "transform": [("f1", 11), ("f2", 3)],
            "new field": [("f1", 0), ("f1", 1), ("f1", 2), ("f2", 3), ("f5", 20)],
        }[how]
    )
    folder = tmp_path / "lake" / "gold" / "staged_probe"
    for f in write.frame.files:  # type: ignore[union-attr]
        assert not (folder / f.path).exists()
    assert lake.written_frame(spec) is None  # its rows are not those files any more


def test_files_of_a_table_never_committed_are_discarded(spark: SparkSession, tmp_path: Path) -> None:
    lake = lake_of(spark, tmp_path)
    files = staged(lake, rows("f1", range(3)))
    lake.discard(SPEC, files)
    folder = tmp_path / "lake" / "gold" / "staged_probe"
    assert not lake.exists(SPEC) and not any(folder.rglob("*.parquet"))
