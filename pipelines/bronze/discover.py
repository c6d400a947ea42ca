"""Which binlog files bronze has to (re)frame, and from where.

Files are listed with Spark's ``binaryFile`` source (``pathGlobFilter``, ``recursiveFileLookup``
and ``modifiedAfter`` from ``cfg.input``), selecting only ``path``, ``modificationTime`` and
``length``: without ``content`` Spark does not read the files' bytes.  Each listed file is then
compared with its ``binlog_files`` row:

=========  ====================================================================================
new        no row yet: frame from the start
unchanged  same length and modification time: nothing to do
grown      the previous walk ended cleanly (``complete``) or at a cut event (``truncated``, the
           server's active binlog) and the file is at least ``framed_until`` long: continue at
           ``framed_until`` with the FORMAT_DESCRIPTION and GTID in force there, read from the
           last ``binlog_events`` row before it.  The framing task checks that bytes
           ``[0, framed_until)`` still hash to ``prefix_sha256`` and frames the whole file
           again when they do not (a file rewritten in place).
changed    anything else (shorter than what was framed, or an earlier walk that ended in
           corruption, encryption or not a binlog): frame from the start, replacing its rows
=========  ====================================================================================

Files that disappear from the listing keep their rows: bronze is the history of what was read.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, fields, replace
from datetime import datetime
from enum import StrEnum
from typing import Any
from zoneinfo import ZoneInfo

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from conf import InputSettings
from pipelines.bronze.framing import MAGIC_LEN, RESUMABLE_STATUSES
from pipelines.storage import Lakehouse, Table

BINLOG_FILES_TABLE = Table.bronze("binlog_files")
BINLOG_EVENTS_TABLE = Table.bronze("binlog_events")


class Decision(StrEnum):
    """What bronze does with a listed file."""

    NEW = "new"
    GROWN = "grown"
    CHANGED = "changed"
    UNCHANGED = "unchanged"


@dataclass(frozen=True, slots=True)
class ListedFile:
    """A file as ``binaryFile`` lists it."""

    file: str
    size: int
    modification_time: datetime

    @property
    def file_name(self) -> str:
        """The base name (``mysql-bin.000042``)."""
        return os.path.basename(self.file.rstrip("/"))


@dataclass(frozen=True, slots=True)
class PreviousFile:
    """What ``binlog_files`` holds about a file, plus the state in force at ``framed_until``."""

    size: int
    modification_time: datetime
    status: str
    framed_until: int
    prefix_sha256: str | None
    event_count: int
    server_id: int | None
    server_version: str | None
    flavor: str | None
    binlog_version: int | None
    checksum_alg: str | None
    first_timestamp: int | None
    last_timestamp: int | None
    format_description: str | None = None  # of the last event before framed_until
    gtid: str | None = None  # likewise


@dataclass(frozen=True, slots=True)
class WorkItem:
    """One file to frame: the ``WORK_ITEMS`` columns, plus the decision that led to it."""

    file: str
    file_name: str
    size: int
    modification_time: datetime
    start_offset: int
    format_description: str | None
    gtid: str | None
    prefix_sha256: str | None
    event_count: int | None
    server_id: int | None
    server_version: str | None
    flavor: str | None
    binlog_version: int | None
    checksum_alg: str | None
    first_timestamp: int | None
    last_timestamp: int | None
    decision: Decision

    def row(self) -> tuple[Any, ...]:
        """The ``WORK_ITEMS`` columns, in order."""
        return tuple(getattr(self, f.name) for f in fields(self) if f.name != "decision")


def _item(listed: ListedFile, decision: Decision, resume: PreviousFile | None = None) -> WorkItem:
    """A work item framing ``listed`` from its start, or from ``resume.framed_until``."""
    return WorkItem(
        file=listed.file,
        file_name=listed.file_name,
        size=listed.size,
        modification_time=listed.modification_time,
        start_offset=0 if resume is None else resume.framed_until,
        format_description=None if resume is None else resume.format_description,
        gtid=None if resume is None else resume.gtid,
        prefix_sha256=None if resume is None else resume.prefix_sha256,
        event_count=None if resume is None else resume.event_count,
        server_id=None if resume is None else resume.server_id,
        server_version=None if resume is None else resume.server_version,
        flavor=None if resume is None else resume.flavor,
        binlog_version=None if resume is None else resume.binlog_version,
        checksum_alg=None if resume is None else resume.checksum_alg,
        first_timestamp=None if resume is None else resume.first_timestamp,
        last_timestamp=None if resume is None else resume.last_timestamp,
        decision=decision,
    )


def _may_resume(listed: ListedFile, previous: PreviousFile) -> bool:
    """Whether ``listed`` changed since ``previous`` in a way a resume may cover."""
    return (
        (previous.size, previous.modification_time) != (listed.size, listed.modification_time)
        and previous.status in RESUMABLE_STATUSES
        and MAGIC_LEN < previous.framed_until <= listed.size
    )


def decide(listed: ListedFile, previous: PreviousFile | None) -> WorkItem | None:
    """The work for one listed file, or None when it is unchanged (see the module docstring).

    >>> decide(ListedFile("file:/b/mysql-bin.000001", 120, t), None).decision
    <Decision.NEW: 'new'>
    """
    if previous is None:
        return _item(listed, Decision.NEW)
    if previous.size == listed.size and previous.modification_time == listed.modification_time:
        return None
    if not (_may_resume(listed, previous) and previous.format_description is not None):
        return _item(listed, Decision.CHANGED)
    return _item(listed, Decision.GROWN, previous)


def list_files(spark: SparkSession, settings: InputSettings) -> DataFrame:
    """``path``, ``modificationTime``, ``length`` of the input files (their bytes are not read).

    >>> list_files(spark, cfg.input).show()   # file:/data/binlogs/mysql-bin.000001 | ... | 1073741824
    """
    reader = (
        spark.read.format("binaryFile")
        .option("pathGlobFilter", settings.glob)
        .option("recursiveFileLookup", str(settings.recursive).lower())
    )
    if settings.modified_after is not None:
        zone = ZoneInfo(spark.conf.get("spark.sql.session.timeZone") or "UTC")
        after = settings.modified_after.astimezone(zone).strftime("%Y-%m-%dT%H:%M:%S")
        reader = reader.option("modifiedAfter", after)
    return reader.load(settings.path).select("path", "modificationTime", "length")


_FILE_COLUMNS = [f.name for f in fields(PreviousFile)][:-2]


def _resume_state(lake: Lakehouse, resume_at: dict[str, int]) -> dict[str, tuple[str, str | None]]:
    """Per file: the FORMAT_DESCRIPTION and GTID of its last event before ``resume_at[file]``
    (the state a resumed walk starts with); files without such an event are left out."""
    if not resume_at or not lake.exists(BINLOG_EVENTS_TABLE):
        return {}
    spark = lake.spark
    points = spark.createDataFrame(list(resume_at.items()), "file string, framed_until long")
    order = F.struct(F.col("offset"), F.coalesce(F.col("inner_index"), F.lit(-1)))
    rows = (
        lake.read(BINLOG_EVENTS_TABLE)
        .where(F.col("file").isin(sorted(resume_at)))
        .select("file", "offset", "inner_index", "format_description", "gtid")
        .join(F.broadcast(points), "file")
        .where(F.col("offset") < F.col("framed_until"))
        .groupBy("file")
        .agg(F.max_by(F.struct("format_description", "gtid"), order).alias("state"))
        .collect()
    )
    return {row.file: (row.state.format_description, row.state.gtid) for row in rows}


def discover(spark: SparkSession, settings: InputSettings, lake: Lakehouse) -> list[WorkItem]:
    """The work for this run: one item per new, grown or changed file, most bytes to read first."""
    listed = [ListedFile(row.path, row.length, row.modificationTime) for row in list_files(spark, settings).collect()]
    if not listed:
        return []
    known: dict[str, PreviousFile] = {}
    if lake.exists(BINLOG_FILES_TABLE):
        rows = (
            lake.read(BINLOG_FILES_TABLE)
            .where(F.col("file").isin([f.file for f in listed]))
            .select("file", *_FILE_COLUMNS)
            .collect()
        )
        known = {row.file: PreviousFile(*(row[name] for name in _FILE_COLUMNS)) for row in rows}
    resume_at = {
        f.file: known[f.file].framed_until for f in listed if f.file in known and _may_resume(f, known[f.file])
    }
    for file, (description, gtid) in _resume_state(lake, resume_at).items():
        known[file] = replace(known[file], format_description=description, gtid=gtid)
    work = [item for f in listed if (item := decide(f, known.get(f.file))) is not None]
    return sorted(work, key=lambda item: (-(item.size - item.start_offset), item.file))


__all__ = ["Decision", "ListedFile", "PreviousFile", "WorkItem", "decide", "discover", "list_files"]
