"""Bronze transforms: frame the files of a work list in Spark tasks, split the result into the tables.

:func:`frame_files` maps a frame of work items (``WORK_ITEMS``: one row per file to (re)frame,
with where to resume) to one frame of ``FRAMED`` rows with ``mapInArrow``.  Each task opens its
files itself -- a local path or ``file:`` URI with ``open``, an object-store or HDFS URI with
``pyarrow.fs`` configured from the job's Hadoop settings (:func:`open_binary`) -- and streams them
through :func:`pipelines.bronze.framing.frame_file`; file contents never travel through Spark,
only the framed rows do, in Arrow batches of bounded size (``batch_rows`` rows or ``batch_bytes``
of bodies, whichever comes first).

``FRAMED`` is a union: ``kind`` (``event`` | ``quarantine`` | ``file``) and one struct column
per kind, null in the other kinds' rows.  :func:`framed_events` and :func:`framed_quarantine`
select one kind with exactly the schema of its table; the file summaries are collected by the
stage, which decides duplicates before writing ``binlog_files``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from typing import Any, BinaryIO, cast
from urllib.parse import urlparse

import pyarrow as pa
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import LongType, MapType, StringType, StructField, StructType, TimestampType

from pipelines.bronze.framing import EventRow, FileSummary, Part, QuarantineRow, ResumePoint, frame_file
from pipelines.storage import open_arrow_input
from pipelines.tables import BINLOG_EVENTS, BINLOG_FILES, QUARANTINE, conform
from pipelines.workers import rarely_collected

WORK_ITEMS = StructType(
    [
        StructField("file", StringType(), False),
        StructField("file_name", StringType(), False),
        StructField("size", LongType(), False),  # length as listed: framing reads no further
        StructField("modification_time", TimestampType(), False),
        StructField("resume", StringType(), True),  # ResumePoint as JSON; null: frame from the start
        StructField("part", StringType(), True),  # Part as JSON; null: the whole file (or from resume)
    ]
)
"""One file (or one piece of a file) to frame, and from where."""


def _without_run_id(fields: list[StructField]) -> list[StructField]:
    return [StructField(f.name, f.dataType, True) for f in fields if f.name != "run_id"]


FILE_SUMMARY = StructType(
    [
        *(StructField(f.name, f.dataType, True) for f in BINLOG_FILES.schema.fields if f.name in FileSummary.__slots__),
        StructField("resumed_from", LongType(), True),
        StructField("problems", MapType(StringType(), LongType(), True), True),
        StructField("part", StringType(), True),
    ]
)
"""The ``binlog_files`` facts framing finds (the stage adds server, sequence, duplicates, run id)."""

SUMMARY_FIELDS = [f.name for f in FILE_SUMMARY.fields]

WALK_FIELDS = ("resumed_from", "problems", "part")
"""Summary fields about the walk itself, which ``binlog_files`` does not keep."""

EVENT = "event"
QUARANTINED = "quarantine"
FILE = "file"

FRAMED = StructType(
    [
        StructField("kind", StringType(), False),
        StructField(EVENT, StructType(_without_run_id(BINLOG_EVENTS.schema.fields)), True),
        StructField(QUARANTINED, StructType(_without_run_id(QUARANTINE.schema.fields)), True),
        StructField(FILE, FILE_SUMMARY, True),
    ]
)
"""What framing yields: one row per event, quarantine item or file, told apart by ``kind``."""

DEFAULT_BATCH_ROWS = 10_000
DEFAULT_BATCH_BYTES = 16 << 20

_ARROW = to_arrow_schema(FRAMED, timezone="UTC")


def open_binary(
    uri: str, filesystem_options: Mapping[str, str] | None = None, *, random_access: bool = False
) -> Callable[[], BinaryIO]:
    """A function opening ``uri`` for reading (seekable with ``random_access``, else a sequential
    stream where that reads faster): ``open`` for local paths and ``file:`` URIs, else
    ``pyarrow.fs`` set up from ``filesystem_options``, the driver's Hadoop settings
    (:func:`pipelines.storage.hadoop_filesystem_options`): ``s3a://``/``s3://``/``s3n://`` with
    ``S3FileSystem``, ``gs://`` with ``GcsFileSystem``, ``abfs[s]://``/``wasb[s]://`` with
    ``AzureFileSystem``, ``hdfs://`` with ``HadoopFileSystem`` (see
    :func:`pipelines.storage.arrow_target`). Other schemes raise
    :class:`pipelines.storage.UnsupportedSchemeError` naming the file.

    >>> with open_binary("file:/var/log/mysql/mysql-bin.000001")() as stream:
    ...     magic = stream.read(4)
    """
    parsed = urlparse(uri)
    if parsed.scheme in ("", "file") or len(parsed.scheme) == 1:  # a Windows drive is no scheme
        path = parsed.path if parsed.scheme == "file" else uri
        return lambda: open(path, "rb")
    return open_arrow_input(uri, filesystem_options or {}, random_access=random_access)


def resume_json(point: ResumePoint) -> str:
    """A resume point as the ``resume`` column of a work item."""
    return json.dumps(
        {
            "offset": point.offset,
            "format_descriptions": {str(k): v for k, v in point.format_descriptions.items()},
            "gtid": point.gtid,
            "prefix_sha256": point.prefix_sha256,
            "counts": point.counts,
            "shapes": point.shapes,
            "facts": point.facts,
        }
    )


def part_json(part: Part | None) -> str | None:
    """A piece of a file as the ``part`` column of a work item."""
    if part is None:
        return None
    return json.dumps({"start": part.start, "end": part.end, "format_description": part.format_description})


def part_of(text: str | None) -> Part | None:
    """The piece of a work item's ``part`` column."""
    if text is None:
        return None
    data = json.loads(text)
    return Part(data["start"], data["end"], data["format_description"])


