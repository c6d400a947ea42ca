"""The one place a Spark session is built: Delta Lake enabled, settings from ``SparkSettings``.

Precedence, lowest first: the settings computed here from the config, then whatever the launcher
already set (spark-submit's ``--master``, ``--packages``, ``--conf``, or a running SparkContext),
then ``spark.conf`` from the config, which is applied last and wins over everything.

Table registrations outlive the session with ``spark.catalog: hive``: Spark's Hive catalog, with
an embedded Derby metastore in ``spark.metastore_dir`` (by default ``<storage.root>/_metastore``)
when one is configured, else the metastore of the cluster's ``hive-site.xml``. Embedded Derby lets
one JVM at a time open the metastore: a second session on the same folder fails until the first
one stops.

``python -m pipelines.session --warm`` starts a session once so that Ivy downloads the Delta jars
into ``spark.ivy_dir``, writes and reads a one-row Delta table, and prints where the jars are;
and, once per JDK and pyspark, records the class-data archive of the driver JVM in
``spark.class_archive_dir`` (:func:`record_classes`): a short Spark job runs in a JVM that writes
the classes it loaded when it exits, and every JVM this module starts later maps that archive
instead of loading and verifying those classes again.
``--jars`` does the same and prints the jars as one comma-separated list, for ``spark-submit
--jars`` (the cluster then needs no access to Maven Central; anything Spark prints meanwhile goes
to stderr). ``--java-options`` prints the options this module gives a driver JVM it starts for one
run (collector, quick compiler, class-data archive), for ``spark-submit --driver-java-options``
where each job is a JVM of its own (an orchestrator's local tasks).
``python -m pipelines.session --sql "SELECT ..."`` runs statements in a session built from the
config, so tables registered by earlier runs are queried by name::

    python -m pipelines.session --config conf/local.yaml --sql "SELECT count(*) FROM binlog_bronze.binlog_events"
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

from pyspark import SparkConf, SparkContext
from pyspark.errors import PySparkException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from conf import ConfigError, SparkSettings, load_config
from conf.paths import is_uri
from pipelines.staging import DICTIONARY_PAGE_BYTES, ROW_GROUP_BYTES

__all__ = [
    "ARROW_BATCH_ROWS",
    "CALL_SITES",
    "CONCURRENT_WRITERS",
    "DELTA_CATALOG",
    "DELTA_EXTENSION",
    "DELTA_LOG_CACHE_SIZE",
    "DICTIONARY_PAGE_BYTES",
    "GARBAGE_COLLECTOR",
    "LAUNCH_SETTINGS",
    "MALLOC_ARENA_MAX",
    "QUICK_COMPILER",
    "RESOLVED",
    "ROW_GROUP_BYTES",
    "SESSION_SETTINGS",
    "build_spark",
    "cached_jar",
    "class_archive",
    "derby_metastore_url",
    "launcher_conf",
    "local_cores",
    "record_classes",
    "resolved_jars",
    "run_sql",
    "spark_options",
    "submit_jars",
]

DELTA_EXTENSION = "io.delta.sql.DeltaSparkSessionExtension"
DELTA_CATALOG = "org.apache.spark.sql.delta.catalog.DeltaCatalog"

DELTA_LOG_CACHE_SIZE = 256
"""Delta tables whose log (and latest snapshot, with its analysed plans) a session keeps in memory.
Delta's default keeps up to 10,000 for an hour: a session that runs the pipeline again and again
(an orchestrator worker, a notebook, the tests) fills the driver's heap with them."""

LAUNCH_SETTINGS = frozenset(
    {"spark.master", "spark.jars.packages", "spark.jars", "spark.jars.ivy", "spark.driver.memory"}
)
"""Settings that only matter when the JVM starts: never set when a launcher already started it."""

CLASS_ARCHIVE_QUIET = ("-Xshare:auto", "-Xlog:cds=off", "-Xlog:cds+dynamic=off")
"""With the archive: a JVM that cannot map it (another JDK build, ...) runs without it, silently."""

