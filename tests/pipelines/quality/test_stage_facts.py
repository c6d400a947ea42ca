"""The gate facts each stage builds (pandas frames), from real files, some of them damaged.

* bronze: :func:`pipelines.bronze.stage.bronze_facts` over the summaries bronze's framing gives
  for real files: intact, cut, listed longer than they are, failing a checksum, foreign, encrypted,
  with an event type nobody knows (no Spark session);
* silver and gold: a whole run over two damaged sample files, the facts each gate was given
  recorded on their way to :func:`pipelines.quality.gate.run_gate`:

  - ``mysql-bin.000001``: one TABLE_MAP taken out (its rows event has no map in force);
  - ``mysql-bin.000002``: one TABLE_MAP claiming 250 columns (it does not decode; its rows event
    reads with it), the ``ALTER TABLE`` placing its new column ``AFTER countrX`` (a column
    that does not exist: the replay cannot follow it), the TABLE_MAP of the last ``orders``
    insert leaving ``note`` NULL claiming ``note`` as its primary key, and the first
    ``order_items`` rows event dated a minute after its transaction commits.  Checksums are
    recomputed: the bytes are what a server could have written.

* the Data Docs of that run, rendered by headless Chromium: the failed gold check names the file,
  the gold table and the first offending offset.

Where bronze's framing walk places checksum failures and unknown event types
(``FileSummary.located``) is tested with the walk (``tests/pipelines/bronze/test_framing.py``).
"""

from __future__ import annotations

import dataclasses
import io
import itertools
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pandas as pd
import pytest
from pyspark.sql import SparkSession

from binlog_core.constants import EventType
from binlog_core.decoder import decode_file
from binlog_core.framing import open_events
from binlog_core.rows import ROWS_KINDS
from conf import AppConfig, InputSettings, StorageSettings
from conf.models import QualitySettings
from pipelines import run as run_module
from pipelines.bronze.framing import FileSummary, frame_file
from pipelines.bronze.stage import bronze_facts
from pipelines.exits import Exit
from pipelines.quality.gate import GateOutcome
from pipelines.quality.gx import QualityProject
from pipelines.run import RunReport, run
from pipelines.storage import Lakehouse
from pipelines.tables import DDL_EVENTS, QUARANTINE
from tests.fixtures.truth import FIXTURES
from tests.harness.corpus import corpus_path
from tests.pipelines.quality.browser import browse, rendered

SAMPLE = FIXTURES / "sample"
BRONZE = ["offset_gaps", "unexplained_tail", "unreadable", "checksum_failures", "unknown_events"]
HEADER = 19
"""v4 event header: timestamp u32 | type u8 | server_id u32 | event_size u32 | log_pos u32 | flags u16."""


def summary_of(path: Path, size: int | None = None) -> dict[str, Any]:
    """Bronze's summary of a file (as a ``binlog_files``-like dict), listed with ``size``."""
    listed = path.stat().st_size if size is None else size
    last = list(frame_file(lambda: path.open("rb"), str(path), path.name, size=listed))[-1]
    assert isinstance(last, FileSummary)
    return dataclasses.asdict(last)


