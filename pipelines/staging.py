"""Tables written by the tasks that compute their rows: Arrow batches -> Parquet files in the table's
folder, committed by the driver in one Delta commit per table.

A stage's Python task (framing, a decode) holds its rows as typed Arrow batches.  Handing them to
the JVM to be written by Spark's Delta writer costs a copy into the JVM's rows, a second columnar
encoding and, when several tables come from one computation, a stored intermediate that each
table's write scans again.  Instead the task writes each table's Parquet files itself
(:class:`TableWriter`, with ``pyarrow.parquet`` through ``pyarrow.fs``: a local folder or any
object store the lake can be on) and yields one small row per file written (:data:`STAGED`: its
path, partition values, size, row count and Delta file statistics).  The driver collects those
rows with the stage's facts, gates them, and commits each table's files in one Delta commit
(:meth:`pipelines.storage.Lakehouse.write` with a :class:`Staged` frame): until then the files are
in the folder but not in the table, so a failed gate or a killed run leaves the table as it was.

The files are those Spark would write: the table's schema (:func:`arrow_schema`, the columns of
:mod:`pipelines.tables` in order, with their Spark types: ``timestamp`` as UTC instants,
``timestamp_ntz`` as wall-clock values), Hive-style partition folders (``event_class=rows/``)
without the partition columns inside, Snappy compression, row groups of about
:data:`ROW_GROUP_BYTES`, and statistics for the table's key and skipping columns only
(:attr:`pipelines.tables.TableSpec.properties`): the row count, null counts, minimum and maximum
(strings up to :data:`pipelines.tables.STATS_PREFIX_LENGTH` characters: a longer value leaves the
column's bounds out of that file's statistics, which reads as "may hold anything"; timestamps to
the millisecond, rounded outwards).

This module runs inside Spark's Python workers: plain data and pyarrow, no session.
"""

from __future__ import annotations

import contextlib
import json
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any
from urllib.parse import quote, unquote

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyarrow import fs as pafs
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import ArrayType, LongType, MapType, StringType, StructField, StructType

from pipelines.filesystems import arrow_filesystem
from pipelines.tables import STATS_COLUMNS, STATS_PREFIX_LENGTH, TableSpec

ROW_GROUP_BYTES = 8 << 20
"""Parquet row-group size of the files the pipeline writes (Arrow bytes a task buffers per group; Spark's
own writes get it as ``parquet.block.size``; Parquet's default is 128 MiB). Spark splits a scan at row
groups only: with smaller groups the events of one large binlog, which one framing task wrote, are read
back by as many tasks as there are cores (silver's and gold's decodes) instead of by one, and in shares
of about the same size (a task gets the groups whose middle falls in its byte range)."""

DICTIONARY_PAGE_BYTES = 64 << 10
"""Largest Parquet dictionary of a column chunk before its values are written plain instead
(``parquet.dictionary.page.size`` of Spark's writes; Parquet's default is 1 MiB).  Columns of few
distinct values (names, types, operations) stay dictionary-encoded; a column of many (row images,
bodies, GTIDs) gives up after 64 KiB of distinct values instead of hashing a megabyte of them into a
dictionary that is then thrown away, in every row group."""

COMPRESSION = "snappy"
"""The codec of every data file (Spark's and Delta's default)."""

STAGED = StructType(
    [
        StructField("table", StringType(), False),
        StructField("path", StringType(), False),
        StructField("partition_values", MapType(StringType(), StringType(), True), False),
        StructField("size", LongType(), False),
        StructField("modification_time", LongType(), False),
        StructField("num_records", LongType(), False),
        StructField("stats", StringType(), False),
        StructField("sources", ArrayType(StringType(), False), False),
    ]
)
"""A data file a task wrote into a table's folder (a field of a stage's task output): the table
(``<layer>/<name>``), the file's path relative to the table's folder (as a Delta log names it),
partition values, bytes, modification time (ms), rows, Delta statistics (JSON) and the binlog files
whose rows it holds."""

HIVE_NULL = "__HIVE_DEFAULT_PARTITION__"
_HIVE_ESCAPED = frozenset("\"#%'*/:=?\\\x7f{[]^")


