"""``pipelines.run.run`` with its quality gates: exit codes, gate actions, grown files, progress lines.

Every test goes through ``run(...)``, so the gates run between build and write as in production.
Inputs are the checked-in MariaDB sample binlogs, copied to a temporary folder and, where a test
needs a damaged or growing file, cut or altered there.
"""

from __future__ import annotations

import io
import itertools
import os
import zlib
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from binlog_core.constants import EventType
from binlog_core.decoder import decode_file
from binlog_core.framing import open_events
from binlog_core.rows import ROWS_KINDS
from conf import AppConfig, InputSettings, StorageSettings
from conf.models import CurrentSettings, QualitySettings
from pipelines.current.stage import CurrentStage
from pipelines.exits import Exit
from pipelines.gold.stage import GoldStage
from pipelines.run import DdlCoverage, RunReport, as_json, run
from pipelines.storage import Lakehouse, Layer, Table
from pipelines.tables import TABLE_ID_LIFECYCLE

EXIT_OK, EXIT_GATE_FAILED, EXIT_QUARANTINED = Exit.OK, Exit.GATE_FAILED, Exit.BAD_INPUT

SAMPLE = Path(__file__).resolve().parents[1] / "fixtures" / "mariadb" / "sample"
EVENTS = Table.bronze("binlog_events")
FILES = Table.bronze("binlog_files")
QUARANTINE = Table.bronze("quarantine")
GATES = Table.quality("gate_results")
T0 = 1_700_000_000

UNKNOWN_TYPE = 100
"""An event type code neither MySQL nor MariaDB uses."""


def config(binlogs: Path, root: Path, quality: QualitySettings | None = None) -> AppConfig:
    return AppConfig(
        input=InputSettings(path=str(binlogs)),
        storage=StorageSettings(root=str(root), register_tables=False),
        quality=quality or QualitySettings(),
    )


def place(path: Path, data: bytes, mtime: int = T0) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    os.utime(path, (mtime, mtime))
    return path


def retyped(data: bytes, offset: int, type_code: int) -> bytes:
    """``data`` with the event at ``offset`` given another type code and a recomputed CRC32.

    v4 event header (https://mariadb.com/kb/en/2-binlog-event-header/):
    ``timestamp u32 | type_code u8 | server_id u32 | event_size u32 | log_pos u32 | flags u16``;
    with ``binlog_checksum=CRC32`` the event's last 4 bytes are the CRC32 of everything before
    them in the event (MariaDB ``sql/log_event.cc``, ``Log_event::write_footer``).
    """
    out = bytearray(data)
    size = int.from_bytes(out[offset + 9 : offset + 13], "little")
    out[offset + 4] = type_code
    out[offset + size - 4 : offset + size] = zlib.crc32(out[offset : offset + size - 4]).to_bytes(4, "little")
    return bytes(out)


def with_event_size(data: bytes, offset: int, event_size: int) -> bytes:
    """``data`` with the header ``event_size`` (bytes 9..12 of the event) of one event overwritten."""
    return data[: offset + 9] + event_size.to_bytes(4, "little") + data[offset + 13 :]


def cut_inside_a_transaction(path: Path) -> tuple[int, int]:
    """(end of a TABLE_MAP followed by a rows event, a byte in the middle of that rows event)."""
    for first, second in itertools.pairwise(open_events(path)):
        if first.type_code == EventType.TABLE_MAP and second.type_code in ROWS_KINDS:
            return second.offset, second.offset + second.header.event_size // 2
    raise AssertionError(f"{path}: no TABLE_MAP followed by a rows event")


def rows(lake: Lakehouse, table: Table, *columns: str) -> list[tuple[Any, ...]]:
    """The table's rows as sorted tuples of ``columns`` (all columns when none are named)."""
    frame = lake.read(table)
    picked = frame.select(*columns) if columns else frame
    return sorted((tuple(r) for r in picked.collect()), key=repr)


def checks(report: RunReport) -> dict[str, tuple[bool, str]]:
    """``check -> (success, action)`` over every gate of the run."""
    return {r.rule.name: (r.success, action) for gate in report.gates for r, action in gate.results}


def transaction_start(path: Path, offset: int) -> int:
    """Where the transaction holding the event at ``offset`` opened (binlog_core.sequence)."""
    for item in decode_file(path):
        if item.event.offset == offset and item.place is not None and item.place.transaction is not None:
            return item.place.transaction.start_offset
    raise AssertionError(f"{path}: no event in a transaction at {offset}")