JAVA_OPTIONS = "spark.driver.extraJavaOptions"

MALLOC_ARENA_MAX = "2"
"""glibc malloc arenas of a JVM this process starts, unless the environment already sets it."""

CONCURRENT_WRITERS = 16
"""Files a write task keeps open at once (``spark.sql.maxConcurrentOutputFileWriters``) before it
sorts its rows by partition: ``binlog_events``' few partitions (``event_class``) are written as the
rows come, without first sorting a whole framed file (700 MiB of heap for a 256 MiB binlog)."""

CALL_SITES = "spark.python.sql.dataFrameDebugging.enabled"
"""PySpark's capture of the Python call site of every DataFrame and Column call, for Spark's error
messages: on by default, it costs each such call a walk of the Python stack, a failed ``import
IPython`` and four more round trips to the JVM. The stages build their plans from thousands of those
calls; with the capture off, a run over one new sample file in a warm session sends about 14,000
commands to the JVM instead of 33,000 and takes about 7 % less time. The errors a run reports are the
pipeline's own, naming the file, offset and event; ``conf`` can turn the capture back on. A static
setting: it is given when the session starts."""

ARROW_BATCH_ROWS = 2500
"""Rows per Arrow batch a Python task receives (``spark.sql.execution.arrow.maxRecordsPerBatch``;
Spark's default is 10,000). Gold's decode holds the row changes of a whole batch of rows events in
the worker before it hands them on: on the 256 MiB OLTP binlog of ``bench/`` each of the two busy
workers peaked about 85 MiB lower with 2,500, and the JVM, which buffers the batches too, 120-160
MiB lower; 1,000 made the decode slower, 5,000 saved half as much."""

SESSION_SETTINGS = {
    "parquet.block.size": str(ROW_GROUP_BYTES),
    "parquet.dictionary.page.size": str(DICTIONARY_PAGE_BYTES),
    "spark.sql.maxConcurrentOutputFileWriters": str(CONCURRENT_WRITERS),
    "spark.sql.execution.arrow.maxRecordsPerBatch": str(ARROW_BATCH_ROWS),
}
"""Settings of the session itself (not of its launch), set once it runs unless ``conf`` gives them."""

GARBAGE_COLLECTOR = "-XX:+UseParallelGC"
"""The collector of a driver JVM this process starts, unless the config's Java options choose one:
the JVM's own choice on two or more CPUs is G1, whose concurrent work competes with the tasks of a
local run for the same few cores (the throughput collector: about 4 % faster end to end on the
256 MiB binlog of ``bench/``)."""

QUICK_COMPILER = "-XX:TieredStopAtLevel=1"
"""The compiler of a driver JVM this process starts for one run (a job command): HotSpot's quick
compiler (C1) only.  The rows are the Python tasks' work; the JVM plans, schedules, reads files for
the tasks and commits, and its optimizing compiler (C2) spent more CPU on that code than the code
itself (on the 256 MiB binlog of ``bench/``: 14 CPU-seconds of C2 in a run of about 45 seconds on two
cores) before the process ends.  A long-lived session (a notebook, the tests) keeps both compilers."""

_CHOSEN_GC = re.compile(r"-XX:\+Use\w*GC\b")
"""A Java option choosing a garbage collector (``-XX:+UseG1GC``, ...)."""

_LOCAL_MASTER = re.compile(r"^local(?:\[(?P<cores>\*|[1-9][0-9]*)(?:,[0-9]+)?\])?$")


def local_cores(master: str | None) -> int | None:
    """The worker threads of a ``local``/``local[N]``/``local[*]`` master, None for other masters.

    >>> local_cores("local[2]"), local_cores("local"), local_cores("yarn")
    (2, 1, None)
    """
    match = _LOCAL_MASTER.match(master or "")
    if match is None:
        return None
    cores = match.group("cores")
    if cores is None:
        return 1
    return (os.cpu_count() or 1) if cores == "*" else int(cores)