def test_bronze_facts_tell_each_files_gaps_tail_checksums_readability_and_unknown_events() -> None:
    sample = SAMPLE / "mysql-bin.000005"
    cut = SAMPLE / "mysql-bin.000004"
    cases = {
        "intact": summary_of(sample),
        "cut inside an event (the active binlog)": summary_of(cut, cut.stat().st_size - 3),
        "listed 100 bytes longer than it is": summary_of(sample, sample.stat().st_size + 100),
        "a checksum failing": summary_of(corpus_path("mariadb-test-data/std_data/mdev-39404-binlog.000001")),
        "not a binlog": summary_of(corpus_path("canal/tsdb/mysql-bin.000001")),
        "encrypted": summary_of(corpus_path("mysql-server/std_data/rpl_nogtid_encryption_master-bin.000002")),
        "an unknown event type": summary_of(corpus_path("mysql-binlog-connector-java/mysql-bin.aurora-padding")),
    }
    rows = [{**row, "file": label} for label, row in cases.items()]
    located = {"a checksum failing": {"checksum_failures": [1234]}, "an unknown event type": {"unknown_events": [99]}}
    facts = bronze_facts(rows, located)
    assert list(facts.columns) == ["file", *BRONZE, *(f"{name}_at" for name in BRONZE)]
    assert [tuple(r) for r in facts.itertuples(index=False)] == [
        ("intact", 0, 0, 0, 0, 0, [], [], [], [], []),
        ("cut inside an event (the active binlog)", 0, 0, 0, 0, 0, [], [], [], [], []),
        ("listed 100 bytes longer than it is", 0, 1, 0, 0, 0, [], [sample.stat().st_size], [], [], []),
        ("a checksum failing", 0, 0, 0, 1, 0, [], [], [], [1234], []),
        ("not a binlog", 0, 0, 1, 0, 0, [], [], [cases["not a binlog"]["error_offset"]], [], []),
        ("encrypted", 0, 0, 1, 0, 0, [], [], [cases["encrypted"]["error_offset"]], [], []),
        ("an unknown event type", 0, 0, 0, 0, 1, [], [], [], [], [99]),
    ]
    assert (cases["not a binlog"]["error_offset"], cases["encrypted"]["error_offset"]) == (0, 0)
    assert [r["status"] for r in rows] == [
        "complete",
        "truncated",
        "complete",
        "complete",
        "not_a_binlog",
        "encrypted",
        "complete",
    ]


def test_bronze_facts_of_no_file_are_an_empty_frame_with_the_gates_columns() -> None:
    facts = bronze_facts([])
    assert (len(facts), list(facts.columns)) == (0, ["file", *BRONZE, *(f"{name}_at" for name in BRONZE)])


# -- damaged sample files through a whole run ------------------------------------------------------


def with_crc(data: bytearray, offset: int) -> None:
    """Recompute the CRC32 of the event at ``offset`` (its last 4 bytes; MariaDB ``Log_event::write_footer``)."""
    size = int.from_bytes(data[offset + 9 : offset + 13], "little")
    data[offset + size - 4 : offset + size] = zlib.crc32(bytes(data[offset : offset + size - 4])).to_bytes(4, "little")


def map_then_rows(path: Path, nth: int) -> tuple[int, int]:
    """(offset, size) of the ``nth`` TABLE_MAP followed by a rows event."""
    pairs = [a for a, b in itertools.pairwise(open_events(path)) if a.type_code == EventType.TABLE_MAP
             and b.type_code in ROWS_KINDS]  # fmt: skip
    return pairs[nth].offset, pairs[nth].header.event_size


def without_a_map(source: Path) -> bytes:
    offset, size = map_then_rows(source, 3)
    data = source.read_bytes()
    return data[:offset] + data[offset + size :]


def with_primary_key(data: bytearray, offset: int, column: int) -> None:
    """Make the TABLE_MAP at ``offset`` claim column ``column`` as its primary key, in place of the
    one column its SIMPLE_PRIMARY_KEY names (same length).

    TABLE_MAP body (MySQL ``Table_map_log_event``; every length here is below 251, one byte)::

        table_id u48 | flags u16 | schema len u8, schema, 0 | table len u8, table, 0 | column count
        | column types (count bytes) | metadata len, metadata | null bitmap ((count + 7) / 8 bytes)
        | optional metadata {type u8 | len | value} ... | CRC32
    """
    at = offset + HEADER + 8
    at += 1 + data[at] + 1
    at += 1 + data[at] + 1
    count = data[at]
    at += 1 + count
    at += 1 + data[at]
    at += (count + 7) // 8
    end = offset + int.from_bytes(data[offset + 9 : offset + 13], "little") - 4
    while at < end:
        kind, length = data[at], data[at + 1]
        if kind == 8:  # SIMPLE_PRIMARY_KEY: packed column indexes
            assert length == 1
            data[at + 2] = column
            with_crc(data, offset)
            return
        at += 2 + length
    raise AssertionError(f"the TABLE_MAP at {offset} carries no SIMPLE_PRIMARY_KEY")


def insert_leaving_null(path: Path, table: str, column: int) -> tuple[int, int]:
    """(TABLE_MAP offset, rows event offset) of the last insert into ``table`` leaving ``column`` NULL."""
    found = [
        (item.place.map.offset, item.event.offset)
        for item in decode_file(path)
        if item.place is not None and item.place.map is not None
        for row in item.rows
        if row.op == "insert" and row.table_map.table == table and row.after is not None and row.after[column] is None
    ]
    return found[-1]