def test_a_grown_active_binlog_passes_the_bronze_gate_and_ends_as_one_ingestion_of_the_whole_file(
    spark: SparkSession, tmp_path: Path
) -> None:
    data = (SAMPLE / "mysql-bin.000002").read_bytes()
    boundary, middle = cut_inside_a_transaction(SAMPLE / "mysql-bin.000002")
    opened = transaction_start(SAMPLE / "mysql-bin.000002", boundary)
    active = place(tmp_path / "binlogs" / "mysql-bin.000002", data[:middle])  # the server is writing a rows event
    cfg = config(active.parent, tmp_path / "lake")
    lake = Lakehouse(spark, cfg.storage)
    log = io.StringIO()

    first = run(spark, cfg, ("bronze",), err=log)

    assert (first.exit_code, first.failed_gate, first.stages) == (EXIT_OK, None, ["bronze"])
    assert first.quarantined == Counter({("bronze", "TRUNCATED", "warning"): 1})
    # framed to the last whole event; a later run resumes where its open transaction began
    assert rows(lake, FILES, "status", "framed_until", "resume_offset") == [("truncated", boundary, opened)]
    assert rows(lake, QUARANTINE, "code", "severity", "offset") == [("TRUNCATED", "warning", boundary)]
    # the events of the open transaction know no end yet
    assert rows(lake, EVENTS, "trx_end_offset", "commit_timestamp")[-1] == (None, None)

    place(active, data, T0 + 60)  # the server finished the transaction and wrote more
    second = run(spark, cfg, ("bronze",), err=log)

    assert (second.exit_code, second.failed_gate, second.stages) == (EXIT_OK, None, ["bronze"])
    assert checks(second)["offset_contiguity"] == (True, "fail")
    assert second.quarantined == Counter()
    assert rows(lake, FILES, "status", "framed_until", "event_count") == [("complete", len(data), 197)]
    assert lake.read(QUARANTINE).count() == 0  # the truncation row of the first run is gone

    content = [c for c in lake.read(EVENTS).columns if c != "run_id"]
    once_cfg = config(active.parent, tmp_path / "once")
    assert run(spark, once_cfg, ("bronze",), err=io.StringIO()).exit_code == EXIT_OK
    once = Lakehouse(spark, once_cfg.storage)
    assert rows(lake, EVENTS, *content) == rows(once, EVENTS, *content)  # no event twice, none missing
    assert lake.read(EVENTS).select("offset").distinct().count() == 197

    lines = log.getvalue().splitlines()
    assert f"[binlog-lakehouse] bronze: 1 file(s) to frame (1 new), {middle / 1024:.1f} KiB to read" in lines
    grown = (len(data) - opened) / 1024
    assert f"[binlog-lakehouse] bronze: 1 file(s) to frame (1 grown), {grown:.1f} KiB to read" in lines
    assert "[binlog-lakehouse] bronze: gate: 5 check(s), all pass" in lines
    assert "[binlog-lakehouse] bronze: wrote bronze.binlog_events" in lines
    assert "[binlog-lakehouse] bronze: wrote bronze.binlog_files" in lines


def test_corrupt_and_foreign_files_are_bad_input_with_a_quarantine_row_from_the_bad_files_check(
    spark: SparkSession, tmp_path: Path
) -> None:
    # mysql-bin.000005: its GTID_LIST at 256 declares 10 bytes, less than an event header
    corrupt = with_event_size((SAMPLE / "mysql-bin.000005").read_bytes(), 256, 10)
    binlogs = place(tmp_path / "binlogs" / "mysql-bin.000005", corrupt).parent
    place(binlogs / "mysql-bin.000009", b"these are not the bytes of a binlog\n")
    cfg = config(binlogs, tmp_path / "lake")
    lake = Lakehouse(spark, cfg.storage)

    report = run(spark, cfg, ("bronze",), err=io.StringIO())

    assert (report.exit_code, report.failed_gate, report.stages) == (EXIT_QUARANTINED, None, ["bronze"])
    assert checks(report)["bad_files"] == (False, "quarantine")
    assert rows(lake, FILES, "file_name", "status", "framed_until") == [
        ("mysql-bin.000005", "corrupt", 256),
        ("mysql-bin.000009", "not_a_binlog", 0),
    ]
    assert rows(lake, QUARANTINE, "stage", "file_name", "code", "severity", "offset") == [
        ("bronze", "mysql-bin.000005", "GATE_BAD_FILES", "error", None),
        ("bronze", "mysql-bin.000005", "MALFORMED", "error", 256),
        ("bronze", "mysql-bin.000009", "GATE_BAD_FILES", "error", None),
        ("bronze", "mysql-bin.000009", "NOT_A_BINLOG", "error", 0),
    ]
    message = lake.read(QUARANTINE).where("code = 'GATE_BAD_FILES' AND file_name = 'mysql-bin.000005'").first()
    assert message is not None
    assert message.message.startswith("quality gate bronze/bad_files failed: unreadable = 1 at offset 256; ")
    assert report.quarantined == Counter(
        {
            ("bronze", "GATE_BAD_FILES", "error"): 2,
            ("bronze", "MALFORMED", "error"): 1,
            ("bronze", "NOT_A_BINLOG", "error"): 1,
        }
    )


