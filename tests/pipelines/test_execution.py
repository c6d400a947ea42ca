"""A stage's execution settings follow the size of its input, and the session gets its own back."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pyspark.sql import SparkSession

from pipelines.execution import MIB, SMALL_WORK, ExecutionMode


def _settings(spark: SparkSession) -> dict[str, str | None]:
    given = spark.conf.getAll
    return {key: given.get(key) for key in SMALL_WORK}


@pytest.fixture
def session(spark: SparkSession) -> Iterator[SparkSession]:
    before = _settings(spark)
    yield spark
    for key, value in before.items():
        if value is None:
            spark.conf.unset(key)
        else:
            spark.conf.set(key, value)


def test_a_stage_on_small_input_runs_planned_and_interpreted_until_reset(session: SparkSession) -> None:
    before = _settings(session)
    mode = ExecutionMode(session, small_work_mib=64)
    mode.fit(5_000)
    assert _settings(session) == SMALL_WORK
    assert session.range(10).selectExpr("sum(id * 2) AS s").first().s == 90  # type: ignore[union-attr]
    mode.reset()
    assert _settings(session) == before


def test_a_stage_on_input_at_the_limit_keeps_sparks_defaults(session: SparkSession) -> None:
    before = _settings(session)
    mode = ExecutionMode(session, small_work_mib=64)
    mode.fit(64 * MIB)
    assert _settings(session) == before
    mode.fit(1)
    mode.fit(64 * MIB)  # a large stage after a small one: the defaults again
    assert _settings(session) == before


def test_a_limit_of_zero_never_changes_a_setting(session: SparkSession) -> None:
    before = _settings(session)
    ExecutionMode(session, small_work_mib=0).fit(0)
    assert _settings(session) == before


def test_settings_the_session_was_given_are_left_as_they_are(session: SparkSession) -> None:
    session.conf.set("spark.sql.adaptive.enabled", "true")
    mode = ExecutionMode(session, small_work_mib=64)
    mode.fit(1)
    assert session.conf.get("spark.sql.adaptive.enabled") == "true"
    assert session.conf.get("spark.sql.codegen.factoryMode") == "NO_CODEGEN"
    mode.reset()
    assert session.conf.get("spark.sql.adaptive.enabled") == "true"
    assert "spark.sql.codegen.factoryMode" not in session.conf.getAll
