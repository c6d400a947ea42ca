"""The ``spark`` fixture: one local Spark session with Delta for the whole test run.

Built by the product's own factory (``pipelines.session.build_spark``) from ``spark_test_settings``:
``local[2]``, no UI, two shuffle partitions, 2 GiB driver, and warehouse, Derby and metastore
folders inside pytest's temporary directory so that nothing lands in the repository. Jars come
from the project's Ivy cache (``.cache/ivy``, filled by ``.ci/setup``). Every test that requests
the fixture is marked ``spark``, so ``-m "not spark"`` deselects them all.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from conf import SparkSettings
from pipelines.session import build_spark

SPARK_MARKER = "spark"
SPARK_FIXTURES = frozenset({"spark"})


def spark_test_settings(base_dir: Path) -> SparkSettings:
    """Spark settings for tests: small, quiet, and writing only below ``base_dir``."""
    derby_home = base_dir / "derby"
    derby_home.mkdir(parents=True, exist_ok=True)
    return SparkSettings(
        master="local[2]",
        app_name="binlog-lakehouse-tests",
        ui_enabled=False,
        shuffle_partitions=2,
        driver_memory="3g",  # one session runs every module: the end-to-end lakes add up
        warehouse_dir=str(base_dir / "warehouse"),
        log_level="ERROR",
        conf={
            "spark.sql.catalogImplementation": "in-memory",
            "spark.driver.extraJavaOptions": f"-Dderby.system.home={derby_home}",
            "spark.hadoop.javax.jdo.option.ConnectionURL": (
                f"jdbc:derby:;databaseName={base_dir / 'metastore_db'};create=true"
            ),
            "spark.default.parallelism": 2,
            "spark.databricks.delta.snapshotPartitions": 2,
            # one session runs every module: keep the status store of finished work small
            "spark.sql.ui.retainedExecutions": 50,
            "spark.ui.retainedJobs": 100,
            "spark.ui.retainedStages": 100,
            "spark.ui.retainedTasks": 2000,
        },
    )


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SparkSession]:
    """A local Spark session with Delta Lake, shared by the whole run and stopped at its end."""
    session = build_spark(spark_test_settings(tmp_path_factory.mktemp("spark")))
    try:
        yield session
    finally:
        session.stop()


@pytest.fixture(autouse=True, scope="module")
def _release_cached_frames() -> Iterator[None]:
    """After each module, drop what the shared session still caches (no session is started for it):
    cached frames and Delta's snapshots of the module's tables (each test module writes lakes of its
    own; their snapshots would otherwise stay in the driver's heap)."""
    yield
    session = SparkSession.getActiveSession()
    if session is not None:
        session.catalog.clearCache()
        session._jvm.org.apache.spark.sql.delta.DeltaLog.clearCache()  # type: ignore[union-attr]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark every test that uses the ``spark`` fixture with ``spark``."""
    for item in items:
        if SPARK_FIXTURES.intersection(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.spark)
