"""Typed configuration: one pydantic model per YAML section.

Every model forbids unknown keys and describes every field; ``AppConfig`` is the root. Adding a
section is adding one field to ``AppConfig`` whose type is a ``Section`` subclass with defaults.

Paths: fields typed ``PathOrUri`` accept a local path or any Hadoop URI (``s3a://``, ``hdfs://``,
``file:/``, ...). URIs are kept as written; a relative local path is made absolute against the
base directory given in the validation context (``{"base_dir": ...}``), by default the project
root when running from a checkout (the directory holding ``pyproject.toml``), else the current
working directory.
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime
from importlib.metadata import PackageNotFoundError, version
from importlib.util import find_spec
from pathlib import Path
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator

from conf.common import SparkConfValue
from conf.paths import absolute_path, local_path_of

__all__ = [
    "AppConfig",
    "DecoderSettings",
    "InputSettings",
    "LocalPath",
    "PathOrUri",
    "QualitySettings",
    "Section",
    "SilverSettings",
    "SparkSettings",
    "StorageSettings",
    "default_delta_package",
    "hadoop_aws_package",
    "resolve_path",
]

_MAVEN_COORDINATE = re.compile(r"^[^:\s,]+:[^:\s,]+:[^:\s,]+$")
_MEMORY_SIZE = re.compile(r"^[1-9][0-9]*[kmgtp]?$", re.IGNORECASE)

SCALA_BINARY_VERSION = "2.13"


def default_delta_package() -> str:
    """The Delta Lake Maven coordinate matching the installed ``pyspark`` and ``delta-spark``.

    Computed as delta-spark's ``configure_spark_with_delta_pip`` does::

        >>> default_delta_package()  # with pyspark 4.2.0 and delta-spark 4.4.0
        'io.delta:delta-spark_4.2_2.13:4.4.0'
    """
    try:
        spark_version = version("pyspark")
        delta_version = version("delta-spark")
    except PackageNotFoundError as exc:  # pragma: no cover - both are hard dependencies
        raise RuntimeError(f"cannot compute the Delta package: {exc.name} is not installed") from exc
    spark_major_minor = ".".join(spark_version.split(".")[:2])
    return f"io.delta:delta-spark_{spark_major_minor}_{SCALA_BINARY_VERSION}:{delta_version}"


def hadoop_aws_package() -> str:
    """The ``hadoop-aws`` Maven coordinate (the ``s3a://`` connector) matching the Hadoop bundled with ``pyspark``.

    Its version is the one of pyspark's ``jars/hadoop-client-api-<version>.jar``; hadoop-aws brings
    the AWS SDK bundle it was built with::

        >>> hadoop_aws_package()  # with pyspark 4.2.0
        'org.apache.hadoop:hadoop-aws:3.5.0'
    """
    spec = find_spec("pyspark")
    if spec is None or spec.origin is None:  # pragma: no cover - a hard dependency
        raise RuntimeError("cannot compute the hadoop-aws package: pyspark is not installed")
    found = sorted(Path(spec.origin).parent.joinpath("jars").glob("hadoop-client-api-*.jar"))
    if len(found) != 1:
        raise RuntimeError(f"cannot tell pyspark's Hadoop version: {len(found)} hadoop-client-api jars in its jars/")
    hadoop_version = found[0].name.removeprefix("hadoop-client-api-").removesuffix(".jar")
    return f"org.apache.hadoop:hadoop-aws:{hadoop_version}"


def resolve_path(value: str, info: ValidationInfo) -> str:
    """Make a relative local path absolute against the context's ``base_dir``; keep URIs."""
    return absolute_path(value, (info.context or {}).get("base_dir"))


def _non_empty(value: str) -> str:
    """Reject empty and blank strings."""
    if not value.strip():
        raise ValueError("must not be empty")
    return value


PathOrUri = Annotated[str, AfterValidator(_non_empty), AfterValidator(resolve_path)]
"""A local path (relative ones resolve against the base directory) or a Hadoop URI."""


def resolve_local_path(value: str, info: ValidationInfo) -> str:
    """A local folder: a ``file:`` URI becomes its path, other URIs are refused, relative paths resolve."""
    path = local_path_of(value)
    if path is None:
        raise ValueError(f"{value!r} must be a local path or file: URI, not a URI of another file system")
    return resolve_path(path, info)


LocalPath = Annotated[str, AfterValidator(_non_empty), AfterValidator(resolve_local_path)]
"""A local path (relative ones resolve against the base directory); ``file:`` URIs are accepted."""


class Section(BaseModel):
    """Base of every config model: unknown keys are errors, values must have their real type.

    Strict mode: YAML `"false"` or `"4"` (quoted) are rejected where a boolean or number is due.
    """

    model_config = ConfigDict(extra="forbid", strict=True, validate_default=True, frozen=True)


class SparkSettings(Section):
    """How the Spark session is built (see `pipelines.session.build_spark`)."""

    master: str | None = Field(
        default="local[*]",
        description=(
            "Spark master URL (`local[2]`, `yarn`, `spark://host:7077`, `k8s://...`). `null` takes it "
            "from spark-submit (plain `python` then falls back to Spark's default, `local[*]`)."
        ),
    )
    app_name: str = Field(
        default="binlog-lakehouse",
        min_length=1,
        description="Application name shown in the Spark UI and the cluster manager.",
    )
    packages: list[str] = Field(
        default_factory=lambda: [default_delta_package()],
        description=(
            "Maven coordinates (`group:artifact:version`) resolved with Ivy at start-up "
            "(`spark.jars.packages`). The default is the Delta Lake artifact matching the installed "
            "pyspark and delta-spark. Add e.g. `org.apache.hadoop:hadoop-aws:<version>` for s3a://. "
            "Once `python -m pipelines.session --warm` has resolved them, a JVM this process starts "
            "takes the resolved jars from `ivy_dir` directly (`spark.jars`), without asking Ivy again."
        ),
    )
    jars: list[PathOrUri] = Field(
        default_factory=list,
        description=(
            "Local jar paths or URIs (`spark.jars`). When not empty they are used INSTEAD of "
            "`packages`, for clusters without access to Maven Central."
        ),
    )
    ivy_dir: PathOrUri = Field(
        default=".cache/ivy",
        description=(
            "Ivy directory for `packages` (`spark.jars.ivy`): the resolved jars land in `<ivy_dir>/jars`. "
            "Relative to the project root."
        ),
    )
    class_archive_dir: LocalPath | None = Field(
        default=".cache/jvm",
        description=(
            "Folder of the class-data archive (JDK AppCDS) of a driver JVM this process starts: "
            "`python -m pipelines.session --warm` records there the classes a short Spark job loads, "
            "once per JDK and pyspark, and later JVMs map them instead of loading and verifying them "
            "again (a session starts and a first run goes faster). A JVM that cannot use the archive "
            "runs without it. Relative to the project root; `null`: no archive."
        ),
    )
    warehouse_dir: PathOrUri | None = Field(
        default=None,
        description=(
            "`spark.sql.warehouse.dir`: where databases and managed tables without an explicit location "
            "go. `null`: `<storage.root>/_warehouse` when `storage.root` is a local path, else Spark's "
            "setting (the cluster's, or `spark-warehouse/` in the working directory)."
        ),
    )
    catalog: Literal["hive", "in-memory"] | None = Field(
        default=None,
        description=(
            "Where table registrations are kept (`spark.sql.catalogImplementation`). `hive`: in a Hive "
            "metastore, so that later sessions find the tables by name: the embedded Derby database in "
            "`metastore_dir` (one session at a time), else the metastore of the cluster's `hive-site.xml`. "
            "`in-memory`: only for the lifetime of the session. `null`: Spark's setting is kept (on a "
            "cluster: its Hive, Glue or Unity catalog; plain `python`: in-memory)."
        ),
    )
    metastore_dir: LocalPath | None = Field(
        default=None,
        description=(
            "With `catalog: hive`: local folder of the embedded Derby metastore (`metastore_db/` and "
            "`derby.log` inside). `null`: `<storage.root>/_metastore` when `storage.root` is a local "
            "path; with a URI root no Derby metastore is configured and the cluster's applies."
        ),
    )
    driver_memory: str | None = Field(
        default=None,
        description=(
            "Driver JVM heap (`spark.driver.memory`, e.g. `2g`). Only takes effect when this process "
            "starts the JVM; under spark-submit pass `--driver-memory` instead. `null`: Spark's default."
        ),
    )
    shuffle_partitions: int | None = Field(
        default=None,
        ge=1,
        description=(
            "`spark.sql.shuffle.partitions`. `null`: twice the cores of a `local[N]` master "
            "(at least 2), Spark's default (200) elsewhere."
        ),
    )
    scratch_dir: LocalPath | None = Field(
        default=None,
        description=(
            "Local folder for Spark's scratch files of a run (`spark.local.dir`, `java.io.tmpdir`): each "
            "run works in `<scratch_dir>/<run id>` and removes what runs killed before left there. "
            "`null`: `<storage.root>/_scratch` when `storage.root` is a local path, else the system's "
            "temporary folder. Under spark-submit the launcher's `spark.local.dir` applies."
        ),
    )
    ui_enabled: bool = Field(default=True, description="Start the Spark web UI (`spark.ui.enabled`).")
    log_level: Literal["ALL", "TRACE", "DEBUG", "INFO", "WARN", "ERROR", "FATAL", "OFF"] = Field(
        default="WARN",
        description="Log level of the Spark JVM once the session is up.",
    )
    small_work_mib: int = Field(
        default=64,
        ge=0,
        description=(
            "A stage whose binlog files total less than this many MiB runs its queries without adaptive "
            "execution and code generation (`spark.sql.adaptive.enabled`, `spark.sql.codegen.wholeStage`, "
            "`spark.sql.codegen.factoryMode`): on little data, planning and compiling cost more than the rows. "
            "Larger stages keep Spark's defaults, and so does a key set in `conf`. On a lake on a local file "
            "system, such a stage's frames (the tables its tasks do "
            "not write themselves) are also written on the driver, by delta-rs (see the README's Tables "
            "section). `0`: never."
        ),
    )
    conf: dict[str, SparkConfValue] = Field(
        default_factory=dict,
        description=(
            "Extra Spark settings (`spark.executor.memory: 4g`), applied last: they override every "
            "setting above and those given to spark-submit."
        ),
    )

    @field_validator("packages")
    @classmethod
    def _check_coordinates(cls, packages: list[str]) -> list[str]:
        for coordinate in packages:
            if not _MAVEN_COORDINATE.match(coordinate):
                raise ValueError(f"{coordinate!r} is not a Maven coordinate group:artifact:version")
        return packages

    @field_validator("driver_memory")
    @classmethod
    def _check_memory(cls, value: str | None) -> str | None:
        if value is not None and not _MEMORY_SIZE.match(value):
            raise ValueError(f"{value!r} is not a JVM memory size such as 512m or 2g")
        return value

    @field_validator("master")
    @classmethod
    def _check_master(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise ValueError("must not be empty; use null to take the master from spark-submit")
        return value

    @field_validator("metastore_dir")
    @classmethod
    def _check_metastore_dir(cls, value: str | None) -> str | None:
        if value is not None and ";" in value:  # Derby's connection URL separates attributes with ';'
            raise ValueError(f"{value!r}: a Derby database path cannot contain ';'")
        return value

    @model_validator(mode="after")
    def _metastore_needs_hive(self) -> SparkSettings:
        if self.metastore_dir is not None and self.catalog != "hive":
            raise ValueError("metastore_dir is only used with catalog: hive")
        return self


class InputSettings(Section):
    """Where the binary-log files are read from."""

    path: PathOrUri = Field(
        description=(
            "Folder (or single file) holding the binlog files: a local path, relative to the project "
            "root, or any Hadoop URI (`s3a://bucket/binlogs/`, `hdfs://...`)."
        ),
    )
    glob: str = Field(
        default="{*.[0-9][0-9][0-9][0-9][0-9][0-9],*.[0-9][0-9][0-9][0-9][0-9][0-9][0-9]}",
        min_length=1,
        description=(
            "File-name pattern (Hadoop glob, Spark's `pathGlobFilter`). The default matches binlog "
            "names such as `mysql-bin.000001`, `mariadb-bin.000042` and, after `.999999`, "
            "`mysql-bin.1000000`, not the `.index` file."
        ),
    )
    recursive: bool = Field(
        default=False,
        description="Also read files in sub-folders of `path` (Spark's `recursiveFileLookup`).",
    )
    modified_after: datetime | None = Field(
        default=None,
        description=(
            "Only read files modified after this instant (Spark's `modifiedAfter`), e.g. "
            "`2024-05-01T00:00:00Z`. A time without a zone is taken as UTC. `null`: all files."
        ),
    )
    server_pattern: str | None = Field(
        default=None,
        description=(
            "How files are told apart by server: a regular expression searched in each file's path "
            "whose group `server` (or first group) names the server, e.g. `/binlogs/(?P<server>[^/]+)/` "
            "for one folder per server under date folders. `null`: the folder holding the file and "
            "the binlog base name (`.../db1/mysql-bin`). Files of one server share schema history and "
            "are ordered by their sequence number (`mysql-bin.000042`: 42)."
        ),
    )

    @field_validator("server_pattern")
    @classmethod
    def _check_server_pattern(cls, value: str | None) -> str | None:
        if value is None:
            return None
        try:
            compiled = re.compile(value)
        except re.error as exc:
            raise ValueError(f"not a regular expression: {exc}") from exc
        if compiled.groups == 0:
            raise ValueError("needs a group naming the server, e.g. (?P<server>[^/]+)")
        return value

    @field_validator("modified_after", mode="before")
    @classmethod
    def _date_as_midnight(cls, value: object) -> object:
        if isinstance(value, date) and not isinstance(value, datetime):
            return datetime(value.year, value.month, value.day)
        return value

    @field_validator("modified_after")
    @classmethod
    def _as_utc(cls, value: datetime | None) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


_DATABASE_NAME = r"^[A-Za-z_][A-Za-z0-9_]*$"
DATABASE_SUFFIX = "_database"
"""``storage.<layer>_database`` names the catalog database of the tables below ``<root>/<layer>``."""


class StorageSettings(Section):
    """Where the Delta tables are written and how they are named in the catalog."""

    root: PathOrUri = Field(
        description=(
            "Lakehouse root: a local path, relative to the project root, or a Hadoop URI "
            "(`s3a://bucket/lakehouse/`). Every table is stored below it."
        ),
    )
    bronze_database: str = Field(
        default="binlog_bronze",
        pattern=_DATABASE_NAME,
        description="Catalog database of the bronze tables (files, events, quarantine).",
    )
    silver_database: str = Field(
        default="binlog_silver",
        pattern=_DATABASE_NAME,
        description="Catalog database of the silver tables (table maps, DDL, schema history).",
    )
    gold_database: str = Field(
        default="binlog_gold",
        pattern=_DATABASE_NAME,
        description="Catalog database of the gold change tables.",
    )
    current_database: str = Field(
        default="binlog_current",
        pattern=_DATABASE_NAME,
        description="Catalog database of the current-state tables (one per gold change table).",
    )
    history_database: str = Field(
        default="binlog_history",
        pattern=_DATABASE_NAME,
        description="Catalog database of the row-history tables (SCD type 2, one per gold change table).",
    )
    quality_database: str = Field(
        default="binlog_quality",
        pattern=_DATABASE_NAME,
        description="Catalog database of the quality-gate results.",
    )
    register_tables: bool = Field(
        default=True,
        description=(
            "Register every table in the Spark catalog under the databases above, as an external table "
            "at its path, so it can be queried by name (from later sessions too with `spark.catalog: "
            "hive`). A name registered at another path is pointed at this lakehouse."
        ),
    )

    def layers(self) -> dict[str, str]:
        """Each layer folder's catalog database: every ``<layer>_database`` setting names a layer.

        >>> StorageSettings(root="/lake").layers()["gold"]
        'binlog_gold'
        """
        return {
            name.removesuffix(DATABASE_SUFFIX): getattr(self, name)
            for name in type(self).model_fields
            if name.endswith(DATABASE_SUFFIX)
        }


class DecoderSettings(Section):
    """Options of the binlog decoder."""

    default_charset: str = Field(
        default="utf8mb4",
        pattern=r"^[a-z0-9_]+$",
        description=(
            "MySQL character set name used to decode string columns when the file carries no "
            "charset for them (no `binlog_row_metadata=FULL`)."
        ),
    )
    verify_checksums: bool = Field(
        default=True,
        description="Verify each event's CRC32 checksum when the file declares one.",
    )


class SilverSettings(Section):
    """Options of the silver layer (schema history)."""

    seed_path: PathOrUri | None = Field(
        default=None,
        description=(
            "Optional seed snapshot for the schema history: a local file of `SHOW CREATE TABLE` outputs "
            "separated by `;` (a `USE db;` line sets the schema of unqualified names), for tables created "
            "before the first binlog file. `null`: no seed."
        ),
    )


CheckName = Literal[
    "offset_contiguity",
    "file_fully_framed",
    "checksums_verified",
    "bad_files",
    "known_event_types",
    "rows_events_have_a_map",
    "table_id_one_table",
    "ddl_parse_coverage",
    "rows_reconcile",
    "op_matches_images",
    "no_unknown_table",
    "commit_not_before_event",
    "insert_keys_not_null",
]
"""The quality checks (their rules are data in `pipelines/quality/rules.py`)."""


class CurrentSettings(Section):
    """The current stage: current state (`binlog_current`) and row history (`binlog_history`) of every gold table."""

    enabled: bool = Field(
        default=False,
        description=(
            "Build the current-state and history tables after gold in `run` (the `current` command builds "
            "them whatever this says). The tables the new files touch are merged, or replayed from the start "
            "when files arrive out of order."
        ),
    )


class QualitySettings(Section):
    """What the quality gates do when a check fails (rules: `pipelines/quality/rules.py`)."""

    actions: dict[CheckName, Literal["fail", "quarantine", "warn"]] = Field(
        default_factory=dict,
        description=(
            "Action per check name, overriding its default: `fail` stops the run before the stage "
            "writes (exit code 3), `quarantine` puts a `GATE_<CHECK>` quarantine row on each failing "
            "file and goes on (exit code 4), `warn` only records. E.g. `{offset_contiguity: warn}`."
        ),
    )
    disabled: list[CheckName] = Field(default_factory=list, description="Checks not run at all.")


class AppConfig(Section):
    """The whole configuration: one attribute per YAML section."""

    spark: SparkSettings = Field(default_factory=SparkSettings, description="Spark session settings.")
    input: InputSettings = Field(description="Binlog files to read.")
    storage: StorageSettings = Field(description="Delta Lake output.")
    decoder: DecoderSettings = Field(default_factory=DecoderSettings, description="Binlog decoding.")
    silver: SilverSettings = Field(default_factory=SilverSettings, description="Silver layer options.")
    current: CurrentSettings = Field(default_factory=CurrentSettings, description="Current-state and history tables.")
    quality: QualitySettings = Field(default_factory=QualitySettings, description="Quality gates.")

    @model_validator(mode="after")
    def _catalog_below_a_local_root(self) -> AppConfig:
        """Fill a null ``spark.warehouse_dir`` (and, for ``catalog: hive``, ``spark.metastore_dir``)
        with ``_warehouse``/``_metastore`` below a local ``storage.root``."""
        root = local_path_of(self.storage.root)
        if root is None:
            return self
        derived: dict[str, str] = {}
        if self.spark.warehouse_dir is None:
            derived["warehouse_dir"] = str(Path(root) / "_warehouse")
        if self.spark.catalog == "hive" and self.spark.metastore_dir is None:
            derived["metastore_dir"] = str(Path(root) / "_metastore")
        if derived:
            # the model is frozen and still being validated: set the derived section in place
            object.__setattr__(self, "spark", self.spark.model_copy(update=derived))
        return self
