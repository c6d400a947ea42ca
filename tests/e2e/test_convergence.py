"""The lake is a function of the input set: files arriving in any order, a seed snapshot added later,
copies, empty files and dangling links end in the same tables as everything given at once.

Each case builds two lakes from real binlogs with ``pipelines.run.run`` -- one with every file at
once, one with the files arriving in another order over several runs -- and compares every row of
every bronze, silver and gold table (values, not counts; run ids and the input folder's path left
out, struct fields compared by name).
"""

from __future__ import annotations

import io
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from binlog_core.decoder import decode_file
from binlog_core.events.query import QueryEvent
from conf import AppConfig, InputSettings, SilverSettings, SparkSettings, StorageSettings
from pipelines.exits import Exit
from pipelines.run import RunReport, run
from pipelines.storage import Lakehouse, Table
from tests.harness.sample_lake import commit_engines, lake_rows

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "mariadb"
SAMPLE = FIXTURES / "sample"
NOLOG = FIXTURES / "metadata_nolog"


def name(number: int) -> str:
    return f"mysql-bin.{number:06d}"


@dataclass
class Built:
    lake: Lakehouse
    root: Path
    folder: Path
    reports: list[RunReport]

    def contents(self) -> dict[str, list[str]]:
        """Every row of every bronze, silver and gold table (:func:`lake_rows`)."""
        return lake_rows(self.root, self.folder)


def build(
    spark: SparkSession,
    root: Path,
    source: Path,
    arrivals: list[list[int]],
    seed: list[Path | None] | None = None,
    small_work_mib: list[int] | None = None,
) -> Built:
    """A lake fed ``arrivals`` (file numbers of ``source``) one batch per run (``seed[i]``: the seed of
    run i; ``small_work_mib[i]``: its ``spark.small_work_mib``, 0 for Spark's writes)."""
    folder = root / "binlogs"
    folder.mkdir(parents=True)
    lake_root = root / "lake"
    reports = []
    for i, batch in enumerate(arrivals):
        for number in batch:
            shutil.copy2(source / name(number), folder / name(number))
        snapshot = None if seed is None else seed[i]
        cfg = AppConfig(
            input=InputSettings(path=str(folder)),
            storage=StorageSettings(root=str(lake_root), register_tables=False),
            silver=SilverSettings(seed_path=None if snapshot is None else str(snapshot)),
            spark=SparkSettings() if small_work_mib is None else SparkSettings(small_work_mib=small_work_mib[i]),
        )
        reports.append(run(spark, cfg, err=io.StringIO(), progress_every=None))
    lake = Lakehouse(spark, StorageSettings(root=str(lake_root), register_tables=False))
    return Built(lake, lake_root, folder, reports)


def differences(want: dict[str, list[str]], got: dict[str, list[str]]) -> list[str]:
    out = [f"tables {sorted(set(want) ^ set(got))}"] if set(want) != set(got) else []
    for table in sorted(set(want) & set(got)):
        if want[table] != got[table]:
            missing = sorted(set(want[table]) - set(got[table]))[:1]
            extra = sorted(set(got[table]) - set(want[table]))[:1]
            out.append(f"{table}: {len(want[table])} vs {len(got[table])} rows; missing {missing}; extra {extra}")
    return out


@pytest.fixture(scope="module")
def sample_at_once(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[str]]:
    built = build(spark, tmp_path_factory.mktemp("sample_at_once"), SAMPLE, [[1, 2, 3, 4, 5]])
    assert [r.exit_code for r in built.reports] == [Exit.OK]
    return built.contents()


@pytest.fixture(scope="module")
def nolog_at_once(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[str]]:
    built = build(spark, tmp_path_factory.mktemp("nolog_at_once"), NOLOG, [[1, 2, 3, 4, 5, 6]])
    assert [r.exit_code for r in built.reports] == [Exit.OK]
    return built.contents()


@pytest.mark.parametrize(
    "small_work_mib",
    [pytest.param([0, 64], id="large-then-small"), pytest.param([64, 0], id="small-then-large")],
)
def test_a_lake_built_as_large_work_in_one_run_and_small_in_another_ends_as_the_sample_given_at_once(
    spark: SparkSession,
    tmp_path: Path,
    sample_at_once: dict[str, list[str]],
    small_work_mib: list[int],
) -> None:
    built = build(spark, tmp_path, SAMPLE, [[1, 2, 3], [4, 5]], small_work_mib=small_work_mib)
    assert [r.exit_code for r in built.reports] == [Exit.OK, Exit.OK]
    # the files the tasks (small work: the driver) wrote committed through Spark's Delta log by large
    # work, one commit per run, by delta-rs for small work (made first when new); the bookkeeping tables
    # written on the driver by delta-rs (made, then each run)
    by_small = {0: ["Apache-Spark"], 64: ["delta-rs"]}
    made = {0: [], 64: ["delta-rs"]}[small_work_mib[0]]
    assert commit_engines(built.root / "gold" / "changes") == [*made, *(e for m in small_work_mib for e in by_small[m])]
    assert commit_engines(built.root / "bronze" / "binlog_files") == ["delta-rs", "delta-rs", "delta-rs"]
    assert differences(sample_at_once, built.contents()) == []