def derby_metastore_url(metastore_dir: str) -> str:
    """The JDBC URL of the embedded Derby metastore kept in ``metastore_dir`` (created on first use).

    >>> derby_metastore_url("/data/lakehouse/_metastore")
    'jdbc:derby:;databaseName=/data/lakehouse/_metastore/metastore_db;create=true'
    """
    return f"jdbc:derby:;databaseName={Path(metastore_dir) / 'metastore_db'};create=true"


def _java_property(name: str, value: str) -> str:
    """``-Dname=value`` as Spark splits ``extraJavaOptions`` (double-quoted when it holds blanks)."""
    return f'-D{name}="{value}"' if any(char.isspace() for char in value) else f"-D{name}={value}"


def _conf_value(value: str | bool | int | float) -> str:
    """Spark's spelling of a setting value (booleans in lower case)."""
    return str(value).lower() if isinstance(value, bool) else str(value)


def spark_options(
    cfg: SparkSettings,
    launched: Mapping[str, str] | None = None,
    *,
    scratch: str | None = None,
    one_run: bool = False,
) -> dict[str, str]:
    """The Spark settings for ``cfg``; ``launched`` is the conf of an already running JVM, if any;
    ``one_run``: a JVM this process starts ends with the run it is started for (:data:`QUICK_COMPILER`).

    When ``launched`` is given (spark-submit, or an existing SparkContext), launch-time settings
    (``LAUNCH_SETTINGS``) are left to it, and every computed setting it already has keeps its
    value; the Delta extension is appended to its ``spark.sql.extensions``. ``cfg.conf`` is
    applied last in both cases. ``catalog: hive`` with a ``metastore_dir`` points the Hive
    metastore at an embedded Derby database there (and, when this process starts the JVM, Derby's
    home, for its ``derby.log``).

        >>> opts = spark_options(SparkSettings(master="local[2]", ui_enabled=False))
        >>> opts["spark.master"], opts["spark.sql.shuffle.partitions"], opts["spark.ui.enabled"]
        ('local[2]', '4', 'false')
    """
    existing = dict(launched or {})
    master = existing.get("spark.master") if launched is not None else cfg.master
    options: dict[str, str] = {}
    if launched is None:
        if cfg.master is not None:
            options["spark.master"] = cfg.master
        resolved = None if cfg.jars else resolved_jars(cfg.ivy_dir, cfg.packages)
        if cfg.jars:
            options["spark.jars"] = ",".join(cfg.jars)
        elif resolved:
            options["spark.jars"] = ",".join(resolved)
        elif cfg.packages:
            options["spark.jars.packages"] = ",".join(cfg.packages)
        options["spark.jars.ivy"] = cfg.ivy_dir
        if cfg.driver_memory is not None:
            options["spark.driver.memory"] = cfg.driver_memory
    options["spark.app.name"] = cfg.app_name
    options["spark.sql.catalog.spark_catalog"] = DELTA_CATALOG
    options["spark.sql.session.timeZone"] = "UTC"
    options["spark.ui.enabled"] = _conf_value(cfg.ui_enabled)
    options["spark.ui.showConsoleProgress"] = "false"
    options["spark.databricks.delta.delta.log.cacheSize"] = str(DELTA_LOG_CACHE_SIZE)
    options[CALL_SITES] = "false"
    if cfg.warehouse_dir is not None:
        options["spark.sql.warehouse.dir"] = cfg.warehouse_dir
    if cfg.catalog is not None:
        options["spark.sql.catalogImplementation"] = cfg.catalog
    java_options: list[str] = []
    if launched is None and not _CHOSEN_GC.search(_conf_value(cfg.conf.get(JAVA_OPTIONS, ""))):
        java_options.append(GARBAGE_COLLECTOR)
    if launched is None and one_run:
        java_options.append(QUICK_COMPILER)
    archive = class_archive(cfg) if launched is None else None
    if archive is not None and archive.is_file():
        java_options += [f"-XX:SharedArchiveFile={archive}", *CLASS_ARCHIVE_QUIET]
    if cfg.catalog == "hive" and cfg.metastore_dir is not None:
        options["spark.hadoop.javax.jdo.option.ConnectionURL"] = derby_metastore_url(cfg.metastore_dir)
        if launched is None:  # derby.log next to the database, not in the working directory
            java_options.append(_java_property("derby.system.home", cfg.metastore_dir))
    if scratch is not None and launched is None:  # the run's own folder for every scratch file
        options["spark.local.dir"] = scratch
        java_options.append(_java_property("java.io.tmpdir", scratch))
    if java_options:
        options[JAVA_OPTIONS] = " ".join(java_options)
    partitions = cfg.shuffle_partitions
    cores = local_cores(master)
    if partitions is None and cores is not None:
        partitions = max(2, 2 * cores)
    if partitions is not None:
        options["spark.sql.shuffle.partitions"] = str(partitions)
    options = {key: value for key, value in options.items() if key not in existing}
    extensions = [ext for ext in existing.get("spark.sql.extensions", "").split(",") if ext.strip()]
    if DELTA_EXTENSION not in extensions:
        options["spark.sql.extensions"] = ",".join([*extensions, DELTA_EXTENSION])
    options.update({key: _conf_value(value) for key, value in cfg.conf.items()})
    if java_options and JAVA_OPTIONS in cfg.conf and JAVA_OPTIONS not in existing:  # the config's come last
        options[JAVA_OPTIONS] = " ".join([*java_options, _conf_value(cfg.conf[JAVA_OPTIONS])])
    return options


