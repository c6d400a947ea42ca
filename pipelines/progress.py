"""Progress in both senses: which files a layer still has to (re)build, and what a running stage is doing.

**Incremental state.** Bronze records in ``binlog_files`` how far each file is framed (``framed_until``) and a hash of
that prefix.  Silver and gold keep their own ``_progress`` table with the same two facts as of
their last successful write for each file.  A file is pending for a layer when bronze has it
framed further, or with another prefix hash (a file rewritten in place), than the layer has seen.
A layer rebuilds a pending file's rows completely (``replace_where`` on ``file``) and records its
progress afterwards, so a run killed anywhere leaves the file pending and the re-run writes the
same rows again: nothing is lost, nothing doubles.

**Progress lines.** :class:`SparkProgress` is a context manager that, while a stage runs, polls
Spark's status tracker every few seconds on a background thread and reports the active jobs and
stages with their tasks done and total (Spark's own console progress bar is off: see
``pipelines/session.py``)::

    with SparkProgress(spark.sparkContext.statusTracker(), say, every=10.0):
        build_gold(spark, cfg, lake)
    # say("Spark job 12: stage 31 (mapInArrow at stage.py:98) 3/8 tasks, 2 running")

It says nothing when the status has not changed since its last line, nor when the block ends
before the first interval.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from types import TracebackType
from typing import Any, Protocol

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import LongType, StringType, StructField, StructType

from pipelines.bronze.schema import BINLOG_FILES
from pipelines.storage import Lakehouse, Layer, Table

PROGRESS = StructType(
    [
        StructField("file", StringType(), False),
        StructField("framed_until", LongType(), False),
        StructField("prefix_sha256", StringType(), True),
    ]
)
"""Per file: the bronze state a layer last built from (``<layer>._progress``)."""

BINLOG_FILES_TABLE = Table.bronze("binlog_files")


def progress_table(layer: Layer) -> Table:
    """The progress table of a derived layer."""
    return Table(layer, "_progress")


def pending_files(lake: Lakehouse, layer: Layer) -> list[str]:
    """Files whose bronze state differs from what ``layer`` last built from, sorted."""
    files = lake.read_or_empty(BINLOG_FILES_TABLE, BINLOG_FILES).select("file", "framed_until", "prefix_sha256")
    done = lake.read_or_empty(progress_table(layer), PROGRESS).select(
        "file", F.col("framed_until").alias("done_until"), F.col("prefix_sha256").alias("done_sha256")
    )
    pending = files.join(done, "file", "left").where(
        F.col("done_until").isNull()
        | (F.col("done_until") != F.col("framed_until"))
        | ~F.col("done_sha256").eqNullSafe(F.col("prefix_sha256"))
    )
    return sorted(row.file for row in pending.select("file").collect())


def record_progress(lake: Lakehouse, layer: Layer, files: list[str]) -> None:
    """Record that ``layer`` is now built from bronze's current state of ``files``."""
    if not files:
        return
    state: DataFrame = (
        lake.read(BINLOG_FILES_TABLE).where(F.col("file").isin(files)).select("file", "framed_until", "prefix_sha256")
    )
    lake.merge(state, progress_table(layer), ["file"])


def file_predicate(files: list[str], column: str = "file") -> str:
    """A SQL predicate selecting rows of ``files`` (for ``Lakehouse.replace_where``)."""
    if not files:
        return "false"
    quoted = ", ".join("'" + f.replace("\\", "\\\\").replace("'", "\\'") + "'" for f in files)
    return f"`{column}` IN ({quoted})"


class StatusTracker(Protocol):
    """The part of ``pyspark.StatusTracker`` the progress lines read."""

    def getActiveJobsIds(self) -> Sequence[int]: ...  # Spark's names

    def getActiveStageIds(self) -> Sequence[int]: ...

    def getStageInfo(self, stageId: int) -> Any: ...


MAX_STAGES_SHOWN = 4
"""Stages named in one progress line; more are counted (``+2 more stages``)."""


def _stage_name(name: str) -> str:
    """``collect at /a/b/stage.py:147`` -> ``collect at stage.py:147``."""
    action, sep, where = name.partition(" at ")
    return f"{action}{sep}{os.path.basename(where)}" if sep else name


def spark_status(tracker: StatusTracker) -> str | None:
    """One line on the active Spark jobs and stages, or None when nothing runs.

    >>> spark_status(spark.sparkContext.statusTracker())
    'Spark job 4: stage 7 (collect at stage.py:147) 3/8 tasks, 2 running'
    """
    jobs = sorted(tracker.getActiveJobsIds())
    stages = sorted(tracker.getActiveStageIds())
    if not jobs and not stages:
        return None
    parts = []
    for stage_id in stages[:MAX_STAGES_SHOWN]:
        info = tracker.getStageInfo(stage_id)
        if info is None:  # finished between the two calls
            continue
        part = f"stage {stage_id} ({_stage_name(info.name)}) {info.numCompletedTasks}/{info.numTasks} tasks"
        if info.numActiveTasks:
            part += f", {info.numActiveTasks} running"
        if info.numFailedTasks:
            part += f", {info.numFailedTasks} failed"
        parts.append(part)
    if len(stages) > MAX_STAGES_SHOWN:
        parts.append(f"+{len(stages) - MAX_STAGES_SHOWN} more stages")
    label = "Spark job" if len(jobs) == 1 else "Spark jobs"
    return f"{label} {', '.join(map(str, jobs)) or '-'}: {'; '.join(parts) or 'starting'}"


class SparkProgress:
    """Report :func:`spark_status` through ``say`` every ``every`` seconds while the block runs.

    ``every`` None or not positive: silent. A line is said only when it differs from the last one
    said; the tracker failing (the session stopping) ends the reporting quietly.
    """

    def __init__(self, tracker: StatusTracker | None, say: Callable[[str], None], every: float | None) -> None:
        self.tracker = tracker
        self.say = say
        self.every = every
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._last: str | None = None

    def poll(self) -> None:
        """Say the current status if it changed since the last line said."""
        if self.tracker is None:
            return
        line = spark_status(self.tracker)
        if line is not None and line != self._last:
            self.say(line)
        self._last = line

    def _loop(self) -> None:
        assert self.every is not None
        while not self._stop.wait(self.every):
            try:
                self.poll()
            except Exception:  # progress is best effort: it never breaks the run
                return

    def __enter__(self) -> SparkProgress:
        if self.tracker is not None and self.every is not None and self.every > 0:
            self._thread = threading.Thread(target=self._loop, name="binlog-lakehouse-progress", daemon=True)
            self._thread.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None


__all__ = [
    "PROGRESS",
    "SparkProgress",
    "StatusTracker",
    "file_predicate",
    "pending_files",
    "progress_table",
    "record_progress",
    "spark_status",
]
