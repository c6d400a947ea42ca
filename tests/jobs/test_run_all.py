"""`jobs/run_all.py` over the sample fixture: exit code, progress lines, summary, gate results, and a second
run adds nothing."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from conf import AppConfig, InputSettings, StorageSettings
from jobs import cli, run_all
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
    first = run_all.main(["--progress-every", "0.05"], config=cfg, spark=spark)
    output = capsys.readouterr()
    summary, progress = output.out, output.err
    persisted_after = _cached_by_pipeline(spark)
    events = lake.read(Table.bronze("binlog_events")).count()
    changes = lake.read(Table.gold("changes")).count()
    gates = lake.read(Table.quality("gate_results"))
    ddl = lake.read(Table.silver("ddl_events")).where("kind = 'DDL'")
    statements, parsed = ddl.count(), ddl.where("ddl_parsed").count()
    this_run, lakehouse = summary.split("\n  lakehouse (all runs):\n")

    assert first == 0
    assert "(exit code 0: done)" in summary
    assert "\n  this run:\n    built now: bronze 5, gold 5, silver 5; time: bronze " in this_run
    assert f"    events framed: {events}\n    row changes decoded: {changes}\n    quarantined: 0\n" in this_run
    assert f"    DDL: {statements} statement(s), {parsed} parsed (" in this_run
    assert "    gate bronze/offset_contiguity: ok" in this_run
    assert "    gate gold/rows_reconcile: ok" in this_run
    assert f"    files: {binlogs} (complete {binlogs})\n    events: {events}\n" in lakehouse
    assert f"    row changes: {changes} in " in lakehouse
    assert "    bad input (error-severity quarantine rows of its files): 0" in lakehouse
    assert f"    DDL: {statements} statement(s), {parsed} parsed (" in lakehouse
    assert statements > 0 and events > 0 and changes > 0
    assert gates.where("NOT success").count() == 0
    assert {r.gate for r in gates.select("gate").distinct().collect()} == {"bronze", "silver", "gold"}
    assert persisted_after == persisted_before  # every stage released what it cached

    lines = progress.splitlines()
    for milestone in (
        "bronze: started",
        f"bronze: {binlogs} file(s) to frame ({binlogs} new), ",
        f"bronze: framed {binlogs} file(s) in ",
        "bronze: gate: 5 check(s), all pass",
        "bronze: wrote bronze.binlog_events",
        "bronze: wrote bronze.binlog_files",
        f"silver: {binlogs} file(s) pending",
        "silver: gate: 3 check(s), all pass",
        "silver: wrote silver.table_maps",
        f"gold: {binlogs} file(s) pending",
        "gold: wrote gold.changes",
        "gold: wrote gold.shop__orders",
        f"gold: {binlogs} file(s) built in ",
    ):
        assert any(line.startswith(f"[binlog-lakehouse] {milestone}") for line in lines), milestone
    spark_lines = [line for line in lines if re.match(r"\[binlog-lakehouse\] (bronze|silver|gold): Spark jobs? ", line)]
    assert spark_lines  # looked at every 50 ms, a run of this size is seen running Spark jobs and their stages
    assert any(re.search(r": stage \d+ \(.+ at .+\) \d+/\d+ tasks", line) for line in spark_lines), spark_lines

    second = run_all.main(["--progress-every", "0"], config=cfg, spark=spark)
    output = capsys.readouterr()
    again = output.out

    assert second == 0
    assert "built now: bronze 0, gold 0, silver 0" in again
    assert "events framed: 0\n    row changes decoded: 0\n" in again
    assert f"    files: {binlogs} (complete {binlogs})\n    events: {events}\n" in again
    assert "bronze: no new, grown or changed file" in output.err
    assert not re.search(r"Spark jobs? ", output.err)
    assert lake.read(Table.bronze("binlog_events")).count() == events
    assert lake.read(Table.gold("changes")).count() == changes


def test_a_bad_config_path_exits_with_code_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_all.main(["--config", "/nonexistent/conf.yaml"]) == 2
    assert "binlog-lakehouse:" in capsys.readouterr().err


def test_sql_prints_a_query_of_the_tables_and_exits_1_when_it_fails(
    spark: SparkSession, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = AppConfig(input=InputSettings(path=str(SAMPLE)), storage=StorageSettings(root=str(tmp_path)))
    lake = Lakehouse(spark, cfg.storage)
    spark.createDataFrame([(1, "a"), (2, None)], "id int, note string").write.format("delta").save(
        lake.path(Table.gold("t"))
    )
    query = f"SELECT id, note FROM delta.`{lake.path(Table.gold('t'))}` ORDER BY id"
    for engine in ("spark", "embedded"):
        assert cli.main(["sql", query, "--engine", engine, "--format", "tsv"], config=cfg, spark=spark) == 0
        assert capsys.readouterr().out == "id\tnote\n1\ta\n2\t\\N\n"
    assert cli.main(["sql", "--engine", "spark", "SELECT * FROM no_such_table"], config=cfg, spark=spark) == 1
    assert "TABLE_OR_VIEW_NOT_FOUND" in capsys.readouterr().err
    assert cli.main(["sql"], config=cfg, spark=spark) == 2
    assert cli.main(["run", "SELECT 1"], config=cfg, spark=spark) == 2