def test_an_event_quarantined_as_an_error_makes_the_exit_code_4_even_when_no_check_flags_it(
    spark: SparkSession, tmp_path: Path
) -> None:
    corrupt = with_event_size((SAMPLE / "mysql-bin.000005").read_bytes(), 256, 10)
    binlogs = place(tmp_path / "binlogs" / "mysql-bin.000005", corrupt).parent
    cfg = config(binlogs, tmp_path / "lake", QualitySettings(disabled=["bad_files"]))

    report = run(spark, cfg, ("bronze",), err=io.StringIO())

    assert "bad_files" not in checks(report)
    assert not any(g.quarantined for g in report.gates)
    assert report.quarantined == Counter({("bronze", "MALFORMED", "error"): 1})
    assert report.exit_code == EXIT_QUARANTINED


# mysql-bin.000004 of the sample with its first TABLE_MAP turned into an unknown event type: bronze
# keeps it raw (known_event_types, warn by default) and silver finds the rows event after it without
# a map in force (rows_events_have_a_map, quarantine by default)
MAPLESS = [
    pytest.param(
        QualitySettings(),
        EXIT_QUARANTINED,
        ["bronze", "silver"],
        {"known_event_types": (False, "warn"), "rows_events_have_a_map": (False, "quarantine")},
        [("bronze", "UNKNOWN_EVENT_TYPE", "warning"), ("silver", "GATE_ROWS_EVENTS_HAVE_A_MAP", "error")],
        id="defaults",
    ),
    pytest.param(
        QualitySettings(actions={"rows_events_have_a_map": "warn"}),
        EXIT_OK,
        ["bronze", "silver"],
        {"known_event_types": (False, "warn"), "rows_events_have_a_map": (False, "warn")},
        [("bronze", "UNKNOWN_EVENT_TYPE", "warning")],
        id="warn",
    ),
    pytest.param(
        QualitySettings(actions={"known_event_types": "fail"}),
        EXIT_GATE_FAILED,
        [],
        {"known_event_types": (False, "fail")},
        None,  # bronze is not written
        id="fail",
    ),
    pytest.param(
        QualitySettings(disabled=["known_event_types", "rows_events_have_a_map"]),
        EXIT_OK,
        ["bronze", "silver"],
        {},
        [("bronze", "UNKNOWN_EVENT_TYPE", "warning")],
        id="disabled",
    ),
]


@pytest.mark.parametrize(("quality", "exit_code", "stages", "failed_checks", "quarantined"), MAPLESS)
def test_each_check_fails_the_stage_quarantines_warns_or_is_skipped_as_configured(
    spark: SparkSession,
    tmp_path: Path,
    quality: QualitySettings,
    exit_code: int,
    stages: list[str],
    failed_checks: dict[str, tuple[bool, str]],
    quarantined: list[tuple[str, str, str]] | None,
) -> None:
    data = (SAMPLE / "mysql-bin.000004").read_bytes()
    first_map = next(e for e in open_events(SAMPLE / "mysql-bin.000004") if e.type_code == EventType.TABLE_MAP)
    binlogs = place(tmp_path / "binlogs" / "mysql-bin.000004", retyped(data, first_map.offset, UNKNOWN_TYPE)).parent
    cfg = config(binlogs, tmp_path / "lake", quality)
    lake = Lakehouse(spark, cfg.storage)

    report = run(spark, cfg, ("bronze", "silver"), err=io.StringIO())

    assert (report.exit_code, report.stages) == (exit_code, stages)
    assert report.failed_gate == ("bronze" if exit_code == EXIT_GATE_FAILED else None)
    assert {name: result for name, result in checks(report).items() if not result[0]} == failed_checks
    recorded = {r.check: (r.success, r.action) for r in lake.read(GATES).collect()}
    assert {name: result for name, result in recorded.items() if not result[0]} == failed_checks
    assert not set(quality.disabled) & set(recorded)  # a disabled check leaves no gate_results row
    if quarantined is None:
        assert not lake.exists(EVENTS) and not lake.exists(FILES)
        return
    assert rows(lake, QUARANTINE, "stage", "code", "severity") == quarantined
    assert lake.read(EVENTS).where(f"event_type = {UNKNOWN_TYPE}").count() == 1


