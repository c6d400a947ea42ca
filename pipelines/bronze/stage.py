"""The bronze stage: list the binlog files, frame the new, grown and changed ones, write the tables.

::

    out = build_bronze(spark, cfg, lake)   # discover, frame (cached), collect the file summaries
    write_bronze(lake, out)                # binlog_events, quarantine, then binlog_files

Framing runs in Spark tasks, one file per task (largest first, or a few small files packed
together), each streaming its file through :func:`pipelines.bronze.framing.frame_file`; the
framed rows are stored on local disk (an eager local checkpoint, row by row, so memory does
not depend on file or event sizes) and the gates and the three writes read them from there.

Idempotence: ``binlog_files`` is written last and is what the next run compares against.
New and changed files replace all their rows (``file IN (...)``); a grown file replaces its
rows from where it was resumed (``file = X AND offset >= R``) -- its quarantine rows too, which
removes the truncation row the previous run left at ``R``, while rows before ``R`` stay.  A run
killed after any write redoes the same work from the same ``binlog_files`` and writes the same
rows again.
"""

from __future__ import annotations

import contextlib
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession

from conf import AppConfig
from pipelines.bronze.discover import BINLOG_EVENTS_TABLE, BINLOG_FILES_TABLE, WorkItem, discover
from pipelines.bronze.framing import STAGE
from pipelines.bronze.schema import BINLOG_EVENTS, BINLOG_FILES, QUARANTINE
from pipelines.bronze.transforms import (
    DEFAULT_BATCH_BYTES,
    FRAMED,
    WORK_ITEMS,
    frame_files,
    framed_events,
    framed_files,
    framed_quarantine,
    framed_summaries,
)
from pipelines.progress import file_predicate
from pipelines.storage import Lakehouse, Table, hadoop_filesystem_options

QUARANTINE_TABLE = Table.bronze("quarantine")

MAX_TASKS = 512
"""Most framing tasks per run; beyond it small files share tasks (balanced by size)."""


@dataclass
class BronzeOutput:
    """What a bronze run frames; the frames are read from local disk until :meth:`unpersist`."""

    files: list[str]
    binlog_files: DataFrame
    events: DataFrame
    quarantine: DataFrame
    replace_predicate: str
    quarantine_predicate: str = "false"
    resumed: dict[str, int] = field(default_factory=dict)
    """Grown files continued at an offset (file -> offset); the other files were framed whole."""
    framed: DataFrame | None = None

    def unpersist(self) -> None:
        """Release the framing result stored on local disk (else freed when the session drops it)."""
        if self.framed is None:
            return
        # another plan shape (e.g. Spark Connect): Spark's cleaner frees the blocks later
        with contextlib.suppress(Exception):
            self.framed._jdf.queryExecution().logical().rdd().unpersist(False)
        self.framed = None


