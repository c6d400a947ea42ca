"""Which files a layer still has to (re)build, so that every stage is incremental and idempotent.

Bronze records in ``binlog_files`` how far each file is framed (``framed_until``) and a hash of
that prefix.  Silver and gold keep their own ``_progress`` table with the same two facts as of
their last successful write for each file.  A file is pending for a layer when bronze has it
framed further, or with another prefix hash (a file rewritten in place), than the layer has seen.
A layer rebuilds a pending file's rows completely (``replace_where`` on ``file``) and records its
progress afterwards, so a run killed anywhere leaves the file pending and the re-run writes the
same rows again: nothing is lost, nothing doubles.
"""

from __future__ import annotations

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


__all__ = ["PROGRESS", "file_predicate", "pending_files", "progress_table", "record_progress"]