def test_the_ddl_coverage_line_names_the_first_unparsed_positions() -> None:
    coverage = DdlCoverage(4, 1, ["mysql-bin.000001@400#2", "mysql-bin.000001@500", "mysql-bin.000002@900"])

    assert coverage.line(shown=2) == (
        "DDL: 4 statement(s), 1 parsed (25.0%); not parsed: mysql-bin.000001@400#2, mysql-bin.000001@500 (+1 more)"
    )
    assert DdlCoverage(0, 0).line() == "DDL: 0 statement(s), 0 parsed (100.0%)"


def test_a_run_counts_its_spark_jobs_and_delta_commits_and_a_run_with_nothing_new_commits_nothing(
    spark: SparkSession, tmp_path: Path
) -> None:
    binlogs = place(tmp_path / "binlogs" / "mysql-bin.000004", (SAMPLE / "mysql-bin.000004").read_bytes()).parent
    cfg = config(binlogs, tmp_path / "lake")

    first = run(spark, cfg, err=io.StringIO(), progress_every=None)
    again = run(spark, cfg, err=io.StringIO(), progress_every=None)

    assert first.exit_code == EXIT_OK and again.exit_code == EXIT_OK
    assert all(first.spark_jobs[stage] > 0 for stage in ("bronze", "silver", "gold"))
    # bronze, small work on a local lake, every table new and made by delta-rs first: events made, then
    # the files framing wrote added; quarantine made (nothing to add); files made, then written
    assert first.delta_commits["bronze"] == 5
    assert sum(again.delta_commits.values()) == 0
    assert again.files_built == {"bronze": 0, "silver": 0, "gold": 0}
    summary = as_json(again)
    assert summary["exit_code"] == 0
    assert summary["lakehouse"]["files"] == {"complete": 1}
    assert summary["lakehouse"]["row_changes"] == as_json(first)["lakehouse"]["row_changes"]
    assert sum(summary["lakehouse"]["row_changes"].values()) == first.row_changes > 0


def test_bad_input_keeps_the_exit_code_4_on_later_runs_until_its_file_leaves_the_input(
    spark: SparkSession, tmp_path: Path
) -> None:
    binlogs = place(tmp_path / "binlogs" / "mysql-bin.000004", (SAMPLE / "mysql-bin.000004").read_bytes()).parent
    foreign = place(binlogs / "mysql-bin.000009", b"these are not the bytes of a binlog\n")
    cfg = config(binlogs, tmp_path / "lake")

    first = run(spark, cfg, err=io.StringIO(), progress_every=None)
    again = run(spark, cfg, err=io.StringIO(), progress_every=None)  # nothing new: the lake still holds bad input
    foreign.unlink()
    cleared = run(spark, cfg, err=io.StringIO(), progress_every=None)

    assert first.exit_code == EXIT_QUARANTINED
    assert (again.exit_code, again.quarantined, again.files_built["bronze"]) == (EXIT_QUARANTINED, Counter(), 0)
    assert again.bad_input == Counter(
        {("bronze", "NOT_A_BINLOG", "error"): 1, ("bronze", "GATE_BAD_FILES", "error"): 1}
    )
    assert (cleared.exit_code, cleared.bad_input) == (EXIT_OK, Counter())


