"""Bronze transforms: frame the files of a work list in Spark tasks, each task writing the rows of
``binlog_events`` and ``quarantine`` it frames into their tables' folders.

:func:`frame_files` is the function ``mapInArrow`` runs from work items (``WORK_ITEMS``: one row
per file to (re)frame, with where to resume) to a few ``OUTPUT`` rows (small work runs it in the
driver's process: :func:`pipelines.execution.collect_mapped`).  Each task opens its
files itself -- a local path or ``file:`` URI with ``open``, an object-store or HDFS URI with
``pyarrow.fs`` configured from the job's Hadoop settings (:func:`open_binary`) -- and streams them
through :func:`pipelines.bronze.framing.frame_file` (:func:`frame_batches`: Arrow batches of the
``FRAMED`` union, ``batch_rows`` rows or ``batch_bytes`` of bodies at most); :func:`staged_framing`
writes their events and quarantine rows as Parquet files of those tables
(:class:`pipelines.staging.TableWriter`).  Neither file contents nor events travel through Spark:
only what the driver decides with comes back (``OUTPUT``): the file summaries, the files written
(``staged``), and the few TABLE_MAP events whose ``shape_changed`` only the pieces before them tell
(the first map of each table in a piece of a file framed in pieces: ``event``), which the driver
corrects and writes with the rest (:func:`pipelines.bronze.framing.merge_parts`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from typing import Any, BinaryIO, cast
from urllib.parse import urlparse

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import ArrayType, LongType, MapType, StringType, StructField, StructType, TimestampType

from binlog_core.constants import EventType
from pipelines.bronze.framing import (
    MAGIC_LEN,
    EventRow,
    FileSummary,
    Part,
    PartFacts,
    QuarantineRow,
    ResumePoint,
    frame_file,
)
from pipelines.execution import ArrowFunction
from pipelines.filesystems import open_arrow_input
from pipelines.staging import STAGED, TableTarget, TableWriter, staged_rows
from pipelines.tables import BINLOG_EVENTS, BINLOG_FILES, QUARANTINE
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
        StructField("located", MapType(StringType(), ArrayType(LongType(), True), True), True),
        StructField("part", StringType(), True),
    ]
)
"""The ``binlog_files`` facts framing finds (the stage adds server, sequence, duplicates, run id)."""

SUMMARY_FIELDS = [f.name for f in FILE_SUMMARY.fields]

WALK_FIELDS = ("resumed_from", "problems", "located", "part")
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

STAGED_FILE = "staged"

OUTPUT = StructType(
    [
        StructField("kind", StringType(), False),
        StructField(EVENT, FRAMED[EVENT].dataType, True),
        StructField(FILE, FILE_SUMMARY, True),
        StructField(STAGED_FILE, STAGED, True),
    ]
)
"""What a framing task hands back (``kind``: ``file`` summaries, ``staged`` files it wrote, and the
``event`` rows of the TABLE_MAPs the driver writes itself)."""

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
    :func:`pipelines.filesystems.arrow_target`). Other schemes raise
    :class:`pipelines.filesystems.UnsupportedSchemeError` naming the file.

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


def _rows_of(batch: pa.RecordBatch, kind: str, run_id: str) -> pa.Table:
    """The ``kind`` struct of a ``FRAMED`` batch as rows of its table, with the run id."""
    rows = pa.Table.from_batches([pa.RecordBatch.from_struct_array(batch.column(kind))])
    return rows.append_column("run_id", pa.array([run_id] * rows.num_rows, type=pa.string()))


_OUTPUT = to_arrow_schema(OUTPUT, timezone="UTC")


def _output(kind: str, values: pa.Array) -> pa.RecordBatch:
    """An ``OUTPUT`` batch of one kind."""
    n = len(values)
    arrays = [values if f.name == kind else pa.nulls(n, f.type) for f in _OUTPUT]
    arrays[0] = pa.array([kind] * n, type=pa.string())
    return pa.RecordBatch.from_arrays(arrays, schema=_OUTPUT)


def _map_places(part: str | None) -> set[tuple[int, int | None]] | None:
    """The first map of each table of a piece after a file's first (``FileSummary.part``; None: not
    such a piece)."""
    if part is None:
        return None
    facts = PartFacts.from_json(part)
    if facts.start <= MAGIC_LEN:
        return None
    return {(offset, inner) for offset, inner, _digest in facts.first_maps.values()}


def staged_framing(
    framed: Iterator[pa.RecordBatch], events: TableTarget, quarantine: TableTarget, run_id: str
) -> Iterator[pa.RecordBatch]:
    """``FRAMED`` batches -> ``OUTPUT`` batches: events and quarantine rows written into their tables'
    files, summaries handed back, then the files written.  The TABLE_MAP events whose shape changed
    wait until their file's summary tells whether they are the first map of their table in a piece
    after the first: those are handed back (``event``), the others written."""
    writers = {EVENT: TableWriter(events), QUARANTINED: TableWriter(quarantine)}
    waiting: list[pa.Table] = []
    try:
        for batch in framed:
            kind = batch.column("kind")[0].as_py() if batch.num_rows else None
            if kind == EVENT:
                rows = _rows_of(batch, EVENT, run_id)
                changed = pc.and_(
                    pc.equal(rows.column("event_type"), int(EventType.TABLE_MAP)),
                    pc.fill_null(rows.column("shape_changed"), False),
                )
                if pc.any(changed).as_py():
                    waiting.append(rows.filter(changed))
                    rows = rows.filter(pc.invert(changed))
                writers[EVENT].write(rows)
            elif kind == QUARANTINED:
                writers[QUARANTINED].write(_rows_of(batch, QUARANTINED, run_id))
            elif kind == FILE:
                for row in batch.column(FILE).to_pylist():
                    places = _map_places(row["part"])
                    held = pa.concat_tables(waiting) if waiting else None
                    waiting = []
                    if held is not None and places:
                        keys = zip(held["offset"].to_pylist(), held["inner_index"].to_pylist(), strict=True)
                        mine = pa.array([key in places for key in keys], type=pa.bool_())
                        handed = held.filter(mine).drop_columns(["run_id"])
                        if handed.num_rows:
                            yield _output(EVENT, handed.to_struct_array().combine_chunks())
                        held = held.filter(pc.invert(mine))
                    if held is not None:
                        writers[EVENT].write(held)
                yield _output(FILE, batch.column(FILE))
        for writer in writers.values():
            files = writer.close()
            if files:
                yield _output(STAGED_FILE, staged_rows(files))
    except BaseException:
        for writer in writers.values():
            writer.abort()
        raise


def frame_files(
    events: TableTarget,
    quarantine: TableTarget,
    run_id: str,
    *,
    verify_checksums: bool = True,
    batch_rows: int = DEFAULT_BATCH_ROWS,
    batch_bytes: int = DEFAULT_BATCH_BYTES,
    filesystem_options: Mapping[str, str] | None = None,
    spill_dir: str | None = None,
) -> ArrowFunction:
    """``WORK_ITEMS`` batches -> ``OUTPUT`` batches: frame each file of the task's work items, its events
    and quarantine rows written into the files of ``events`` and ``quarantine`` (run ``run_id``).

    ``filesystem_options`` (plain data, shipped with the tasks) are the Hadoop settings for
    reading object-store URIs, from :func:`pipelines.storage.hadoop_filesystem_options` on the driver.
    """
    options = dict(filesystem_options or {})

    def run(items: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        framed = frame_batches(
            items,
            verify_checksums=verify_checksums,
            batch_rows=batch_rows,
            batch_bytes=batch_bytes,
            filesystem_options=options,
            spill_dir=spill_dir or _task_scratch(),
        )
        return staged_framing(framed, events, quarantine, run_id)

    return run


__all__ = [
    "FILE_SUMMARY",
    "FRAMED",
    "OUTPUT",
    "SUMMARY_FIELDS",
    "WALK_FIELDS",
    "WORK_ITEMS",
    "frame_batches",
    "frame_files",
    "open_binary",
    "part_json",
    "part_of",
    "resume_json",
    "resume_point",
    "staged_framing",
]
