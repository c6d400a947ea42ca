"""The ``sample_lake`` fixture: the bundled sample binlogs run through the whole pipeline, once per test run.

``pipelines.run.run`` writes every layer below a temporary root with ``register_tables=True``
(the Spark side of the tests then finds the tables by name in the session's in-memory catalog),
and a config file naming that root is written beside it for command-line tests. One extra table,
``binlog_gold.typed_probe``, holds what the pipeline does not write yet: a ``timestamp_ntz``
column (Delta reader 3 / writer 7 with the ``timestampNtz`` feature), inside a struct too, a
partition column, and a struct field added by a later commit (``mergeSchema``).
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from deltalake import DeltaTable
from pyspark.sql import SparkSession

from conf import AppConfig, InputSettings, StorageSettings
from pipelines.run import run
from pipelines.storage import Lakehouse, Layer, Table
from pipelines.tables import CATALOGED

SAMPLE = Path(__file__).resolve().parents[1] / "fixtures" / "mariadb" / "sample"
PROBE = Table.gold("typed_probe")


@dataclass(frozen=True)
class SampleLake:
    """A lakehouse built from the sample binlogs: its config, root and a YAML config file for it."""

    cfg: AppConfig
    root: Path
    config_file: Path

    def register(self, spark: SparkSession) -> None:
        """Point every ``database.table`` of this lake's catalog names at it (others may have moved them)."""
        lake = Lakehouse(spark, self.cfg.storage)
        for layer in CATALOGED:
            for name in lake.tables(layer):
                lake.register([Table(layer, name)])


def _write_probe(spark: SparkSession, lake: Lakehouse) -> None:
    """``typed_probe`` in two commits; the second adds ``after.note`` and a row."""
    first = spark.sql(
        """
        SELECT * FROM VALUES
          (1, 'a', TIMESTAMP_NTZ '2024-03-01 10:29:00.046', named_struct('total', 12.50BD,
             'seen', TIMESTAMP_NTZ '2024-03-01 23:59:59.999999'), X'00FF', DATE '2024-03-01'),
          (2, 'b', NULL, named_struct('total', CAST(NULL AS DECIMAL(4, 2)), 'seen', CAST(NULL AS TIMESTAMP_NTZ)),
             NULL, DATE '2024-03-02')
        AS t(id, part, wall_clock, after, raw, day)
        """
    )
    first.write.format("delta").partitionBy("part").save(lake.path(PROBE))
    second = spark.sql(
        """
        SELECT 3 AS id, 'a' AS part, TIMESTAMP_NTZ '1999-12-31 23:59:59' AS wall_clock,
          named_struct('total', CAST(-0.01 AS DECIMAL(4, 2)), 'seen', TIMESTAMP_NTZ '2000-01-01 00:00:00',
            'note', 'tab\there')
            AS after, X'' AS raw, DATE '1999-12-31' AS day
        """
    )
    second.write.format("delta").mode("append").option("mergeSchema", "true").save(lake.path(PROBE))
    lake.register([PROBE])


def _by_name(value: Any) -> Any:
    """A row as sorted (key, value) pairs, nested structs too: field order does not matter."""
    if isinstance(value, dict):
        return sorted((key, _by_name(item)) for key, item in value.items())
    if isinstance(value, list):
        return [_by_name(item) for item in value]
    return value


def lake_rows(root: Path, binlogs: Path) -> dict[str, list[str]]:
    """Every row of every bronze, silver and gold table (run ids left out, struct fields compared by
    name, the lakehouse root and the input folder written as ``ROOT`` and ``IN``), read with
    delta-rs on the driver: a second reader of the Delta log Spark wrote, and no Spark job."""
    tables: dict[str, list[str]] = {}
    for layer in ("bronze", "silver", "gold"):
        for folder in sorted((root / layer).iterdir()):
            if (folder / "_delta_log").is_dir():
                data = DeltaTable(str(folder)).to_pyarrow_table()
                keep = [c for c in data.column_names if c != "run_id"]
                rows = data.select(keep).to_pylist()
                tables[f"{layer}.{folder.name}"] = sorted(
                    repr(_by_name(row)).replace(str(binlogs), "IN").replace(str(root), "ROOT") for row in rows
                )
    return tables


def table_versions(lake: Lakehouse, *layers: Layer) -> dict[str, int]:
    """The latest version of every table of ``layers`` in ``lake``, by ``layer.name``, read from
    the Delta logs by delta-rs (no Spark job)."""
    return {
        f"{layer.value}.{name}": DeltaTable(lake.path(Table(layer, name))).version()
        for layer in layers
        for name in lake.tables(layer)
    }


def commit_engines(table: Path) -> list[str]:
    """The engine of each commit of the Delta table at the local ``table`` folder, oldest first:
    ``delta-rs`` or ``Apache-Spark`` (the start of each commit's ``engineInfo``)."""
    found = []
    for commit in sorted((table / "_delta_log").glob("*.json")):
        with commit.open(encoding="utf-8") as lines:
            info = next(json.loads(line)["commitInfo"] for line in lines if '"commitInfo"' in line)
        found.append(info["engineInfo"].split(":")[0].split("/")[0])
    return found


@pytest.fixture(scope="session")
def sample_lake(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> Iterator[SampleLake]:
    """The sample binlogs' lakehouse (built once per test run), registered in the session's catalog."""
    root = tmp_path_factory.mktemp("sample_lake")
    cfg = AppConfig(
        input=InputSettings(path=str(SAMPLE)),
        storage=StorageSettings(root=str(root / "lake"), register_tables=True),
    )
    report = run(spark, cfg, err=io.StringIO(), progress_every=None)
    assert report.exit_code == 0, report
    _write_probe(spark, Lakehouse(spark, cfg.storage))
    config_file = root / "lake.yaml"
    config_file.write_text(
        yaml.safe_dump({"input": {"path": str(SAMPLE)}, "storage": {"root": str(root / "lake")}}), encoding="utf-8"
    )
    yield SampleLake(cfg, root / "lake", config_file)