def arrow_schema(spec: TableSpec) -> pa.Schema:
    """The Arrow schema of a table's rows: its columns in order, with the Arrow types Spark maps its
    types to (``timestamp``: microseconds in UTC; ``timestamp_ntz``: microseconds without a zone)."""
    return to_arrow_schema(spec.schema, timezone="UTC", prefers_large_types=False)


def conformed(rows: pa.RecordBatch | pa.Table, schema: pa.Schema) -> pa.Table:
    """``rows`` with exactly ``schema``'s columns, in order: each taken by name and cast to its type
    (a struct field by field), a missing one all null.

    >>> conformed(pa.table({"b": [1], "a": ["x"]}), pa.schema([("a", pa.string()), ("b", pa.int64())])).column_names
    ['a', 'b']
    """
    table = rows if isinstance(rows, pa.Table) else pa.Table.from_batches([rows])
    names = set(table.column_names)
    columns = [
        _cast(table.column(f.name), f.type) if f.name in names else pa.nulls(table.num_rows, f.type) for f in schema
    ]
    return pa.Table.from_arrays(columns, schema=schema.remove_metadata())


def _cast(column: pa.ChunkedArray, target: pa.DataType) -> pa.ChunkedArray:
    if column.type.equals(target):
        return column
    return column.cast(target, safe=False)


def hive_escape(value: str) -> str:
    """A partition value as Hive and Spark write it in a folder name (``%XX`` for the characters a
    path cannot hold)."""
    return "".join(f"%{ord(ch):02X}" if ch in _HIVE_ESCAPED or ord(ch) < 0x20 else ch for ch in value)


@dataclass(frozen=True)
class TableTarget:
    """Where and how a task writes one table (plain data, shipped with the task)."""

    table: str
    """``<layer>/<name>``."""
    location: str
    """The table's folder, as Spark names it (``file:/...``, ``s3a://...``)."""
    schema: pa.Schema
    partition_by: tuple[str, ...]
    stats: tuple[str, ...]
    """Columns whose minimum, maximum and null count go into the files' statistics."""
    filesystem_options: Mapping[str, str] = field(default_factory=dict)
    """The Hadoop settings the file system is configured from (:func:`pipelines.storage.arrow_filesystem`)."""

    @classmethod
    def of(cls, spec: TableSpec, location: str, filesystem_options: Mapping[str, str]) -> TableTarget:
        """The target of ``spec`` at ``location``: statistics for the columns its properties name (all
        its columns when they name none, as Delta's default of the first 32)."""
        named = spec.properties.get(STATS_COLUMNS)
        stats = tuple(named.split(",")) if named else tuple(spec.names[:32])
        return cls(
            spec.folder,
            location.rstrip("/"),
            arrow_schema(spec),
            tuple(spec.partition_by),
            tuple(n for n in stats if n not in spec.partition_by),
            dict(filesystem_options),
        )


@dataclass
class StagedFile:
    """One data file written into a table's folder and not committed yet (a :data:`STAGED` row)."""

    table: str
    path: str
    partition_values: dict[str, str | None]
    size: int
    modification_time: int
    num_records: int
    stats: str
    sources: list[str]

    def row(self) -> dict[str, Any]:
        """As a :data:`STAGED` value."""
        return {
            "table": self.table,
            "path": self.path,
            "partition_values": list(self.partition_values.items()),
            "size": self.size,
            "modification_time": self.modification_time,
            "num_records": self.num_records,
            "stats": self.stats,
            "sources": self.sources,
        }

    @classmethod
    def of(cls, row: Mapping[str, Any]) -> StagedFile:
        """From a collected :data:`STAGED` value (a ``Row`` or a dict)."""
        values = row["partition_values"]
        return cls(
            row["table"],
            row["path"],
            dict(values.items() if isinstance(values, Mapping) else values),
            int(row["size"]),
            int(row["modification_time"]),
            int(row["num_records"]),
            row["stats"],
            list(row["sources"]),
        )

    def add_action(self) -> dict[str, Any]:
        """The Delta ``add`` action that puts the file into its table."""
        return {
            "add": {
                "path": self.path,
                "partitionValues": self.partition_values,
                "size": self.size,
                "modificationTime": self.modification_time,
                "dataChange": True,
                "stats": self.stats,
            }
        }


