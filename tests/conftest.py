"""Shared pytest configuration: fixtures live in ``tests/harness`` and are registered here."""

pytest_plugins = ["tests.harness.spark", "tests.harness.mariadb", "tests.harness.corpus", "tests.harness.sample_lake"]
