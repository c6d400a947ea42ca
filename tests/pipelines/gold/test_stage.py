"""The gold stage over real MariaDB binlogs, against the recorded truth and the file decoder.

Inputs: bronze ``binlog_events``/``binlog_files`` and silver ``table_maps`` of three fixture
files -- every column type at its limits (``full`` file 1), DDL mid-stream (``full`` file 3)
and MINIMAL row images (``minimal_image`` file 3) -- built with ``binlog_core`` in the shapes
those layers store.  Gold is built and written once for the module.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

import pytest
from pyspark.sql import Row, SparkSession
from pyspark.sql import functions as F

from binlog_core.decoder import decode_file
from binlog_core.render import render_change
from conf import StorageSettings
from conf.models import AppConfig
from pipelines.gold.stage import GoldOutput, build_gold, write_gold
from pipelines.progress import BINLOG_FILES_TABLE, record_progress
from pipelines.storage import Lakehouse, Layer, Table
from tests.fixtures.recorder import Change
from tests.fixtures.truth import Variant, change_table_mismatches, load_variant
from tests.harness.typed import typed_mismatches
from tests.pipelines.gold.inputs import write_inputs

FULL = load_variant("full")
MINIMAL = load_variant("minimal_image")
CHOSEN: list[tuple[Variant, list[str]]] = [
    (FULL, ["mysql-bin.000001", "mysql-bin.000003"]),
    (MINIMAL, ["mysql-bin.000003"]),
]
PATHS = [variant.directory / name for variant, names in CHOSEN for name in names]
ORDER = ["file", "offset", "inner_index", "row_index"]


@dataclass
class Built:
    lake: Lakehouse
    cfg: AppConfig
    out: GoldOutput
    changes: list[Row]


@pytest.fixture(scope="module")
def built(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Built]:
    root = tmp_path_factory.mktemp("gold_lake")
    lake = Lakehouse(spark, StorageSettings(root=str(root), register_tables=False))
    write_inputs(spark, lake, PATHS)
    cfg = AppConfig.model_validate({"input": {"path": str(FULL.directory)}, "storage": {"root": str(root)}})
    out = build_gold(spark, cfg, lake)
    write_gold(lake, out)
    changes = lake.read(Table.gold("changes")).orderBy(*ORDER).collect()
    yield Built(lake, cfg, out, changes)
    out.unpersist()


def _truth(variant: Variant, names: list[str]) -> list[Change]:
    return [c for c in variant.changes if c.file in names]


def _rows_of(built: Built, variant: Variant, names: list[str]) -> list[Row]:
    paths = {str(variant.directory / n) for n in names}
    return [r for r in built.changes if r.file in paths]


def test_gold_builds_every_pending_file_and_one_table_per_source_table(built: Built) -> None:
    assert built.out.files == sorted(str(p) for p in PATHS)
    assert sorted(built.out.tables) == [
        "fixture__t_binary",
        "fixture__t_bityear",
        "fixture__t_decimal",
        "fixture__t_enumset",
        "fixture__t_evolve",
        "fixture__t_evolved",
        "fixture__t_inet_uuid",
        "fixture__t_int",
        "fixture__t_json_geo",
        "fixture__t_string",
        "fixture__t_temporal",
    ]
    assert built.lake.read(Table.bronze("quarantine")).where("stage = 'gold'").count() == 0


def test_changes_agree_with_the_file_decoder_row_for_row(built: Built) -> None:
    want = [render_change(c) for path in PATHS for item in decode_file(path) for c in item.rows]
    got = [
        {
            "file": r.file_name,
            "offset": r.offset,
            "inner_index": r.inner_index,
            "row_index": r.row_index,
            "event_type": r.event_type,
            "gtid": r.gtid,
            "timestamp": int(r.event_timestamp.timestamp()),
            "server_id": r.server_id,
            "schema": r.schema_name,
            "table": r.table_name,
            "table_id": r.table_id,
            "op": r.op,
            "before": None if r.before is None else json.loads(r.before),
            "after": None if r.after is None else json.loads(r.after),
        }
        for r in built.changes
    ]
    assert len(got) == len(want) == 20 + 61 + 20
    assert got == want


@pytest.mark.parametrize(("variant", "names"), CHOSEN, ids=["full", "minimal_image"])
def test_changes_equal_the_recorded_truth_in_order_with_names_and_values(
    built: Built, variant: Variant, names: list[str]
) -> None:
    assert change_table_mismatches(variant, _rows_of(built, variant, names), _truth(variant, names)) == []


def test_every_typed_value_is_the_recorded_value(built: Built) -> None:
    names = ["mysql-bin.000001", "mysql-bin.000003"]
    truth = _truth(FULL, names)
    failures, checked = typed_mismatches(built.out.tables, _rows_of(built, FULL, names), truth)
    assert failures == []
    assert checked == sum(len(v) for t in truth for v in (t.before, t.after) if v is not None)


def test_typed_tables_keep_zero_dates_recoverable_and_unsigned_values_exact(built: Built) -> None:
    temporal = built.out.tables["fixture__t_temporal"].where("after.id = 1").select("after.*").first()
    assert temporal is not None
    assert (temporal.dt, temporal.dt__raw) == (None, "0000-00-00")
    assert (temporal.dtm6, temporal.dtm6__raw) == (None, "0000-00-00 00:00:00.000000")
    assert temporal.t6 == "00:00:00.000000"
    partial = built.out.tables["fixture__t_temporal"].where("after.id = 4").select("after.*").first()
    assert partial is not None
    assert (partial.dt, partial.dt__raw, partial.dtm0__raw) == (None, "2020-00-15", "2020-00-00 12:34:56")
    assert partial.t1 == "-00:00:01.5"
    ints = built.out.tables["fixture__t_int"].where("after.id = 2").select("after.*").first()
    assert ints is not None
    assert (ints.ti_u, ints.i_u, ints.bi_u) == (255, 4294967295, Decimal("18446744073709551615"))
    bits = built.out.tables["fixture__t_bityear"].where("after.id = 2").select("after.*").first()
    assert bits is not None
    assert (bits.b64, bits.y) == (-1, 2155)


def test_a_column_whose_type_changes_fills_a_new_field_and_history_stays(built: Built) -> None:
    evolve = built.lake.read(Table.gold("fixture__t_evolve"))
    after = evolve.schema["after"].dataType
    assert after.simpleString() == (
        "struct<id:int,a:int,b:string,b__raw:binary,c:date,c__raw:string,z:tinyint,m:string,m__raw:binary,"
        "a__bigint:bigint,m2:string,m2__raw:binary,m3:string,m3__raw:binary>"
    )
    full = evolve.where(F.col("file").contains("/full/")).orderBy(*ORDER)
    values = [(r.a, r.a__bigint) for r in full.select("after.a", "after.a__bigint").collect()]
    assert values[:4] == [(10, None), (20, None), (30, None), (40, None)]
    assert any(a is None and big is not None for a, big in values)


def test_minimal_images_name_their_absent_columns(built: Built) -> None:
    evolve = built.lake.read(Table.gold("fixture__t_evolve")).where(F.col("file").contains("/minimal_image/"))
    updates = evolve.where("op = 'update'").orderBy(*ORDER).select("absent_columns", "before.id", "before.b").first()
    assert updates is not None
    assert updates.id is not None and updates.b is None
    assert "b" in updates.absent_columns.before


def test_a_second_build_writes_nothing_new(built: Built, spark: SparkSession) -> None:
    versions = {t: _version(spark, built.lake, t) for t in ("changes", "fixture__t_int")}
    again = build_gold(spark, built.cfg, built.lake)
    write_gold(built.lake, again)
    again.unpersist()
    assert again.files == []
    assert {t: _version(spark, built.lake, t) for t in versions} == versions


def test_a_file_pending_again_is_rebuilt_once_silver_has_it_to_the_same_rows_and_leaves_no_stale_rows(
    built: Built, spark: SparkSession
) -> None:
    files = built.lake.read(BINLOG_FILES_TABLE)
    target = str(PATHS[-1])
    changed = files.withColumn(
        "prefix_sha256", F.when(F.col("file") == target, F.lit("rewritten")).otherwise(F.col("prefix_sha256"))
    )
    built.lake.overwrite(changed.localCheckpoint(), BINLOG_FILES_TABLE)
    # a table the file's previous content changed, which its new content no longer does
    gone = built.lake.read(Table.gold("fixture__t_evolved")).where(F.col("file") == target)
    built.lake.overwrite(
        gone.withColumn("table_name", F.lit("t_gone")).localCheckpoint(), Table.gold("fixture__t_gone")
    )
    previous = built.lake.read(Table.gold("changes")).where(F.col("file") == target).limit(1)
    built.lake.append(previous.withColumn("table_name", F.lit("t_gone")).localCheckpoint(), Table.gold("changes"))
    assert build_gold(spark, built.cfg, built.lake).files == []  # silver has not rebuilt it yet: gold waits
    record_progress(built.lake, Layer.SILVER, [target])
    again = build_gold(spark, built.cfg, built.lake)
    assert again.files == [target]
    assert sorted(again.tables) == ["fixture__t_evolve", "fixture__t_evolved"]
    assert again.stale_tables == ["fixture__t_gone"]
    write_gold(built.lake, again)
    again.unpersist()
    assert built.lake.read(Table.gold("fixture__t_gone")).count() == 0
    assert built.lake.read(Table.gold("changes")).orderBy(*ORDER).collect() == built.changes
    evolve_rows = [t for v, n in CHOSEN for t in _truth(v, n) if t.shape.table == "t_evolve"]
    assert built.lake.read(Table.gold("fixture__t_evolve")).count() == len(evolve_rows)
    assert built.lake.read(Table(Layer.GOLD, "_progress")).count() == len(PATHS)


def _version(spark: SparkSession, lake: Lakehouse, name: str) -> int:
    path = Path(lake.path(Table.gold(name)))
    return len(list((path / "_delta_log").glob("*.json")))
