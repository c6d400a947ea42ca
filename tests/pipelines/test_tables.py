"""Every table declared once (``pipelines/tables.py``): specs are whole, the README's lists are theirs,
and a written table carries its column comments."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from deltalake import DeltaTable
from pyspark.sql import SparkSession
from pyspark.sql.types import StructType

from conf import StorageSettings
from pipelines import exits
from pipelines.storage import Lakehouse, Write
from pipelines.tables import STATS_COLUMNS, STATS_PREFIX, TABLES, Layer, readme_table, typed_change_table
from tests.harness.sample_lake import SAMPLE, SampleLake

SPECS = {spec.name for spec in TABLES}

README = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")


def block(marker: str) -> str:
    found = re.search(rf"<!-- {marker} -->\n(.*?)\n<!-- /{marker} -->", README, flags=re.S)
    assert found is not None, marker
    return found.group(1)


def test_the_readme_lists_exactly_the_declared_tables_under_the_default_database_names() -> None:
    settings = StorageSettings(root="/lake")
    databases = {
        Layer.BRONZE: settings.bronze_database,
        Layer.SILVER: settings.silver_database,
        Layer.GOLD: settings.gold_database,
        Layer.CURRENT: settings.current_database,
        Layer.HISTORY: settings.history_database,
        Layer.QUALITY: settings.quality_database,
        Layer.STATE: Layer.STATE.value,
    }
    assert block("tables") == readme_table(databases)


def test_the_readme_exit_code_table_is_the_declared_one() -> None:
    assert block("exits") == exits.readme_table()
    assert [int(code) for code in exits.Exit] == [0, 1, 2, 3, 4, 5, 6, 130, 143]


def test_every_spec_has_unique_columns_a_key_and_a_layout_among_them_and_a_comment_per_column() -> None:
    for spec in TABLES:
        names = spec.names
        assert len(names) == len(set(names)), spec.name
        assert spec.key and set(spec.key) <= set(names), spec.name
        assert set(spec.partition_by) <= set(names), spec.name
        assert set(spec.skipping or ()) <= set(names) - set(spec.key), spec.name
        assert all(column.comment.strip() for column in spec.columns), spec.name
        assert spec.registered == (spec.layer != Layer.STATE), spec.name


def test_a_written_table_shows_its_column_comments_to_describe(spark: SparkSession, tmp_path: Path) -> None:
    lake = Lakehouse(spark, StorageSettings(root=str(tmp_path), register_tables=False))
    spec = next(spec for spec in TABLES if spec.name == "gate_results")
    lake.write(Write(spec, spark.createDataFrame([], spec.schema), mode="overwrite"))

    described = spark.sql(f"DESCRIBE delta.`{lake.path(spec)}`").collect()

    comments = {row.col_name: row.comment for row in described if row.col_name in spec.names}
    assert comments == {column.name: column.comment for column in spec.columns}
    stored = lake.read(spec).schema
    # Delta stores the columns of a DataFrame write as nullable: NOT NULL is the spec's, checked by conform
    assert [(f.name, f.dataType) for f in stored.fields] == [(c.name, c.type) for c in spec.columns]


def test_the_large_tables_keep_file_statistics_for_their_key_and_the_columns_reads_filter_on_only(
    sample_lake: SampleLake,
) -> None:
    """Delta computes min/max/null counts row by row as it writes: binlog_events, table_maps and the
    change tables name the columns that pay for it; the other tables keep Delta's default."""
    root = sample_lake.root
    typed = [f.name for f in (root / "gold").iterdir() if "__" in f.name]
    assert typed
    for layer, name in [("bronze", "binlog_events"), ("silver", "table_maps"), ("gold", "changes")] + [
        ("gold", t) for t in typed
    ]:
        spec = next(s for s in TABLES if s.name == name) if name in SPECS else typed_change_table(name, StructType())
        wanted = [c for c in spec.names if c in {*spec.key, *(spec.skipping or ())}]
        assert DeltaTable(str(root / layer / name)).metadata().configuration[STATS_COLUMNS] == ",".join(wanted)
        for stats in _file_statistics(root / layer / name):
            assert set(stats["nullCount"]) == set(wanted), name
            assert set(stats["minValues"]) <= set(wanted), name
    assert STATS_COLUMNS not in DeltaTable(str(root / "bronze" / "binlog_files")).metadata().configuration


def test_file_statistics_keep_whole_binlog_paths_so_a_read_of_some_files_skips_the_data_files_of_others(
    sample_lake: SampleLake,
) -> None:
    paths = sorted(str(p) for p in SAMPLE.iterdir())
    assert len(paths) > 1 and min(len(p) for p in paths) > 32  # longer than Delta's default prefix
    for layer, name in [("bronze", "binlog_events"), ("bronze", "binlog_files"), ("silver", "table_maps")]:
        assert DeltaTable(str(sample_lake.root / layer / name)).metadata().configuration[STATS_PREFIX] == "256"
        for stats in _file_statistics(sample_lake.root / layer / name):
            low, high = stats["minValues"]["file"], stats["maxValues"]["file"]
            assert low.endswith(tuple(paths)) and high.endswith(tuple(paths)), (name, low, high)


def _file_statistics(table: Path) -> list[dict[str, Any]]:
    """The statistics of every data file the table's log adds."""
    return [
        json.loads(action["add"]["stats"])
        for commit in sorted((table / "_delta_log").glob("*.json"))
        for action in map(json.loads, commit.read_text(encoding="utf-8").splitlines())
        if "add" in action
    ]
