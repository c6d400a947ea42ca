"""The silver stage over bronze's framing of real fixture binlogs."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import pytest
from chispa.schema_comparer import assert_schema_equality
from pyspark.sql import SparkSession

from binlog_core.decoder import decode_file
from conf import AppConfig, InputSettings, StorageSettings
from pipelines.bronze.stage import build_bronze, write_bronze
from pipelines.silver.schema import DDL_EVENTS, SCHEMA_HISTORY, TABLE_ID_LIFECYCLE, TABLE_MAPS
from pipelines.silver.stage import build_silver, write_silver
from pipelines.storage import Lakehouse, Table
from tests.fixtures.truth import FIXTURES

NOLOG = FIXTURES / "metadata_nolog"


def build_lake(spark: SparkSession, binlogs: Path, root: Path) -> tuple[AppConfig, Lakehouse]:
    cfg = AppConfig(
        input=InputSettings(path=str(binlogs)),
        storage=StorageSettings(root=str(root), register_tables=False),
    )
    lake = Lakehouse(spark, cfg.storage)
    bronze = build_bronze(spark, cfg, lake)
    write_bronze(lake, bronze)
    bronze.unpersist()
    return cfg, lake


def truth_columns(variant: Path) -> dict[tuple[str, str], set[tuple[str, ...]]]:
    """(file name, schema.table) -> the column lists the workload recorded for its changes."""
    seen: dict[tuple[str, str], set[tuple[str, ...]]] = defaultdict(set)
    for line in (variant / "expected.jsonl").read_text().splitlines():
        change = json.loads(line)
        seen[(change["file"], f"{change['schema']}.{change['table']}")].add(tuple(change["columns"]))
    return seen


@pytest.fixture(scope="module")
def nolog(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> tuple[AppConfig, Lakehouse]:
    cfg, lake = build_lake(spark, NOLOG, tmp_path_factory.mktemp("silver_nolog"))
    out = build_silver(spark, cfg, lake)
    assert_schema_equality(out.table_maps.schema, TABLE_MAPS, ignore_nullable=True)
    assert_schema_equality(out.table_id_lifecycle.schema, TABLE_ID_LIFECYCLE, ignore_nullable=True)
    assert_schema_equality(out.ddl_events.schema, DDL_EVENTS, ignore_nullable=True)
    assert_schema_equality(out.schema_history.schema, SCHEMA_HISTORY, ignore_nullable=True)
    write_silver(lake, out)
    return cfg, lake


def test_maps_without_names_get_the_names_ddl_replay_gives_at_their_position(
    nolog: tuple[AppConfig, Lakehouse],
) -> None:
    _, lake = nolog
    maps = lake.read(Table.silver("table_maps")).collect()
    assert maps and all(m.column_names is None for m in maps)
    resolved: dict[tuple[str, str], set[tuple[str, ...]]] = defaultdict(set)
    for m in maps:
        if m.rows_events:
            assert m.names_source == "ddl", (m.file_name, m.schema_name, m.table_name)
            resolved[(m.file_name, f"{m.schema_name}.{m.table_name}")].add(tuple(m.resolved_column_names))
    assert resolved == truth_columns(NOLOG)


def test_in_force_ranges_and_rows_events_agree_with_the_file_decoder(nolog: tuple[AppConfig, Lakehouse]) -> None:
    _, lake = nolog
    counted: dict[tuple[str, int], int] = defaultdict(int)
    for path in sorted(NOLOG.glob("mysql-bin.0*")):
        for item in decode_file(path):
            if item.rows:
                # every rows event is read with the map the decoder had in force
                counted[(path.name, item.rows[0].table_id)] += 1
    lifecycle = lake.read(Table.silver("table_id_lifecycle")).collect()
    assert {(r.file_name, r.table_id): r.rows_events for r in lifecycle if r.rows_events} == dict(counted)
    maps = lake.read(Table.silver("table_maps")).collect()
    assert all(m.in_force_until is None or m.in_force_until >= m.in_force_from for m in maps)
    assert {m.ended_by for m in maps} <= {"statement_end", "replaced", "format_description", None}


def test_ddl_events_list_every_query_with_the_objects_its_ddl_touches(nolog: tuple[AppConfig, Lakehouse]) -> None:
    _, lake = nolog
    ddl = lake.read(Table.silver("ddl_events")).where("kind = 'DDL'").collect()
    by_statement = {r.statement: r for r in ddl}
    rename = by_statement["RENAME TABLE fixture.t_evolve TO fixture.t_evolved"]
    assert [tuple(o) for o in rename.objects] == [
        ("fixture", "t_evolve", "rename_from"),
        ("fixture", "t_evolved", "rename_to"),
    ]
    assert all(r.ddl_parsed for r in ddl), [(r.statement, r.ddl_error) for r in ddl if not r.ddl_parsed]
    kinds = {r.kind for r in lake.read(Table.silver("ddl_events")).collect()}
    assert {"COMMIT", "DDL", "OTHER"} <= kinds  # MariaDB starts transactions in its GTID event, not a BEGIN


def test_schema_history_versions_follow_alter_rename_drop_and_recreate(nolog: tuple[AppConfig, Lakehouse]) -> None:
    _, lake = nolog
    history = lake.read(Table.silver("schema_history")).where("table_name like 't_evolve%'").collect()
    versions = sorted(
        (r.table_name, r.version, None if r.columns is None else [c.name for c in r.columns]) for r in history
    )
    evolve = [v for v in versions if v[0] == "t_evolve"]
    assert evolve[0][2] == ["id", "a", "b"]
    assert evolve[-1][2] is None  # renamed away
    evolved = [v for v in versions if v[0] == "t_evolved"]
    assert evolved[-1][2] == ["k", "val", "n", "at"]
    assert any(v[2] is None for v in evolved)  # dropped before its re-creation


def test_a_second_silver_run_has_nothing_to_do(spark: SparkSession, nolog: tuple[AppConfig, Lakehouse]) -> None:
    cfg, lake = nolog
    before = lake.read(Table.silver("table_maps")).count()
    again = build_silver(spark, cfg, lake)
    assert again.files == []
    write_silver(lake, again)
    assert lake.read(Table.silver("table_maps")).count() == before