def first_rows_event(path: Path, table: str) -> tuple[int, int]:
    """(offset, commit time in seconds) of the first rows event of ``table``."""
    items = list(decode_file(path))
    first = next(i for i in items if i.rows and i.rows[0].table_map.table == table)
    assert first.place is not None and first.place.transaction is not None
    commit = first.place.transaction.commit_us
    assert commit is not None
    return first.event.offset, commit // 1_000_000


def with_a_bad_map_and_an_unfollowable_alter(source: Path) -> bytes:
    data = bytearray(source.read_bytes())
    key_map, _ = insert_leaving_null(source, "orders", 5)
    with_primary_key(data, key_map, 5)  # orders.note
    late, committed = first_rows_event(source, "order_items")
    data[late : late + 4] = (committed + 60).to_bytes(4, "little")  # header timestamp u32
    with_crc(data, late)
    offset, _ = map_then_rows(source, 3)
    at = offset + HEADER + 8  # past table_id u48 and flags u16: schema length u8, schema, 0, table length u8, ...
    at += 1 + data[at] + 1
    at += 1 + data[at] + 1
    data[at] = 250  # column count (length-encoded, < 251: one byte)
    with_crc(data, offset)
    statement = b"AFTER country"
    where = data.index(statement)
    alter = next(e.offset for e in open_events(source) if e.offset < where < e.offset + e.header.event_size)
    data[where : where + len(statement)] = b"AFTER countrX"
    with_crc(data, alter)
    return bytes(data)


@dataclass
class Damaged:
    files: dict[str, Path]
    report: RunReport
    facts: dict[str, dict[str, pd.DataFrame]]
    lake: Lakehouse

    def gate(self, name: str) -> GateOutcome:
        return next(g for g in self.report.gates if g.gate == name)


@pytest.fixture(scope="module")
def damaged(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Damaged]:
    root = tmp_path_factory.mktemp("damaged")
    binlogs = root / "binlogs"
    binlogs.mkdir()
    files = {
        "mysql-bin.000001": without_a_map(SAMPLE / "mysql-bin.000001"),
        "mysql-bin.000002": with_a_bad_map_and_an_unfollowable_alter(SAMPLE / "mysql-bin.000002"),
    }
    for name, data in files.items():
        (binlogs / name).write_bytes(data)
    cfg = AppConfig(
        input=InputSettings(path=str(binlogs)),
        storage=StorageSettings(root=str(root / "lake"), register_tables=False),
        quality=QualitySettings(),
    )
    facts: dict[str, dict[str, pd.DataFrame]] = {}
    gate = run_module.run_gate  # type: ignore[attr-defined]  # the name run.py calls

    def recording(
        name: str,
        frames: dict[str, pd.DataFrame],
        settings: QualitySettings,
        project: QualityProject | None = None,
        run_id: str = "gate",
    ) -> GateOutcome:
        facts[name] = {k: v.copy() for k, v in frames.items()}
        return gate(name, frames, settings, project, run_id)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(run_module, "run_gate", recording)
        report = run(spark, cfg, err=io.StringIO(), progress_every=None)
    yield Damaged({n: binlogs / n for n in files}, report, facts, Lakehouse(spark, cfg.storage))


def rows(frame: pd.DataFrame) -> list[tuple[Any, ...]]:
    return sorted(tuple(r) for r in frame.itertuples(index=False))


def uri(damaged: Damaged, name: str) -> str:
    return f"file:{damaged.files[name]}"


def test_the_bronze_facts_of_the_run_find_nothing_wrong_with_the_framing(damaged: Damaged) -> None:
    facts = damaged.facts["bronze"]["files"]
    assert rows(facts) == [
        (uri(damaged, n), 0, 0, 0, 0, 0, [], [], [], [], []) for n in ("mysql-bin.000001", "mysql-bin.000002")
    ]
    assert (damaged.gate("bronze").failed, damaged.gate("bronze").quarantined) == ([], [])


