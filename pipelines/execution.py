"""How Spark executes a stage's queries, chosen by the size of the files the stage reads.

On little data a query costs its planning, not its rows: adaptive execution re-plans every
query once per shuffle (each query stage its own Spark job), and code generation compiles Java
source for every new plan.  A stage whose files total less than ``spark.small_work_mib`` runs
with both off (:data:`SMALL_WORK`); a larger one with Spark's defaults, where they pay for
themselves.  Settings the session already has explicitly (a config's ``spark.conf``, spark-submit)
are never touched, and every setting changed is restored when the stage ends.

A JVM started for one run (``binlog-lakehouse run`` and the other stage commands) runs with its
quick compiler only, whatever the size of the work (:data:`pipelines.session.QUICK_COMPILER`).
"""

from __future__ import annotations

from pyspark.sql import SparkSession

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


__all__ = ["MIB", "SMALL_WORK", "ExecutionMode"]