def staged_arrow_type() -> pa.DataType:
    """The Arrow type of a :data:`STAGED` value."""
    return to_arrow_schema(StructType([StructField("staged", STAGED, True)]), timezone="UTC").field("staged").type


@dataclass(frozen=True)
class Staged:
    """A table's rows as files tasks wrote into its folder (the frame of a :class:`pipelines.storage.Write`).

    ``extra``: rows the driver adds to them (the quarantine rows a gate asks for), written beside them
    in the same commit; ``transform``: a change the files' rows need before they are the table's (a
    filter, a correction): they are then read back and written by Spark."""

    files: tuple[StagedFile, ...]
    extra: DataFrame | None = None
    transform: Callable[[DataFrame], DataFrame] | None = None

    def adding(self, files: Iterable[StagedFile]) -> Staged:
        """With more files (the driver's own rows, :meth:`pipelines.storage.Lakehouse.stage_rows`)."""
        return Staged((*self.files, *files), self.extra, self.transform)

    def with_extra(self, rows: DataFrame) -> Staged:
        """The same files with ``rows`` added."""
        extra = rows if self.extra is None else self.extra.unionByName(rows)
        return Staged(self.files, extra, self.transform)

    def changed(self, transform: Callable[[DataFrame], DataFrame]) -> Staged:
        """The same files, their rows changed by ``transform`` (after any change already asked for)."""
        before = self.transform
        if before is None:
            return Staged(self.files, self.extra, transform)
        return Staged(self.files, self.extra, lambda rows: transform(before(rows)))

    def without(self, sources: Iterable[str]) -> Staged:
        """Without the files' rows of the binlog files ``sources`` (the extra rows are kept): files
        holding only theirs are left out (the caller deletes them), files holding theirs among others
        are filtered."""
        dropped = sorted(set(sources))
        files = tuple(f for f in self.files if not set(f.sources) <= set(dropped))
        staged = Staged(files, self.extra, self.transform)
        if any(not set(dropped).isdisjoint(f.sources) for f in files):
            return staged.changed(lambda rows: rows.where(~F.col("file").isin(dropped)))
        return staged


# -- statistics ----------------------------------------------------------------------------------

_MILLI = timedelta(milliseconds=1)


def _stat_string(value: Any, arrow_type: pa.DataType, upper: bool) -> Any:
    """A bound as Delta statistics hold it (None: leave the bound out)."""
    if pa.types.is_timestamp(arrow_type):
        if upper and value.microsecond % 1000:
            value = value.replace(microsecond=value.microsecond - value.microsecond % 1000) + _MILLI
        elif not upper:
            value = value.replace(microsecond=value.microsecond - value.microsecond % 1000)
        text = value.strftime("%Y-%m-%dT%H:%M:%S.") + f"{value.microsecond // 1000:03d}"
        return text + "Z" if arrow_type.tz is not None else text
    if pa.types.is_date(arrow_type):
        return value.isoformat()
    if pa.types.is_string(arrow_type):
        return value if len(value) <= STATS_PREFIX_LENGTH else None
    return value


_BOUNDED = (pa.types.is_integer, pa.types.is_floating, pa.types.is_boolean, pa.types.is_string, pa.types.is_timestamp,
            pa.types.is_date)  # fmt: skip
"""Types whose minimum and maximum go into file statistics (others: null counts only)."""


class _Stats:
    """Delta file statistics of one data file, gathered batch by batch."""

    def __init__(self, schema: pa.Schema, columns: Sequence[str]) -> None:
        self.columns = [(name, schema.field(name).type) for name in columns if name in schema.names]
        self.rows = 0
        self.nulls = {name: 0 for name, _ in self.columns}
        self.low: dict[str, Any] = {}
        self.high: dict[str, Any] = {}

    def add(self, table: pa.Table) -> None:
        self.rows += table.num_rows
        for name, arrow_type in self.columns:
            column = table.column(name)
            self.nulls[name] += column.null_count
            if column.null_count == len(column) or not any(check(arrow_type) for check in _BOUNDED):
                continue
            bounds = pc.min_max(column)
            low, high = bounds["min"].as_py(), bounds["max"].as_py()
            if name not in self.low or low < self.low[name]:
                self.low[name] = low
            if name not in self.high or high > self.high[name]:
                self.high[name] = high

    def json(self) -> str:
        types = dict(self.columns)
        low = {n: _stat_string(v, types[n], upper=False) for n, v in self.low.items()}
        high = {n: _stat_string(v, types[n], upper=True) for n, v in self.high.items()}
        return json.dumps(
            {
                "numRecords": self.rows,
                "minValues": {n: v for n, v in low.items() if v is not None and high.get(n) is not None},
                "maxValues": {n: v for n, v in high.items() if v is not None and low.get(n) is not None},
                "nullCount": self.nulls,
            },
            separators=(",", ":"),
        )