def test_a_stage_run_alone_before_its_upstream_exits_with_the_upstream_code(
    spark: SparkSession, tmp_path: Path
) -> None:
    binlogs = place(tmp_path / "binlogs" / "mysql-bin.000004", (SAMPLE / "mysql-bin.000004").read_bytes()).parent
    cfg = config(binlogs, tmp_path / "lake")
    log = io.StringIO()

    silver_first = run(spark, cfg, ("silver",), err=log, progress_every=None)
    bronze = run(spark, cfg, ("bronze",), err=log, progress_every=None)
    gold_early = run(spark, cfg, ("gold",), err=log, progress_every=None)
    silver = run(spark, cfg, ("silver",), err=log, progress_every=None)
    gold = run(spark, cfg, ("gold",), err=log, progress_every=None)

    assert silver_first.exit_code == Exit.UPSTREAM_MISSING
    assert silver_first.upstream_missing == (
        f"1 input file(s) bronze has not framed (e.g. file:{binlogs}/mysql-bin.000004): run bronze first"
    )
    assert bronze.exit_code == EXIT_OK
    assert (gold_early.exit_code, gold_early.files_built["gold"]) == (Exit.UPSTREAM_MISSING, 0)
    assert "[binlog-lakehouse] gold: 1 file(s) wait for silver" in log.getvalue()
    assert (silver.exit_code, gold.exit_code, gold.files_built["gold"]) == (EXIT_OK, EXIT_OK, 1)


def test_gold_and_the_current_stage_read_what_the_stage_before_built_in_the_same_run_from_its_frames_else_the_tables(
    spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    building: list[str] = []
    read_by: dict[str, list[set[str]]] = {"gold": [], "current": []}
    reads_of = {"gold": Layer.SILVER, "current": Layer.GOLD}
    read = Lakehouse.read

    def recording(stage: str, method: Any) -> Any:
        def recorded(self: Any, ctx: Any, *args: Any) -> Any:
            if not args:  # build: a new run's reads; write(ctx, out) adds to them
                read_by[stage].append(set())
            building.append(stage)
            try:
                return method(self, ctx, *args)
            finally:
                building.pop()

        return recorded

    def recording_read(self: Lakehouse, table: Any) -> Any:
        if building and table.layer is reads_of[building[-1]]:
            read_by[building[-1]][-1].add(table.name)
        return read(self, table)

    monkeypatch.setattr(GoldStage, "build", recording("gold", GoldStage.build))
    monkeypatch.setattr(GoldStage, "write", recording("gold", GoldStage.write))
    monkeypatch.setattr(CurrentStage, "build", recording("current", CurrentStage.build))
    monkeypatch.setattr(Lakehouse, "read", recording_read)
    binlogs = tmp_path / "binlogs"
    for name in ("mysql-bin.000001", "mysql-bin.000002"):
        place(binlogs / name, (SAMPLE / name).read_bytes())
    together = config(binlogs, tmp_path / "together").model_copy(update={"current": CurrentSettings(enabled=True)})
    apart = config(binlogs, tmp_path / "apart")

    reports = [run(spark, together, err=io.StringIO(), progress_every=None)]
    for stages in (["bronze", "silver"], ["gold"], ["current"]):
        reports.append(run(spark, apart, stages, err=io.StringIO(), progress_every=None))

    assert [r.exit_code for r in reports] == [EXIT_OK] * 4
    gold = sorted(t for t in Lakehouse(spark, apart.storage).tables(Layer.GOLD) if t != "changes")
    assert gold and reports[0].current_tables == reports[3].current_tables == len(gold)
    # the run that built silver and gold reads their frames; a stage run alone reads the tables
    assert read_by == {"gold": [set(), {"table_maps", "table_id_lifecycle"}], "current": [set(), set(gold)]}
    lifecycles = [Lakehouse(spark, c.storage).read(TABLE_ID_LIFECYCLE).drop("run_id") for c in (together, apart)]
    assert Counter(map(repr, lifecycles[0].collect())) == Counter(map(repr, lifecycles[1].collect()))
    assert lifecycles[0].where("rows IS NULL").count() == 0  # gold counted the row changes of every id
    for layer in (Layer.GOLD, Layer.CURRENT, Layer.HISTORY):
        for name in [*gold, "changes"] if layer is Layer.GOLD else gold:
            built = [Lakehouse(spark, c.storage).read(Table(layer, name)).drop("run_id") for c in (together, apart)]
            assert Counter(map(repr, built[0].collect())) == Counter(map(repr, built[1].collect())), (
                f"{layer.value}.{name}"
            )
