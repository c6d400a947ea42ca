"""The silver stage over bronze's framing of real fixture binlogs."""

from __future__ import annotations

import json
import shutil
from collections import defaultdict
from pathlib import Path

import pytest
from chispa.schema_comparer import assert_schema_equality
from pipelines.silver.schema import DDL_EVENTS, SCHEMA_HISTORY, TABLE_ID_LIFECYCLE, TABLE_MAPS
from pyspark.sql import SparkSession

from binlog_core.decoder import BinlogDecoder, decode_file
from binlog_core.events.query import QueryEvent
from binlog_core.framing import iter_events
from binlog_core.rows import ROWS_KINDS, decode_rows_header
from conf import AppConfig, InputSettings, StorageSettings
from conf.models import SilverSettings
from pipelines.bronze.stage import build_bronze, write_bronze
from pipelines.silver.stage import build_silver, write_silver
from pipelines.storage import Lakehouse, Table
from tests.fixtures.truth import FIXTURES

VARIANTS = ["metadata_nolog", "metadata_minimal"]
"""Files written without column names: every name comes from DDL replay."""


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


@pytest.fixture(scope="module", params=VARIANTS)
def built(
    request: pytest.FixtureRequest, spark: SparkSession, tmp_path_factory: pytest.TempPathFactory
) -> tuple[AppConfig, Lakehouse, Path]:
    variant = FIXTURES / request.param
    cfg, lake = build_lake(spark, variant, tmp_path_factory.mktemp(f"silver_{request.param}"))
    out = build_silver(spark, cfg, lake)
    assert_schema_equality(out.table_maps.schema, TABLE_MAPS, ignore_nullable=True)
    assert_schema_equality(out.table_id_lifecycle.schema, TABLE_ID_LIFECYCLE, ignore_nullable=True)
    assert_schema_equality(out.ddl_events.schema, DDL_EVENTS, ignore_nullable=True)
    assert_schema_equality(out.schema_history.schema, SCHEMA_HISTORY, ignore_nullable=True)
    write_silver(lake, out)
    out.unpersist()
    return cfg, lake, variant


def test_maps_without_names_get_the_names_ddl_replay_gives_at_their_position(
    built: tuple[AppConfig, Lakehouse, Path],
) -> None:
    _, lake, variant = built
    maps = lake.read(Table.silver("table_maps")).collect()
    assert maps and all(m.column_names is None for m in maps)
    resolved: dict[tuple[str, str], set[tuple[str, ...]]] = defaultdict(set)
    for m in maps:
        if m.rows_events:
            assert m.names_source == "ddl", (m.file_name, m.schema_name, m.table_name)
            resolved[(m.file_name, f"{m.schema_name}.{m.table_name}")].add(tuple(m.resolved_column_names))
    assert resolved == truth_columns(variant)


def decoder_maps_per_rows_event(path: Path) -> dict[tuple[int, int | None], int]:
    """(map offset, map inner index) -> rows events the file decoder read with that map."""
    decoder = BinlogDecoder()
    used: dict[tuple[int, int | None], int] = defaultdict(int)
    with path.open("rb") as stream:
        for event in iter_events(stream, path.name):
            if event.type_code in ROWS_KINDS and event.checksum_ok is not False:
                table_id = decode_rows_header(event.body, event.type_code, event.fde).table_id
                mapped = decoder.in_force.get(table_id)
                if mapped is not None:
                    used[(mapped.offset, mapped.inner_index)] += 1
            decoder.decode(event)
    return dict(used)


def test_each_map_counts_the_rows_events_the_file_decoder_reads_with_it(
    built: tuple[AppConfig, Lakehouse, Path],
) -> None:
    _, lake, variant = built
    maps = lake.read(Table.silver("table_maps")).collect()
    for path in sorted(variant.glob("mysql-bin.0*")):
        silver = {(m.offset, m.inner_index): m.rows_events for m in maps if m.file_name == path.name and m.rows_events}
        assert silver == decoder_maps_per_rows_event(path), path.name
    assert all(m.in_force_until is None or m.in_force_until >= m.in_force_from for m in maps)
    assert {m.ended_by for m in maps} == {"statement_end"}  # every statement of the workload ends
    lifecycle = lake.read(Table.silver("table_id_lifecycle")).collect()
    assert sum(r.rows_events for r in lifecycle) == sum(m.rows_events for m in maps) > 0
    assert all(r.rows is None for r in lifecycle)


def test_ddl_events_list_every_query_with_the_objects_its_ddl_touches(built: tuple[AppConfig, Lakehouse, Path]) -> None:
    _, lake, _ = built
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


