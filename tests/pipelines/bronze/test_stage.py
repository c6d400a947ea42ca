"""The bronze stage in Spark, through ``pipelines.run.run``: what it writes from copies of real
binlogs, and that re-runs, grown, rewritten, copied, cut and killed runs converge.

Each test copies real files into its own folder (cut, grown or renamed there), runs bronze on it
and reads the Delta tables back; expected rows come from :func:`pipelines.bronze.framing.frame_file`
over the same bytes, whose order columns are checked against ``binlog_core.sequence`` in
``test_framing.py``.
"""

from __future__ import annotations

import io
import os
import shutil
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import Row, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import TimestampType

from binlog_core.framing import open_events
from conf import AppConfig, InputSettings, StorageSettings
from pipelines.bronze import stage as bronze_stage
from pipelines.bronze.framing import EventRow, frame_file
from pipelines.bronze.stage import BronzeStage, replace_predicates
from pipelines.exits import Exit
from pipelines.run import RunReport, run
from pipelines.stage import Context
from pipelines.storage import Lakehouse, Layer, Table, Write
from pipelines.tables import BINLOG_EVENTS, BINLOG_FILES
from tests.fixtures.truth import FIXTURES
from tests.harness.corpus import corpus_path
from tests.harness.sample_lake import table_versions

SAMPLE = FIXTURES / "sample"
EVENTS = Table.bronze("binlog_events")
FILES = Table.bronze("binlog_files")
QUARANTINE = Table.bronze("quarantine")
T0 = 1_700_000_000


def config(binlogs: Path, root: Path, **listing: Any) -> AppConfig:
    return AppConfig(
        input=InputSettings(path=str(binlogs), **listing),
        storage=StorageSettings(root=str(root), register_tables=False),
    )


def place(path: Path, data: bytes, mtime: int = T0) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    os.utime(path, (mtime, mtime))
    return path


def bronze(spark: SparkSession, cfg: AppConfig, run_id: str | None = None) -> RunReport:
    return run(spark, cfg, ["bronze"], err=io.StringIO(), progress_every=None, run_id=run_id)


def rows(lake: Lakehouse, table: Table, *without: str) -> list[tuple[Any, ...]]:
    """The table's rows as tuples in the table's column order (some left out), in a stable order;
    timestamps as microseconds since the epoch (instants, whatever the local time zone)."""
    frame = lake.read(table)
    kept = [
        F.unix_micros(c).alias(c) if isinstance(frame.schema[c].dataType, TimestampType) else F.col(c)
        for c in frame.columns
        if c not in without
    ]
    return sorted((tuple(r) for r in frame.select(*kept).collect()), key=lambda r: (repr(r[:4]), repr(r)))


def expected_events(path: Path, file: str, run_id: str) -> list[tuple[Any, ...]]:
    """The ``binlog_events`` rows of one file, as framing yields them, with the run id (commit
    times in microseconds, as :func:`rows` reads them back)."""
    out = []
    for r in frame_file(lambda: path.open("rb"), file, path.name):
        if isinstance(r, EventRow):
            row = r._replace(xid=None if r.xid is None else Decimal(r.xid))  # decimal(20, 0)
            out.append((*row, run_id))
    return sorted(out, key=lambda r: (repr(r[:4]), repr(r)))


# -- one ingestion ---------------------------------------------------------------------------------


