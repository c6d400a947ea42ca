"""All Delta Lake I/O of the pipeline: where each table lives, how it is written and registered.

Every table has a layer (its catalog database and its folder under the lakehouse root) and a
name.  Stages read and write through a :class:`Lakehouse`, never through paths of their own::

    lake = Lakehouse(spark, cfg.storage)
    lake.replace_where(events, Table.bronze("binlog_events"), "file IN ('s3a://b/mysql-bin.000001')")
    spark.table("binlog_bronze.binlog_events")   # registered in the catalog as well

Writes are idempotent by construction: ``replace_where`` swaps exactly the rows a predicate
selects (a re-run writes the same rows again instead of adding them), ``merge`` upserts on
keys, and each is one Delta commit, so a run killed mid-write leaves the previous version.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from delta.tables import DeltaTable
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import StructType

from conf import StorageSettings


@dataclass
class Persisted:
    """The frames one build persisted, released together once the build is written.

    A job that runs the stages repeatedly in one session (an orchestrator task, a notebook, the
    tests) would otherwise keep every build's cached blocks until the driver runs out of memory.
    """

    frames: list[DataFrame] = field(default_factory=list)

    def keep(self, frame: DataFrame) -> DataFrame:
        """``frame`` persisted, remembered for :meth:`release`."""
        kept = frame.persist()
        self.frames.append(kept)
        return kept

    def release(self) -> None:
        """Unpersist every kept frame (a frame is read again from its source if used later)."""
        for frame in self.frames:
            frame.unpersist()
        self.frames.clear()


class Layer(StrEnum):
    """The medallion layers, plus the quality-gate results."""

    BRONZE = "bronze"
    SILVER = "silver"
    GOLD = "gold"
    QUALITY = "quality"


@dataclass(frozen=True, slots=True)
class Table:
    """A table of one layer: ``Table.silver("table_maps")``."""

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
        """A quality-gate table."""
        return cls(Layer.QUALITY, name)


def _quote(identifier: str) -> str:
    return "`" + identifier.replace("`", "``") + "`"


class Lakehouse:
    """Reads, writes and registers the pipeline's Delta tables below ``settings.root``."""

    def __init__(self, spark: SparkSession, settings: StorageSettings) -> None:
        self.spark = spark
        self.settings = settings
        self._registered: set[Table] = set()

    def path(self, table: Table) -> str:
        """``<root>/<layer>/<name>``."""
        return f"{self.settings.root.rstrip('/')}/{table.layer.value}/{table.name}"

    def database(self, layer: Layer) -> str:
        """The catalog database of a layer."""
        return {
            Layer.BRONZE: self.settings.bronze_database,
            Layer.SILVER: self.settings.silver_database,
            Layer.GOLD: self.settings.gold_database,
            Layer.QUALITY: self.settings.quality_database,
        }[layer]

    def qualified_name(self, table: Table) -> str:
        """``database.table`` as analysts query it (quoted)."""
        return f"{_quote(self.database(table.layer))}.{_quote(table.name)}"

    def exists(self, table: Table) -> bool:
        """True when the table's folder holds a Delta table."""
        return bool(DeltaTable.isDeltaTable(self.spark, self.path(table)))

    def read(self, table: Table) -> DataFrame:
        """The table's current version (it must exist)."""
        return self.spark.read.format("delta").load(self.path(table))

    def read_or_empty(self, table: Table, schema: StructType) -> DataFrame:
        """The table, or an empty frame of ``schema`` before its first write."""
        if self.exists(table):
            return self.read(table)
        return self.spark.createDataFrame([], schema)

    def tables(self, layer: Layer) -> list[str]:
        """Names of the Delta tables of a layer that exist on storage."""
        root = f"{self.settings.root.rstrip('/')}/{layer.value}"
        jvm = self.spark.sparkContext._jvm
        assert jvm is not None
        hadoop_path = jvm.org.apache.hadoop.fs.Path(root)
        fs = hadoop_path.getFileSystem(self.spark.sparkContext._jsc.hadoopConfiguration())
        if not fs.exists(hadoop_path):
            return []
        names = [status.getPath().getName() for status in fs.listStatus(hadoop_path) if status.isDirectory()]
        return sorted(name for name in names if self.exists(Table(layer, name)))

    def append(self, df: DataFrame, table: Table, *, merge_schema: bool = False) -> None:
        """Append rows (only for tables whose rows are unique by construction, e.g. run logs)."""
        writer = df.write.format("delta").mode("append")
        if merge_schema:
            writer = writer.option("mergeSchema", "true")
        writer.save(self.path(table))
        self.register(table)

    def overwrite(self, df: DataFrame, table: Table) -> None:
        """Replace the whole table (derived tables rebuilt from their inputs), schema included."""
        df.write.format("delta").mode("overwrite").option("overwriteSchema", "true").save(self.path(table))
        self.register(table)

    def replace_where(self, df: DataFrame, table: Table, predicate: str, *, merge_schema: bool = False) -> None:
        """Atomically replace the rows matching ``predicate`` with ``df`` (whose rows must match it).

        Writing the same ``df`` twice leaves the table as after the first write: this is how
        every stage stays idempotent.  The first write creates the table.
        """
        writer = df.write.format("delta")
        if self.exists(table):
            writer = writer.mode("overwrite").option("replaceWhere", predicate)
        else:
            writer = writer.mode("append")
        if merge_schema:
            writer = writer.option("mergeSchema", "true")
        writer.save(self.path(table))
        self.register(table)

    def merge(self, df: DataFrame, table: Table, keys: list[str]) -> None:
        """Upsert ``df`` on ``keys``: matching rows are updated, new ones inserted."""
        if not self.exists(table):
            df.write.format("delta").mode("append").save(self.path(table))
        else:
            condition = " AND ".join(f"t.{_quote(k)} <=> s.{_quote(k)}" for k in keys)
            (
                DeltaTable.forPath(self.spark, self.path(table))
                .alias("t")
                .merge(df.alias("s"), condition)
                .whenMatchedUpdateAll()
                .whenNotMatchedInsertAll()
                .execute()
            )
        self.register(table)

    def register(self, table: Table) -> None:
        """Make ``database.table`` point at the table's location (once per session and table)."""
        if not self.settings.register_tables or table in self._registered:
            return
        database = _quote(self.database(table.layer))
        if not any(done.layer == table.layer for done in self._registered):
            self.spark.sql(f"CREATE DATABASE IF NOT EXISTS {database}")
        location = self.path(table).replace("'", "\\'")
        self.spark.sql(f"CREATE TABLE IF NOT EXISTS {self.qualified_name(table)} USING DELTA LOCATION '{location}'")
        self._registered.add(table)


__all__ = ["Lakehouse", "Layer", "Table"]
