"""All Delta Lake I/O of the pipeline: where each table lives, how it is written and registered.

Every table has a layer (its catalog database and its folder under the lakehouse root) and a
name, declared once in :mod:`pipelines.tables`.  Stages read and write through a
:class:`Lakehouse`, never through paths of their own::

    lake = Lakehouse(spark, cfg.storage)
    lake.write(Write(BINLOG_EVENTS, events, replace="file IN ('s3a://b/mysql-bin.000001')"))
    spark.table("binlog_bronze.binlog_events")   # registered in the catalog as well

Writes are idempotent by construction: a ``replace`` write swaps exactly the rows a predicate
selects (a re-run writes the same rows again instead of adding them), a ``merge`` upserts on
the table's key, and each is one Delta commit, so a run killed mid-write leaves the previous
version.  :meth:`Lakehouse.write_all` runs independent writes side by side (each one Delta
commit, several Spark jobs at once): most of a small write is fixed cost on the driver.

The small bookkeeping tables a run reads whole (``binlog_files``, ``_state/progress``, ...) are
read by :meth:`Lakehouse.rows` on the driver with delta-rs (local and S3 lakes), in the shape
Spark's ``collect`` gives: no Spark job, no Delta snapshot, for what every run consults first.

Small work is written on the driver.  When the run says the stage at hand is small (its binlog
files total less than ``spark.small_work_mib``: :class:`pipelines.execution.ExecutionMode`), or the
table is one of a few rows per file (:attr:`pipelines.tables.TableSpec.small`: bookkeeping,
histories), and the lake is on a local file system, a write that appends, replaces the rows of a predicate or
overwrites is collected as Arrow (``toArrow``, one Spark job) and committed by delta-rs
(:meth:`Lakehouse._write_on_driver`): on a few thousand rows, a Delta write through Spark is
seconds of fixed cost on the JVM (the write job, statistics, the commit, its checksum), most of
it compiling code a one-run process uses once.  Files tasks wrote are committed the same way, their
``add`` actions as they are (:meth:`Lakehouse._commit_on_driver`), and no JVM Delta commit code is
warmed for such a stage.  The table is the same Delta table: the spec's
schema with its comments (every column nullable, as Spark makes a table by path), its
properties, file statistics of the same prefix length; Spark reads and writes it after.
Merges into an existing table, replacing writes of tables with a change data feed, writes that
change a table's schema and predicates delta-rs would read otherwise than Spark go through Spark.

Tables are registered as external tables by location, once: the registrations made are
remembered in ``<root>/_state/registered.json`` (with the catalog they were made in), so a run
that creates no table touches no catalog; with a catalog that outlives the session
(``spark.catalog: hive``) analysts query them by name from any later session.  Bookkeeping
tables (layer ``_state``) are never registered.  A run registers in one batch at its end
(:meth:`Lakehouse.registering_at_end`): the tables it created, and any table of the lakehouse the
catalog is not known to hold (one a killed run wrote and did not register).

Input files are read, and the large tables' files written, by Python tasks: local paths directly,
object stores through ``pyarrow.fs`` (:mod:`pipelines.filesystems`), configured from the Hadoop
settings of the session (:func:`hadoop_filesystem_options`).  Files a task wrote into a table's
folder (:mod:`pipelines.staging`) enter the table in one Delta commit made here, through Spark's
Delta log: a ``Write`` whose frame is :class:`pipelines.staging.Staged`.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any, Literal, Protocol
from urllib.parse import urlsplit

import pyarrow as pa
from delta.tables import DeltaTable
from deltalake import DeltaTable as DeltaRsTable
from deltalake import Schema as DeltaRsSchema
from deltalake import WriterProperties, write_deltalake
from deltalake.exceptions import DeltaError
from deltalake.transaction import AddAction
from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame, Row, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import BooleanType, StringType
from pyspark.util import inheritable_thread_target

from conf import StorageSettings
from conf.paths import local_path_of
from pipelines.filesystems import FILESYSTEM_KEYS
from pipelines.query.lake import S3_SCHEMES, delta_storage_options
from pipelines.staging import Staged, StagedFile, TableTarget, TableWriter, file_uri, remove_files
from pipelines.tables import CATALOGED, CHANGE_FEED, STATS_PREFIX_LENGTH, Col, Layer, TableSpec, conform


@dataclass
class Persisted:
    """The frames one build persisted, released together once the build is written.

    A job that runs the stages repeatedly in one session (an orchestrator task, a notebook, the
    tests) would otherwise keep every build's cached blocks until the driver runs out of memory.
    """

    frames: list[DataFrame] = field(default_factory=list)
    stored: list[DataFrame] = field(default_factory=list)

    def keep(self, frame: DataFrame, *, rows_on_disk: bool = False) -> DataFrame:
        """``frame`` persisted, remembered for :meth:`release`.

        ``rows_on_disk``: stored on local disk row by row when first computed (a lazy local
        checkpoint), for wide frames of many rows: Spark's cache builds column batches of
        ``spark.sql.inMemoryColumnarStorage.batchSize`` rows in the heap first, whatever the storage
        level, and a batch of nested rows (a map's columns, twice) takes hundreds of MiB there."""
        if rows_on_disk:
            stored = frame.localCheckpoint(eager=False, storageLevel=StorageLevel.DISK_ONLY)
            self.stored.append(stored)
            return stored
        kept = frame.persist()
        self.frames.append(kept)
        return kept

    def release(self) -> None:
        """Unpersist every kept frame (a frame is read again from its source if used later; one
        stored on disk cannot be, and must not be used after)."""
        for frame in self.frames:
            frame.unpersist()
        self.frames.clear()
        for stored in self.stored:
            with contextlib.suppress(Exception):  # another plan shape: Spark's cleaner frees the blocks later
                stored._jdf.queryExecution().logical().rdd().unpersist(False)
        self.stored.clear()


class TableRef(Protocol):
    """Anything naming a table: a :class:`pipelines.tables.TableSpec` or a :class:`Table`."""

    @property
    def layer(self) -> Layer: ...

    @property
    def name(self) -> str: ...


@dataclass(frozen=True, slots=True)
class Table:
    """A table of one layer named at run time: ``Table(Layer.GOLD, "shop__orders")``, ``Table.gold("changes")``."""

    layer: Layer
    name: str

    @classmethod
    def bronze(cls, name: str) -> Table:
        """A bronze table."""
        return cls(Layer.BRONZE, name)

    @classmethod
    def silver(cls, name: str) -> Table:
        """A silver table."""
        return cls(Layer.SILVER, name)

    @classmethod
    def gold(cls, name: str) -> Table:
        """A gold table."""
        return cls(Layer.GOLD, name)

    @classmethod
    def quality(cls, name: str) -> Table:
        """A quality table."""
        return cls(Layer.QUALITY, name)


Mode = Literal["replace", "merge", "overwrite", "append"]


@dataclass
class Write:
    """One write of a frame to a table: one Delta commit.

    ``replace``: a SQL predicate; the rows it selects are swapped for ``frame`` (whose rows must
    match it). ``mode`` ``merge`` upserts on the spec's key, ``overwrite`` replaces the whole
    table, ``append`` adds (only for rows unique by construction, such as run logs).
    ``fresh``: the caller knows the table holds no row ``replace`` selects (files new to the
    table), so the rows are appended: the same result, one cheap commit instead of a search for
    rows to delete (see :mod:`pipelines.progress`).
    """

    spec: TableSpec
    frame: DataFrame | Staged
    """The rows, or the files tasks wrote them into (:class:`pipelines.staging.Staged`)."""
    replace: str | None = None
    mode: Mode = "replace"
    merge_schema: bool = False
    fresh: bool = False
    properties: Mapping[str, str] = field(default_factory=dict)
    """Delta table properties the write sets (``delta.enableChangeDataFeed``, ...), beside those of
    the spec's layout (:attr:`pipelines.tables.TableSpec.properties`)."""
    keep: str | None = None
    """``merge``: a boolean column of ``frame`` (not of the spec); a row where it is false deletes
    the row its key matches instead of upserting, and is never inserted."""


_WARMED: set[int] = set()
"""The JVMs (by their Spark context) whose Delta commit code :meth:`Lakehouse.warm_commits` ran."""

_NTZ = "timestamp_ntz"
"""How a DATETIME column's type reads in a schema's simple string."""

_REGEX_SPECIAL = re.compile(r"([.^$+?()\[\]{}\\])")
REGISTERED_FILE = "registered.json"


def _quote(identifier: str) -> str:
    return "`" + identifier.replace("`", "``") + "`"


class Lakehouse:
    """Reads, writes and registers the pipeline's Delta tables below ``settings.root``.

    ``on_write`` is told each table written (progress lines); ``commits`` counts the Delta
    commits this object made.
    """

    def __init__(
        self,
        spark: SparkSession,
        settings: StorageSettings,
        on_write: Callable[[TableRef], None] | None = None,
        *,
        small_work: Callable[[], bool] = lambda: False,
    ) -> None:
        self.spark = spark
        self.settings = settings
        self.on_write = on_write
        self.small_work = small_work
        """Whether the stage at hand is small work (its writes may go through delta-rs on the driver)."""
        self.commits = 0
        self.written: dict[str, tuple[StagedFile, ...]] = {}
        """Table (``<layer>/<name>``) -> the files its last write through this object committed as tasks
        wrote them (:meth:`written_frame`)."""
        self._registered: dict[str, str] | None = None
        self._lock = threading.Lock()
        self._catalog_lock = threading.Lock()
        """Held while registering (one registration at a time, without holding up writes)."""
        self._warming: threading.Thread | None = None
        self._deferred = False
        self._made: list[TableRef] = []
        """Tables made within :meth:`registering_at_end` and not handed to :meth:`register_soon` yet."""
        self._registering: ThreadPoolExecutor | None = None
        self._registrations: list[Any] = []

    @property
    def root(self) -> str:
        """The lakehouse root, without a trailing slash."""
        return self.settings.root.rstrip("/")

    def path(self, table: TableRef) -> str:
        """``<root>/<layer>/<name>``."""
        return f"{self.root}/{table.layer.value}/{table.name}"

    def database(self, layer: Layer) -> str:
        """The catalog database of a layer."""
        databases = {
            Layer.BRONZE: self.settings.bronze_database,
            Layer.SILVER: self.settings.silver_database,
            Layer.GOLD: self.settings.gold_database,
            Layer.CURRENT: self.settings.current_database,
            Layer.HISTORY: self.settings.history_database,
            Layer.QUALITY: self.settings.quality_database,
        }
        if layer not in databases:
            raise ValueError(f"layer {layer.value} is not registered in a catalog database")
        return databases[layer]

    def qualified_name(self, table: TableRef) -> str:
        """``database.table`` as analysts query it (quoted)."""
        return f"{_quote(self.database(table.layer))}.{_quote(table.name)}"

    def exists(self, table: TableRef) -> bool:
        """True when the table's folder holds a Delta table (its log has a commit or a checkpoint).

        On a local file system the log folder is listed; Spark's own test (elsewhere) loads the
        table's snapshot, a Spark job for a table whose last commit has no checksum file (delta-rs
        writes none)."""
        local = local_path_of(self.qualified(table))
        if local is None:
            return bool(DeltaTable.isDeltaTable(self.spark, self.path(table)))
        try:
            with os.scandir(os.path.join(local, "_delta_log")) as entries:
                return any(_LOG_ENTRY.fullmatch(entry.name) for entry in entries)
        except (FileNotFoundError, NotADirectoryError):
            return False

    def read(self, table: TableRef) -> DataFrame:
        """The table's current version (it must exist)."""
        return self.spark.read.format("delta").load(self.path(table))

    def rows(self, table: TableRef, columns: Sequence[str] | None = None) -> list[dict[str, Any]]:
        """Every row of a small table (one row per file: ``binlog_files``, ``_state`` tables; or a
        few small ``columns`` of one) as ``Row.asDict()`` of Spark's ``collect`` gives it; none
        before its first write.

        Read on the driver by delta-rs where it can (the lake on a local file system or S3:
        :func:`small_table_rows`), so a run spends no Spark job and no Delta snapshot on its
        bookkeeping; through Spark otherwise (another scheme, or a table delta-rs cannot read).
        """
        if not self.exists(table):
            return []
        location = self.qualified(table)
        scheme = urlsplit(location).scheme.lower()
        if scheme in DELTA_RS_SCHEMES:
            hadoop = hadoop_filesystem_options(self.spark) if scheme != "file" else {}
            found = small_table_rows(location, hadoop, columns)
            if found is not None:
                return found
        frame = self.read(table)
        return [row.asDict() for row in (frame if columns is None else frame.select(*columns)).collect()]

    def qualified(self, table: TableRef) -> str:
        """The table's location as the file system Spark writes it with names it (``file:/...``,
        ``s3a://...``): a path without a scheme resolves against Hadoop's default file system."""
        hadoop_path, fs = self._filesystem(self.path(table))
        return str(fs.makeQualified(hadoop_path).toUri().toString())  # type: ignore[attr-defined]

    def read_or_empty(self, spec: TableSpec) -> DataFrame:
        """The table, or an empty frame of its schema before its first write."""
        if self.exists(spec):
            return self.read(spec)
        return self.spark.createDataFrame([], spec.schema)

    def _filesystem(self, path: str) -> tuple[object, object]:
        jvm = self.spark.sparkContext._jvm
        assert jvm is not None
        hadoop_path = jvm.org.apache.hadoop.fs.Path(path)
        return hadoop_path, hadoop_path.getFileSystem(self.spark.sparkContext._jsc.hadoopConfiguration())

    def tables(self, layer: Layer) -> list[str]:
        """Names of the Delta tables of a layer that exist on storage."""
        return sorted(name for name in self._folders(layer) if self.exists(Table(layer, name)))

    def _folders(self, layer: Layer) -> list[str]:
        """Names of the folders in a layer's folder (none before its first table)."""
        hadoop_path, fs = self._filesystem(f"{self.root}/{layer.value}")
        if not fs.exists(hadoop_path):  # type: ignore[attr-defined]
            return []
        return [status.getPath().getName() for status in fs.listStatus(hadoop_path) if status.isDirectory()]  # type: ignore[attr-defined]

    def write(self, write: Write) -> None:
        """One write (see :class:`Write`): the frame conformed to its spec, then registered."""
        if isinstance(write.frame, Staged):
            self._write_staged(write, write.frame)
            return
        spec, frame, keep = write.spec, write.frame, write.keep
        path = self.path(spec)
        exists = self.exists(spec)
        self.written.pop(spec.folder, None)
        if exists and (write.merge_schema or write.mode in ("overwrite", "merge")):
            self._support_types(path, frame)
        if keep is not None and not exists:
            frame = frame.where(F.col(keep))
        if keep is not None and exists:
            frame = frame.transform(conform(replace(spec, columns=(*spec.columns, Col(keep, BooleanType(), keep)))))
        else:
            frame = frame.transform(conform(spec))
        if write.mode == "merge" and exists:
            condition = " AND ".join(f"t.{_quote(k)} <=> s.{_quote(k)}" for k in spec.key)
            merge = DeltaTable.forPath(self.spark, path).alias("t").merge(frame.alias("s"), condition)
            if keep is None:
                merge = merge.whenMatchedUpdateAll().whenNotMatchedInsertAll()
            else:
                values: dict[str, str | Column] = {_quote(c.name): f"s.{_quote(c.name)}" for c in spec.columns}
                merge = (
                    merge.whenMatchedDelete(f"NOT s.{_quote(keep)}")
                    .whenMatchedUpdate(set=values)
                    .whenNotMatchedInsert(condition=f"s.{_quote(keep)}", values=values)
                )
            merge.execute()
        elif self._write_on_driver(write, frame, exists):
            pass
        else:
            writer = frame.write.format("delta")
            if not exists:
                writer = writer.mode("append")
                if spec.partition_by:
                    writer = writer.partitionBy(*spec.partition_by)
            elif write.mode == "overwrite":
                writer = writer.mode("overwrite").option("overwriteSchema", "true")
            elif write.mode == "replace" and not write.fresh:
                writer = writer.mode("overwrite").option("replaceWhere", write.replace or "false")
            else:
                writer = writer.mode("append")
            if write.merge_schema:
                writer = writer.option("mergeSchema", "true")
            for name, value in {**spec.properties, **write.properties}.items():
                writer = writer.option(name, value)
            writer.save(path)
        with self._lock:
            self.commits += 1
        if not exists:
            self._created(spec)
        if self.on_write is not None:
            self.on_write(spec)

    # -- files written by tasks ------------------------------------------------------------------

    def target(self, spec: TableSpec) -> TableTarget:
        """Where tasks write ``spec``'s files (plain data for the tasks: the location as Spark names
        it and the object-store settings of the session)."""
        location = self.qualified(spec)
        options = {} if local_path_of(location) is not None else hadoop_filesystem_options(self.spark)
        return TableTarget.of(spec, location, options)

    def stage_rows(self, spec: TableSpec, rows: Sequence[Mapping[str, Any]]) -> tuple[StagedFile, ...]:
        """Write rows the driver holds (plain values, a map as a ``dict``) into files of ``spec``, not
        committed yet: what a task would have written (no Spark job)."""
        if not rows:
            return ()
        target = self.target(spec)
        writer = TableWriter(target)
        writer.write(
            pa.Table.from_pylist([{n: r.get(n) for n in target.schema.names} for r in rows], schema=target.schema)
        )
        return tuple(writer.close())

    def discard(self, spec: TableSpec, staged: Staged) -> None:
        """Delete files tasks wrote for ``spec`` that are not to be committed."""
        target = self.target(spec)
        remove_files(target.location, staged.files, target.filesystem_options)

    def _write_staged(self, write: Write, staged: Staged) -> None:
        """Commit the files tasks wrote into the table's folder, the driver's extra rows written beside
        them, in one Delta commit; when their rows must change first (a transform), replace rows the
        table holds, or change its schema, Spark reads them and writes them as any frame."""
        spec = write.spec
        exists = self.exists(spec)
        replacing = exists and write.mode == "replace" and not write.fresh
        if write.mode not in ("replace", "append") or replacing or staged.transform is not None:
            self._rewrite_staged(write, staged)
            return
        properties = {**spec.properties, **write.properties}
        local = local_path_of(self.qualified(spec)) if self.small_work() or spec.small else None
        txn = None
        if local is not None:  # small work on a local lake: delta-rs commits, on the driver
            stored = DeltaRsTable(local).schema().to_json() if exists else None
        else:
            txn = self._delta_log(spec).startTransaction()
            stored = str(txn.metadata().schemaString()) if exists else None
        if stored is not None and not self._schema_is(spec, stored):
            self._rewrite_staged(write, staged)  # Spark evolves the table's schema
            return
        files = list(staged.files)
        if staged.extra is not None:
            writer = TableWriter(self.target(spec))
            writer.write(staged.extra.transform(conform(spec)).toArrow())
            files += writer.close()
        if local is not None:
            self._commit_on_driver(local, spec, files, exists, properties)
        elif files or not exists:
            self._commit(txn, [f.add_action() for f in files], None if exists else self._new_metadata(spec, properties))
            with self._lock:
                self.commits += 1
        self.written[spec.folder] = tuple(files)
        if not exists:
            self._created(spec)
        if self.on_write is not None:
            self.on_write(spec)

    def _rewrite_staged(self, write: Write, staged: Staged) -> None:
        """Write staged rows through Spark (read back, changed, written as a frame), then delete the files."""
        spec = write.spec
        target = self.target(spec)
        frame: DataFrame | None = None
        if staged.files:
            frame = self.staged_frame(spec, staged)
            if staged.transform is not None:
                frame = staged.transform(frame)
        if staged.extra is not None:
            extra = staged.extra.transform(conform(spec))
            frame = extra if frame is None else frame.transform(conform(spec)).unionByName(extra)
        if frame is None:
            frame = self.spark.createDataFrame([], spec.schema)
        self.write(replace(write, frame=frame))
        remove_files(target.location, staged.files, target.filesystem_options)

    def written_frame(self, spec: TableSpec, where: Mapping[str, Collection[str]] | None = None) -> DataFrame | None:
        """The rows the last write of ``spec`` through this object committed as tasks wrote them (only
        the partitions whose values ``where`` names), read from those files; None when it wrote
        otherwise, or not at all."""
        files = self.written.get(spec.folder)
        if files is None:
            return None
        if where:
            files = tuple(f for f in files if all(f.partition_values.get(k) in v for k, v in where.items()))
        return self.staged_frame(spec, Staged(files))

    def staged_frame(self, spec: TableSpec, staged: Staged) -> DataFrame:
        """The rows of files tasks wrote for ``spec`` (not changed by its ``transform``), read by Spark
        as the Parquet files they are: no Delta log is read."""
        location = self.target(spec).location
        if not staged.files:
            return self.spark.createDataFrame([], spec.schema)
        uris = [file_uri(location, f) for f in staged.files]
        return self.spark.read.schema(spec.schema).option("basePath", location).parquet(*uris)

    def _delta_log(self, spec: TableSpec) -> Any:
        return self._delta_log_at(self.path(spec))

    def _delta_log_at(self, path: str) -> Any:
        jvm = self.spark.sparkContext._jvm
        assert jvm is not None
        return jvm.org.apache.spark.sql.delta.DeltaLog.forTable(self.spark._jsparkSession, path)

    @staticmethod
    def _schema_is(spec: TableSpec, schema_json: str) -> bool:
        """Whether a table's stored schema is ``spec``'s (comments and nullability aside)."""
        return bool(_fits(_nullable(json.loads(schema_json)), _nullable(json.loads(spec.schema.json()))))

    def _new_metadata(self, spec: TableSpec, properties: Mapping[str, str]) -> dict[str, Any]:
        """The ``metaData`` action of a new table: the spec's schema (every column nullable, as Spark
        makes a table by path) with its comments, partitioning and properties."""
        return {
            "metaData": {
                "id": str(uuid.uuid4()),
                "format": {"provider": "parquet", "options": {}},
                "schemaString": json.dumps(_nullable(json.loads(spec.schema.json()))),
                "partitionColumns": list(spec.partition_by),
                "configuration": dict(properties),
                "createdTime": int(time.time() * 1000),
            }
        }

    def _commit(self, txn: Any, actions: list[dict[str, Any]], metadata: dict[str, Any] | None) -> None:
        """One Delta commit of ``actions`` in the transaction ``txn`` of Spark's Delta log (any store
        Spark writes tables on): a blind append, recorded as Spark's own writes are (operation
        ``WRITE``); ``metadata``: the table is new (Delta chooses its protocol from it, as it does when
        Spark creates one)."""
        jvm = self.spark.sparkContext._jvm
        assert jvm is not None
        parse = jvm.org.apache.spark.sql.delta.actions.Action.fromJson
        if metadata is not None:
            txn.updateMetadataForNewTable(parse(json.dumps(metadata)))
        listed = jvm.java.util.ArrayList()
        for action in actions:
            listed.add(parse(json.dumps(action)))
        txn.commit(jvm.scala.jdk.javaapi.CollectionConverters.asScala(listed).toSeq(), _append_operation(jvm))

    def _commit_on_driver(
        self, local: str, spec: TableSpec, files: Sequence[StagedFile], exists: bool, properties: Mapping[str, str]
    ) -> None:
        """Commit written files into the table at the local path ``local`` with delta-rs (the table
        made first when new, as :meth:`_write_on_driver` makes it): one commit of their ``add`` actions."""
        if not exists:
            _create_on_driver(local, spec.schema.json(), spec.partition_by, properties)
            with self._lock:
                self.commits += 1
        if not files:
            return
        table = DeltaRsTable(local)
        table.create_write_transaction(
            [AddAction(f.path, f.size, f.partition_values, f.modification_time, True, f.stats) for f in files],
            mode="append",
            schema=table.schema(),
            partition_by=list(spec.partition_by) or None,
        )
        with self._lock:
            self.commits += 1

    def _write_on_driver(self, write: Write, frame: DataFrame, exists: bool) -> bool:
        """Commit ``frame`` (conformed) with delta-rs on the driver, as Spark would (see the module
        doc); False, having done nothing, when Spark must write it."""
        spec = write.spec
        properties = {**spec.properties, **write.properties}
        replacing = exists and write.mode == "replace" and not write.fresh
        merging = exists and write.mode == "merge"
        small = self.small_work() or spec.small
        if merging or not small or (replacing and properties.get(CHANGE_FEED) == "true"):
            return False
        local = local_path_of(self.qualified(spec))
        if local is None:
            return False
        predicate = datafusion_predicate(write.replace or "false") if replacing else None
        if replacing and predicate is None:
            return False
        schema = frame.schema.json()
        if exists and not _fits(json.loads(DeltaRsTable(local).schema().to_json()), json.loads(schema)):
            return False  # a new column or type: Spark evolves the schema and its protocol
        data = frame.toArrow()
        if not exists:
            _create_on_driver(local, schema, spec.partition_by, properties)
            with self._lock:
                self.commits += 1
        statistics = WriterProperties(statistics_truncate_length=STATS_PREFIX_LENGTH)
        if replacing or (exists and write.mode == "overwrite"):
            write_deltalake(local, data, mode="overwrite", predicate=predicate, writer_properties=statistics)
        else:
            write_deltalake(local, data, mode="append", writer_properties=statistics)
        return True

    def write_all(self, writes: Sequence[Write], *, parallel: int = 8) -> None:
        """Several independent writes, up to ``parallel`` at a time; every one is done when this returns.

        The first failure is raised once the others have ended (each write is whole or absent).
        Replacing writes (the dearest: they search the table first) start first, so the cheap ones
        fill the time they take.
        """
        ordered = sorted(writes, key=lambda w: not (w.mode in ("replace", "merge") and not w.fresh))
        if len(ordered) <= 1 or parallel <= 1:
            for write in ordered:
                self.write(write)
            return
        with ThreadPoolExecutor(max_workers=parallel, thread_name_prefix="delta-write") as pool:
            target = inheritable_thread_target(self.spark)(self.write)
            futures = [pool.submit(target, write) for write in ordered]
        for future in futures:
            future.result()

    def _support_types(self, path: str, frame: DataFrame) -> None:
        """Enable the table feature a column type needs before the first such column joins an existing
        table: Delta enables ``timestampNtz`` (DATETIME) by itself only when it creates a table."""
        if _NTZ not in frame.schema.simpleString():
            return
        table = DeltaTable.forPath(self.spark, path)
        if _NTZ not in table.toDF().schema.simpleString():
            table.addFeatureSupport("timestampNtz")
            with self._lock:
                self.commits += 1

    # -- catalog ---------------------------------------------------------------------------------

    def _catalog_identity(self) -> str:
        conf = self.spark.conf.getAll  # what was set; a key left unset keeps its built-in default
        return "|".join(
            str(conf.get(key) or "")
            for key in (
                "spark.sql.catalogImplementation",
                "spark.hadoop.javax.jdo.option.ConnectionURL",
                "spark.sql.warehouse.dir",
            )
        )

    def _registered_file(self) -> str:
        return f"{self.root}/{Layer.STATE.value}/{REGISTERED_FILE}"

    def registered(self) -> dict[str, str]:
        """``database.table -> location`` registered from this lakehouse in the current catalog."""
        if self._registered is None:
            hadoop_path, fs = self._filesystem(self._registered_file())
            known: dict[str, str] = {}
            if fs.exists(hadoop_path):  # type: ignore[attr-defined]
                stream = fs.open(hadoop_path)  # type: ignore[attr-defined]
                try:
                    jvm = self.spark.sparkContext._jvm
                    assert jvm is not None
                    text = jvm.org.apache.commons.io.IOUtils.toString(stream, "UTF-8")
                finally:
                    stream.close()
                data = json.loads(str(text))
                if data.get("catalog") == self._catalog_identity():
                    known = dict(data.get("tables", {}))
            self._registered = known
        return self._registered

    def _remember(self, known: dict[str, str]) -> None:
        hadoop_path, fs = self._filesystem(self._registered_file())
        body = json.dumps({"catalog": self._catalog_identity(), "tables": known}, indent=1, sort_keys=True)
        out = fs.create(hadoop_path, True)  # type: ignore[attr-defined]
        try:
            out.write(bytearray(body.encode("utf-8")))
        finally:
            out.close()

    def warm_catalog(self) -> None:
        """Open the catalog in the background (once), when tables are registered: a persistent
        metastore (Hive's embedded Derby) takes seconds to start, which the first registration
        would otherwise wait for.  Nothing is created; a failure is left for that registration to
        report."""
        if not self.settings.register_tables or self._warming is not None:
            return

        def warm() -> None:
            with contextlib.suppress(Exception):  # the registration that needs the catalog raises it
                self.spark.sql("SHOW DATABASES").collect()

        self._warming = threading.Thread(target=warm, name="catalog-warm", daemon=True)
        self._warming.start()

    def warm_commits(self) -> None:
        """Run the JVM's Delta commit code once in the background (once per JVM), while a stage's tasks
        work: its first use in a JVM loads and compiles several seconds of classes, which the first
        commit of the run would otherwise wait for.  It commits to a table of its own in a temporary
        local folder, deleted after; a failure is left for the commits that need that code to report."""
        key = id(self.spark.sparkContext._jsc)
        if key in _WARMED or (self.small_work() and local_path_of(self.root) is not None):
            return  # small work on a local lake commits with delta-rs
        _WARMED.add(key)

        def warm() -> None:
            folder = tempfile.mkdtemp(prefix="binlog-lakehouse-warm-")
            try:
                spec = TableSpec(Layer.STATE, "warm", "", (Col("file", StringType(), ""),), ("file",))
                log = self._delta_log_at(f"file:{folder}/t")
                add = {"add": {"path": "f.parquet", "partitionValues": {}, "size": 1, "modificationTime": 0,
                               "dataChange": True, "stats": '{"numRecords":0}'}}  # fmt: skip
                self._commit(log.startTransaction(), [add], self._new_metadata(spec, spec.properties))
                self._commit(log.startTransaction(), [add], None)
            except Exception:
                pass
            finally:
                shutil.rmtree(folder, ignore_errors=True)

        threading.Thread(target=inheritable_thread_target(self.spark)(warm), name="delta-warm", daemon=True).start()

    @contextlib.contextmanager
    def registering_at_end(self) -> Iterator[None]:
        """Within the block, a table written for the first time is not registered as it is written
        but when the block ends (or, in the background, once :meth:`register_soon` is asked), in
        one batch with every other table of the lakehouse the catalog is not known to hold
        (:meth:`register_unregistered`): one catalog listing per database and one record of the
        registrations, instead of a lookup and a record per table.

        When the block raises, only what :meth:`register_soon` was asked for is registered: the
        tables it created since are registered by the next block that ends (the next run), as are
        those of a run killed before its end."""
        self._deferred = True
        try:
            yield
        finally:
            self._deferred = False
            self._made = []
            pool, self._registering = self._registering, None
            if pool is not None:
                pool.shutdown(wait=True)
            done, self._registrations = self._registrations, []
        for future in done:
            future.result()  # a registration that failed fails the block
        self.register_unregistered()

    def _created(self, table: TableRef) -> None:
        """A table was made: registered now, or as :meth:`registering_at_end` says."""
        if self._deferred:
            with self._lock:
                self._made.append(table)
        else:
            self.register([table])

    def register_soon(self) -> None:
        """Within :meth:`registering_at_end`: register the tables made so far in the background (one
        thread, in the order asked), while the run goes on; the block's end waits for it.  A persistent
        catalog takes a few tenths of a second per table, mostly waiting on its metastore."""
        if not self._deferred or not self.settings.register_tables:
            return
        with self._lock:
            made, self._made = self._made, []
        if not made:
            return
        if self._registering is None:
            self._registering = ThreadPoolExecutor(max_workers=1, thread_name_prefix="catalog-register")
        register = inheritable_thread_target(self.spark)(self.register)
        self._registrations.append(self._registering.submit(register, made))

    def register_unregistered(self) -> None:
        """Register every table of the lakehouse's folders that is not remembered as registered here
        (one listing per layer; only a folder not remembered is looked at: none, once every table is)."""
        if not self.settings.register_tables:
            return
        known = self.registered()
        self.register(
            [
                table
                for layer in CATALOGED
                for table in (Table(layer, name) for name in self._folders(layer))
                if known.get(self._key(table)) != self.path(table) and self.exists(table)
            ]
        )

    def register(self, tables: Sequence[TableRef], *, force: bool = False) -> None:
        """Make ``database.table`` point at each table's location, unless already done from here.

        A name already registered at another location (a persistent catalog shared by two
        lakehouse roots, or one that moved) is dropped and registered again here, so the name
        always reads this lakehouse; dropping an external table leaves its files alone. A name
        held by a managed table is an error (dropping it would delete its data).  ``force``
        checks the catalog even for tables remembered as registered.  The catalog is listed once
        per database; only a name it already holds is looked up.
        """
        if not self.settings.register_tables:
            return
        with self._catalog_lock:
            known = dict(self.registered())
            todo = [t for t in tables if t.layer != Layer.STATE and (force or known.get(self._key(t)) != self.path(t))]
            if not todo:
                return
            held: dict[Layer, set[str]] = {}
            for layer in sorted({t.layer for t in todo}):
                database = _quote(self.database(layer))
                self.spark.sql(f"CREATE DATABASE IF NOT EXISTS {database}")
                held[layer] = {row.tableName.lower() for row in self.spark.sql(f"SHOW TABLES IN {database}").collect()}
            for table in todo:
                self._register_one(table, table.name.lower() in held[table.layer])
                known[self._key(table)] = self.path(table)
            self._remember(known)
            self._registered = known

    def _key(self, table: TableRef) -> str:
        return f"{self.database(table.layer)}.{table.name}"

    def _register_one(self, table: TableRef, held: bool) -> None:
        """Register one table; ``held``: the catalog holds its name already (look up where it points)."""
        name = self.qualified_name(table)
        location = self.path(table)
        entry = self._catalog_entry(table) if held else None
        if entry is not None:
            kind, registered_at = entry
            if registered_at != self._qualified(location):
                if kind != "EXTERNAL":
                    raise RuntimeError(
                        f"{name} is a {kind.lower() or 'non-external'} table at {registered_at}, not this lakehouse's "
                        f"{location}: rename it or choose other database names (storage.*_database)"
                    )
                self.spark.sql(f"DROP TABLE {name}")
        escaped = location.replace("\\", "\\\\").replace("'", "\\'")
        self.spark.sql(f"CREATE TABLE IF NOT EXISTS {name} USING DELTA LOCATION '{escaped}'")

    def _catalog_entry(self, table: TableRef) -> tuple[str, str | None] | None:
        """The type (``EXTERNAL``, ``MANAGED``, ...) and location the catalog holds for ``table``, if any.

        Read from the catalog's own record (``SHOW TABLE EXTENDED``), which, unlike ``tableExists``
        or ``DESCRIBE``, does not open the Delta table: its files may be gone.
        """
        name = table.name
        # the LIKE pattern is a regular expression in which '*' means '.*' and '|' separates choices
        pattern = "*" if "*" in name or "|" in name else _REGEX_SPECIAL.sub(r"\\\1", name)
        literal = pattern.replace("\\", "\\\\").replace("'", "\\'")
        database = _quote(self.database(table.layer))
        for row in self.spark.sql(f"SHOW TABLE EXTENDED IN {database} LIKE '{literal}'").collect():
            if row.isTemporary or row.tableName.lower() != name.lower():
                continue
            details = dict(line.split(": ", 1) for line in row.information.splitlines() if ": " in line)
            location = details.get("Location")
            return details.get("Type", ""), location.rstrip("/") if location else None
        return None

    def _qualified(self, path: str) -> str:
        """``path`` as the catalog writes locations (``/x`` -> ``file:/x``)."""
        hadoop_path, fs = self._filesystem(path)
        return str(fs.makeQualified(hadoop_path).toString()).rstrip("/")  # type: ignore[attr-defined]


_LOG_ENTRY = re.compile(r"\d{20}\.(json|checkpoint(\.\d+\.\d+)?\.parquet|checkpoint\.[\w-]+\.(json|parquet))")
"""A commit or a checkpoint in a Delta log folder (not a temporary file, a checksum or ``_last_checkpoint``)."""

_KEYWORDS = frozenset({"AND", "OR", "NOT", "IN", "IS", "NULL", "TRUE", "FALSE"})
_SPARK_LITERAL = re.compile(r"'((?:[^'\\]|\\.)*)'|`((?:[^`]|``)*)`|([^'`]+)", re.DOTALL)


def datafusion_predicate(predicate: str) -> str | None:
    r"""A Spark SQL predicate as delta-rs reads it (DataFusion): identifiers in double quotes, string
    literals with their quotes doubled.  None (Spark then writes) when a literal holds an escape
    other than an escaped backslash or quote (what :func:`pipelines.progress.quote_literal`
    writes), a quote is left open, or the text outside quotes holds a double quote or a name with a
    capital letter (DataFusion reads those otherwise than Spark).

    >>> datafusion_predicate("`file` IN ('a', 'b') AND stage = 'gold'")
    '"file" IN (\'a\', \'b\') AND stage = \'gold\''
    """
    parts: list[str] = []
    at = 0
    for match in _SPARK_LITERAL.finditer(predicate):
        if match.start() != at:
            return None
        at = match.end()
        literal, identifier, other = match.groups()
        if literal is not None:
            escaped = re.findall(r"\\(.)", literal, re.DOTALL)
            if any(char not in "\\'" for char in escaped):
                return None
            value = re.sub(r"\\(.)", r"\1", literal, flags=re.DOTALL)
            parts.append("'" + value.replace("'", "''") + "'")
        elif identifier is not None:
            parts.append('"' + identifier.replace("``", "`").replace('"', '""') + '"')
        elif '"' in other or any(w != w.lower() and w not in _KEYWORDS for w in re.findall(r"\w+", other)):
            return None
        else:
            parts.append(other)
    return "".join(parts) if at == len(predicate) else None


def _fits(table: Any, frame: Any) -> bool:
    """Whether rows of the ``frame`` schema (Delta/Spark schema JSON, parsed) are rows of the ``table``
    schema as it is: the same names, order and types, comments aside; a column the table keeps NOT
    NULL is one in the frame as well (the frame may be the stricter)."""
    if isinstance(table, dict) and isinstance(frame, dict):
        if table.get("type") == "struct" and frame.get("type") == "struct":
            pairs = list(zip(table["fields"], frame["fields"], strict=False))
            return len(table["fields"]) == len(frame["fields"]) and all(
                t["name"] == f["name"] and (t["nullable"] or not f["nullable"]) and _fits(t["type"], f["type"])
                for t, f in pairs
            )
        keys = {k for k in (*table, *frame) if k != "metadata"}
        return all(
            _fits(table.get(k), frame.get(k))
            if k not in ("containsNull", "valueContainsNull")
            else (table.get(k) or not frame.get(k))
            for k in keys
        )
    return bool(table == frame)


def _append_operation(jvm: Any) -> Any:
    """Delta's ``WRITE`` operation in append mode (``DeltaOperations.Write(SaveMode.Append)``, its
    other parameters at their defaults): what ``DESCRIBE HISTORY`` shows for the commit."""
    name = "org.apache.spark.sql.delta.DeltaOperations$Write"
    loader = jvm.java.lang.Thread.currentThread().getContextClassLoader()
    constructor = loader.loadClass(name).getConstructors()[0]
    defaults = [jvm.scala.Option.empty()] * (constructor.getParameterCount() - 1)
    write = getattr(jvm.org.apache.spark.sql.delta, "DeltaOperations$Write")
    return write(jvm.org.apache.spark.sql.SaveMode.Append, *defaults)


def _nullable(schema: Any) -> Any:
    """A parsed schema JSON with every field and element nullable (what Spark's ``asNullable`` gives)."""
    if isinstance(schema, list):
        return [_nullable(v) for v in schema]
    if not isinstance(schema, dict):
        return schema
    nullable = {"nullable", "containsNull", "valueContainsNull"}
    return {k: True if k in nullable else _nullable(v) for k, v in schema.items()}


def _create_on_driver(path: str, schema_json: str, partition_by: Sequence[str], properties: Mapping[str, str]) -> None:
    """Create the Delta table at the local ``path`` with delta-rs, in one commit: its schema with the
    comments, partitioning and properties.  Its columns are all nullable, as Spark makes them when it
    creates a table by path, so the table reads the same whichever wrote it first."""
    DeltaRsTable.create(
        path,
        schema=DeltaRsSchema.from_json(json.dumps(_nullable(json.loads(schema_json)))),
        partition_by=list(partition_by) or None,
        configuration=dict(properties),
        raise_if_key_not_exists=False,  # delta-rs knows not every property Spark reads (the statistics' prefix)
    )


DELTA_RS_SCHEMES = frozenset({"file", *S3_SCHEMES})
"""Where :meth:`Lakehouse.rows` reads small tables with delta-rs on the driver."""

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)

