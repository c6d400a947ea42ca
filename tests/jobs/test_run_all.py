"""`jobs/run_all.py` over the sample fixture: exit code, summary, gate results, and a second run adds nothing."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from conf import AppConfig, InputSettings, StorageSettings
from jobs import run_all
from pipelines.storage import Lakehouse, Table

SAMPLE = Path(__file__).resolve().parents[1] / "fixtures" / "mariadb" / "sample"


def _cached_by_pipeline(spark: SparkSession) -> int:
    """Persisted RDDs other than Delta's own snapshot-state caches (which Delta manages itself)."""
    rdds = spark.sparkContext._jsc.getPersistentRDDs()
    names = [str(rdds.get(key).name()) for key in rdds.keySet().toArray()]
    return sum(1 for name in names if not name.startswith("Delta Table State"))


def test_run_all_builds_every_layer_once_and_a_second_run_adds_nothing(
    spark: SparkSession, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = AppConfig(
        input=InputSettings(path=str(SAMPLE)),
        storage=StorageSettings(root=str(tmp_path), register_tables=False),
    )
    lake = Lakehouse(spark, cfg.storage)
    binlogs = len(list(SAMPLE.glob("mysql-bin.0*")))

    persisted_before = _cached_by_pipeline(spark)
    first = run_all.main([], config=cfg, spark=spark)
    summary = capsys.readouterr().out
    persisted_after = _cached_by_pipeline(spark)
    events = lake.read(Table.bronze("binlog_events")).count()
    changes = lake.read(Table.gold("changes")).count()
    gates = lake.read(Table.quality("gate_results"))

    assert first in (0, 4)
    assert f"files: {binlogs} (complete {binlogs})" in summary
    assert f"events: {events}" in summary
    assert f"row changes: {changes} in " in summary
    assert "gate bronze/offset_contiguity: ok" in summary
    assert "gate gold/rows_reconcile: ok" in summary
    assert gates.where("NOT success AND action = 'fail'").count() == 0
    assert {r.gate for r in gates.select("gate").distinct().collect()} >= {"bronze", "gold"}
    assert events > 0 and changes > 0
    assert persisted_after == persisted_before  # every stage released what it cached

    second = run_all.main([], config=cfg, spark=spark)
    again = capsys.readouterr().out

    assert second in (0, 4)
    assert "built now: bronze 0, gold 0, silver 0" in again
    assert lake.read(Table.bronze("binlog_events")).count() == events
    assert lake.read(Table.gold("changes")).count() == changes


def test_a_bad_config_path_exits_with_code_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_all.main(["--config", "/nonexistent/conf.yaml"]) == 2
    assert "binlog-lakehouse:" in capsys.readouterr().err