def test_schema_history_versions_follow_alter_rename_drop_and_recreate(
    built: tuple[AppConfig, Lakehouse, Path],
) -> None:
    _, lake, _ = built
    history = lake.read(Table.silver("schema_history")).where("table_name like 't_evolve%'").collect()
    got = [
        (r.table_name, r.version, r.source, None if r.columns is None else [(c.name, c.type) for c in r.columns])
        for r in sorted(history, key=lambda r: (r.valid_from_offset, r.table_name, r.version))
    ]
    z, i = ("z", "tinyint"), ("id", "int")
    assert got == [
        ("t_evolve", 1, "ddl", [i, ("a", "int"), ("b", "varchar(10)")]),
        ("t_evolve", 2, "ddl", [i, ("a", "int"), ("b", "varchar(10)"), ("c", "date")]),
        ("t_evolve", 3, "ddl", [z, i, ("a", "int"), ("b", "varchar(10)"), ("c", "date")]),
        ("t_evolve", 4, "ddl", [z, i, ("a", "int"), ("m", "varchar(5)"), ("b", "varchar(10)"), ("c", "date")]),
        ("t_evolve", 5, "ddl", [z, i, ("a", "int"), ("m", "varchar(5)"), ("b", "varchar(10)")]),
        ("t_evolve", 6, "ddl", [z, i, ("a", "bigint"), ("m", "varchar(5)"), ("b", "varchar(10)")]),
        ("t_evolve", 7, "ddl", [z, i, ("a", "bigint"), ("m", "varchar(5)"), ("b", "varchar(50)")]),
        ("t_evolve", 8, "ddl", [z, i, ("a", "bigint"), ("m2", "varchar(8)"), ("b", "varchar(50)")]),
        ("t_evolve", 9, "ddl", [z, i, ("a", "bigint"), ("m3", "varchar(8)"), ("b", "varchar(50)")]),
        ("t_evolve", 10, "ddl", None),  # renamed away
        ("t_evolved", 1, "ddl", [z, i, ("a", "bigint"), ("m3", "varchar(8)"), ("b", "varchar(50)")]),
        ("t_evolved", 2, "ddl", None),  # dropped
        ("t_evolved", 3, "ddl", [("k", "varchar(20)"), ("val", "json"), ("n", "decimal(8,2)"), ("at", "datetime(3)")]),
    ]
    assert {r.valid_from_file.rsplit("/", 1)[-1] for r in history} == {"mysql-bin.000003"}
    assert all(r.statement for r in history)


def test_a_second_silver_run_has_nothing_to_do(spark: SparkSession, built: tuple[AppConfig, Lakehouse, Path]) -> None:
    cfg, lake, _ = built
    before = lake.read(Table.silver("table_maps")).count()
    again = build_silver(spark, cfg, lake)
    assert again.files == []
    write_silver(lake, again)
    again.unpersist()
    assert lake.read(Table.silver("table_maps")).count() == before


def test_a_seed_snapshot_names_tables_created_before_the_first_file(spark: SparkSession, tmp_path: Path) -> None:
    variant = FIXTURES / "metadata_nolog"
    binlogs = tmp_path / "binlogs"
    binlogs.mkdir()
    shutil.copy(variant / "mysql-bin.000004", binlogs)  # its tables were created in file 1, not given here
    creates = [
        item.body.statement
        for item in decode_file(variant / "mysql-bin.000001")
        if isinstance(item.body, QueryEvent) and str(item.body.statement).startswith("CREATE TABLE")
    ]
    seed = tmp_path / "seed.sql"
    seed.write_text("USE fixture;\n" + ";\n".join(str(s).replace("fixture.", "") for s in creates) + ";\n")
    cfg = AppConfig(
        input=InputSettings(path=str(binlogs)),
        storage=StorageSettings(root=str(tmp_path / "lake"), register_tables=False),
        silver=SilverSettings(seed_path=seed.as_uri()),  # read through Spark, as an s3a:// seed would be
    )
    lake = Lakehouse(spark, cfg.storage)
    bronze = build_bronze(spark, cfg, lake)
    write_bronze(lake, bronze)
    bronze.unpersist()
    out = build_silver(spark, cfg, lake)
    maps = out.table_maps.where("rows_events > 0").collect()
    sources = {(m.schema_name, m.table_name): m.names_source for m in maps}
    assert sources == {
        ("fixture", "t_binary"): "seed",
        ("fixture", "t_counter"): "seed",
        ("fixture", "t_int"): "seed",
        ("fixture", "t_myisam"): "seed",
        ("fixture", "t_nopk"): "seed",
        ("fixture", "t_replace"): "seed",
        ("fixture", "t_string"): "seed",
        ("fixture_extra", "t_int"): "ddl",
    }
    expected = {k: v for k, v in truth_columns(variant).items() if k[0] == "mysql-bin.000004"}
    resolved: dict[tuple[str, str], set[tuple[str, ...]]] = defaultdict(set)
    for m in maps:
        resolved[(m.file_name, f"{m.schema_name}.{m.table_name}")].add(tuple(m.resolved_column_names))
    assert resolved == expected
    seeded = out.schema_history.where("source = 'seed'").collect()
    assert {r.table_name for r in seeded} == {
        "t_int", "t_decimal", "t_bityear", "t_temporal", "t_string", "t_binary", "t_enumset",
        "t_json_geo", "t_inet_uuid", "t_nopk", "t_myisam", "t_replace", "t_counter", "t_bulk", "t_big",
    }  # fmt: skip
    assert {(r.version, r.valid_from_file, r.schema_name) for r in seeded} == {(1, None, "fixture")}
    out.unpersist()