def test_the_silver_facts_count_rows_events_without_a_decoded_map_and_the_ddl_understood(damaged: Damaged) -> None:
    files = damaged.facts["silver"]["files"]
    assert list(files.columns) == [
        "file",
        "unmapped_rows_events",
        "ids_reused_for_other_table",
        "unmapped_rows_events_at",
        "ids_reused_for_other_table_at",
    ]
    # file 1: bronze found no map in force; file 2: the map in force did not decode
    unmapped = {name: unknown_table_offsets(damaged, name) for name in damaged.files}
    assert rows(files) == [
        (uri(damaged, "mysql-bin.000001"), 1, 0, unmapped["mysql-bin.000001"], []),
        (uri(damaged, "mysql-bin.000002"), 1, 0, unmapped["mysql-bin.000002"], []),
    ]
    alter = next(
        item.event.offset
        for item in decode_file(damaged.files["mysql-bin.000002"])
        if b"countrX" in bytes(item.event.body)
    )
    run_facts = damaged.facts["silver"]["run"]
    assert run_facts.to_dict("records") == [
        {"ddl_parsed_share": 8 / 9, "ddl_statements": 9, "ddl_parsed_share_at": [f"mysql-bin.000002@{alter}"]}
    ]
    outcome = damaged.gate("silver")
    assert [(r.rule.name, r.success, action) for r, action in outcome.results] == [
        ("rows_events_have_a_map", False, "quarantine"),
        ("table_id_one_table", True, "warn"),
        ("ddl_parse_coverage", False, "warn"),
    ]
    unparsed = damaged.lake.read(DDL_EVENTS).where("kind = 'DDL' AND NOT ddl_parsed").collect()
    assert [(r.file_name, r.statement.split(" AFTER ")[1]) for r in unparsed] == [("mysql-bin.000002", "countrX")]


def unknown_table_offsets(damaged: Damaged, name: str) -> list[int]:
    return [p[1] for p in decoder_problems(damaged.files[name]) if p[0] == "UNKNOWN_TABLE_ID"]


def test_the_gold_facts_count_rows_events_lost_to_a_missing_map_and_commits_before_their_events(
    damaged: Damaged,
) -> None:
    files = damaged.facts["gold"]["files"]
    assert list(files.columns) == [
        "file",
        "unreconciled_rows_events",
        "op_image_mismatches",
        "unknown_table_events",
        "commits_before_event",
        "unreconciled_rows_events_at",
        "op_image_mismatches_at",
        "unknown_table_events_at",
        "commits_before_event_at",
    ]
    late, _ = first_rows_event(SAMPLE / "mysql-bin.000002", "order_items")
    assert rows(files) == [
        (uri(damaged, "mysql-bin.000001"), 0, 0, 1, 0, [], [], unknown_table_offsets(damaged, "mysql-bin.000001"), []),
        (
            uri(damaged, "mysql-bin.000002"),
            0,
            0,
            1,
            1,
            [],
            [],
            unknown_table_offsets(damaged, "mysql-bin.000002"),
            [late],
        ),
    ]
    outcome = damaged.gate("gold")
    assert [(r.rule.name, r.success, action) for r, action in outcome.results] == [
        ("rows_reconcile", True, "fail"),
        ("op_matches_images", True, "fail"),
        ("no_unknown_table", False, "quarantine"),
        ("commit_not_before_event", False, "warn"),
        ("insert_keys_not_null", False, "quarantine"),
    ]


def test_the_gold_facts_find_the_insert_leaving_the_key_its_map_claims_null(damaged: Damaged) -> None:
    tables = damaged.facts["gold"]["tables"]
    _, insert = insert_leaving_null(SAMPLE / "mysql-bin.000002", "orders", 5)
    failing = [(f, t, n, at) for f, t, n, at in rows(tables.astype(object)) if not pd.isna(n) and n]
    assert failing == [(uri(damaged, "mysql-bin.000002"), "shop__orders", 1, [insert])]
    assert sorted({t for _, t, _, _ in rows(tables)}) == [
        "shop__carts",
        "shop__customers",
        "shop__order_items",
        "shop__orders",
        "shop__products",
    ]
    [result] = [r for r, _ in damaged.gate("gold").results if r.rule.name == "insert_keys_not_null"]
    assert result.failing == (
        {
            "file": uri(damaged, "mysql-bin.000002"),
            "gold_table": "shop__orders",
            "null_key_inserts": 1,
            "first_offsets": [insert],
        },
    )


def decoder_problems(path: Path) -> list[tuple[str, int, str, str]]:
    """(code, offset, event type, message) of every problem binlog_core's decoder reports for a file."""
    return [
        (p.code, item.event.offset, item.event.type_name, p.message)
        for item in decode_file(path)
        for p in item.problems
    ]


