"""Specifications of the Spark session factory: settings it computes, and a real Delta session."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql import Row, SparkSession
from pyspark.sql import functions as F

from conf import SparkSettings
from pipelines.session import (
    ARROW_BATCH_ROWS,
    CALL_SITES,
    DELTA_CATALOG,
    DELTA_EXTENSION,
    DELTA_LOG_CACHE_SIZE,
    DICTIONARY_PAGE_BYTES,
    GARBAGE_COLLECTOR,
    LAUNCH_SETTINGS,
    MALLOC_ARENA_MAX,
    QUICK_COMPILER,
    RESOLVED,
    ROW_GROUP_BYTES,
    _forget_resolution,
    build_spark,
    cached_jar,
    class_archive,
    local_cores,
    main,
    one_run_java_options,
    record_classes,
    resolved_jars,
    run_sql,
    spark_options,
)

DELTA = "io.delta:delta-spark_4.2_2.13:4.4.0"


@pytest.mark.parametrize(
    ("master", "cores"),
    [
        ("local", 1),
        ("local[2]", 2),
        ("local[3,2]", 3),
        ("local[*]", os.cpu_count()),
        ("yarn", None),
        ("spark://host:7077", None),
        ("local-cluster[2,1,1024]", None),
        (None, None),
    ],
)
def test_local_cores_reads_the_thread_count_of_local_masters(master: str | None, cores: int | None) -> None:
    assert local_cores(master) == cores


def test_options_enable_delta_utc_and_the_delta_package_when_this_process_starts_spark() -> None:
    cfg = SparkSettings(master="local[2]", ivy_dir="/ivy", driver_memory="2g", ui_enabled=False, class_archive_dir=None)
    assert spark_options(cfg) == {
        "spark.master": "local[2]",
        "spark.jars.packages": DELTA,
        "spark.jars.ivy": "/ivy",
        "spark.driver.memory": "2g",
        "spark.app.name": "binlog-lakehouse",
        "spark.sql.extensions": DELTA_EXTENSION,
        "spark.sql.catalog.spark_catalog": DELTA_CATALOG,
        "spark.sql.session.timeZone": "UTC",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.databricks.delta.delta.log.cacheSize": str(DELTA_LOG_CACHE_SIZE),
        CALL_SITES: "false",
        "spark.driver.extraJavaOptions": GARBAGE_COLLECTOR,
        "spark.sql.shuffle.partitions": "4",
    }


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        (None, GARBAGE_COLLECTOR),
        ("-Xss4m", f"{GARBAGE_COLLECTOR} -Xss4m"),
        ("-XX:+UseG1GC -Xss4m", "-XX:+UseG1GC -Xss4m"),
        ("-Xss4m -XX:+UseZGC", "-Xss4m -XX:+UseZGC"),
    ],
)
def test_a_jvm_this_process_starts_runs_the_throughput_collector_unless_the_config_chooses_one(
    given: str | None, expected: str
) -> None:
    conf = {} if given is None else {"spark.driver.extraJavaOptions": given}
    cfg = SparkSettings(master="local[2]", class_archive_dir=None, conf=conf)
    assert spark_options(cfg)["spark.driver.extraJavaOptions"] == expected
    launched = {"spark.master": "local[2]"}  # a launcher started the JVM: its collector is its own
    assert spark_options(cfg, launched).get("spark.driver.extraJavaOptions") == given


def test_jars_are_used_instead_of_packages() -> None:
    options = spark_options(SparkSettings(jars=["/opt/jars/delta-spark.jar", "/opt/jars/delta-storage.jar"]))
    assert options["spark.jars"] == "/opt/jars/delta-spark.jar,/opt/jars/delta-storage.jar"
    assert "spark.jars.packages" not in options


def _resolution(ivy: Path, packages: list[str], jars: list[Path], *others: dict[str, object]) -> None:
    entry = {"packages": packages, "jars": [f"file://{j}" for j in jars]}
    (ivy / RESOLVED).write_text(json.dumps({"resolutions": [*others, entry]}))


def test_the_jars_an_earlier_resolution_left_are_used_and_ivy_is_not_asked_again(tmp_path: Path) -> None:
    jars = [tmp_path / "jars" / "io.delta_delta-spark_4.2_2.13-4.4.0.jar", tmp_path / "jars" / "dep.jar"]
    jars[0].parent.mkdir()
    for jar in jars:
        jar.write_bytes(b"PK")
    _resolution(tmp_path, [DELTA], jars)
    options = spark_options(SparkSettings(ivy_dir=str(tmp_path)))
    assert options["spark.jars"] == ",".join(f"file://{j}" for j in jars)
    assert "spark.jars.packages" not in options
    assert resolved_jars(str(tmp_path), [DELTA]) == [f"file://{j}" for j in jars]


def test_resolutions_of_several_lists_of_packages_are_kept_side_by_side(tmp_path: Path) -> None:
    delta, s3a = tmp_path / "delta.jar", tmp_path / "hadoop-aws.jar"
    for jar in (delta, s3a):
        jar.write_bytes(b"PK")
    with_s3a = [DELTA, "org.apache.hadoop:hadoop-aws:3.5.0"]
    _resolution(tmp_path, with_s3a, [delta, s3a], {"packages": [DELTA], "jars": [f"file://{delta}"]})
    assert resolved_jars(str(tmp_path), [DELTA]) == [f"file://{delta}"]
    assert resolved_jars(str(tmp_path), with_s3a) == [f"file://{delta}", f"file://{s3a}"]

    _forget_resolution(SparkSettings(ivy_dir=str(tmp_path), packages=with_s3a))

    assert resolved_jars(str(tmp_path), with_s3a) is None
    assert resolved_jars(str(tmp_path), [DELTA]) == [f"file://{delta}"]


@pytest.mark.parametrize("change", ["a jar is gone", "other packages", "unreadable record"])
def test_an_earlier_resolution_that_no_longer_fits_sends_spark_to_ivy_again(tmp_path: Path, change: str) -> None:
    jar = tmp_path / "delta.jar"
    jar.write_bytes(b"PK")
    _resolution(tmp_path, [DELTA], [jar])
    if change == "a jar is gone":
        jar.unlink()
    elif change == "other packages":
        _resolution(tmp_path, ["io.delta:delta-spark_4.2_2.13:9.9.9"], [jar])
    else:
        (tmp_path / RESOLVED).write_text("{not json")
    options = spark_options(SparkSettings(ivy_dir=str(tmp_path)))
    assert options["spark.jars.packages"] == DELTA
    assert "spark.jars" not in options


def test_null_master_leaves_the_master_to_spark_submit() -> None:
    options = spark_options(SparkSettings(master=None))
    assert "spark.master" not in options
    assert "spark.sql.shuffle.partitions" not in options  # not local: Spark's default


def test_explicit_shuffle_partitions_win_over_the_local_default() -> None:
    assert spark_options(SparkSettings(master="local[8]", shuffle_partitions=3))["spark.sql.shuffle.partitions"] == "3"


def test_conf_section_is_applied_last_and_overrides_computed_settings() -> None:
    cfg = SparkSettings(
        ui_enabled=False,
        conf={"spark.ui.enabled": True, "spark.sql.session.timeZone": "Europe/Paris", "spark.executor.cores": 2},
    )
    options = spark_options(cfg)
    assert options["spark.ui.enabled"] == "true"
    assert options["spark.sql.session.timeZone"] == "Europe/Paris"
    assert options["spark.executor.cores"] == "2"


def test_under_a_launcher_its_master_packages_and_settings_are_kept() -> None:
    launched = {
        "spark.master": "yarn",
        "spark.jars.packages": "io.delta:delta-spark_4.2_2.13:4.4.0,org.apache.hadoop:hadoop-aws:3.5.0",
        "spark.sql.extensions": "com.example.OtherExtension",
        "spark.sql.shuffle.partitions": "100",
    }
    cfg = SparkSettings(master="local[*]", driver_memory="8g", conf={"spark.executor.memory": "4g"})
    options = spark_options(cfg, launched)
    assert not LAUNCH_SETTINGS.intersection(options)
    assert "spark.sql.shuffle.partitions" not in options
    assert options["spark.sql.extensions"] == f"com.example.OtherExtension,{DELTA_EXTENSION}"
    assert options["spark.executor.memory"] == "4g"


def test_under_a_launcher_that_already_enables_delta_the_extension_is_not_repeated() -> None:
    options = spark_options(SparkSettings(), {"spark.master": "local[2]", "spark.sql.extensions": DELTA_EXTENSION})
    assert "spark.sql.extensions" not in options
    assert options["spark.sql.shuffle.partitions"] == "4"  # local launcher master: local default


def test_hive_catalog_with_a_metastore_dir_uses_an_embedded_derby_database_there() -> None:
    cfg = SparkSettings(
        catalog="hive",
        metastore_dir="/data/lake/_metastore",
        warehouse_dir="/data/lake/_warehouse",
        class_archive_dir=None,
    )
    options = spark_options(cfg)
    assert {key: value for key, value in options.items() if "catalogImpl" in key or "derby" in value} == {
        "spark.sql.catalogImplementation": "hive",
        "spark.hadoop.javax.jdo.option.ConnectionURL": (
            "jdbc:derby:;databaseName=/data/lake/_metastore/metastore_db;create=true"
        ),
        "spark.driver.extraJavaOptions": f"{GARBAGE_COLLECTOR} -Dderby.system.home=/data/lake/_metastore",
    }
    assert options["spark.sql.warehouse.dir"] == "/data/lake/_warehouse"


def test_a_metastore_dir_with_blanks_is_quoted_for_the_driver_java_options() -> None:
    cfg = SparkSettings(catalog="hive", metastore_dir="/data/my lake/_metastore", class_archive_dir=None)
    options = spark_options(cfg)
    assert (
        options["spark.driver.extraJavaOptions"]
        == f'{GARBAGE_COLLECTOR} -Dderby.system.home="/data/my lake/_metastore"'
    )


def test_hive_catalog_without_a_metastore_dir_leaves_the_metastore_to_hive_site_xml() -> None:
    options = spark_options(SparkSettings(master=None, catalog="hive", class_archive_dir=None))
    assert options["spark.sql.catalogImplementation"] == "hive"
    assert not [key for key in options if "javax.jdo" in key]
    assert options["spark.driver.extraJavaOptions"] == GARBAGE_COLLECTOR  # no Derby home


def test_a_recorded_class_data_archive_is_mapped_by_the_jvm_this_process_starts(tmp_path: Path) -> None:
    cfg = SparkSettings(class_archive_dir=str(tmp_path), conf={"spark.driver.extraJavaOptions": "-Dmine=1"})
    archive = class_archive(cfg)
    assert archive is not None and archive.parent == tmp_path
    assert spark_options(cfg)["spark.driver.extraJavaOptions"] == f"{GARBAGE_COLLECTOR} -Dmine=1"  # none recorded yet
    archive.write_bytes(b"")
    assert spark_options(cfg)["spark.driver.extraJavaOptions"] == (
        f"{GARBAGE_COLLECTOR} -XX:SharedArchiveFile={archive} -Xshare:auto -Xlog:cds=off -Xlog:cds+dynamic=off -Dmine=1"
    )
    launched = {"spark.master": "local[2]"}  # a JVM started by a launcher: its options are its own
    assert spark_options(cfg, launched)["spark.driver.extraJavaOptions"] == "-Dmine=1"
    assert class_archive(cfg.model_copy(update={"class_archive_dir": None})) is None


def test_the_class_data_archive_setup_records_holds_the_classes_a_short_spark_job_loads() -> None:
    """``.ci/setup`` records the archive of the default settings (``python -m pipelines.session --warm``,
    through :func:`record_classes`); on a fresh machine it did so moments before the tests, and a
    recording that fails fails the setup. Recording again keeps it as it is."""
    cfg = SparkSettings()
    archive = class_archive(cfg)
    assert archive is not None and archive.is_file(), "no class-data archive: run .ci/setup, which records it"
    assert archive.stat().st_size > 50 * 2**20  # Spark's, Scala's, Delta's classes
    assert not [path.name for path in archive.parent.iterdir() if path.name.endswith(".part")]  # none half-written
    recorded = archive.stat().st_mtime_ns
    assert record_classes(cfg) == archive and archive.stat().st_mtime_ns == recorded  # recorded once only


def test_null_catalog_leaves_the_catalog_implementation_to_spark() -> None:
    assert "spark.sql.catalogImplementation" not in spark_options(SparkSettings())
    assert spark_options(SparkSettings(catalog="in-memory"))["spark.sql.catalogImplementation"] == "in-memory"


def test_under_a_launcher_derby_home_is_not_set_and_its_catalog_setting_is_kept() -> None:
    launched = {"spark.master": "yarn", "spark.sql.catalogImplementation": "in-memory"}
    options = spark_options(SparkSettings(catalog="hive", metastore_dir="/m"), launched)
    assert "spark.sql.catalogImplementation" not in options
    assert "spark.driver.extraJavaOptions" not in options
    derby = "jdbc:derby:;databaseName=/m/metastore_db;create=true"
    assert options["spark.hadoop.javax.jdo.option.ConnectionURL"] == derby


def test_main_prints_the_derby_metastore_below_the_lakehouse_root_of_the_config(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "c.yaml"
    config.write_text(f"spark:\n  catalog: hive\ninput:\n  path: in\nstorage:\n  root: {tmp_path}/lake\n")
    assert main(["--config", str(config)]) == 0
    printed = capsys.readouterr().out.splitlines()
    derby = f"jdbc:derby:;databaseName={tmp_path}/lake/_metastore/metastore_db;create=true"
    assert f"spark.hadoop.javax.jdo.option.ConnectionURL={derby}" in printed
    assert f"spark.sql.warehouse.dir={tmp_path}/lake/_warehouse" in printed


@pytest.mark.parametrize(
    "options",
    [
        ["--warm", "--sql", "SELECT 1"],
        ["--jars", "--warm"],
        ["--jars", "--sql", "SELECT 1"],
        ["--java-options", "--jars"],
    ],
)
def test_main_refuses_warm_jars_java_options_and_sql_together(
    options: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as raised:
        main(options)
    assert raised.value.code == 2
    assert "--warm, --jars, --java-options and --sql exclude each other" in capsys.readouterr().err


def test_main_prints_the_driver_options_of_a_one_run_jvm_for_spark_submit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    archive = tmp_path / "jvm"
    config = tmp_path / "c.yaml"
    config.write_text(f"spark:\n  class_archive_dir: {archive}\ninput:\n  path: in\nstorage:\n  root: lake\n")
    assert main(["--config", str(config), "--java-options"]) == 0
    assert capsys.readouterr().out == f"{GARBAGE_COLLECTOR} {QUICK_COMPILER}\n"  # no archive recorded yet

    cfg = SparkSettings(class_archive_dir=str(archive))
    recorded = class_archive(cfg)
    assert recorded is not None
    archive.mkdir()
    recorded.write_bytes(b"")
    assert main(["--config", str(config), "--java-options"]) == 0
    assert capsys.readouterr().out == f"{one_run_java_options(cfg)}\n"
    assert f"-XX:SharedArchiveFile={recorded}" in one_run_java_options(cfg).split()


def test_main_prints_the_jars_of_the_recorded_resolution_as_one_list_for_spark_submit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    jars = [tmp_path / "jars" / "io.delta_delta-spark_4.2_2.13-4.4.0.jar", tmp_path / "jars" / "dep.jar"]
    jars[0].parent.mkdir()
    for jar in jars:
        jar.write_bytes(b"PK")
    _resolution(tmp_path, [DELTA], jars)
    config = tmp_path / "c.yaml"
    config.write_text(f"spark:\n  ivy_dir: {tmp_path}\ninput:\n  path: in\nstorage:\n  root: lake\n")

    assert main(["--config", str(config), "--jars"]) == 0

    printed = capsys.readouterr()
    assert printed.out == ",".join(f"file://{j}" for j in jars) + "\n"
    assert printed.err == ""


def test_main_prints_the_listed_jars_instead_of_packages(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    jars = [tmp_path / "delta-spark.jar", tmp_path / "delta-storage.jar"]
    for jar in jars:
        jar.write_bytes(b"PK")
    config = tmp_path / "c.yaml"
    config.write_text(f"spark:\n  jars: [{jars[0]}, {jars[1]}]\ninput:\n  path: in\nstorage:\n  root: lake\n")

    assert main(["--config", str(config), "--jars"]) == 0
    assert capsys.readouterr().out == f"{jars[0]},{jars[1]}\n"

    jars[1].unlink()
    with pytest.raises(FileNotFoundError, match=r"delta-storage\.jar"):
        main(["--config", str(config), "--jars"])


def test_cached_jar_is_where_spark_ivy_retrieval_puts_it() -> None:
    assert cached_jar("/ivy", DELTA) == Path("/ivy/jars/io.delta_delta-spark_4.2_2.13-4.4.0.jar")


@pytest.mark.spark
def test_session_writes_and_reads_back_a_delta_table(spark: SparkSession, tmp_path: Path) -> None:
    table = str(tmp_path / "people")
    rows = [Row(id=1, name="ada"), Row(id=2, name="linus")]
    spark.createDataFrame(rows).write.format("delta").save(table)
    spark.createDataFrame([Row(id=3, name="grace")]).write.format("delta").mode("append").save(table)

    back = spark.read.format("delta").load(table).orderBy("id").collect()

    assert [(row.id, row.name) for row in back] == [(1, "ada"), (2, "linus"), (3, "grace")]
    history = spark.sql(f"DESCRIBE HISTORY delta.`{table}`").select("version", "operation").collect()
    assert sorted((row.version, row.operation) for row in history) == [(0, "WRITE"), (1, "WRITE")]


@pytest.mark.spark
def test_session_enables_the_delta_extension_and_catalog_in_utc(spark: SparkSession) -> None:
    assert DELTA_EXTENSION in (spark.conf.get("spark.sql.extensions") or "").split(",")
    assert spark.conf.get("spark.sql.catalog.spark_catalog") == DELTA_CATALOG
    assert spark.conf.get("spark.sql.session.timeZone") == "UTC"
    assert spark.sparkContext.master == "local[2]"
    assert spark.conf.get("spark.sql.shuffle.partitions") == "2"


@pytest.mark.spark
def test_python_workers_run_this_interpreter(spark: SparkSession) -> None:
    assert os.environ["PYSPARK_PYTHON"] == sys.executable
    assert os.environ["PYSPARK_DRIVER_PYTHON"] == sys.executable
    worker = spark.sparkContext.parallelize([0], 1).map(lambda _: sys.executable).collect()
    assert worker == [sys.executable]


@pytest.mark.spark
def test_the_jvm_started_here_runs_with_a_bounded_number_of_malloc_arenas(spark: SparkSession) -> None:
    jvm_pid = spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid()  # type: ignore[union-attr]
    jvm_env = dict(
        entry.split(b"=", 1) for entry in Path(f"/proc/{jvm_pid}/environ").read_bytes().split(b"\0") if b"=" in entry
    )
    assert jvm_env.get(b"MALLOC_ARENA_MAX") == os.environ.get("MALLOC_ARENA_MAX", MALLOC_ARENA_MAX).encode()


@pytest.mark.spark
def test_a_large_table_the_session_writes_is_read_back_by_more_than_one_task(
    spark: SparkSession, tmp_path: Path
) -> None:
    table = str(tmp_path / "large")
    # 1200 rows of 40 KiB of hex digits: one task writes about 48 MiB, more than one row group holds
    digits = "concat_ws('', transform(sequence(1, 640), i -> sha2(cast(id * 1000 + i AS STRING), 256)))"
    spark.range(1200).coalesce(1).select("id", F.expr(digits).alias("text")).write.format("delta").save(table)

    files = list(Path(table).glob("*.parquet"))
    groups = sum(pq.ParquetFile(f).metadata.num_row_groups for f in files)
    tasks = spark.read.format("delta").load(table).rdd.glom().map(len).collect()

    assert spark.conf.get("parquet.block.size") == str(ROW_GROUP_BYTES)
    assert len(files) == 1 and groups >= 2
    assert len([n for n in tasks if n]) >= 2 and sum(tasks) == 1200


@pytest.mark.spark
def test_a_column_of_few_values_keeps_its_parquet_dictionary_and_one_of_many_is_written_plain(
    spark: SparkSession, tmp_path: Path
) -> None:
    table = str(tmp_path / "dictionaries")
    # 20 000 rows: 5 distinct operations, and 2 000 distinct 64-character keys each 10 times (125 KiB
    # of distinct values: past the session's dictionary limit, well within Parquet's default 1 MiB)
    rows = (
        spark.range(20_000)
        .coalesce(1)
        .select(
            F.element_at(
                F.array(*(F.lit(op) for op in ("i", "u", "d", "r", "t"))), (F.col("id") % 5 + 1).cast("int")
            ).alias("op"),
            F.sha2((F.col("id") % 2000).cast("string"), 256).alias("key"),
        )
    )
    rows.write.format("delta").save(table)

    [file] = Path(table).glob("*.parquet")
    chunks = pq.ParquetFile(file).metadata.row_group(0)
    op, key = chunks.column(0), chunks.column(1)

    assert spark.conf.get("parquet.dictionary.page.size") == str(DICTIONARY_PAGE_BYTES)
    assert op.has_dictionary_page and "PLAIN" not in op.encodings
    assert not key.has_dictionary_page and "PLAIN" in key.encodings


@pytest.mark.spark
def test_a_python_task_of_the_session_receives_arrow_batches_of_at_most_its_batch_rows(spark: SparkSession) -> None:
    def sizes(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            yield pa.RecordBatch.from_pydict({"rows": [batch.num_rows]})

    # 6,000 rows in one partition: one batch at Spark's default of 10,000
    received = [r.rows for r in spark.range(6000).coalesce(1).mapInArrow(sizes, "rows long").collect()]

    assert spark.conf.get("spark.sql.execution.arrow.maxRecordsPerBatch") == str(ARROW_BATCH_ROWS)
    assert sum(received) == 6000
    assert max(received) <= ARROW_BATCH_ROWS and len(received) >= 6000 // ARROW_BATCH_ROWS


@pytest.mark.spark
def test_dataframe_calls_of_the_session_capture_no_python_call_site_for_error_messages(spark: SparkSession) -> None:
    frame = spark.range(3).select((F.col("id") / F.lit(0)).alias("q"))  # this file's line, were it captured
    ansi = spark.conf.get("spark.sql.ansi.enabled")
    spark.conf.set("spark.sql.ansi.enabled", "true")
    try:
        with pytest.raises(Exception, match="DIVIDE_BY_ZERO") as failure:
            frame.collect()
    finally:
        spark.conf.set("spark.sql.ansi.enabled", ansi)

    assert Path(__file__).name not in str(failure.value)
    assert spark.conf.get(CALL_SITES) == "false"


@pytest.mark.spark
def test_building_again_joins_the_running_session_without_changing_its_master(spark: SparkSession) -> None:
    again = build_spark(SparkSettings(master="local[4]", log_level="ERROR"))
    assert again.sparkContext is spark.sparkContext
    assert again.sparkContext.master == "local[2]"


@pytest.mark.spark
def test_run_sql_prints_a_header_then_tab_separated_rows_as_spark_sql_shows_them(spark: SparkSession) -> None:
    lines = run_sql(
        spark,
        "SELECT id, id AS id, CAST(NULL AS STRING) AS missing, named_struct('a', id, 'b', 'x') AS s, "
        "CAST(1.50 AS DECIMAL(4,2)) AS d FROM range(2)",
    )
    assert lines == ["id\tid\tmissing\ts\td", "0\t0\tNULL\t{0, x}\t1.50", "1\t1\tNULL\t{1, x}\t1.50"]


def test_a_jvm_this_process_starts_for_one_run_compiles_with_the_quick_compiler_only() -> None:
    cfg = SparkSettings(master="local[2]", class_archive_dir=None, conf={"spark.driver.extraJavaOptions": "-Xss4m"})
    assert spark_options(cfg, one_run=True)["spark.driver.extraJavaOptions"] == (
        f"{GARBAGE_COLLECTOR} {QUICK_COMPILER} -Xss4m"  # the config's options last: they win
    )
    assert QUICK_COMPILER not in spark_options(cfg)["spark.driver.extraJavaOptions"]  # a session that lives on
    launched = {"spark.master": "local[2]"}  # a launcher started the JVM: its options are its own
    assert spark_options(cfg, launched, one_run=True).get("spark.driver.extraJavaOptions") == "-Xss4m"
