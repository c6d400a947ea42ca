"""Shared pytest configuration: fixtures live in ``tests/harness`` and are registered here."""

import sys

# A pytest-xdist worker runs without a main-module file, which pyspark.sql.connect (imported by
# great-expectations) takes for its own doctest runner and leaves with sys.exit(0): give it one.
_main = sys.modules["__main__"]
if getattr(_main, "__spec__", None) is None and not hasattr(_main, "__file__"):
    _main.__file__ = "pytest-xdist worker"

pytest_plugins = [
    "tests.harness.spark",
    "tests.harness.mariadb",
    "tests.harness.corpus",
    "tests.harness.sample_lake",
    "tests.harness.s3",
    "tests.harness.config_cache",
]
