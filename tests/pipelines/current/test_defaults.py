"""Column defaults as values (``pipelines.current.stage``): what ALTER TABLE ... ADD COLUMN wrote into
the rows that existed before it."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

import pyarrow as pa
import pytest

from pipelines.current.stage import Now, now_default, typed_default, typed_defaults

AT = Now(1_700_000_000_123_456)
"""2023-11-14 22:13:20.123456 UTC"""
INSTANT = pa.timestamp("us", "UTC")
WALL_CLOCK = pa.timestamp("us")


@pytest.mark.parametrize(
    ("text", "kind", "value"),
    [
        ("'it''s'", pa.string(), "it's"),
        ("-7", pa.int32(), -7),
        ("2.50", pa.decimal128(8, 2), Decimal("2.50")),
        ("'abc'", pa.binary(), b"abc"),
        ("current_timestamp()", pa.int32(), None),
        ("'x'", pa.int32(), None),
    ],
)
def test_a_constant_default_is_the_value_of_its_columns_type_and_anything_else_none(
    text: str, kind: pa.DataType, value: object
) -> None:
    assert typed_default(text, kind) == value


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("CURRENT_TIMESTAMP", datetime(2023, 11, 14, 22, 13, 20, tzinfo=UTC)),
        ("current_timestamp()", datetime(2023, 11, 14, 22, 13, 20, tzinfo=UTC)),
        ("now(3)", datetime(2023, 11, 14, 22, 13, 20, 123000, tzinfo=UTC)),
        ("CURRENT_TIMESTAMP(6)", datetime(2023, 11, 14, 22, 13, 20, 123456, tzinfo=UTC)),
        ("localtimestamp", datetime(2023, 11, 14, 22, 13, 20, tzinfo=UTC)),
        ("'2020-01-01 00:00:00'", None),
        ("uuid()", None),
    ],
)
def test_a_timestamp_default_of_the_statements_time_is_that_instant_at_the_expressions_precision(
    text: str, value: datetime | None
) -> None:
    assert now_default(text, INSTANT, AT) == value


@pytest.mark.parametrize(
    ("zone", "value"),
    [
        ("+02:00", datetime(2023, 11, 15, 0, 13, 20)),
        ("-05:30", datetime(2023, 11, 14, 16, 43, 20)),
        ("Europe/Paris", datetime(2023, 11, 14, 23, 13, 20)),
        ("SYSTEM", None),
        (None, None),
    ],
)
def test_a_datetime_default_of_the_statements_time_is_its_wall_clock_where_the_binlog_names_the_zone(
    zone: str | None, value: datetime | None
) -> None:
    assert now_default("now()", WALL_CLOCK, Now(AT.micros, zone)) == value


def test_the_defaults_an_alter_fills_in_are_its_constants_and_its_time_and_nothing_else() -> None:
    types = {"n": pa.int64(), "seen": INSTANT, "id": pa.string(), "other": pa.string()}
    defaults = {"n": "7", "seen": "current_timestamp()", "id": "uuid()", "gone": "1"}
    assert typed_defaults(defaults, types, AT) == {"n": 7, "seen": datetime(2023, 11, 14, 22, 13, 20, tzinfo=UTC)}
    assert typed_defaults(defaults, types) == {"n": 7}  # an insert's defaults: constants only