Convert = Callable[[Any], Any]


def _local_timestamp(value: datetime) -> datetime:
    """An instant as PySpark's ``collect`` gives a ``timestamp``: naive, in the driver's local time."""
    micros = (value - _EPOCH) // _MICROSECOND
    return datetime.fromtimestamp(micros // 1_000_000).replace(microsecond=micros % 1_000_000)


def _plain(value: Any) -> Any:
    return value


def _map_of(data_type: pa.DataType) -> Convert | None:
    key, item = _converter(data_type.key_type), _converter(data_type.item_type)
    if key is None or item is None:
        return None
    return lambda value: None if value is None else {key(k): item(v) for k, v in value}


def _list_of(data_type: pa.DataType) -> Convert | None:
    element = _converter(data_type.value_type)
    if element is None:
        return None
    return lambda value: None if value is None else [element(v) for v in value]


def _struct_of(data_type: pa.DataType) -> Convert | None:
    fields = [(data_type.field(i).name, _converter(data_type.field(i).type)) for i in range(data_type.num_fields)]
    if any(convert is None for _, convert in fields):
        return None
    return lambda value: (
        None if value is None else Row(**{name: convert(value[name]) for name, convert in fields})  # type: ignore[misc]
    )


def _timestamp(data_type: pa.DataType) -> Convert:
    if data_type.tz is None:  # timestamp_ntz: a wall-clock value, as Spark gives it
        return _plain
    return lambda value: None if value is None else _local_timestamp(value)


_CONVERTERS: tuple[tuple[Callable[[pa.DataType], bool], Callable[[pa.DataType], Convert | None]], ...] = (
    (pa.types.is_map, _map_of),
    (pa.types.is_list, _list_of),
    (pa.types.is_large_list, _list_of),
    (pa.types.is_struct, _struct_of),
    (pa.types.is_timestamp, _timestamp),
    (pa.types.is_string, lambda _: _plain),
    (pa.types.is_large_string, lambda _: _plain),
    (pa.types.is_integer, lambda _: _plain),
    (pa.types.is_boolean, lambda _: _plain),
    (pa.types.is_floating, lambda _: _plain),
)
"""Arrow type -> how ``to_pylist`` values become what Spark's ``collect`` gives (the types of the
small tables, a struct as a ``Row`` of its fields; any other type is read through Spark)."""


def _converter(data_type: pa.DataType) -> Convert | None:
    return next((make(data_type) for matches, make in _CONVERTERS if matches(data_type)), None)


def small_table_rows(
    location: str, hadoop: Mapping[str, str], columns: Sequence[str] | None = None
) -> list[dict[str, Any]] | None:
    """Every row of the Delta table at ``location`` (``file:`` or S3 URI; only ``columns`` when
    given), read by delta-rs, as ``Row.asDict()`` of Spark's ``collect``.

    None when delta-rs cannot: a table feature it does not read, a store it cannot reach with the
    settings translated from Hadoop's (a credential provider of S3A's it has no equivalent for),
    a column type :data:`_CONVERTERS` does not map. The caller then reads the table through Spark,
    the reference, which reads it or fails with its own error."""
    local = local_path_of(location)
    try:
        table = DeltaRsTable(
            local or location, storage_options=None if local else delta_storage_options(location, hadoop) or None
        ).to_pyarrow_table(columns=None if columns is None else list(columns))
    except (DeltaError, OSError):
        return None
    converters = [_converter(f.type) for f in table.schema]
    if any(convert is None for convert in converters):
        return None
    columns = [
        [convert(v) for v in column.to_pylist()]  # type: ignore[misc]
        for convert, column in zip(converters, table.columns, strict=True)
    ]
    names = table.schema.names
    return [dict(zip(names, values, strict=True)) for values in zip(*columns, strict=True)] if columns else []


def hadoop_filesystem_options(spark: SparkSession) -> dict[str, str]:
    """The object-store settings of the session's Hadoop configuration, as plain data for the tasks.

    What ``spark.hadoop.fs.s3a.endpoint: http://minio:9000`` (config, spark-submit ``--conf``) and
    ``core-site.xml`` set, for the names matching ``FILESYSTEM_KEYS``::

        >>> hadoop_filesystem_options(spark)["fs.s3a.endpoint"]
        'http://minio:9000'

    The result holds credentials when the configuration does: never log it.
    """
    configuration = spark.sparkContext._jsc.hadoopConfiguration()
    found = configuration.getValByRegex(FILESYSTEM_KEYS)
    return {str(key): str(value) for key, value in found.items()}


__all__ = [
    "Lakehouse",
    "Layer",
    "Persisted",
    "Table",
    "TableRef",
    "Write",
    "hadoop_filesystem_options",
    "small_table_rows",
]
