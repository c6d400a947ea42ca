"""End to end over the whole shared corpus: 149 binlogs of real MySQL 4.0-9.6 and MariaDB 5.5-11.8
servers, plus the corpus's PROVENANCE.md, in one run of bronze, silver and gold.

The input folder is the corpus itself, read recursively with every file name accepted, as a
user pointing the pipeline at a folder of mixed files would. The run must complete; what it
quarantines must be exactly what the file decoder reports for the deliberately bad files (the
expectations of ``tests/harness/corpus.py``, which ``tests/binlog_core/test_corpus.py`` checks
against the decoder) plus the Markdown file, which is not a binlog; and every good event and row
change must reach bronze and gold, file by file.
"""

from __future__ import annotations

import io
from collections import Counter
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from urllib.parse import urlparse

import pytest
from deltalake import DeltaTable
from pyspark.sql import SparkSession

from binlog_core.decoder import decode_file
from binlog_core.errors import BinlogError
from conf import AppConfig, InputSettings, StorageSettings
from pipelines.exits import Exit
from pipelines.gold.names import gold_table_name
from pipelines.run import RunReport, run
from pipelines.storage import Lakehouse, Layer, Table
from tests.harness.corpus import CORPUS, EVENT_PROBLEMS, FATAL, TOTAL_ROW_CHANGES, corpus_files

pytestmark = [pytest.mark.corpus]

NOT_BINLOGS = {"PROVENANCE.md": ("NOT_A_BINLOG", 0)}
"""Files of the input folder that are not binlogs at all, and how bronze must reject them."""

WARNINGS = {"TRUNCATED", "UNKNOWN_EVENT_TYPE"}
"""Quarantine codes that lose nothing: a file ending inside an event (all before it is framed, the
rest waits for the file to grow) and an event type kept raw. Every other code is an error."""


UNMAPPED = ["mariadb-test-data/suite/binlog/std_data/invalid_row_v2_tag.001"]
"""Files with rows events and no TABLE_MAP at all (a FORMAT_DESCRIPTION, then three WRITE_ROWS)."""


def gate_quarantine() -> Counter[tuple[str, str, int | None]]:
    """The rows the quarantine-action checks add, one per failing file (no offset): ``bad_files``
    for the files that are not readable binlogs (a truncated tail is not bad input),
    ``checksums_verified`` for the files with an event whose CRC32 fails, and
    ``rows_events_have_a_map`` for the files with rows events no TABLE_MAP is in force for."""
    bad = [name for name, (code, _offset) in (FATAL | NOT_BINLOGS).items() if code != "TRUNCATED"]
    checksums = [
        name for name, problems in EVENT_PROBLEMS.items() if any(code == "CHECKSUM_MISMATCH" for code, _ in problems)
    ]
    rows = [(name, "GATE_BAD_FILES", None) for name in bad]
    rows += [(name, "GATE_CHECKSUMS_VERIFIED", None) for name in checksums]
    rows += [(name, "GATE_ROWS_EVENTS_HAVE_A_MAP", None) for name in UNMAPPED]
    return Counter(rows)


@dataclass
class CorpusRun:
    report: RunReport
    lake: Lakehouse
    log: str


@dataclass(frozen=True)
class Decoded:
    """What the file decoder reads from one file (up to its fatal error, if any)."""

    events: int
    rows: int


def relative(file: str) -> str:
    """A ``file:`` URI of the input as a path relative to the corpus."""
    return Path(urlparse(file).path).relative_to(CORPUS.resolve()).as_posix()


@cache
def decoded(name: str) -> Decoded:
    events = rows = 0
    try:
        for item in decode_file(CORPUS / name):
            events += 1
            rows += len(item.rows)
    except BinlogError:
        pass  # the fatal error of a bad file: FATAL says which, test_corpus.py checks it
    return Decoded(events, rows)


