"""How Spark executes a stage's queries, chosen by the size of the files the stage reads.

On little data a query costs its planning, not its rows: adaptive execution re-plans every
query once per shuffle (each query stage its own Spark job), and code generation compiles Java
source for every new plan.  A stage whose files total less than ``spark.small_work_mib`` runs
with both off (:data:`SMALL_WORK`); a larger one with Spark's defaults, where they pay for
themselves.  Settings the session already has explicitly (a config's ``spark.conf``, spark-submit)
are never touched, and every setting changed is restored when the stage ends.

Small work also runs its Python in the driver's own process (:func:`collect_mapped`): the function
a stage would hand Spark's Python workers (``mapInArrow``) is called here, on the rows as Arrow.  A
run on a few small files then starts no Python worker, and its JVM never runs the Arrow exchange
with one: on a cold JVM the first such job costs seconds, the framing of the files themselves a
fraction of one.

A JVM started for one run (``binlog-lakehouse run`` and the other stage commands) runs with its
quick compiler only, whatever the size of the work (:data:`pipelines.session.QUICK_COMPILER`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TypeVar

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame, Row, SparkSession
from pyspark.sql.conversion import ArrowTableToRowsConversion
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import StructType

MIB = 1 << 20

SMALL_WORK: dict[str, str] = {
    "spark.sql.adaptive.enabled": "false",
    "spark.sql.codegen.wholeStage": "false",
    "spark.sql.codegen.factoryMode": "NO_CODEGEN",
}
"""The SQL settings of a stage on small input: plans executed as built, expressions interpreted."""


class ExecutionMode:
    """Applies :data:`SMALL_WORK` to a session for the stage at hand, and takes it back.

    >>> mode = ExecutionMode(spark, small_work_mib=64)
    >>> mode.fit(5_000)   # a few KiB: planned and interpreted
    >>> mode.reset()      # the session's own settings again
    """

    def __init__(self, spark: SparkSession, small_work_mib: int) -> None:
        self.spark = spark
        self.limit = small_work_mib * MIB
        given = spark.conf.getAll
        self.free = [key for key in SMALL_WORK if key not in given]
        """The keys the session leaves at Spark's defaults: the only ones changed."""
        self.small = False

    def fit(self, size: int) -> None:
        """Set the session up for a stage reading ``size`` bytes of binlog files."""
        small = size < self.limit
        if small == self.small:
            return
        if small:
            for key in self.free:
                self.spark.conf.set(key, SMALL_WORK[key])
            self.small = True
        else:
            self.reset()

    def reset(self) -> None:
        """Spark's defaults again for every key :meth:`fit` changed."""
        if self.small:
            for key in self.free:
                self.spark.conf.unset(key)
            self.small = False


ArrowFunction = Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]
"""What ``mapInArrow`` runs: batches in, batches of its output schema out."""


T = TypeVar("T", pa.RecordBatch, pa.Table)


def _declared(data: T, target: pa.Schema) -> T:
    """Rows a function returned, in the Arrow schema their declared Spark schema maps to."""
    return data if data.schema == target else data.cast(target)


def collect_mapped(
    source: DataFrame | pa.Table, function: ArrowFunction, schema: StructType, *, here: bool
) -> list[Row]:
    """The rows ``source.mapInArrow(function, schema).collect()`` gives: in Spark's Python workers, or
    with ``here`` (and for an Arrow ``source``, always) in this process, over the rows as Arrow (a
    frame's through ``toArrow``), converted to rows as ``collect`` converts them (``timestamp``: local
    time without a zone)."""
    if isinstance(source, DataFrame) and not here:
        return source.mapInArrow(function, schema).collect()
    table = source.toArrow() if isinstance(source, DataFrame) else source
    target = to_arrow_schema(schema, timezone="UTC", prefers_large_types=False)
    out = [_declared(batch, target) for batch in function(iter(table.to_batches()))]
    return ArrowTableToRowsConversion.convert(pa.Table.from_batches(out, schema=target), schema)


def apply_grouped(
    frame: DataFrame, key: str, function: Callable[[pa.Table], pa.Table], schema: StructType, *, here: bool
) -> DataFrame:
    """``frame.groupBy(key).applyInArrow(function, schema)``: in Spark's Python workers, or with
    ``here`` in this process, each group of the frame's rows as Arrow (``toArrow``) handed to
    ``function`` in turn, the result a frame of the rows it returned."""
    if not here:
        return frame.groupBy(key).applyInArrow(function, schema)
    table = frame.toArrow()
    target = to_arrow_schema(schema, timezone="UTC", prefers_large_types=False)
    column = table[key]
    groups = [
        function(table.filter(pc.is_null(column) if value is None else pc.equal(column, value)))
        for value in pc.unique(column).to_pylist()
    ]
    out = pa.concat_tables([_declared(g, target) for g in groups]) if groups else target.empty_table()
    return frame.sparkSession.createDataFrame(out, schema)


__all__ = ["MIB", "SMALL_WORK", "ArrowFunction", "ExecutionMode", "apply_grouped", "collect_mapped"]