@pytest.mark.parametrize(
    ("arrivals", "rebuilt"),
    [
        # file 2 drops and re-creates shop.carts: the files after it that touch the table resolve again
        pytest.param([[1, 3, 4, 5], [2]], 2, id="late-middle-file"),
        pytest.param([[2, 3, 4, 5], [1]], 3, id="late-first-file"),  # file 1 creates every table
    ],
)
def test_the_sample_arriving_out_of_order_ends_as_the_sample_given_at_once(
    spark: SparkSession, tmp_path: Path, sample_at_once: dict[str, list[str]], arrivals: list[list[int]], rebuilt: int
) -> None:
    built = build(spark, tmp_path, SAMPLE, arrivals)
    want = sample_at_once
    assert [r.exit_code for r in built.reports] == [Exit.OK] * len(arrivals)
    assert built.reports[-1].rebuilt == rebuilt  # silver resolved that many files again, in the same run
    assert differences(want, built.contents()) == []
    again = run(
        spark,
        AppConfig(input=InputSettings(path=str(built.folder)), storage=built.lake.settings),
        err=io.StringIO(),
        progress_every=None,
    )
    assert (again.files_built, again.rebuilt) == ({"bronze": 0, "silver": 0, "gold": 0}, 0)


@pytest.mark.parametrize(
    "arrivals",
    [
        pytest.param([[1, 3, 4, 5, 6], [2]], id="late-middle-file"),
        pytest.param([[2, 3, 4, 5, 6], [1]], id="late-first-file"),  # names come only from file 1's DDL
    ],
)
def test_files_without_column_names_arriving_out_of_order_end_named_as_if_given_at_once(
    spark: SparkSession, tmp_path: Path, nolog_at_once: dict[str, list[str]], arrivals: list[list[int]]
) -> None:
    built = build(spark, tmp_path, NOLOG, arrivals)

    assert [r.exit_code for r in built.reports] == [Exit.OK] * len(arrivals)
    assert differences(nolog_at_once, built.contents()) == []


def seed_of_first_file(folder: Path) -> Path:
    """A ``SHOW CREATE TABLE`` snapshot of the tables file 1 of NO_LOG creates (what a DBA would give)."""
    creates = [
        str(item.body.statement).replace("fixture.", "")
        for item in decode_file(NOLOG / name(1))
        if isinstance(item.body, QueryEvent) and str(item.body.statement).startswith("CREATE TABLE")
    ]
    seed = folder / "seed.sql"
    seed.write_text("USE fixture;\n" + ";\n".join(creates) + ";\n", encoding="utf-8")
    return seed


def test_a_seed_snapshot_added_later_names_the_files_built_without_it_as_if_given_from_the_start(
    spark: SparkSession, tmp_path: Path
) -> None:
    seed = seed_of_first_file(tmp_path)
    from_start = build(spark, tmp_path / "from_start", NOLOG, [[4]], seed=[seed])
    later = build(spark, tmp_path / "later", NOLOG, [[4], []], seed=[None, seed])

    assert [r.exit_code for r in later.reports] == [Exit.OK, Exit.OK]
    assert later.reports[1].rebuilt == 1  # file 4 resolved again once the seed named its tables
    want = from_start.contents()
    assert differences(want, later.contents()) == []
    assert not any("'@1'" in row for row in want["gold.changes"])  # the seed named every column


def test_copies_empty_files_and_dangling_links_are_accounted_for_and_add_no_rows(
    spark: SparkSession, tmp_path: Path, sample_at_once: dict[str, list[str]]
) -> None:
    folder = tmp_path / "binlogs"
    folder.mkdir()
    for number in (1, 2, 3, 4, 5):
        shutil.copy2(SAMPLE / name(number), folder / name(number))
    shutil.copy2(SAMPLE / name(1), folder / "mysql-bin.000101")  # the same bytes under another name
    (folder / "mysql-bin.000102").write_bytes(b"")  # an empty file
    os.symlink(tmp_path / "gone", folder / "mysql-bin.000103")  # a link to nothing
    cfg = AppConfig(input=InputSettings(path=str(folder)), storage=StorageSettings(root=str(tmp_path / "lake")))
    report = run(spark, cfg, err=io.StringIO(), progress_every=None)
    lake = Lakehouse(spark, cfg.storage)

    files = {r.file_name: (r.status, r.duplicate_of) for r in lake.read(Table.bronze("binlog_files")).collect()}
    quarantine = sorted((r.file_name, r.code, r.severity) for r in lake.read(Table.bronze("quarantine")).collect())
    assert files == {
        **{name(n): ("complete", None) for n in (1, 2, 3, 4, 5)},
        "mysql-bin.000101": ("duplicate", f"file:{folder / name(1)}"),
        "mysql-bin.000102": ("empty", None),
        "mysql-bin.000103": ("unreadable", None),
    }
    assert quarantine == [
        ("mysql-bin.000101", "DUPLICATE_FILE", "warning"),
        ("mysql-bin.000102", "EMPTY_FILE", "warning"),
        ("mysql-bin.000103", "GATE_BAD_FILES", "error"),
        ("mysql-bin.000103", "UNREADABLE_FILE", "error"),
    ]
    assert report.exit_code == Exit.BAD_INPUT  # the dangling link is bad input
    got = lake_rows(tmp_path / "lake", folder)
    for table in sorted(set(got) - {"bronze.binlog_files", "bronze.quarantine"}):
        assert got[table] == sample_at_once[table], table
    history = lake.read(Table.silver("schema_history")).where("valid_from_file IS NOT NULL").collect()
    assert {r.valid_from_file.rsplit("/", 1)[1] for r in history} <= {name(n) for n in (1, 2, 3, 4, 5)}