def one_run_java_options(cfg: SparkSettings) -> str:
    """The driver JVM options :func:`build_spark` gives a JVM it starts for one run of ``cfg``, as
    one string (``spark-submit --driver-java-options``): the same start wherever the JVM comes from."""
    return spark_options(cfg, one_run=True).get(JAVA_OPTIONS, "")


def _java_binary() -> str | None:
    """The ``java`` Spark's launcher runs (``$JAVA_HOME/bin/java``, else the one on the PATH), resolved."""
    home = os.environ.get("JAVA_HOME")
    found = os.path.join(home, "bin", "java") if home else shutil.which("java")
    return os.path.realpath(found) if found and os.path.isfile(found) else None


def class_archive(cfg: SparkSettings) -> Path | None:
    """Where the class-data archive of a driver JVM started with ``cfg`` is kept (it may not exist
    yet): named by the JDK and the pyspark it is valid for. None: ``class_archive_dir`` is null or
    no ``java`` is found."""
    java = _java_binary()
    if cfg.class_archive_dir is None or java is None:
        return None
    import pyspark  # noqa: PLC0415

    made = f"{java}\0{os.stat(java).st_mtime_ns}\0{pyspark.__version__}"
    return Path(cfg.class_archive_dir) / f"spark-{hashlib.sha256(made.encode()).hexdigest()[:16]}.jsa"


def record_classes(cfg: SparkSettings, config: str | None = None) -> Path | None:
    """Record the class-data archive of ``cfg`` unless it exists (None: no archive is configured).

    A child process (``--record-classes``, with the same ``config``) runs :func:`_class_probe`
    in a JVM started with ``-XX:ArchiveClassesAtExit``; the archive is moved into place in one
    step once that JVM has exited, so a JVM starting meanwhile never maps half of it.
    """
    archive = class_archive(cfg)
    if archive is None or archive.is_file():
        return archive
    archive.parent.mkdir(parents=True, exist_ok=True)
    partial = archive.with_name(f"{archive.name}.{os.getpid()}.part")
    command = [sys.executable, "-m", "pipelines.session", "--record-classes", str(partial)]
    done = subprocess.run(
        [*command, *(["--config", config] if config else [])], capture_output=True, text=True, check=False
    )
    if done.returncode != 0 or not partial.is_file():
        partial.unlink(missing_ok=True)
        failed = f"recording the JVM's class-data archive failed (exit {done.returncode})"
        raise RuntimeError(f"{failed}: {done.stderr[-2000:]}")
    os.replace(partial, archive)
    return archive


