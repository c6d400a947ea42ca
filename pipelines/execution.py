"""How Spark executes a stage's queries, chosen by the size of the files the stage reads.

On little data a query costs its planning, not its rows: adaptive execution re-plans every
query once per shuffle (each query stage its own Spark job), and code generation compiles Java
source for every new plan.  A stage whose files total less than ``spark.small_work_mib`` runs
with both off (:data:`SMALL_WORK`); a larger one with Spark's defaults, where they pay for
themselves.  Settings the session already has explicitly (a config's ``spark.conf``, spark-submit)
are never touched, and every setting changed is restored when the stage ends.

A JVM started for one run (``binlog-lakehouse run`` and the other stage commands) also keeps
the code a small stage makes hot with its quick compiler (C1): HotSpot's optimizing compiler
(C2) otherwise spends more CPU on a few seconds of small work than that work takes, and the
process ends before the optimized code pays back.  This is a HotSpot compiler directive added
for the stage and removed after it (:class:`CompilerDirectives`); a long-lived session (a
notebook, the tests) is left alone, since a method kept from C2 stays so for the JVM's life.
"""

from __future__ import annotations

import os
import tempfile
from typing import Any

from py4j.protocol import Py4JError
from pyspark.sql import SparkSession

MIB = 1 << 20

SMALL_WORK: dict[str, str] = {
    "spark.sql.adaptive.enabled": "false",
    "spark.sql.codegen.wholeStage": "false",
    "spark.sql.codegen.factoryMode": "NO_CODEGEN",
}
"""The SQL settings of a stage on small input: plans executed as built, expressions interpreted."""

QUICK_COMPILER_ONLY = '[{match: "*.*", c2: {Exclude: true}}]'
"""The HotSpot compiler directive of a small stage in a JVM started for one run: no method is
compiled by C2 (each stays with C1's code)."""

DIAGNOSTIC_COMMAND = "com.sun.management:type=DiagnosticCommand"


class CompilerDirectives:
    """The driver JVM's compiler directives, through HotSpot's ``DiagnosticCommand`` MBean (what
    ``jcmd <pid> Compiler.directives_add`` does).  :attr:`available` is False on a JVM without it."""

    def __init__(self, spark: SparkSession) -> None:
        self.spark = spark
        self._invoke: Any = None
        jvm = spark._jvm
        assert jvm is not None
        self._server = jvm.java.lang.management.ManagementFactory.getPlatformMBeanServer()
        self._name = jvm.javax.management.ObjectName(DIAGNOSTIC_COMMAND)
        try:
            self.describe()
        except Py4JError:  # no such MBean or operation: not a HotSpot JVM
            self.available = False
        else:
            self.available = True

    def add(self, text: str) -> None:
        """Add the directives of ``text`` (HotSpot's JSON-like directive syntax) on top."""
        with tempfile.TemporaryDirectory(prefix="compiler-directives-") as folder:
            path = os.path.join(folder, "directives.json")
            with open(path, "w", encoding="utf-8") as out:
                out.write(text)
            self.call("compilerDirectivesAdd", path)

    def remove(self) -> None:
        """Remove the directive added last."""
        self.call("compilerDirectivesRemove")

    def describe(self) -> str:
        """The directives in force, as ``jcmd <pid> Compiler.directives_print`` prints them."""
        return str(self.call("compilerDirectivesPrint"))

    def call(self, operation: str, *arguments: str) -> Any:
        """``operation`` of the MBean with ``arguments`` (the MBean server's classes are not public:
        its ``invoke`` is reached through the ``MBeanServer`` interface)."""
        gateway = self.spark.sparkContext._gateway
        jvm = self.spark._jvm
        assert gateway is not None and jvm is not None
        strings = gateway.new_array(jvm.java.lang.String, len(arguments))
        for i, argument in enumerate(arguments):
            strings[i] = argument
        parameters = gateway.new_array(jvm.java.lang.Object, 1)
        parameters[0] = strings
        signature = gateway.new_array(jvm.java.lang.String, 1)
        signature[0] = "[Ljava.lang.String;"
        if self._invoke is None:
            kind = jvm.java.lang.Class
            types = gateway.new_array(kind, 4)
            for i, name in enumerate(
                ("javax.management.ObjectName", "java.lang.String", "[Ljava.lang.Object;", "[Ljava.lang.String;")
            ):
                types[i] = kind.forName(name)
            self._invoke = kind.forName("javax.management.MBeanServer").getMethod("invoke", types)
        call = gateway.new_array(jvm.java.lang.Object, 4)
        call[0], call[1], call[2], call[3] = self._name, operation, parameters, signature
        return self._invoke.invoke(self._server, call)


class ExecutionMode:
    """Applies :data:`SMALL_WORK` to a session for the stage at hand, and takes it back.

    ``one_run``: the session's JVM was started for this run and ends with it; small stages then
    also run with :data:`QUICK_COMPILER_ONLY`.

    >>> mode = ExecutionMode(spark, small_work_mib=64)
    >>> mode.fit(5_000)   # a few KiB: planned and interpreted
    >>> mode.reset()      # the session's own settings again
    """

    def __init__(self, spark: SparkSession, small_work_mib: int, *, one_run: bool = False) -> None:
        self.spark = spark
        self.limit = small_work_mib * MIB
        given = spark.conf.getAll
        self.free = [key for key in SMALL_WORK if key not in given]
        """The keys the session leaves at Spark's defaults: the only ones changed."""
        directives = CompilerDirectives(spark) if one_run else None
        self.directives = directives if directives is not None and directives.available else None
        """Where the quick-compiler directive goes (None: not for this session)."""
        self.small = False

    def fit(self, size: int) -> None:
        """Set the session up for a stage reading ``size`` bytes of binlog files."""
        small = size < self.limit
        if small == self.small:
            return
        if small:
            for key in self.free:
                self.spark.conf.set(key, SMALL_WORK[key])
            if self.directives is not None:
                self.directives.add(QUICK_COMPILER_ONLY)
            self.small = True
        else:
            self.reset()

    def reset(self) -> None:
        """Spark's defaults again for every key :meth:`fit` changed, and the JVM's own compilers."""
        if self.small:
            for key in self.free:
                self.spark.conf.unset(key)
            if self.directives is not None:
                self.directives.remove()
            self.small = False


__all__ = ["MIB", "QUICK_COMPILER_ONLY", "SMALL_WORK", "CompilerDirectives", "ExecutionMode"]
