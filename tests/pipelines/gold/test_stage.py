"""The gold stage over the sample binlogs, run as the pipeline runs it, while the input changes.

One lakehouse, four runs over one folder:

1. sample files 1 and 3 (file 3 is NO_LOG: its ``carts`` and ``customers`` maps cannot be named
   without file 2's DDL), all stages;
2. file 2 arrives; bronze runs, then gold alone: silver has not built file 2 (nor rebuilt file 3),
   so gold waits;
3. silver and gold: silver builds file 2 and rebuilds file 3, gold decodes both;
4. file 3 is rewritten in place (it now holds the bytes of sample file 4, which changes no
   ``carts`` row): all stages; the rows file 3 held in ``shop__carts`` must go.

Table versions after run 3 are kept, so tests read the lakehouse as it was then (Delta time travel).
"""

from __future__ import annotations

import dataclasses
import io
import os
import shutil
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import DataFrame, Row, SparkSession

from binlog_core.decoder import decode_file
from conf import AppConfig, InputSettings, StorageSettings
from pipelines.exits import Exit
from pipelines.run import RunReport, run, summary
from pipelines.stage import Context
from pipelines.storage import Lakehouse, Table
from pipelines.tables import BINLOG_EVENTS, CHANGES, TABLE_ID_LIFECYCLE, Layer
from tests.fixtures.recorder import Change
from tests.fixtures.truth import change_table_mismatches, load_variant
from tests.harness.sample_lake import table_versions
from tests.harness.typed import typed_mismatches

SAMPLE = load_variant("sample")
ORDER = ["file", "offset", "inner_index", "row_index"]
TABLES = ["shop__carts", "shop__customers", "shop__order_items", "shop__orders", "shop__products"]


def name(number: int) -> str:
    return f"mysql-bin.{number:06d}"


@dataclass
class Lake:
    spark: SparkSession
    cfg: AppConfig
    lake: Lakehouse
    binlogs: Path
    reports: dict[str, RunReport]
    versions: dict[str, dict[str, int]]
    """Table -> Delta version, after each run."""
    progress: dict[str, dict[str, dict[str, Any]]]
    """Gold progress rows by file, after each run."""
    silver: dict[str, dict[str, dict[str, Any]]]
    """Silver progress rows by file, after each run."""

    def file(self, number: int) -> str:
        return f"file:{self.binlogs / name(number)}"

    def read(self, table: str, after: str) -> DataFrame:
        """A gold table as it was after run ``after``."""
        path = self.lake.path(Table.gold(table))
        return self.spark.read.format("delta").option("versionAsOf", self.versions[after][f"gold.{table}"]).load(path)


def ok(spark: SparkSession, cfg: AppConfig, stages: tuple[str, ...], code: Exit = Exit.OK) -> RunReport:
    report = run(spark, cfg, stages, err=io.StringIO(), progress_every=None)
    assert report.exit_code == code, report
    return report


@pytest.fixture(scope="module")
def built(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lake]:
    root = tmp_path_factory.mktemp("gold_lake")
    binlogs = root / "binlogs"
    binlogs.mkdir()
    for number in (1, 3):
        shutil.copy(SAMPLE.directory / name(number), binlogs)
    cfg = AppConfig(
        input=InputSettings(path=str(binlogs)),
        storage=StorageSettings(root=str(root / "lake"), register_tables=False),
    )
    lake = Lakehouse(spark, cfg.storage)
    built = Lake(spark, cfg, lake, binlogs, {}, {}, {}, {})

    def record(step: str, report: RunReport) -> None:
        built.reports[step] = report
        built.versions[step] = table_versions(lake, Layer.GOLD)
        state = Context(spark, cfg, lake, step).state
        built.progress[step], built.silver[step] = state.progress(Layer.GOLD), state.progress(Layer.SILVER)

    record("first", ok(spark, cfg, ("bronze", "silver", "gold")))
    shutil.copy(SAMPLE.directory / name(2), binlogs)
    ok(spark, cfg, ("bronze",))
    record("waiting", ok(spark, cfg, ("gold",), Exit.UPSTREAM_MISSING))  # run alone, it says so
    record("late", ok(spark, cfg, ("silver", "gold")))
    rewritten = binlogs / name(3)
    rewritten.write_bytes((SAMPLE.directory / name(4)).read_bytes())
    os.utime(rewritten, (1_800_000_000, 1_800_000_000))
    record("rewritten", ok(spark, cfg, ("bronze", "silver", "gold")))
    yield built


def truth_of(files: dict[int, int]) -> list[Change]:
    """The recorded changes of the sample's files ``{number in the lake: number in the sample}``."""
    return [
        dataclasses.replace(c, file=name(lake))
        for lake, sample in files.items()
        for c in SAMPLE.changes
        if c.file == name(sample)
    ]


def test_gold_waits_for_files_silver_has_not_built(built: Lake) -> None:
    report = built.reports["waiting"]
    assert (report.files_built, report.waiting) == ({"gold": 0}, 1)
    assert built.versions["waiting"] == built.versions["first"]  # nothing written
    assert built.progress["waiting"] == built.progress["first"]
    assert sorted(built.progress["first"]) == [built.file(1), built.file(3)]