def _record_into(cfg: SparkSettings, partial: str) -> None:
    """The child of :func:`record_classes`: the probe in a JVM that writes ``partial`` as it exits."""
    recording = " ".join([f"-XX:ArchiveClassesAtExit={partial}", *CLASS_ARCHIVE_QUIET[1:]])
    given = cfg.conf.get(JAVA_OPTIONS)
    update = {  # on this machine, whatever master the config names: the driver JVM is what is recorded
        "master": "local[2]",
        "ui_enabled": False,
        "catalog": None,
        "metastore_dir": None,
        "class_archive_dir": None,
        "conf": {**cfg.conf, JAVA_OPTIONS: recording if given is None else f"{recording} {_conf_value(given)}"},
    }
    spark = build_spark(cfg.model_copy(update=update))
    jvm = SparkContext._gateway.proc  # type: ignore[union-attr]
    try:
        _class_probe(spark)
    finally:
        spark.stop()
    jvm.stdin.close()  # the JVM exits on EOF and writes the archive on its way out
    jvm.wait(timeout=600)


def _class_probe(spark: SparkSession) -> None:
    """A short job through the code paths of a run: Delta create, append with a new column, MERGE,
    DELETE and filtered reads; Arrow batches to and from Python workers; an aggregate; a checkpoint."""
    from delta.tables import DeltaTable  # noqa: PLC0415

    with tempfile.TemporaryDirectory(prefix="binlog-lakehouse-classes-") as scratch:
        table = str(Path(scratch) / "probe")
        rows = spark.range(64).select(
            "id", (F.col("id") % 7).alias("k"), F.col("id").cast("string").alias("s"), F.current_timestamp().alias("t")
        )
        rows.write.format("delta").save(table)
        rows.withColumn("x", F.lit(1)).write.format("delta").mode("append").option("mergeSchema", "true").save(table)
        target = DeltaTable.forPath(spark, table)
        merge = target.alias("a").merge(rows.withColumn("x", F.lit(2)).alias("b"), "a.id = b.id")
        merge.whenMatchedUpdateAll().whenNotMatchedInsertAll().execute()
        target.delete("k = 1")
        read = spark.read.format("delta").load(table)
        read.where("k = 3").groupBy("k").agg(F.count("*"), F.max("t")).collect()
        read.mapInArrow(lambda batches: batches, read.schema).localCheckpoint(eager=True).count()
        read.groupBy("k").applyInArrow(lambda group: group, read.schema).collect()


def launcher_conf() -> dict[str, str] | None:
    """The conf of a JVM this process did not start (running SparkContext or spark-submit), else None."""
    active = SparkContext._active_spark_context
    if active is not None:
        return dict(active.getConf().getAll())
    if "PYSPARK_GATEWAY_PORT" in os.environ:  # spark-submit started the JVM and then this process
        SparkContext._ensure_initialized()
        return dict(SparkConf().getAll())
    return None


def build_spark(
    cfg: SparkSettings, *, scratch: str | None = None, log_file: str | None = None, one_run: bool = False
) -> SparkSession:
    """Create (or join) the Spark session described by ``cfg``, with Delta Lake enabled.

    When this process starts Spark, Python workers run this very interpreter (``PYSPARK_PYTHON``
    and ``PYSPARK_DRIVER_PYTHON`` = ``sys.executable``), so they import the same packages; under a
    launcher that is done only for a local master, and an already set ``PYSPARK_PYTHON`` is kept.
    A JVM started here gets ``MALLOC_ARENA_MAX`` (unless the environment sets it) to bound its
    native memory; ``scratch`` as its ``spark.local.dir`` and temporary folder; and, with
    ``log_file``, its whole console output (Ivy's resolution, Spark's and Hive's log lines) in that
    file instead of the terminal; ``one_run``: the JVM is started for one run of the pipeline
    (:data:`QUICK_COMPILER`).

        >>> spark = build_spark(load_config("conf/local.yaml").spark)
        >>> spark.range(3).write.format("delta").save("/tmp/numbers")
    """
    launched = launcher_conf()
    options = spark_options(cfg, launched, scratch=scratch, one_run=one_run)
    master = cfg.master if launched is None else launched.get("spark.master")
    if launched is None:
        os.environ["PYSPARK_PYTHON"] = sys.executable
        os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
        if local_cores(master) is not None:  # a local JVM needs no external address
            os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        # glibc's per-thread malloc arenas keep the JVM's freed native memory: on a 256 MiB
        # binlog gold's JVM peaked at 5.7 GiB RSS with a 2 GiB heap, 3.1 GiB with two arenas.
        os.environ.setdefault("MALLOC_ARENA_MAX", MALLOC_ARENA_MAX)
        if scratch is not None:
            os.environ["SPARK_LOCAL_DIRS"] = scratch
    elif local_cores(master) is not None:
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = SparkSession.builder
    for key, value in options.items():
        builder = builder.config(key, value)
    with _output_to(log_file if launched is None else None):
        spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel(cfg.log_level)
    for key, value in SESSION_SETTINGS.items():
        if key not in cfg.conf:
            spark.conf.set(key, value)
    return spark


