"""How the bronze framing tasks open their files and what they do with the rows: local paths directly,
object-store URIs with ``pyarrow.fs`` configured from the Hadoop settings the driver hands over,
rows as Arrow batches of the ``FRAMED`` union whose event part is ``binlog_events`` without run id,
written by the task into files of ``binlog_events`` and ``quarantine`` with the run id.

Object-store files are read from a server speaking the S3 API on 127.0.0.1 (moto, ``s3_server``).
"""

from __future__ import annotations

import dataclasses
import functools
import io
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql import SparkSession
from pyspark.sql.pandas.types import to_arrow_schema

from conf import StorageSettings
from pipelines.bronze.discover import Decision, WorkItem
from pipelines.bronze.discover import resume_point as resume_of_row
from pipelines.bronze.framing import (
    EventRow,
    FileSummary,
    PartFacts,
    QuarantineRow,
    ResumePoint,
    frame_file,
    plan_parts,
)
from pipelines.bronze.stage import TASK_BYTES, work_frame
from pipelines.bronze.transforms import (
    FILE_SUMMARY,
    OUTPUT,
    WORK_ITEMS,
    frame_batches,
    frame_files,
    open_binary,
    part_json,
    resume_json,
    resume_point,
    staged_framing,
)
from pipelines.filesystems import UnsupportedSchemeError
from pipelines.staging import StagedFile, TableTarget, file_uri
from pipelines.storage import Lakehouse
from pipelines.tables import BINLOG_EVENTS, QUARANTINE
from tests.fixtures.truth import FIXTURES
from tests.harness.s3 import S3Server

SAMPLE = FIXTURES / "sample"
FILE = SAMPLE / "mysql-bin.000001"
LISTED = datetime(2024, 5, 1, tzinfo=UTC)
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def test_local_paths_and_file_uris_are_opened_directly() -> None:
    for uri in (str(FILE), f"file:{FILE}", f"file://{FILE}"):
        with open_binary(uri)() as stream:
            assert isinstance(stream, io.BufferedReader)
            assert stream.read(4) == b"\xfebin"


def test_other_schemes_are_refused_naming_the_file() -> None:
    with pytest.raises(UnsupportedSchemeError, match=r"^ftp://host/mysql-bin\.000001: cannot read this file: "):
        open_binary("ftp://host/mysql-bin.000001")


def _work(uri: str, path: Path, resume: ResumePoint | None = None) -> pa.RecordBatch:
    item = {
        "file": uri,
        "file_name": path.name,
        "size": path.stat().st_size,
        "modification_time": LISTED,
        "resume": None if resume is None else resume_json(resume),
    }
    return pa.RecordBatch.from_pylist([item], schema=to_arrow_schema(WORK_ITEMS, timezone="UTC"))


def _framed(batches: Iterator[pa.RecordBatch]) -> dict[str, list[dict[str, Any]]]:
    rows = pa.Table.from_batches(list(batches)).to_pylist()
    return {kind: [row[kind] for row in rows if row["kind"] == kind] for kind in ("event", "quarantine", "file")}


def _direct(path: Path, uri: str, **kwargs: Any) -> tuple[list[EventRow], list[QuarantineRow], FileSummary]:
    out = list(frame_file(functools.partial(path.open, "rb"), uri, path.name, **kwargs))
    summary = out[-1]
    assert isinstance(summary, FileSummary)
    return [o for o in out if isinstance(o, EventRow)], [o for o in out if isinstance(o, QuarantineRow)], summary


def test_s3a_files_are_framed_through_s3_filesystem_configured_from_the_hadoop_settings(s3_server: S3Server) -> None:
    (uri,) = s3_server.upload(SAMPLE, "framing/db1", [FILE.name])
    assert uri == "s3a://framing/db1/mysql-bin.000001"
    remote = _framed(frame_batches(iter([_work(uri, FILE)]), filesystem_options=s3_server.hadoop()))
    local = _framed(frame_batches(iter([_work(str(FILE), FILE)])))

    summary = remote["file"][0]
    assert (summary["file"], summary["status"], summary["framed_until"]) == (uri, "complete", FILE.stat().st_size)
    assert remote["quarantine"] == []
    assert [{**row, "file": None} for row in remote["event"]] == [{**row, "file": None} for row in local["event"]]
    assert {row["file"] for row in remote["event"]} == {uri}
    assert remote["event"][0]["offset"] == 4