def test_each_event_of_the_sample_becomes_one_row_and_a_second_run_writes_nothing(
    spark: SparkSession, tmp_path: Path
) -> None:
    binlogs = tmp_path / "binlogs"
    names = sorted(p.name for p in SAMPLE.glob("mysql-bin.*"))
    for name in names:
        place(binlogs / name, (SAMPLE / name).read_bytes())
    cfg = config(binlogs, tmp_path / "lake")
    lake = Lakehouse(spark, cfg.storage)

    report = bronze(spark, cfg, run_id="first")

    assert (report.exit_code, report.files_built["bronze"], report.quarantined) == (Exit.OK, 5, Counter())
    counts = {r.file_name: r["count"] for r in lake.read(EVENTS).groupBy("file_name").count().collect()}
    assert counts == {
        "mysql-bin.000001": 281,
        "mysql-bin.000002": 197,
        "mysql-bin.000003": 174,
        "mysql-bin.000004": 109,
        "mysql-bin.000005": 5,
    }
    assert counts == {name: sum(1 for _ in open_events(SAMPLE / name)) for name in names}
    assert report.events_framed == sum(counts.values())
    assert lake.read(EVENTS).schema.names == BINLOG_EVENTS.names
    assert lake.read(FILES).schema.names == BINLOG_FILES.names

    want = sorted(
        (row for name in names for row in expected_events(binlogs / name, f"file:{binlogs / name}", "first")),
        key=lambda r: (repr(r[:4]), repr(r)),
    )
    assert rows(lake, EVENTS) == want  # every column, the order columns and the run id included

    files = [
        (r.file_name, r.server, r.sequence, r.status, r.size, r.framed_until, r.resume_offset, r.event_count, r.run_id)
        for r in lake.read(FILES).orderBy("file").collect()
    ]
    size = {name: (SAMPLE / name).stat().st_size for name in names}
    assert files == [
        (
            name,
            f"file:{binlogs}/mysql-bin",
            int(name[-6:]),
            "complete",
            size[name],
            size[name],
            size[name],
            counts[name],
            "first",
        )
        for name in names
    ]
    assert lake.read(QUARANTINE).count() == 0

    detail = spark.sql(f"DESCRIBE DETAIL delta.`{lake.path(EVENTS)}`").first()
    assert detail is not None and list(detail.partitionColumns) == ["event_class"]
    by_class = {r.event_class: r["count"] for r in lake.read(EVENTS).groupBy("event_class").count().collect()}
    assert by_class == {"rows": 205, "table_map": 205, "query": 12, "other": 344}
    assert sorted(p.name for p in Path(lake.path(EVENTS)).iterdir() if p.name.startswith("event_class=")) == [
        "event_class=other",
        "event_class=query",
        "event_class=rows",
        "event_class=table_map",
    ]

    before = {t: rows(lake, t) for t in (EVENTS, FILES, QUARANTINE)}
    written = table_versions(lake, Layer.BRONZE, Layer.QUALITY)
    again = bronze(spark, cfg, run_id="second")
    assert (again.exit_code, again.files_built["bronze"], again.events_framed) == (Exit.OK, 0, 0)
    assert table_versions(lake, Layer.BRONZE, Layer.QUALITY) == written
    assert {t: rows(lake, t) for t in (EVENTS, FILES, QUARANTINE)} == before


