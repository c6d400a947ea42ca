"""End to end over every generated fixture variant: bronze -> silver -> gold equals the recorded truth.

All seven variants (FULL, MINIMAL and NO_LOG metadata, MINIMAL and NOBLOB images, compressed
events, the sample) are ingested into one lakehouse in one run, as a user would point the
pipeline at a folder of binlogs.  Files written without column names are named through silver's
DDL replay.  A second run must find nothing to do and leave every table at its version.
"""

from __future__ import annotations

import io
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from pyspark.sql import Row, SparkSession

from binlog_core.constants import EventType
from binlog_core.decoder import decode_file
from binlog_core.events.query import QueryEvent, StatementKind
from binlog_core.sequence import Transaction
from conf import AppConfig, InputSettings, StorageSettings
from pipelines.run import run
from pipelines.storage import Lakehouse, Layer, Table
from tests.fixtures.recorder import Change
from tests.fixtures.truth import FIXTURES, VARIANTS, change_table_mismatches, expected_images, load_variant
from tests.harness.sample_lake import table_versions
from tests.harness.typed import typed_mismatches

ORDER = ["file", "offset", "inner_index", "row_index"]


@dataclass
class Lake:
    cfg: AppConfig
    lake: Lakehouse
    changes: list[Row]


def run_all(spark: SparkSession, cfg: AppConfig) -> tuple[int, int, int]:
    """One run of the three stages; how many files each stage (re)built."""
    report = run(spark, cfg, err=io.StringIO(), progress_every=None)
    assert report.exit_code == 0, report
    return report.files_built["bronze"], report.files_built["silver"], report.files_built["gold"]


@pytest.fixture(scope="module")
def built(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lake]:
    cfg = AppConfig(
        input=InputSettings(path=str(FIXTURES), recursive=True),
        storage=StorageSettings(root=str(tmp_path_factory.mktemp("e2e_lake")), register_tables=False),
    )
    lake = Lakehouse(spark, cfg.storage)
    files = sum(len(load_variant(v).files) for v in VARIANTS)
    assert run_all(spark, cfg) == (files, files, files)
    changes = lake.read(Table.gold("changes")).orderBy(*ORDER).collect()
    yield Lake(cfg, lake, changes)


@pytest.mark.parametrize("name", VARIANTS)
def test_every_gold_row_of_every_variant_equals_the_recorded_truth(built: Lake, name: str) -> None:
    variant = load_variant(name)
    prefix = f"file:{variant.directory}/"
    rows = [r for r in built.changes if r.file.startswith(prefix)]
    assert len(rows) == variant.manifest["row_changes"]
    assert change_table_mismatches(variant, rows, variant.changes) == []


def test_every_typed_value_of_every_variant_is_the_value_the_server_stored(built: Lake) -> None:
    # MINIMAL and NO_LOG metadata files leave signedness, ENUM/SET labels and charsets open:
    # the typed tables hold the stored values only if silver's schema history completed them
    changes: list[Row] = []
    truth: list[Change] = []
    logged = 0  # values the row images hold
    for name in VARIANTS:
        variant = load_variant(name)
        changes += [r for r in built.changes if r.file.startswith(f"file:{variant.directory}/")]
        truth += variant.changes
        logged += sum(len(side or []) for c in variant.changes for side in expected_images(variant, c))
    tables = {
        n: built.lake.read(Table.gold(n))
        for n in built.lake.tables(Layer.GOLD)
        if n != "changes" and not n.startswith("_")
    }
    failures, checked = typed_mismatches(tables, changes, truth)
    assert failures[:20] == []
    assert checked == logged


def commit_times(path: Path) -> dict[tuple[int, int | None, int], int]:
    """Each row change of a file -> when its transaction committed (microseconds), as
    ``binlog_core.sequence`` tells it while the decoder reads the file in order."""
    changes: list[tuple[tuple[int, int | None, int], Transaction | None]] = []
    for item in decode_file(path):
        trx = item.place.transaction if item.place is not None else None
        changes += [((c.offset, c.inner_index, c.row_index), trx) for c in item.rows]
    return {key: trx.commit_us for key, trx in changes if trx is not None and trx.commit_us is not None}


def commit_events(path: Path) -> dict[tuple[int, int | None, int], int]:
    """Each row change of a file -> the header time of the XID or COMMIT after it, found by
    reading the events in order without binlog_core.sequence (a second opinion on the same files)."""
    pending: list[tuple[int, int | None, int]] = []
    out: dict[tuple[int, int | None, int], int] = {}
    for item in decode_file(path):
        pending += [(c.offset, c.inner_index, c.row_index) for c in item.rows]
        body = item.body
        ends = item.event.type_code == EventType.XID or (
            isinstance(body, QueryEvent) and body.kind in (StatementKind.COMMIT, StatementKind.ROLLBACK)
        )
        if ends:
            out.update(dict.fromkeys(pending, item.event.header.timestamp))
            pending = []
    return out


@pytest.mark.parametrize("name", VARIANTS)
def test_each_change_carries_the_time_its_transaction_committed(built: Lake, name: str) -> None:
    variant = load_variant(name)
    expected = {(f"file:{p}", *k): t for p in variant.files for k, t in commit_times(p).items()}
    seconds = {(f"file:{p}", *k): t * 1_000_000 for p in variant.files for k, t in commit_events(p).items()}
    got = {
        (r.file, r.offset, r.inner_index, r.row_index): round(r.commit_timestamp.timestamp() * 1_000_000)
        for r in built.changes
        if r.file.startswith(f"file:{variant.directory}/")
    }
    assert len(expected) == variant.manifest["row_changes"]
    assert got == expected == seconds  # MariaDB files: the XID's header time


def test_the_table_id_lifecycle_counts_the_row_changes_decoded_for_each_id(built: Lake) -> None:
    decoded = Counter((r.file, r.table_id) for r in built.changes)
    lifecycle = {(r.file, r.table_id): r.rows for r in built.lake.read(Table.silver("table_id_lifecycle")).collect()}
    assert set(decoded) <= set(lifecycle)
    assert lifecycle == {key: decoded.get(key, 0) for key in lifecycle}


def test_nothing_is_quarantined_from_the_fixtures(built: Lake) -> None:
    assert built.lake.read(Table.bronze("quarantine")).collect() == []


def test_a_second_run_adds_nothing_and_writes_no_new_table_version(built: Lake, spark: SparkSession) -> None:
    before = table_versions(built.lake, Layer.BRONZE, Layer.SILVER, Layer.GOLD)
    assert run_all(spark, built.cfg) == (0, 0, 0)
    after = table_versions(built.lake, Layer.BRONZE, Layer.SILVER, Layer.GOLD)
    assert after == before
    assert built.lake.read(Table.gold("changes")).count() == len(built.changes)