def test_once_silver_has_built_a_late_file_gold_holds_the_recorded_truth_of_every_file(built: Lake) -> None:
    report = built.reports["late"]
    # silver: file 2 built, file 3 resolved again; gold: files 2 and 3, and file 1 because file 2
    # re-creates shop.carts with other columns, so its typed table is rebuilt whole
    assert (report.files_built, report.rebuilt) == ({"silver": 1, "gold": 3}, 1)
    lines = summary(built.spark, built.cfg, report).splitlines()
    assert "    files resolved again (schema history changed): 1" in lines
    assert "    files waiting for silver: 1" in summary(built.spark, built.cfg, built.reports["waiting"]).splitlines()
    changes = built.read("changes", "late").orderBy(*ORDER).collect()
    truth = truth_of({1: 1, 2: 2, 3: 3})
    assert len(changes) == len(truth) == 147 + 94 + 72
    assert change_table_mismatches(SAMPLE, changes, truth) == []
    tables = {t: built.read(t, "late") for t in TABLES}
    failures, checked = typed_mismatches(tables, changes, truth)
    assert failures[:20] == []
    assert checked > 2000


def test_gold_progress_counts_each_files_rows_per_table_and_names_the_silver_build(built: Lake) -> None:
    progress = built.progress["late"]
    for number in (1, 2, 3):
        assert progress[built.file(number)]["counts"] == dict(Counter(
            f"shop__{c.shape.table}" for c in SAMPLE.changes if c.file == name(number)
        ))  # fmt: skip
    silver = built.silver["late"]
    assert {f: row["built_from"] for f, row in progress.items()} == {f: silver[f]["run_id"] for f in progress}
    assert silver[built.file(3)]["run_id"] == silver[built.file(2)]["run_id"] != silver[built.file(1)]["run_id"]


def test_a_rebuilt_file_no_longer_changing_a_table_leaves_no_rows_there(built: Lake) -> None:
    report = built.reports["rewritten"]
    assert report.files_built == {"bronze": 1, "silver": 1, "gold": 1}
    file = built.file(3)
    carts = built.lake.read(Table.gold("shop__carts"))
    assert carts.where(f"file = '{file}'").count() == 0
    assert built.read("shop__carts", "late").where(f"file = '{file}'").count() == 3  # before the rewrite
    assert carts.count() == sum(1 for c in SAMPLE.changes if c.shape.table == "carts" and c.file != name(3))
    now = built.lake.read(CHANGES).where(f"file = '{file}'").orderBy(*ORDER).collect()
    assert change_table_mismatches(SAMPLE, now, truth_of({3: 4})) == []
    per_table = {t: built.lake.read(Table.gold(t)).where(f"file = '{file}'").count() for t in TABLES}
    assert per_table == {
        "shop__carts": 0,
        "shop__customers": 2,
        "shop__order_items": 12,
        "shop__orders": 23,
        "shop__products": 16,
    }
    assert built.progress["rewritten"][file]["counts"] == {t: n for t, n in per_table.items() if n}


def test_the_table_id_lifecycle_counts_the_row_changes_of_each_id(built: Lake) -> None:
    decoded: Counter[tuple[str, int]] = Counter()
    for number in (1, 2, 3):
        for item in decode_file(built.binlogs / name(number)):
            decoded.update((built.file(number), c.table_id) for c in item.rows)
    lifecycle = {(r.file, r.table_id): r.rows for r in built.lake.read(TABLE_ID_LIFECYCLE).collect()}
    assert set(decoded) <= set(lifecycle)
    assert lifecycle == {key: decoded.get(key, 0) for key in lifecycle}


def coordinates(rows: list[Row]) -> dict[tuple[str, int, int | None], tuple[Any, ...]]:
    return {
        (r.file, r.offset, r.inner_index): (
            r.gtid,
            r.xid,
            r.trx_offset,
            r.trx_inner_index,
            r.commit_timestamp,
            r.server_id,
        )
        for r in rows
    }


def test_every_change_carries_the_transaction_and_commit_bronze_recorded_for_its_event(built: Lake) -> None:
    events = built.lake.read(BINLOG_EVENTS).where("event_class = 'rows'").collect()
    bronze = coordinates(events)
    seconds = {(r.file, r.offset, r.inner_index): r.timestamp for r in events}
    changes = built.lake.read(CHANGES).collect()
    got = coordinates(changes)
    assert len(got) > 100
    assert got == {k: bronze[k] for k in got}
    assert all(int(r.event_timestamp.timestamp()) == seconds[(r.file, r.offset, r.inner_index)] for r in changes)
    assert all(r.xid is not None and r.commit_timestamp is not None for r in changes)
    for table in TABLES:
        typed = coordinates(built.lake.read(Table.gold(table)).collect())
        assert typed == {k: bronze[k] for k in typed}


def test_a_typed_tables_fields_do_not_depend_on_the_order_files_arrived_in(built: Lake) -> None:
    first = built.read("shop__carts", "first").schema["after"].dataType.simpleString()
    assert "@1:int" in first  # file 3 read before file 2: carts' columns had no names yet
    # what a lakehouse built from files 1-3 at once holds
    assert built.read("shop__carts", "late").schema["after"].dataType.simpleString() == (
        "struct<customer_id:bigint,items:string,items__raw:binary,touched_at:timestamp,touched_at__raw:string,"
        "id:bigint,product_id:bigint,qty:int,added_at:timestamp_ntz,added_at__raw:string>"
    )