def test_a_file_larger_than_its_share_of_the_work_is_framed_in_pieces_and_written_as_one_walk_writes_it(
    spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    name = "mysql-bin.000002"
    lakes = {}
    for pieces in (False, True):
        if pieces:  # the sample file is small: any file larger than half the work is cut (local[2])
            monkeypatch.setattr(bronze_stage, "MIN_PIECE_BYTES", 1)
        binlogs = tmp_path / f"binlogs-{pieces}"
        place(binlogs / name, (SAMPLE / name).read_bytes())
        cfg = config(binlogs, tmp_path / f"lake-{pieces}")
        err = io.StringIO()
        report = run(spark, cfg, ["bronze"], err=err, progress_every=None, run_id="first")
        assert (report.exit_code, report.events_framed) == (Exit.OK, 197)
        assert ("1 large file(s) in 2 pieces" in err.getvalue()) is pieces
        lakes[pieces] = Lakehouse(spark, cfg.storage)
    one, two = lakes[False], lakes[True]
    assert rows(two, EVENTS, "file") == rows(one, EVENTS, "file")  # shape_changed set back too
    assert sorted(rows(two, EVENTS, "file"), key=repr) == sorted(
        (r[1:] for r in expected_events(SAMPLE / name, "f", "first")), key=repr
    )
    assert rows(two, FILES, "file", "server") == rows(one, FILES, "file", "server")  # hashes, resume point, counts


@pytest.mark.corpus
def test_a_file_whose_pieces_do_not_fit_together_is_framed_again_in_one_piece(
    spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A FORMAT_DESCRIPTION in the first piece (this file re-announces one at 202) governs the
    second, which starts with the file's first: the pieces are dropped and the file framed whole."""
    monkeypatch.setattr(bronze_stage, "MIN_PIECE_BYTES", 1)
    source = corpus_path("mysql-server/std_data/rpl_gipk_equivalent_key.000001")
    binlogs = tmp_path / "binlogs"
    path = place(binlogs / "mysql-bin.000001", source.read_bytes())
    cfg = config(binlogs, tmp_path / "lake")
    err = io.StringIO()
    report = run(spark, cfg, ["bronze"], err=err, progress_every=None, run_id="first")
    assert (report.exit_code, report.events_framed) == (Exit.OK, 10)
    assert "1 large file(s) in 2 pieces" in err.getvalue()
    assert "framing 1 file(s) again in one piece" in err.getvalue()
    lake = Lakehouse(spark, cfg.storage)
    assert rows(lake, EVENTS) == expected_events(path, f"file:{path}", "first")
    assert [(r.status, r.event_count, r.framed_until) for r in lake.read(FILES).collect()] == [("complete", 10, 640)]


# -- a growing active binlog, a file rewritten in place, a killed run ------------------------------

CUT = 1857 + 380 // 2
"""Inside the UPDATE_ROWS_V1 at 1857 of sample/mysql-bin.000002, in the transaction opened at 1528,
whose TABLE_MAP at 1671 maps a table the transaction at 620 mapped before."""


@dataclass
class Grown:
    binlogs: Path
    lake: Lakehouse
    once: Lakehouse
    first: RunReport
    first_files: list[Row]
    first_quarantine: list[Row]
    killed_files: list[str]
    killed_resumed: dict[str, int]
    second: RunReport


@pytest.fixture(scope="module")
def grown(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Grown]:
    """sample/mysql-bin.000002 cut at :data:`CUT` (the server is writing a rows event), 000004 and
    000005 whole; then 000002 whole (the transaction ended) and 000004 rewritten in place with
    000003's longer content; two runs killed after writing only ``binlog_events``; a full run; and, for
    comparison, one run over the final files in a fresh lakehouse."""
    root = tmp_path_factory.mktemp("grown")
    binlogs = root / "binlogs"
    data = (SAMPLE / "mysql-bin.000002").read_bytes()
    active = place(binlogs / "mysql-bin.000002", data[:CUT])
    rewritten = place(binlogs / "mysql-bin.000004", (SAMPLE / "mysql-bin.000004").read_bytes())
    place(binlogs / "mysql-bin.000005", (SAMPLE / "mysql-bin.000005").read_bytes())
    cfg = config(binlogs, root / "lake")
    lake = Lakehouse(spark, cfg.storage)
    first = bronze(spark, cfg, run_id="first")
    first_files = lake.read(FILES).orderBy("file").collect()
    first_quarantine = lake.read(QUARANTINE).collect()

    place(active, data, T0 + 60)
    place(rewritten, (SAMPLE / "mysql-bin.000003").read_bytes(), T0 + 60)
    for attempt in range(2):  # killed twice before the other writes, each time after writing binlog_events
        ctx = Context(spark, cfg, Lakehouse(spark, cfg.storage), f"killed-{attempt}")
        killed = BronzeStage().build(ctx)
        assert killed.events is not None
        ctx.lake.write(Write(BINLOG_EVENTS, killed.events, killed.replace_predicate))
        killed_files, killed_resumed = list(killed.files), dict(killed.resumed)
        killed.release()
    second = bronze(spark, cfg, run_id="second")

    once_cfg = config(binlogs, root / "once")
    assert bronze(spark, once_cfg, run_id="once").exit_code == Exit.OK
    yield Grown(
        binlogs,
        lake,
        Lakehouse(spark, once_cfg.storage),
        first,
        first_files,
        first_quarantine,
        killed_files,
        killed_resumed,
        second,
    )


def test_an_active_binlog_cut_inside_a_transaction_is_truncated_and_will_resume_at_the_transactions_start(
    grown: Grown,
) -> None:
    assert (grown.first.exit_code, grown.first.quarantined) == (
        Exit.OK,
        Counter({("bronze", "TRUNCATED", "warning"): 1}),
    )
    active = next(r for r in grown.first_files if r.file_name == "mysql-bin.000002")
    assert (active.status, active.framed_until, active.error_offset, active.resume_offset, active.resume_gtid) == (
        "truncated",
        1857,
        1857,
        1528,
        None,
    )
    assert [(q.file_name, q.code, q.severity, q.offset, q.run_id) for q in grown.first_quarantine] == [
        ("mysql-bin.000002", "TRUNCATED", "warning", 1857, "first")
    ]


def test_a_grown_file_is_continued_from_its_resume_offset_and_a_rewritten_one_framed_again(grown: Grown) -> None:
    active, rewritten = (f"file:{grown.binlogs / n}" for n in ("mysql-bin.000002", "mysql-bin.000004"))
    assert (grown.killed_files, grown.killed_resumed) == ([active, rewritten], {active: 1528})
    assert (grown.second.exit_code, grown.second.files_built["bronze"], grown.second.quarantined) == (
        Exit.OK,
        2,
        Counter(),
    )
    by_run = Counter((r.file_name, r.run_id, r.offset >= 1528) for r in grown.lake.read(EVENTS).collect())
    assert by_run == Counter(
        {
            ("mysql-bin.000002", "first", False): 11,
            ("mysql-bin.000002", "second", True): 186,
            ("mysql-bin.000004", "second", False): 16,
            ("mysql-bin.000004", "second", True): 158,
            ("mysql-bin.000005", "first", False): 5,
        }
    )


def test_the_run_counts_the_events_it_framed_from_where_a_grown_file_resumed(grown: Grown) -> None:
    # framed again: the 186 events of the grown file from 1528 on, and the 174 of the rewritten one
    assert grown.second.events_framed == 186 + 174


def test_a_grown_file_ends_as_one_ingestion_of_its_final_content_even_after_a_killed_run(grown: Grown) -> None:
    assert rows(grown.lake, EVENTS, "run_id", "shape_changed") == rows(grown.once, EVENTS, "run_id", "shape_changed")
    assert rows(grown.lake, FILES, "run_id") == rows(grown.once, FILES, "run_id")
    assert grown.lake.read(QUARANTINE).count() == 0  # the truncation warning of the first run is gone
    assert {(f.file_name, f.status, f.framed_until) for f in grown.lake.read(FILES).collect()} == {
        ("mysql-bin.000002", "complete", 27030),
        ("mysql-bin.000004", "complete", 18679),
        ("mysql-bin.000005", "complete", 408),
    }


def test_a_grown_file_says_whether_a_map_changed_shape_as_one_ingestion_does(grown: Grown) -> None:
    def shapes(lake: Lakehouse) -> list[tuple[Any, ...]]:
        return sorted(
            (r.file, r.offset, r.shape_changed) for r in lake.read(EVENTS).where("event_class = 'table_map'").collect()
        )

    assert shapes(grown.lake) == shapes(grown.once)


# -- copies, cut first events, empty and unreadable files ------------------------------------------


def test_a_copy_of_an_ingested_file_under_another_name_is_a_duplicate_and_adds_no_events(
    spark: SparkSession, tmp_path: Path
) -> None:
    binlogs = tmp_path / "binlogs"
    original = place(binlogs / "mysql-bin.000004", (SAMPLE / "mysql-bin.000004").read_bytes())
    place(binlogs / "mysql-bin.000009", original.read_bytes())  # copied in the same run
    cfg = config(binlogs, tmp_path / "lake")
    lake = Lakehouse(spark, cfg.storage)

    first = bronze(spark, cfg, run_id="first")
    shutil.copy(original, binlogs / "mariadb-bin.000001")  # copied later
    second = bronze(spark, cfg, run_id="second")

    kept = f"file:{original}"
    assert first.quarantined == Counter({("bronze", "DUPLICATE_FILE", "warning"): 1})
    assert second.quarantined == Counter({("bronze", "DUPLICATE_FILE", "warning"): 1})
    assert (first.exit_code, second.exit_code) == (Exit.OK, Exit.OK)
    assert [
        (r.file_name, r.status, r.duplicate_of, r.event_count) for r in lake.read(FILES).orderBy("file").collect()
    ] == [
        ("mariadb-bin.000001", "duplicate", kept, 109),
        ("mysql-bin.000004", "complete", None, 109),
        ("mysql-bin.000009", "duplicate", kept, 109),
    ]
    assert {r.file_name: r["count"] for r in lake.read(EVENTS).groupBy("file_name").count().collect()} == {
        "mysql-bin.000004": 109
    }
    assert [
        (q.file_name, q.code, q.severity, q.offset, q.message, q.run_id)
        for q in lake.read(QUARANTINE).orderBy("file").collect()
    ] == [
        (
            "mariadb-bin.000001",
            "DUPLICATE_FILE",
            "warning",
            None,
            f"mariadb-bin.000001 holds the same bytes as {kept}: its events are not ingested again",
            "second",
        ),
        (
            "mysql-bin.000009",
            "DUPLICATE_FILE",
            "warning",
            None,
            f"mysql-bin.000009 holds the same bytes as {kept}: its events are not ingested again",
            "first",
        ),
    ]


@dataclass
class CutRun:
    binlogs: Path
    lake: Lakehouse
    report: RunReport


@pytest.fixture(scope="module")
def cut_run(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> CutRun:
    """mysql-bin.999999 and mysql-bin.1000000 both end inside their FORMAT_DESCRIPTION (copies of
    sample files cut at 60 and 100 bytes): the server went on to 1000000, so 999999 is corrupt and
    1000000, its newest, is the active binlog.  An empty file of another server sits beside them."""
    root = tmp_path_factory.mktemp("cut")
    binlogs = root / "binlogs"
    place(binlogs / "mysql-bin.999999", (SAMPLE / "mysql-bin.000001").read_bytes()[:60])
    place(binlogs / "mysql-bin.1000000", (SAMPLE / "mysql-bin.000002").read_bytes()[:100])
    place(binlogs / "relay-bin.000001", b"")
    cfg = config(binlogs, root / "lake", glob="*-bin.*")  # the default glob wants six digits: not .1000000
    report = bronze(spark, cfg, run_id="cut")
    return CutRun(binlogs, Lakehouse(spark, cfg.storage), report)


def _quarantined(run: CutRun) -> list[tuple[Any, ...]]:
    rows_ = run.lake.read(QUARANTINE).where("code NOT LIKE 'GATE_%'").collect()
    return sorted((q.file_name, q.code, q.severity, q.offset, q.run_id) for q in rows_)


def test_a_cut_first_event_is_corrupt_unless_the_file_is_the_newest_of_its_servers_sequence(cut_run: CutRun) -> None:
    files = {
        r.file_name: (r.server, r.sequence, r.status, r.error_code, r.error_offset, r.framed_until)
        for r in cut_run.lake.read(FILES).where("file_name LIKE 'mysql-bin.%'").collect()
    }
    server = f"file:{cut_run.binlogs}/mysql-bin"
    assert files == {
        "mysql-bin.999999": (server, 999_999, "corrupt", "TRUNCATED", 4, 4),
        "mysql-bin.1000000": (server, 1_000_000, "truncated", "TRUNCATED", 4, 4),
    }
    assert ("mysql-bin.999999", "TRUNCATED", "error", 4, "cut") in _quarantined(cut_run)
    cut = cut_run.lake.read(QUARANTINE).where("file_name = 'mysql-bin.999999' AND code = 'TRUNCATED'").collect()
    assert [q.message for q in cut] == [
        "event declares 252 bytes, the file has 56 left: the first event claims more bytes than the file has, "
        "and newer files of its server exist"
    ]
    assert cut_run.report.quarantined[("bronze", "TRUNCATED", "error")] == 1
    assert cut_run.report.exit_code == Exit.BAD_INPUT
    assert cut_run.lake.read(EVENTS).count() == 0


def test_the_other_quarantine_rows_of_a_run_with_a_cut_first_event_keep_their_severity(cut_run: CutRun) -> None:
    assert [q for q in _quarantined(cut_run) if q[0] != "mysql-bin.999999"] == [
        ("mysql-bin.1000000", "TRUNCATED", "warning", 4, "cut"),  # the newest file: the active binlog
        ("relay-bin.000001", "EMPTY_FILE", "warning", None, "cut"),
    ]
    reported = {reason: n for reason, n in cut_run.report.quarantined.items() if not reason[1].startswith("GATE_")}
    assert reported == {
        ("bronze", "TRUNCATED", "error"): 1,
        ("bronze", "TRUNCATED", "warning"): 1,
        ("bronze", "EMPTY_FILE", "warning"): 1,
    }


def test_an_empty_file_is_kept_with_a_warning_and_a_dangling_link_as_unreadable_with_an_error(
    spark: SparkSession, tmp_path: Path
) -> None:
    """A symbolic link to a file that is gone: listing sees it, nothing can be opened through it,
    whoever runs the test (root too, for whom permission bits block nothing)."""
    binlogs = tmp_path / "binlogs"
    place(binlogs / "mysql-bin.000001", b"")
    gone = tmp_path / "gone" / "mysql-bin.000002"
    (binlogs / "mysql-bin.000002").symlink_to(gone)
    cfg = config(binlogs, tmp_path / "lake")
    lake = Lakehouse(spark, cfg.storage)

    report = bronze(spark, cfg, run_id="odd")

    files = {
        r.file_name: (r.server, r.sequence, r.status, r.error_code, r.error_message, r.size, r.framed_until)
        for r in lake.read(FILES).collect()
    }
    server = f"file:{binlogs}/mysql-bin"
    problem = f"a dangling symbolic link (to {gone})"
    assert files == {
        "mysql-bin.000001": (server, 1, "empty", None, None, 0, 0),
        "mysql-bin.000002": (server, 2, "unreadable", "UNREADABLE_FILE", problem, 0, 0),
    }
    odd = lake.read(QUARANTINE).where("code NOT LIKE 'GATE_%'").collect()
    assert sorted((q.file_name, q.code, q.severity, q.offset, q.message, q.run_id) for q in odd) == [
        (
            "mysql-bin.000001",
            "EMPTY_FILE",
            "warning",
            None,
            "mysql-bin.000001 is empty (0 bytes): no binlog yet",
            "odd",
        ),
        ("mysql-bin.000002", "UNREADABLE_FILE", "error", None, f"mysql-bin.000002 is {problem}", "odd"),
    ]
    assert report.quarantined[("bronze", "EMPTY_FILE", "warning")] == 1
    assert report.quarantined[("bronze", "UNREADABLE_FILE", "error")] == 1
    assert report.exit_code == Exit.BAD_INPUT
    assert lake.read(EVENTS).count() == 0


def test_new_and_changed_files_are_replaced_whole_and_grown_files_from_where_they_resume() -> None:
    events, quarantine = replace_predicates(["file:/b/mysql-bin.000001"], {"file:/b/mysql-bin.000002": 900})
    assert (
        events == "`file` IN ('file:/b/mysql-bin.000001') OR (`file` = 'file:/b/mysql-bin.000002' AND `offset` >= 900)"
    )
    assert quarantine == (
        "`stage` = 'bronze' AND (`file` IN ('file:/b/mysql-bin.000001') OR "
        "(`file` = 'file:/b/mysql-bin.000002' AND (`offset` IS NULL OR `offset` >= 900)))"
    )
    assert replace_predicates([], {}) == ("false", "false")