@contextlib.contextmanager
def _output_to(log_file: str | None) -> Iterator[None]:
    """While the block runs, file descriptors 1 and 2 point at ``log_file`` (appended): a JVM
    started meanwhile keeps writing there for its whole life; this process's own streams come back."""
    if log_file is None:
        yield
        return
    Path(log_file).parent.mkdir(parents=True, exist_ok=True)
    sys.stdout.flush()
    sys.stderr.flush()
    saved = [os.dup(1), os.dup(2)]
    target = os.open(log_file, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.dup2(target, 1)
        os.dup2(target, 2)
        yield
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for fd in (*saved, target):
            os.close(fd)


RESOLVED = "binlog-lakehouse-resolved.json"
"""File in the Ivy directory naming the jars each resolution of a list of packages gave
(``{"resolutions": [{"packages": [...], "jars": [...]}, ...]}``): the Delta jars of every run and,
say, those with ``hadoop-aws`` for ``s3a://`` are kept side by side."""


def _resolutions(ivy_dir: str) -> list[dict[str, object]]:
    """The resolutions recorded in ``ivy_dir`` (none when the record is missing or unreadable)."""
    try:
        data = json.loads((Path(ivy_dir) / RESOLVED).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    entries = data.get("resolutions") if isinstance(data, dict) else None
    return [entry for entry in entries if isinstance(entry, dict)] if isinstance(entries, list) else []


def _write_resolutions(ivy_dir: str, entries: list[dict[str, object]]) -> None:
    """Replace the record of ``ivy_dir`` in one step (a reader never sees half of it)."""
    target = Path(ivy_dir) / RESOLVED
    partial = target.with_name(f".{target.name}.{os.getpid()}")
    partial.write_text(json.dumps({"resolutions": entries}, indent=1), encoding="utf-8")
    partial.replace(target)


def resolved_jars(ivy_dir: str, packages: Sequence[str]) -> list[str] | None:
    """The jars an earlier resolution of ``packages`` left in ``ivy_dir`` (:func:`warm` records
    them), when every one is still there; None otherwise.  A JVM started with them as
    ``spark.jars`` skips Ivy's resolution (a second or two, and its console output)."""
    if not packages:
        return None
    for entry in _resolutions(ivy_dir):
        jars = entry.get("jars")
        if entry.get("packages") != list(packages) or not isinstance(jars, list) or not jars:
            continue
        if all(Path(str(jar).removeprefix("file:")).is_file() for jar in jars):
            return [str(jar) for jar in jars]
    return None


def _forget_resolution(cfg: SparkSettings) -> None:
    """Drop what is recorded for ``cfg.packages`` (the other lists of packages keep theirs)."""
    entries = _resolutions(cfg.ivy_dir)
    kept = [entry for entry in entries if entry.get("packages") != list(cfg.packages)]
    if len(kept) != len(entries):
        _write_resolutions(cfg.ivy_dir, kept)


def _record_resolution(spark: SparkSession, cfg: SparkSettings) -> None:
    """Remember the jars Ivy resolved for ``cfg.packages`` in this JVM (:func:`resolved_jars`)."""
    jars = [jar for jar in spark.sparkContext.getConf().get("spark.jars", "").split(",") if jar]
    if jars:
        others = [entry for entry in _resolutions(cfg.ivy_dir) if entry.get("packages") != list(cfg.packages)]
        _write_resolutions(cfg.ivy_dir, [*others, {"packages": list(cfg.packages), "jars": jars}])


def cached_jar(ivy_dir: str, coordinate: str) -> Path:
    """Where Spark's Ivy resolution puts the jar of ``group:artifact:version``."""
    group, artifact, version = coordinate.split(":")
    return Path(ivy_dir) / "jars" / f"{group}_{artifact}-{version}.jar"


def submit_jars(cfg: SparkSettings) -> list[str]:
    """The jars a job of ``cfg`` needs, for ``spark-submit --jars``: ``spark.jars`` when the config
    lists them, else the jars the resolution of ``spark.packages`` left in ``ivy_dir`` (resolving
    them first when that was not done yet). The JVM such a resolution starts prints to stderr.

        >>> ",".join(submit_jars(load_config("conf/local.yaml").spark))
        'file:///.../.cache/ivy/jars/io.delta_delta-spark_4.2_2.13-4.4.0.jar,...'
    """
    if cfg.jars:
        warm(cfg)
        return list(cfg.jars)
    resolved = resolved_jars(cfg.ivy_dir, cfg.packages)
    if resolved is None:
        with _stdout_to_stderr():
            warm(cfg)
        resolved = resolved_jars(cfg.ivy_dir, cfg.packages)
    if not resolved:
        raise FileNotFoundError(f"no jars resolved for {', '.join(cfg.packages) or 'no package'} in {cfg.ivy_dir}")
    return resolved


@contextlib.contextmanager
def _stdout_to_stderr() -> Iterator[None]:
    """While the block runs, file descriptor 1 is a copy of 2 (a JVM started meanwhile keeps it)."""
    sys.stdout.flush()
    saved = os.dup(1)
    try:
        os.dup2(2, 1)
        yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)


def warm(cfg: SparkSettings, *, force: bool = False) -> list[Path]:
    """Make sure the configured jars are cached (starting Spark when they are not); return them."""
    if cfg.jars:
        missing = [jar for jar in cfg.jars if not is_uri(jar) and not Path(jar).is_file()]
        if missing:
            raise FileNotFoundError(f"spark.jars lists missing files: {', '.join(missing)}")
        return [Path(jar) for jar in cfg.jars]
    wanted = [cached_jar(cfg.ivy_dir, coordinate) for coordinate in cfg.packages]
    fresh = force or not all(jar.is_file() for jar in wanted)
    if fresh or resolved_jars(cfg.ivy_dir, cfg.packages) is None:
        # the probe goes by path: no metastore is opened (a running job may hold an embedded one)
        update = {"master": "local[1]", "ui_enabled": False, "catalog": None, "metastore_dir": None}
        settings = cfg.model_copy(update=update)
        _forget_resolution(cfg)  # this probe resolves with Ivy
        spark = build_spark(settings)
        try:
            _record_resolution(spark, cfg)
            with tempfile.TemporaryDirectory(prefix="binlog-lakehouse-warm-") as scratch:
                table = str(Path(scratch) / "probe")
                spark.range(1).write.format("delta").save(table)
                if spark.read.format("delta").load(table).count() != 1:
                    raise RuntimeError("the Delta probe table did not read back one row")
        finally:
            spark.stop()
    still_missing = [jar for jar in wanted if not jar.is_file()]
    if still_missing:
        raise FileNotFoundError(f"Spark started but these jars are not cached: {still_missing}")
    return sorted((Path(cfg.ivy_dir) / "jars").glob("*.jar"))


def _as_text(frame: DataFrame) -> DataFrame:
    """Every column of ``frame`` cast to text as Spark SQL prints it (duplicate names allowed)."""
    positional = frame.toDF(*(f"_{i}" for i in range(len(frame.columns))))
    return positional.select(*(F.col(name).cast("string") for name in positional.columns))


def run_sql(spark: SparkSession, statement: str) -> list[str]:
    """The result of ``statement``: a header of column names, then one line per row, tab-separated.

    Values are Spark's text of them (structs as ``{1, abc}``), NULL as ``NULL``::

        >>> run_sql(spark, "SELECT 1 AS n, CAST(NULL AS STRING) AS s")
        ['n\\ts', '1\\tNULL']
    """
    frame = spark.sql(statement)
    rows = _as_text(frame).collect()
    lines = ["\t".join(frame.columns)]
    lines += ["\t".join("NULL" if value is None else str(value) for value in row) for row in rows]
    return lines


_METASTORE_UNAVAILABLE = "Unable to instantiate org.apache.hadoop.hive.ql.metadata.SessionHiveMetaStoreClient"


def _sql(cfg: SparkSettings, statements: Sequence[str]) -> int:
    """Run ``statements`` in order, printing each result; stop at the first failing one."""
    spark = build_spark(cfg)
    try:
        for statement in statements:
            try:
                lines = run_sql(spark, statement)
            except PySparkException as exc:
                print(f"error: {exc}", file=sys.stderr)
                if _METASTORE_UNAVAILABLE in str(exc) and cfg.metastore_dir is not None:
                    print(
                        f"the Derby metastore in {cfg.metastore_dir} could not be opened; it admits one "
                        "session at a time, so another one (a running job, spark-sql, a notebook) may hold it: "
                        "stop that one and try again",
                        file=sys.stderr,
                    )
                return 1
            print("\n".join(lines))
    finally:
        spark.stop()
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m pipelines.session [--config FILE] [--warm [--force] | --jars | --java-options | --sql SQL...]``."""
    parser = argparse.ArgumentParser(
        prog="python -m pipelines.session",
        description=(
            "Print the Spark settings a config yields, download and check the Delta jars, "
            "or run SQL against the tables registered in the config's catalog."
        ),
    )
    parser.add_argument("--config", help="YAML config (default: conf/local.yaml)")
    parser.add_argument("--warm", action="store_true", help="cache the jars and probe Delta once")
    parser.add_argument("--force", action="store_true", help="with --warm: start Spark even if cached")
    parser.add_argument("--record-classes", metavar="ARCHIVE", help=argparse.SUPPRESS)  # record_classes' child
    parser.add_argument(
        "--jars",
        action="store_true",
        help="print the jars of the config (resolved once if needed) comma-separated, for spark-submit --jars",
    )
    parser.add_argument(
        "--java-options",
        action="store_true",
        help="print the driver JVM options of a one-run process, for spark-submit --driver-java-options",
    )
    parser.add_argument(
        "--sql",
        action="append",
        metavar="STATEMENT",
        help="run STATEMENT and print its rows tab-separated after a header line (repeatable)",
    )
    args = parser.parse_args(argv)
    if sum(map(bool, (args.warm, args.sql, args.jars, args.java_options))) > 1:
        parser.error("--warm, --jars, --java-options and --sql exclude each other")
    try:
        cfg = load_config(args.config).spark
    except ConfigError as exc:
        print(exc, file=sys.stderr)
        return 2
    if args.record_classes:
        _record_into(cfg, args.record_classes)
        return 0
    if args.sql:
        return _sql(cfg, args.sql)
    if args.jars:
        print(",".join(submit_jars(cfg)))
        return 0
    if args.java_options:
        print(one_run_java_options(cfg))
        return 0
    if not args.warm:
        for key, value in sorted(spark_options(cfg).items()):
            print(f"{key}={value}")
        return 0
    jars = warm(cfg, force=args.force)
    where = {str(jar.parent) for jar in jars}
    archive = record_classes(cfg, args.config)
    print(
        f"Delta jars ready ({len(jars)} jar(s)) in {', '.join(sorted(where))}"
        + ("" if archive is None else f"; JVM class-data archive {archive}")
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