@pytest.fixture(scope="module")
def corpus_run(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> CorpusRun:
    cfg = AppConfig(
        input=InputSettings(path=str(CORPUS), glob="*", recursive=True),
        storage=StorageSettings(root=str(tmp_path_factory.mktemp("corpus_lake")), register_tables=False),
    )
    log = io.StringIO()
    report = run(spark, cfg, err=log)
    return CorpusRun(report, Lakehouse(spark, cfg.storage), log.getvalue())


def _per_file(frame_rows: list[tuple[str, int]]) -> dict[str, int]:
    return {relative(file): count for file, count in frame_rows}


def test_the_run_over_the_whole_corpus_completes_and_says_input_was_quarantined(corpus_run: CorpusRun) -> None:
    report = corpus_run.report
    assert report.stages == ["bronze", "silver", "gold"], corpus_run.log
    assert report.failed_gate is None
    assert report.exit_code == Exit.BAD_INPUT
    assert {name for gate in report.gates for name in gate.quarantined} == {
        "bad_files",
        "checksums_verified",
        "rows_events_have_a_map",
    }
    assert report.files_built == {"bronze": 150, "silver": 150, "gold": 150}


def test_quarantine_holds_exactly_the_problems_the_decoder_reports_and_the_failing_checks_files(
    corpus_run: CorpusRun,
) -> None:
    rows = corpus_run.lake.read(Table.bronze("quarantine")).select("file", "code", "offset", "severity").collect()
    quarantined = Counter((relative(r.file), r.code, r.offset) for r in rows)
    expected: Counter[tuple[str, str, int | None]] = Counter(
        {(name, code, offset): 1 for name, (code, offset) in (FATAL | NOT_BINLOGS).items()}
    )
    for name, problems in EVENT_PROBLEMS.items():
        expected.update((name, code, offset) for code, offset in problems)
    expected.update(gate_quarantine())
    assert quarantined == expected
    assert {(r.code, r.severity) for r in rows} == {
        (code, "warning" if code in WARNINGS else "error") for _name, code, _offset in expected
    }
    assert sum(corpus_run.report.quarantined.values()) == len(rows)  # all written by this one run


def test_bad_files_are_marked_with_their_status_and_every_other_file_is_complete(corpus_run: CorpusRun) -> None:
    files = corpus_run.lake.read(Table.bronze("binlog_files")).select("file", "status", "error_code").collect()
    statuses = {relative(r.file): (r.status, r.error_code) for r in files}
    assert sorted(statuses) == sorted([*corpus_files(), *NOT_BINLOGS])
    bad = {name: code for name, (code, _offset) in (FATAL | NOT_BINLOGS).items()}
    assert {name: code for name, (status, code) in statuses.items() if status != "complete"} == bad
    assert all(code is None for name, (status, code) in statuses.items() if status == "complete")


def test_every_event_the_decoder_reads_is_one_bronze_row_file_by_file(corpus_run: CorpusRun) -> None:
    events = corpus_run.lake.read(Table.bronze("binlog_events")).groupBy("file").count().collect()
    in_bronze = _per_file([(r.file, r["count"]) for r in events])
    expected = {name: decoded(name).events for name in corpus_files()}
    assert in_bronze == {name: n for name, n in expected.items() if n}


def test_every_row_change_the_decoder_reads_is_in_gold_file_by_file(corpus_run: CorpusRun) -> None:
    changes = corpus_run.lake.read(Table.gold("changes"))
    in_gold = _per_file([(r.file, r["count"]) for r in changes.groupBy("file").count().collect()])
    expected = {name: decoded(name).rows for name in corpus_files()}
    assert in_gold == {name: n for name, n in expected.items() if n}
    assert sum(in_gold.values()) == TOTAL_ROW_CHANGES


def test_the_typed_tables_hold_every_row_change_once(corpus_run: CorpusRun) -> None:
    lake = corpus_run.lake
    names = [name for name in lake.tables(Layer.GOLD) if name != "changes" and not name.startswith("_")]
    per_table = {name: DeltaTable(lake.path(Table.gold(name))).to_pyarrow_dataset().count_rows() for name in names}
    by_source: Counter[str] = Counter()
    for r in lake.read(Table.gold("changes")).groupBy("schema_name", "table_name").count().collect():
        by_source[gold_table_name(r.schema_name, r.table_name)] += r["count"]
    # a table whose rows events carry no row (tiflow's steven.t: DELETEs that matched nothing) has
    # its typed table, empty
    assert {name: n for name, n in per_table.items() if n} == dict(by_source)
    assert {name for name, n in per_table.items() if not n} == {"steven__t", "steven__t2", "steven__t5", "steven__t6"}
    assert sum(per_table.values()) == TOTAL_ROW_CHANGES
