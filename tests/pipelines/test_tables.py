"""Every table declared once (``pipelines/tables.py``): specs are whole, the README's lists are theirs,
and a written table carries its column comments."""

from __future__ import annotations

import re
from pathlib import Path

from pyspark.sql import SparkSession

from conf import StorageSettings
from pipelines import exits
from pipelines.storage import Lakehouse, Write
from pipelines.tables import TABLES, Layer, readme_table

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
