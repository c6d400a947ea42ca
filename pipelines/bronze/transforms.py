"""Bronze transforms: frame the files of a work list in Spark tasks, split the result into the tables.

:func:`frame_files` maps a frame of work items (``WORK_ITEMS``: one row per file to (re)frame,
with where to start) to one frame of ``FRAMED`` rows with ``mapInArrow``.  Each task opens its
files itself -- a local path or ``file:`` URI with ``open``, an object-store or HDFS URI with
``pyarrow.fs`` configured from the job's Hadoop settings (:func:`open_binary`) -- and streams them through
:func:`pipelines.bronze.framing.frame_file`; file contents never travel through Spark, only
the framed rows do, in Arrow batches of bounded size (``batch_rows`` rows or ``batch_bytes`` of
bodies, whichever comes first).

``FRAMED`` is a union: ``kind`` (``event`` | ``quarantine`` | ``file``) and one struct column
per kind, null in the other kinds' rows.  :func:`framed_events`, :func:`framed_quarantine` and
:func:`framed_files` select one kind with exactly the schema of its table.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from datetime import UTC, datetime
from typing import Any, BinaryIO, cast
from urllib.parse import urlparse

import pyarrow as pa
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import (
    BinaryType,
    BooleanType,
    DataType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from pipelines.bronze.framing import EventRow, FileFacts, FileSummary, QuarantineRow, frame_file
from pipelines.bronze.schema import BINLOG_EVENTS, BINLOG_FILES, QUARANTINE
from pipelines.storage import open_arrow_input

WORK_ITEMS = StructType(
    [
        StructField("file", StringType(), False),
        StructField("file_name", StringType(), False),
        StructField("size", LongType(), False),  # length as listed: framing reads no further
        StructField("modification_time", TimestampType(), False),
        StructField("start_offset", LongType(), False),  # 0, or framed_until of a grown file
        StructField("format_description", StringType(), True),  # in force at start_offset
        StructField("gtid", StringType(), True),  # in force at start_offset
        StructField("prefix_sha256", StringType(), True),  # expected hash of [0, start_offset)
        StructField("event_count", LongType(), True),  # previous summary facts, carried over
        StructField("server_id", LongType(), True),
        StructField("server_version", StringType(), True),
        StructField("flavor", StringType(), True),
        StructField("binlog_version", IntegerType(), True),
        StructField("checksum_alg", StringType(), True),
        StructField("first_timestamp", LongType(), True),
        StructField("last_timestamp", LongType(), True),
    ]
)
"""One file to frame, and from where (``start_offset`` > 4 resumes a grown file)."""

FILE_SUMMARY = StructType([*BINLOG_FILES.fields, StructField("resumed_from", LongType(), False)])
"""``BINLOG_FILES`` plus where framing started (0, or the resume offset when the prefix matched)."""

EVENT = "event"
QUARANTINED = "quarantine"
FILE = "file"

FRAMED = StructType(
    [
        StructField("kind", StringType(), False),
        StructField(EVENT, BINLOG_EVENTS, True),
        StructField(QUARANTINED, QUARANTINE, True),
        StructField(FILE, FILE_SUMMARY, True),
    ]
)
"""What framing yields: one row per event, quarantine item or file, told apart by ``kind``."""

DEFAULT_BATCH_ROWS = 10_000
DEFAULT_BATCH_BYTES = 16 << 20

_ARROW = to_arrow_schema(FRAMED, timezone="UTC")


def open_binary(uri: str, filesystem_options: Mapping[str, str] | None = None) -> Callable[[], BinaryIO]:
    """A function opening ``uri`` for reading: ``open`` for local paths and ``file:`` URIs, else
    ``pyarrow.fs`` set up from ``filesystem_options``, the driver's Hadoop settings
    (:func:`pipelines.storage.hadoop_filesystem_options`): ``s3a://``/``s3://``/``s3n://`` with
    ``S3FileSystem``, ``gs://`` with ``GcsFileSystem``, ``abfs[s]://``/``wasb[s]://`` with
    ``AzureFileSystem``, ``hdfs://`` with ``HadoopFileSystem`` (see
    :func:`pipelines.storage.arrow_target`). Other schemes raise
    :class:`pipelines.storage.UnsupportedSchemeError` naming the file.

    >>> with open_binary("file:/var/log/mysql/mysql-bin.000001")() as stream:
    ...     magic = stream.read(4)
    >>> read = open_binary("s3a://logs/mysql-bin.000001", {"fs.s3a.endpoint": "http://minio:9000"})
    """
    parsed = urlparse(uri)
    if parsed.scheme in ("", "file") or len(parsed.scheme) == 1:  # a Windows drive is no scheme
        path = parsed.path if parsed.scheme == "file" else uri
        return lambda: open(path, "rb")
    return open_arrow_input(uri, filesystem_options or {})


class _Batcher:
    """Collects framed rows of one kind and turns them into Arrow record batches of ``FRAMED``."""

    def __init__(self, kind: str, max_rows: int, max_bytes: int) -> None:
        self.kind = kind
        self.index = [field.name for field in _ARROW].index(kind)
        self.struct = cast(pa.StructType, _ARROW.field(kind).type)
        self.fields = [self.struct.field(i) for i in range(self.struct.num_fields)]
        self.body_at = self.struct.get_field_index("body")
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


def _facts(item: dict[str, Any]) -> FileFacts | None:
    if item["event_count"] is None:
        return None
    return FileFacts(
        item["event_count"],
        item["server_id"],
        item["server_version"],
        item["flavor"],
        item["binlog_version"],
        item["checksum_alg"],
        item["first_timestamp"],
        item["last_timestamp"],
    )


def frame_batches(
    items: Iterator[pa.RecordBatch],
    *,
    verify_checksums: bool = True,
    batch_rows: int = DEFAULT_BATCH_ROWS,
    batch_bytes: int = DEFAULT_BATCH_BYTES,
    filesystem_options: Mapping[str, str] | None = None,
) -> Iterator[pa.RecordBatch]:
    """Frame every work item of ``items`` (``WORK_ITEMS`` batches) into ``FRAMED`` batches.

    ``filesystem_options`` configures the reading of object-store URIs (see :func:`open_binary`).
    """
    events = _Batcher(EVENT, batch_rows, batch_bytes)
    quarantine = _Batcher(QUARANTINED, batch_rows, batch_bytes)
    files = _Batcher(FILE, batch_rows, batch_bytes)
    for batch in items:
        for item in batch.to_pylist():
            framed = frame_file(
                open_binary(item["file"], filesystem_options),
                item["file"],
                item["file_name"],
                item["start_offset"],
                item["format_description"],
                verify_checksums,
                gtid=item["gtid"],
                prefix_sha256=item["prefix_sha256"],
                previous=_facts(item),
                size=item["size"],
                modification_time=item["modification_time"],
            )
            for row in framed:
                ready: pa.RecordBatch | None
                if type(row) is EventRow:
                    ready = events.add(row, len(row.body))
                elif type(row) is QuarantineRow:
                    ready = quarantine.add(row, len(row.body or b""))
                else:
                    summary = cast(FileSummary, row)
                    ready = files.add((*summary.row(), summary.resumed_from), 0)
                if ready is not None:
                    yield ready
            for batcher in (events, quarantine, files):
                ready = batcher.flush()
                if ready is not None:
                    yield ready


def frame_files(
    *,
    verify_checksums: bool = True,
    batch_rows: int = DEFAULT_BATCH_ROWS,
    batch_bytes: int = DEFAULT_BATCH_BYTES,
    filesystem_options: Mapping[str, str] | None = None,
) -> Callable[[DataFrame], DataFrame]:
    """``WORK_ITEMS`` -> ``FRAMED``: frame each file in the task holding its work item.

    ``filesystem_options`` (plain data, shipped with the tasks) are the Hadoop settings for
    reading object-store URIs, from :func:`pipelines.storage.hadoop_filesystem_options` on the driver.

    >>> framed = work_items.transform(frame_files(filesystem_options=hadoop_filesystem_options(spark)))
    """
    options = dict(filesystem_options or {})

    def run(items: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        return frame_batches(
            items,
            verify_checksums=verify_checksums,
            batch_rows=batch_rows,
            batch_bytes=batch_bytes,
            filesystem_options=options,
        )

    def transform(work: DataFrame) -> DataFrame:
        return work.mapInArrow(run, FRAMED)

    return transform


_ZERO: dict[type[DataType], object] = {
    StringType: "",
    BinaryType: bytearray(),
    LongType: 0,
    IntegerType: 0,
    BooleanType: False,
    TimestampType: datetime(1970, 1, 1, tzinfo=UTC),
}


def _field(kind: str, field: StructField) -> Column:
    column = F.col(f"{kind}.{field.name}")
    if not field.nullable:
        # never null in rows of this kind; the coalesce only lets Spark know, so tables get NOT NULL
        column = F.coalesce(column, F.lit(_ZERO[type(field.dataType)]).cast(field.dataType))
    return column.alias(field.name)


def _select(kind: str, schema: StructType) -> Callable[[DataFrame], DataFrame]:
    def transform(framed: DataFrame) -> DataFrame:
        return framed.where(F.col(kind).isNotNull()).select(*(_field(kind, f) for f in schema.fields))

    return transform


def framed_events(framed: DataFrame) -> DataFrame:
    """The ``binlog_events`` rows of a ``FRAMED`` frame (schema ``BINLOG_EVENTS``)."""
    return framed.transform(_select(EVENT, BINLOG_EVENTS))


def framed_quarantine(framed: DataFrame) -> DataFrame:
    """The ``quarantine`` rows of a ``FRAMED`` frame (schema ``QUARANTINE``)."""
    return framed.transform(_select(QUARANTINED, QUARANTINE))


def framed_files(framed: DataFrame) -> DataFrame:
    """The ``binlog_files`` rows of a ``FRAMED`` frame (schema ``BINLOG_FILES``)."""
    return framed.transform(_select(FILE, BINLOG_FILES))


def framed_summaries(framed: DataFrame) -> DataFrame:
    """The file rows with ``resumed_from`` (schema ``FILE_SUMMARY``)."""
    return framed.transform(_select(FILE, FILE_SUMMARY))


__all__ = [
    "FILE_SUMMARY",
    "FRAMED",
    "WORK_ITEMS",
    "frame_batches",
    "frame_files",
    "framed_events",
    "framed_files",
    "framed_quarantine",
    "framed_summaries",
    "open_binary",
]