def _quote(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def replace_predicates(whole: list[str], resumed: dict[str, int]) -> tuple[str, str]:
    """The ``replaceWhere`` predicates of ``binlog_events`` and of bronze's quarantine rows.

    >>> replace_predicates(["f1"], {"f2": 900})[0]
    "`file` IN ('f1') OR (`file` = 'f2' AND `offset` >= 900)"
    """
    events: list[str] = [file_predicate(whole)] if whole else []
    quarantine: list[str] = list(events)
    for file, offset in sorted(resumed.items()):
        events.append(f"(`file` = {_quote(file)} AND `offset` >= {offset})")
        quarantine.append(f"(`file` = {_quote(file)} AND (`offset` IS NULL OR `offset` >= {offset}))")
    if not events:
        return "false", "false"
    return " OR ".join(events), f"`stage` = '{STAGE}' AND ({' OR '.join(quarantine)})"


def _bins(items: list[WorkItem], count: int) -> list[list[WorkItem]]:
    """Spread ``items`` (largest first) over ``count`` bins, each to the least loaded one."""
    bins: list[list[WorkItem]] = [[] for _ in range(count)]
    loads = [0] * count
    for item in items:
        target = loads.index(min(loads))
        bins[target].append(item)
        loads[target] += item.size - item.start_offset
    return [b for b in bins if b]


def work_frame(spark: SparkSession, items: list[WorkItem], max_tasks: int = MAX_TASKS) -> DataFrame:
    """The work items as a ``WORK_ITEMS`` frame with one partition per file (up to ``max_tasks``)."""
    bins = _bins(items, min(len(items), max_tasks))
    rows = [[item.row() for item in b] for b in bins]
    rdd = spark.sparkContext.parallelize(rows, len(rows)).flatMap(lambda b: b)
    return spark.createDataFrame(rdd, WORK_ITEMS)


def _empty(spark: SparkSession) -> BronzeOutput:
    return BronzeOutput(
        files=[],
        binlog_files=spark.createDataFrame([], BINLOG_FILES),
        events=spark.createDataFrame([], BINLOG_EVENTS),
        quarantine=spark.createDataFrame([], QUARANTINE),
        replace_predicate="false",
    )


def byte_size(size: int) -> str:
    """A byte count for progress lines.

    >>> byte_size(512), byte_size(27030), byte_size(3 << 30)
    ('512 B', '26.4 KiB', '3.0 GiB')
    """
    if size < 1024:
        return f"{size} B"
    for unit, shift in (("GiB", 30), ("MiB", 20)):
        if size >= 1 << shift:
            return f"{size / (1 << shift):.1f} {unit}"
    return f"{size / 1024:.1f} KiB"


def work_summary(items: list[WorkItem]) -> str:
    """What discovery found to do, for a progress line.

    >>> work_summary(items)
    '3 file(s) to frame (1 grown, 2 new), 2.4 MiB to read'
    """
    decisions = Counter(item.decision.value for item in items)
    kinds = ", ".join(f"{n} {decision}" for decision, n in sorted(decisions.items()))
    to_read = sum(item.size - item.start_offset for item in items)
    return f"{len(items)} file(s) to frame ({kinds}), {byte_size(to_read)} to read"


def build_bronze(
    spark: SparkSession, cfg: AppConfig, lake: Lakehouse, *, say: Callable[[str], None] | None = None
) -> BronzeOutput:
    """Discover and frame the files that are new, grown or changed since the last run.

    ``say`` receives the milestones (what discovery found, framing done) as progress lines.
    """
    items = discover(spark, cfg.input, lake)
    if say is not None:
        say(work_summary(items) if items else "no new, grown or changed file")
    if not items:
        return _empty(spark)
    started = time.monotonic()
    batch_rows = int(spark.conf.get("spark.sql.execution.arrow.maxRecordsPerBatch") or 10_000)
    framed = (
        work_frame(spark, items)
        .transform(
            frame_files(
                verify_checksums=cfg.decoder.verify_checksums,
                batch_rows=max(1, batch_rows),
                batch_bytes=DEFAULT_BATCH_BYTES,
                filesystem_options=hadoop_filesystem_options(spark),
            )
        )
        # rows are stored one by one on local disk (a cache's column batches would hold 10 000
        # rows, however large their bodies, in memory); eager: framing runs here, once
        .localCheckpoint(eager=True, storageLevel=StorageLevel.DISK_ONLY)
    )
    summaries = framed.transform(framed_summaries).select("file", "resumed_from").collect()
    if say is not None:
        say(f"framed {len(summaries)} file(s) in {time.monotonic() - started:.1f}s")
    resumed = {row.file: row.resumed_from for row in summaries if row.resumed_from > 0}
    whole = sorted(row.file for row in summaries if row.resumed_from == 0)
    events_predicate, quarantine_predicate = replace_predicates(whole, resumed)
    return BronzeOutput(
        files=sorted(row.file for row in summaries),
        binlog_files=framed.transform(framed_files),
        events=framed.transform(framed_events),
        quarantine=framed.transform(framed_quarantine),
        replace_predicate=events_predicate,
        quarantine_predicate=quarantine_predicate,
        resumed=resumed,
        framed=framed,
    )


def write_bronze(lake: Lakehouse, out: BronzeOutput) -> None:
    """Write events, then quarantine rows, then ``binlog_files`` (last: it marks the files done)."""
    if not out.files:
        return
    lake.replace_where(out.events, BINLOG_EVENTS_TABLE, out.replace_predicate)
    lake.replace_where(out.quarantine, QUARANTINE_TABLE, out.quarantine_predicate)
    lake.merge(out.binlog_files, BINLOG_FILES_TABLE, ["file"])


__all__ = [
    "FRAMED",
    "BronzeOutput",
    "build_bronze",
    "byte_size",
    "replace_predicates",
    "work_frame",
    "work_summary",
    "write_bronze",
]