def test_an_s3a_file_the_store_does_not_hold_is_an_unreadable_file_not_a_crash(s3_server: S3Server) -> None:
    s3_server.upload(SAMPLE, "framing-missing/db1", [FILE.name])
    uri = "s3a://framing-missing/db1/mysql-bin.000002"  # listed once, gone when read
    remote = _framed(frame_batches(iter([_work(uri, FILE)]), filesystem_options=s3_server.hadoop()))

    assert remote["event"] == []
    summary = remote["file"][0]
    assert (summary["file"], summary["status"]) == (uri, "unreadable"), summary
    assert [row["code"] for row in remote["quarantine"]] == ["UNREADABLE_FILE"], remote["quarantine"]


def test_framed_batches_hold_the_rows_of_frame_file_typed_as_their_tables() -> None:
    path = SAMPLE / "mysql-bin.000002"
    framed = _framed(frame_batches(iter([_work(str(path), path)]), batch_rows=50))
    events, _quarantine, summary = _direct(path, str(path), size=path.stat().st_size, modification_time=LISTED)
    assert len(framed["event"]) == len(events) == 197
    for got, row in zip(framed["event"], events, strict=True):
        want = row._asdict()
        if row.commit_timestamp is not None:  # microseconds since the epoch -> a UTC timestamp
            want["commit_timestamp"] = EPOCH + timedelta(microseconds=row.commit_timestamp)
        if row.xid is not None:
            want["xid"] = Decimal(row.xid)  # decimal(20, 0): XIDs are unsigned 64-bit
        assert got == want
    xid = next(e for e in framed["event"] if e["offset"] == 1497)
    assert (xid["commit_timestamp"], xid["xid"]) == (datetime(2023, 11, 14, 22, 15, tzinfo=UTC), Decimal(370))
    assert framed["file"] == [  # maps come back as lists of pairs
        {name: list(v.items()) if isinstance(v, dict) else v for name, v in dataclasses.asdict(summary).items()}
    ]
    assert [f.name for f in FILE_SUMMARY.fields] == list(framed["file"][0])


def test_batches_hold_at_most_batch_rows_rows_of_one_kind_and_keep_the_file_order() -> None:
    path = SAMPLE / "mysql-bin.000002"
    batches = list(frame_batches(iter([_work(str(path), path)]), batch_rows=50))
    assert [(b.num_rows, set(b.column("kind").to_pylist())) for b in batches] == [
        (50, {"event"}),
        (50, {"event"}),
        (50, {"event"}),
        (47, {"event"}),
        (1, {"file"}),
    ]
    offsets = [row["event"]["offset"] for b in batches for row in b.to_pylist() if row["kind"] == "event"]
    assert offsets == sorted(offsets)


def test_a_work_item_with_a_resume_point_frames_from_it() -> None:
    path = SAMPLE / "mysql-bin.000002"
    data = path.read_bytes()
    cut = list(frame_file(lambda: io.BytesIO(data[:2047]), str(path), path.name))[-1]
    assert isinstance(cut, FileSummary)
    resume = resume_of_row(dataclasses.asdict(cut))
    assert resume_point(resume_json(resume)) == resume
    framed = _framed(frame_batches(iter([_work(str(path), path, resume)])))
    assert framed["file"][0]["resumed_from"] == 1528
    assert [e["offset"] for e in framed["event"]] == [e.offset for e in _direct(path, str(path))[0] if e.offset >= 1528]


def test_no_resume_point_is_null_in_the_work_item() -> None:
    assert resume_point(None) is None


def _inner(index: int | None) -> int:
    return -1 if index is None else index


def test_small_files_share_framing_tasks_and_large_ones_get_a_task_each(spark: SparkSession) -> None:
    def items(sizes: list[int]) -> list[WorkItem]:
        names = [f"b.{i:06d}" for i in range(len(sizes))]
        return [WorkItem(f"file:/in/{f}", f, n, LISTED, None, Decision.NEW) for f, n in zip(names, sizes, strict=True)]

    cores = spark.sparkContext.defaultParallelism
    small = work_frame(spark, items([4096] * 40))
    assert small.rdd.getNumPartitions() == cores  # as many tasks as cores, no more
    assert sorted(r.file_name for r in small.collect()) == [f"b.{i:06d}" for i in range(40)]
    large = work_frame(spark, items([TASK_BYTES] * (cores + 3)))
    assert large.rdd.getNumPartitions() == cores + 3
    mixed = work_frame(spark, items([3 * TASK_BYTES, *[1024] * 30]))
    assert mixed.rdd.getNumPartitions() == 4  # the bytes over TASK_BYTES, the small files together
    assert work_frame(spark, items([3 * TASK_BYTES]), max_tasks=1).rdd.getNumPartitions() == 1