def resume_point(text: str | None) -> ResumePoint | None:
    """The resume point of a work item's ``resume`` column."""
    if text is None:
        return None
    data = json.loads(text)
    return ResumePoint(
        offset=data["offset"],
        format_descriptions={int(k): v for k, v in data["format_descriptions"].items()},
        gtid=data["gtid"],
        prefix_sha256=data["prefix_sha256"],
        counts=data["counts"],
        shapes=data.get("shapes", {}),
        facts=data["facts"],
    )


class _Batcher:
    """Collects framed rows of one kind and turns them into Arrow record batches of ``FRAMED``."""

    def __init__(self, kind: str, max_rows: int, max_bytes: int) -> None:
        self.kind = kind
        self.index = [field.name for field in _ARROW].index(kind)
        self.struct = cast(pa.StructType, _ARROW.field(kind).type)
        self.fields = [self.struct.field(i) for i in range(self.struct.num_fields)]
        self.max_rows = max_rows
        self.max_bytes = max_bytes
        self.rows: list[tuple[Any, ...]] = []
        self.bytes = 0

    def add(self, row: tuple[Any, ...], size: int) -> pa.RecordBatch | None:
        """Keep ``row`` (``size`` bytes of body); return a batch when the limits are reached."""
        self.rows.append(row)
        self.bytes += size
        if len(self.rows) >= self.max_rows or self.bytes >= self.max_bytes:
            return self.flush()
        return None

    def flush(self) -> pa.RecordBatch | None:
        """The rows kept so far as one batch (None when there are none)."""
        if not self.rows:
            return None
        rows, self.rows, self.bytes = self.rows, [], 0
        columns = list(zip(*rows, strict=True))
        children = [pa.array(col, type=field.type) for col, field in zip(columns, self.fields, strict=True)]
        del rows, columns
        filled = pa.StructArray.from_arrays(children, fields=self.fields)
        n = len(filled)
        arrays: list[pa.Array] = []
        for i, field in enumerate(_ARROW):
            if i == 0:
                arrays.append(pa.array([self.kind] * n, type=pa.string()))
            elif i == self.index:
                arrays.append(filled)
            else:
                arrays.append(pa.nulls(n, type=field.type))
        return pa.RecordBatch.from_arrays(arrays, schema=_ARROW)


def _summary_row(summary: FileSummary) -> tuple[Any, ...]:
    return tuple(getattr(summary, name) for name in SUMMARY_FIELDS)


@rarely_collected
def frame_batches(
    items: Iterator[pa.RecordBatch],
    *,
    verify_checksums: bool = True,
    batch_rows: int = DEFAULT_BATCH_ROWS,
    batch_bytes: int = DEFAULT_BATCH_BYTES,
    filesystem_options: Mapping[str, str] | None = None,
    spill_dir: str | None = None,
) -> Iterator[pa.RecordBatch]:
    """Frame every work item of ``items`` (``WORK_ITEMS`` batches) into ``FRAMED`` batches.

    ``filesystem_options`` configures the reading of object-store URIs (see :func:`open_binary`);
    ``spill_dir``: where events of a transaction too large to wait in memory wait on disk.
    """
    events = _Batcher(EVENT, batch_rows, batch_bytes)
    quarantine = _Batcher(QUARANTINED, batch_rows, batch_bytes)
    files = _Batcher(FILE, batch_rows, batch_bytes)
    for batch in items:
        for item in batch.to_pylist():
            part = part_of(item["part"])
            framed = frame_file(
                open_binary(item["file"], filesystem_options, random_access=part is not None),
                item["file"],
                item["file_name"],
                resume=resume_point(item["resume"]),
                part=part,
                verify_checksums=verify_checksums,
                size=item["size"],
                modification_time=item["modification_time"],
                spill_dir=spill_dir,
            )
            for row in framed:
                ready: pa.RecordBatch | None
                if type(row) is EventRow:
                    ready = events.add(row, len(row.body))
                elif type(row) is QuarantineRow:
                    ready = quarantine.add(row, len(row.body or b""))
                else:
                    ready = files.add(_summary_row(cast(FileSummary, row)), 0)
                if ready is not None:
                    yield ready
            for batcher in (events, quarantine, files):
                ready = batcher.flush()
                if ready is not None:
                    yield ready