def test_the_run_quarantines_what_the_decoder_reports_and_each_failing_files_check(damaged: Damaged) -> None:
    assert damaged.report.exit_code == Exit.BAD_INPUT
    stored = sorted(
        ((r.stage, r.file_name, r.offset, r.event_type_name, r.code, r.severity)
         for r in damaged.lake.read(QUARANTINE).collect()),
        key=str,
    )  # fmt: skip
    problems = {name: decoder_problems(path) for name, path in damaged.files.items()}
    (bad_map,) = [p for p in problems["mysql-bin.000002"] if p[2] == "TABLE_MAP"]
    unknown = [(n, p) for n, ps in problems.items() for p in ps if p[0] == "UNKNOWN_TABLE_ID"]
    assert len(unknown) == 2
    assert stored == sorted(
        [
            ("silver", "mysql-bin.000002", bad_map[1], "TABLE_MAP", "MALFORMED", "error"),
            ("silver", "mysql-bin.000001", None, None, "GATE_ROWS_EVENTS_HAVE_A_MAP", "error"),
            ("silver", "mysql-bin.000002", None, None, "GATE_ROWS_EVENTS_HAVE_A_MAP", "error"),
            *[("gold", n, p[1], p[2], "UNKNOWN_TABLE_ID", "error") for n, p in unknown],
            ("gold", "mysql-bin.000001", None, None, "GATE_NO_UNKNOWN_TABLE", "error"),
            ("gold", "mysql-bin.000002", None, None, "GATE_NO_UNKNOWN_TABLE", "error"),
            ("gold", "mysql-bin.000002", None, None, "GATE_INSERT_KEYS_NOT_NULL", "error"),
        ],
        key=str,
    )
    _, insert = insert_leaving_null(SAMPLE / "mysql-bin.000002", "orders", 5)
    [message] = [r.message for r in damaged.lake.read(QUARANTINE).where("code = 'GATE_INSERT_KEYS_NOT_NULL'").collect()]
    assert message.startswith(
        f"quality gate gold/insert_keys_not_null failed: null_key_inserts = 1 in shop__orders at offset {insert}; "
    )


def gold_messages(damaged: Damaged, name: str) -> list[tuple[int, str]]:
    found = damaged.lake.read(QUARANTINE).where(f"stage = 'gold' AND file_name = '{name}' AND offset IS NOT NULL")
    return [(r.offset, r.message) for r in found.collect()]


def test_a_rows_event_with_no_map_in_force_is_reported_by_gold_as_the_decoder_reports_it(damaged: Damaged) -> None:
    name = "mysql-bin.000001"
    want = [(p[1], p[3]) for p in decoder_problems(damaged.files[name]) if p[0] == "UNKNOWN_TABLE_ID"]
    assert gold_messages(damaged, name) == want
    assert want[0][1].endswith("has no TABLE_MAP in force in this file")


def test_a_rows_event_whose_map_did_not_decode_is_reported_by_gold_as_the_decoder_reports_it(
    damaged: Damaged,
) -> None:
    name = "mysql-bin.000002"
    want = [(p[1], p[3]) for p in decoder_problems(damaged.files[name]) if p[0] == "UNKNOWN_TABLE_ID"]
    assert want[0][1].endswith("did not decode")
    assert gold_messages(damaged, name) == want


def test_the_data_docs_of_the_run_show_the_failed_check_with_its_file_table_and_first_offsets(
    damaged: Damaged, chromium: str, tmp_path: Path
) -> None:
    assert damaged.report.data_docs is not None
    index = Path(damaged.report.data_docs)
    [link] = [h for h in rendered(index.read_text(encoding="utf-8")).links if h.startswith("validations/gold_gate/")]
    page = rendered(browse(chromium, index.parent / unquote(link), tmp_path, "--dump-dom"))
    _, insert = insert_leaving_null(SAMPLE / "mysql-bin.000002", "orders", 5)

    rows = [row for table in page.tables for row in table]
    assert ["Unexpected Value", "Count", "file", "gold_table", "first_offsets"] in rows
    assert ["1", "1", uri(damaged, "mysql-bin.000002"), "shop__orders", f"[{insert}]"] in rows
    assert "Expectation Suite: gold_gate Data asset: None Status: Failed" in page.words