def _staged_rows(target: TableTarget, staged: list[StagedFile]) -> list[dict[str, Any]]:
    """The rows of a table's staged files, partition values put back."""
    rows = []
    for f in staged:
        for row in pq.read_table(file_uri(target.location, f).removeprefix("file://")).to_pylist():
            rows.append({**row, **f.partition_values})
    return rows


def test_framing_tasks_write_binlog_events_and_quarantine_with_the_run_id_and_hand_back_summaries_and_files(
    spark: SparkSession, tmp_path: Path
) -> None:
    cut = tmp_path / "mysql-bin.000004"
    cut.write_bytes((SAMPLE / "mysql-bin.000004").read_bytes()[:5000])  # the active binlog, mid-event
    paths = (SAMPLE / "mysql-bin.000005", cut)
    items = [WorkItem(f"file:{p}", p.name, p.stat().st_size, LISTED, None, Decision.NEW) for p in paths]
    lake = Lakehouse(spark, StorageSettings(root=str(tmp_path / "lake"), register_tables=False))
    events, quarantine = lake.target(BINLOG_EVENTS), lake.target(QUARANTINE)
    out = work_frame(spark, items).mapInArrow(frame_files(events, quarantine, "run-7"), OUTPUT).collect()

    assert {row.kind for row in out} == {"file", "staged"}  # no piece: no map is handed back
    staged = [StagedFile.of(row.staged) for row in out if row.kind == "staged"]
    assert {f.table for f in staged} == {"bronze/binlog_events", "bronze/quarantine"}
    written = [f for f in staged if f.table == "bronze/binlog_events"]
    assert all(f.path.startswith(f"event_class={f.partition_values['event_class']}/") for f in written)
    got = sorted(
        (r["file_name"], r["offset"], _inner(r["inner_index"]), r["run_id"], r["event_class"], r["body"])
        for r in _staged_rows(events, written)
    )
    want = sorted(
        (p.name, e.offset, _inner(e.inner_index), "run-7", e.event_class, e.body)
        for p in paths
        for e in _direct(p, f"file:{p}")[0]
    )
    assert got == want
    assert sum(f.num_records for f in written) == len(want)
    truncated = _direct(cut, f"file:{cut}")[2].framed_until
    problems = _staged_rows(quarantine, [f for f in staged if f.table == "bronze/quarantine"])
    assert [(q["file"], q["stage"], q["code"], q["severity"], q["offset"], q["run_id"]) for q in problems] == [
        (f"file:{cut}", "bronze", "TRUNCATED", "warning", truncated, "run-7")
    ]
    summaries = [row.file for row in out if row.kind == "file"]
    assert sorted((s.file_name, s.status, s.size) for s in summaries) == [
        ("mysql-bin.000004", "truncated", 5000),
        ("mysql-bin.000005", "complete", 408),
    ]


def test_a_piece_after_the_first_hands_back_the_first_map_of_each_table_and_writes_every_other_event(
    tmp_path: Path,
) -> None:
    path = SAMPLE / "mysql-bin.000002"
    data = path.read_bytes()
    parts = plan_parts(functools.partial(path.open, "rb"), len(data), 3)
    assert len(parts) == 3
    events = TableTarget.of(BINLOG_EVENTS, str(tmp_path / "events"), {})
    quarantine = TableTarget.of(QUARANTINE, str(tmp_path / "quarantine"), {})
    whole = {(e.offset, e.inner_index): e for e in _direct(path, str(path))[0]}
    for number, part in enumerate(parts):
        item = {"file": str(path), "file_name": path.name, "size": len(data), "modification_time": LISTED,
                "resume": None, "part": part_json(part)}  # fmt: skip
        work = pa.RecordBatch.from_pylist([item], schema=to_arrow_schema(WORK_ITEMS, timezone="UTC"))
        out = pa.Table.from_batches(
            list(staged_framing(frame_batches(iter([work])), events, quarantine, "r"))
        ).to_pylist()
        handed = [row["event"] for row in out if row["kind"] == "event"]
        summary = next(row["file"] for row in out if row["kind"] == "file")
        firsts = {(o, i) for o, i, _digest in PartFacts.from_json(summary["part"]).first_maps.values()}
        written = _staged_rows(events, [StagedFile.of(r["staged"]) for r in out if r["kind"] == "staged"])
        if number == 0:
            assert handed == []  # the first piece's shapes are a single walk's
        else:
            assert {(e["offset"], e["inner_index"]) for e in handed} == firsts and firsts
            assert all(e["event_type_name"] == "TABLE_MAP" and e["shape_changed"] for e in handed)
        in_piece = {k for k in whole if part.start <= k[0] < (part.end or len(data))}
        assert {(r["offset"], r["inner_index"]) for r in written} == in_piece - {
            (e["offset"], e["inner_index"]) for e in handed
        }