def _task_scratch() -> str | None:
    """Spark's scratch folder of the running task's executor (None outside a Spark task)."""
    try:
        from pyspark import SparkFiles  # noqa: PLC0415 (only inside tasks)

        return SparkFiles.getRootDirectory()
    except Exception:
        return None


def frame_files(
    *,
    verify_checksums: bool = True,
    batch_rows: int = DEFAULT_BATCH_ROWS,
    batch_bytes: int = DEFAULT_BATCH_BYTES,
    filesystem_options: Mapping[str, str] | None = None,
    spill_dir: str | None = None,
) -> Callable[[DataFrame], DataFrame]:
    """``WORK_ITEMS`` -> ``FRAMED``: frame each file in the task holding its work item.

    ``filesystem_options`` (plain data, shipped with the tasks) are the Hadoop settings for
    reading object-store URIs, from :func:`pipelines.storage.hadoop_filesystem_options` on the driver.
    """
    options = dict(filesystem_options or {})

    def run(items: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        return frame_batches(
            items,
            verify_checksums=verify_checksums,
            batch_rows=batch_rows,
            batch_bytes=batch_bytes,
            filesystem_options=options,
            spill_dir=spill_dir or _task_scratch(),
        )

    def transform(work: DataFrame) -> DataFrame:
        return work.mapInArrow(run, FRAMED)

    return transform


def _kind(kind: str) -> Callable[[DataFrame], DataFrame]:
    def transform(framed: DataFrame) -> DataFrame:
        return framed.where(F.col("kind") == kind).select(f"{kind}.*")

    return transform


def framed_events(run_id: str) -> Callable[[DataFrame], DataFrame]:
    """The ``binlog_events`` rows of a ``FRAMED`` frame, written by run ``run_id``."""

    def transform(framed: DataFrame) -> DataFrame:
        events = framed.transform(_kind(EVENT)).withColumn("run_id", F.lit(run_id))
        return events.transform(conform(BINLOG_EVENTS))

    return transform


def framed_quarantine(run_id: str) -> Callable[[DataFrame], DataFrame]:
    """The ``quarantine`` rows of a ``FRAMED`` frame, written by run ``run_id``."""

    def transform(framed: DataFrame) -> DataFrame:
        rows = framed.transform(_kind(QUARANTINED)).withColumn("run_id", F.lit(run_id))
        return rows.transform(conform(QUARANTINE))

    return transform


def framed_file() -> Column:
    """The file a ``FRAMED`` row belongs to, whatever its kind."""
    return F.coalesce(F.col(f"{EVENT}.file"), F.col(f"{QUARANTINED}.file"), F.col(f"{FILE}.file"))


def shapes_kept(kept: Mapping[str, list[tuple[int, int | None]]]) -> Callable[[DataFrame], DataFrame]:
    """``binlog_events -> binlog_events`` with ``shape_changed`` False for the maps of ``kept``
    (by file: ``(offset, inner_index)``), the first map of a table in a piece of a file framed in
    pieces whose shape is the one the pieces before it ended with (see
    :func:`pipelines.bronze.framing.merge_parts`)."""
    by_place: dict[tuple[str, int | None], list[int]] = {}
    for file, places in kept.items():
        for offset, inner_index in places:
            by_place.setdefault((file, inner_index), []).append(offset)
    kept_here = F.lit(False)
    for (file, inner_index), offsets in sorted(by_place.items(), key=str):
        inner = F.col("inner_index").isNull() if inner_index is None else F.col("inner_index") == inner_index
        kept_here = kept_here | ((F.col("file") == file) & inner & F.col("offset").isin(sorted(offsets)))

    def transform(events: DataFrame) -> DataFrame:
        return events.withColumn("shape_changed", F.when(kept_here, F.lit(False)).otherwise(F.col("shape_changed")))

    return transform


def framed_summaries(framed: DataFrame) -> DataFrame:
    """The file summaries of a ``FRAMED`` frame (schema ``FILE_SUMMARY``)."""
    return framed.transform(_kind(FILE))


__all__ = [
    "FILE_SUMMARY",
    "FRAMED",
    "SUMMARY_FIELDS",
    "WALK_FIELDS",
    "WORK_ITEMS",
    "frame_batches",
    "frame_files",
    "framed_events",
    "framed_file",
    "framed_quarantine",
    "framed_summaries",
    "open_binary",
    "part_json",
    "part_of",
    "resume_json",
    "resume_point",
    "shapes_kept",
]