# -- the writer ----------------------------------------------------------------------------------

REPEATED = 0.1
"""Distinct values over rows below which a text column is dictionary-encoded (names, types, operations);
above (row images, statements, GTIDs), its values are written plain: a dictionary that fills up and is
given up costs the writer more than it saves."""


def repeated(rows: pa.Table) -> list[str]:
    """The top-level text columns of ``rows`` that repeat their values enough for a dictionary (:data:`REPEATED`)."""
    return [
        f.name
        for f in rows.schema
        if pa.types.is_string(f.type) and pc.count_distinct(rows.column(f.name)).as_py() <= REPEATED * rows.num_rows
    ]


@dataclass
class _Open:
    """One data file being written: its writer, where, and what it holds so far."""

    writer: pq.ParquetWriter | None
    """Made at the first row group (its encodings chosen from those rows: :func:`repeated`)."""
    stream: Any
    path: str
    relative: str
    values: dict[str, str | None]
    stats: _Stats
    sources: set[str] = field(default_factory=set)
    pending: list[pa.Table] = field(default_factory=list)
    pending_bytes: int = 0


class TableWriter:
    """Writes one table's rows, in Arrow, into Parquet files in its folder (one per partition value);
    :meth:`close` gives the :class:`StagedFile` of each.  Rows are buffered up to a row group.

    ::

        writer = TableWriter(target)
        writer.write(batch)          # any columns of the table's: conformed to its schema
        staged = writer.close()      # [StagedFile(...), ...]: nothing is in the table yet
    """

    def __init__(self, target: TableTarget, row_group_bytes: int = ROW_GROUP_BYTES) -> None:
        self.target = target
        self.row_group_bytes = row_group_bytes
        self.filesystem, self.root = arrow_filesystem(target.location, target.filesystem_options)
        self.local = isinstance(self.filesystem, pafs.LocalFileSystem)
        self.data_schema = pa.schema([f for f in target.schema if f.name not in target.partition_by])
        self.options = {
            "compression": COMPRESSION,
            "dictionary_pagesize_limit": DICTIONARY_PAGE_BYTES,
            "write_statistics": [n for n in target.stats if n in self.data_schema.names],
            "store_schema": False,
        }
        self.open: dict[tuple[str | None, ...], _Open] = {}
        self.done: list[StagedFile] = []
        self.prefix = f"part-{uuid.uuid4().hex}"

    def write(self, rows: pa.RecordBatch | pa.Table) -> None:
        """Add rows (columns by name; conformed to the table's schema)."""
        if rows.num_rows == 0:
            return
        table = conformed(rows, self.target.schema)
        if not self.target.partition_by:
            self._add((), table)
            return
        keys = [table.column(name) for name in self.target.partition_by]
        if len(keys) == 1:
            encoded = keys[0].combine_chunks().dictionary_encode()
            values = encoded.dictionary.to_pylist()
            if len(values) == 1 and encoded.null_count == 0:
                self._add((values[0],), table)
                return
            indices = encoded.indices
            for code, value in enumerate(values):
                self._add((value,), table.filter(pc.equal(indices, code)))
            if encoded.null_count:
                self._add((None,), table.filter(pc.is_null(indices)))
            return
        combos = table.select(list(self.target.partition_by)).group_by(list(self.target.partition_by)).aggregate([])
        for combo in combos.to_pylist():
            mask = None
            for name, value in combo.items():
                here = pc.is_null(table.column(name)) if value is None else pc.equal(table.column(name), value)
                mask = here if mask is None else pc.and_(mask, here)
            self._add(tuple(combo[n] for n in self.target.partition_by), table.filter(mask))

    def _add(self, values: tuple[Any, ...], table: pa.Table) -> None:
        if table.num_rows == 0:
            return
        opened = self.open.get(values)
        if opened is None:
            opened = self.open[values] = self._start(values)
        data = table.select(self.data_schema.names)
        opened.stats.add(data)
        if "file" in data.column_names:
            opened.sources.update(pc.unique(data.column("file")).to_pylist())
        opened.pending.append(data)
        opened.pending_bytes += data.nbytes
        if opened.pending_bytes >= self.row_group_bytes:
            self._flush(opened)

    def _start(self, values: tuple[Any, ...]) -> _Open:
        texts = {n: None if v is None else str(v) for n, v in zip(self.target.partition_by, values, strict=True)}
        folder = "/".join(f"{n}={HIVE_NULL if v is None else hive_escape(v)}" for n, v in texts.items())
        name = f"{self.prefix}-{len(self.open) + len(self.done):05d}.c000.{COMPRESSION}.parquet"
        relative = f"{folder}/{name}" if folder else name
        path = f"{self.root}/{relative}"
        if self.local:  # an object store has no folders to make
            self.filesystem.create_dir(f"{self.root}/{folder}" if folder else self.root, recursive=True)
        stream = self.filesystem.open_output_stream(path)
        return _Open(
            None, stream, path, quote(relative, safe="/=-_.~"), texts, _Stats(self.data_schema, self.target.stats)
        )

    def _flush(self, opened: _Open) -> None:
        if opened.pending:
            table = pa.concat_tables(opened.pending)
            if opened.writer is None:
                opened.writer = pq.ParquetWriter(
                    opened.stream, self.data_schema, use_dictionary=repeated(table), **self.options
                )
            opened.writer.write_table(table, row_group_size=max(1, table.num_rows))
            opened.pending, opened.pending_bytes = [], 0

    def close(self) -> list[StagedFile]:
        """Finish every open file; the staged files written (all of them, over the writer's life)."""
        for opened in self.open.values():
            self._flush(opened)
            assert opened.writer is not None  # a file is opened for rows
            opened.writer.close()
            opened.stream.close()
            info = self.filesystem.get_file_info(opened.path)
            mtime = info.mtime
            self.done.append(
                StagedFile(
                    self.target.table,
                    opened.relative,
                    opened.values,
                    int(info.size or 0),
                    int(mtime.timestamp() * 1000) if mtime is not None else int(time.time() * 1000),
                    opened.stats.rows,
                    opened.stats.json(),
                    sorted(opened.sources),
                )
            )
        self.open = {}
        return list(self.done)

    def abort(self) -> None:
        """Close and delete the files being written (a task that fails midway leaves none behind)."""
        for opened in self.open.values():
            for step in (opened.writer.close if opened.writer is not None else None, opened.stream.close):
                if step is None:
                    continue
                with contextlib.suppress(Exception):  # the file goes anyway
                    step()
            with contextlib.suppress(OSError):
                self.filesystem.delete_file(opened.path)
        self.open = {}


def staged_rows(files: Iterable[StagedFile]) -> pa.Array:
    """The :data:`STAGED` values of ``files`` as an Arrow array."""
    return pa.array([f.row() for f in files], type=staged_arrow_type())


def remove_files(location: str, files: Iterable[StagedFile], filesystem_options: Mapping[str, str]) -> None:
    """Delete staged files that are not to be committed (missing ones are ignored)."""
    filesystem, root = arrow_filesystem(location, filesystem_options)
    for staged in files:
        try:
            filesystem.delete_file(f"{root}/{unquote(staged.path)}")
        except (FileNotFoundError, OSError):
            continue


def file_uri(location: str, staged: StagedFile) -> str:
    """The full URI of a staged file (for reading it back through Spark)."""
    return f"{location.rstrip('/')}/{unquote(staged.path)}"


__all__ = [
    "COMPRESSION",
    "DICTIONARY_PAGE_BYTES",
    "HIVE_NULL",
    "ROW_GROUP_BYTES",
    "STAGED",
    "Staged",
    "StagedFile",
    "TableTarget",
    "TableWriter",
    "arrow_schema",
    "conformed",
    "file_uri",
    "hive_escape",
    "remove_files",
    "staged_arrow_type",
    "staged_rows",
]
